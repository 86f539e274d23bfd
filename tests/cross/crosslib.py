"""Shared by the cross-checks: a pass/fail tally and running the imgpipe command line."""
import os
import subprocess
import sys

import cv2
import numpy as np

BIN = os.environ.get("IMGPIPE_BIN")
IMAGES = os.environ.get("IMGPIPE_SAMPLES", "")
_tally = {"passed": 0, "failed": 0}


def quick():
    """IMGPIPE_TEST_QUICK (the sanitizer build): leave out repeats that take no other path, as
    tu_quick() in tests/testutil.h."""
    try:
        return int(os.environ.get("IMGPIPE_TEST_QUICK", "0")) > 0
    except ValueError:
        return False


def opencv_pixels(path, c):
    """A PNG's samples as OpenCV reads them, back in the source's channel order: OpenCV gives
    BGR(A), and gray+alpha as BGRA. None where it cannot read the file."""
    got = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if got is None:
        return None
    if got.ndim == 2:
        got = got[..., None]
    if c == 2 and got.shape[2] == 4:
        if not (np.array_equal(got[..., 0], got[..., 1]) and np.array_equal(got[..., 0], got[..., 2])):
            return None
        return np.stack([got[..., 0], got[..., 3]], axis=2)
    if c >= 3:
        got = got[..., [2, 1, 0, 3][:c]]
    return got


def check(ok, what):
    if ok:
        _tally["passed"] += 1
    else:
        _tally["failed"] += 1
        print("FAIL:", what)


def summary():
    """Prints the closing line; returns the exit code: 1 when a check failed or none ran (a test
    with nothing to check exits 77 with its reason instead)."""
    print("%d passed, %d failed" % (_tally["passed"], _tally["failed"]))
    if _tally["passed"] + _tally["failed"] == 0:
        print("FAIL: no check ran")
        return 1
    return 1 if _tally["failed"] else 0


def require_setup(*images):
    """Exits 77 outside ctest; a missing sample image is a failure, not a skip."""
    if not BIN:
        print("SKIP: IMGPIPE_BIN is not set (run through ctest)")
        sys.exit(77)
    missing = [name for name in images if not os.path.exists(os.path.join(IMAGES, name))]
    if missing:
        print("FAIL: sample images missing from %s: %s" % (IMAGES, ", ".join(missing)))
        sys.exit(1)


def cli(*args, cwd=None):
    """Runs `imgpipe run --device cpu ARGS...`."""
    return subprocess.run([BIN, "run", "--device", "cpu", *args], capture_output=True, text=True, cwd=cwd)


def run_image(stage, src_path, out_path, threads=None):
    """Runs one stage; returns the output image, or None (with the error printed). A PNG output is
    written at level 1: only its pixels are read back, and the default level's zlib took most of
    each run (the PNG writer's levels are checked by unit.test_io_png_codec and test_png_codec)."""
    extra = ["--threads", str(threads)] if threads else []
    if out_path.endswith(".png"):
        extra += ["--png-level", "1"]
    res = cli(*extra, "-e", stage, src_path, out_path)
    if res.returncode != 0:
        print("imgpipe failed:", stage, src_path, res.stderr.strip())
        return None
    return cv2.imread(out_path, cv2.IMREAD_UNCHANGED)
