"""Cross-check of the mean stage against OpenCV blur on real photographs.

8-bit must match cv2.blur exactly (reflect101 = BORDER_DEFAULT, and replicate). 16-bit must
match the exact floor((sum + n/2) / n) from cv2.boxFilter sums, and cv2.blur within 1: for
16-bit windows larger than 9x9 OpenCV divides in fixed point and misrounds quotients within
about 0.005 of one half (e.g. 11x11: 6296901 / 121 = 52040.504 gives 52040), by design of its
speed-up, not ours. Zero and shrink borders, which OpenCV blur lacks, against box sums;
32-bit float within 1e-5. Thread counts must not change a single pixel."""
import os
import sys
import tempfile

import cv2
import numpy as np
from crosslib import BIN, IMAGES, check, run_image as run, summary


def box_sums(img, k, border):
    """Window sums (float64) with out-of-image pixels as 0, and in-image pixel counts."""
    f = img.astype(np.float64)
    sums = cv2.boxFilter(f, -1, (k, k), normalize=False, borderType=border)
    ones = np.ones(img.shape[:2], np.float64)
    counts = cv2.boxFilter(ones, -1, (k, k), normalize=False, borderType=cv2.BORDER_CONSTANT)
    if img.ndim == 3:
        counts = counts[..., None]
    return sums, counts


CV_BORDERS = {"reflect101": cv2.BORDER_REFLECT_101, "replicate": cv2.BORDER_REPLICATE}


def expected_integer(img, k, border_name):
    if border_name in CV_BORDERS and img.dtype == np.uint8:
        return cv2.blur(img, (k, k), borderType=CV_BORDERS[border_name])
    sums, counts = box_sums(img, k, CV_BORDERS.get(border_name, cv2.BORDER_CONSTANT))
    n = counts if border_name == "shrink" else float(k * k)
    return np.floor((sums + np.floor(n / 2)) / n).astype(img.dtype)


def inputs(tmp):
    """(name, path, array as imgpipe's output will read back) for each test input."""
    out = []
    camera = cv2.imread(os.path.join(IMAGES, "camera.png"), cv2.IMREAD_GRAYSCALE)
    for name in ("camera.png", "astronaut.png", "coffee.png", "chelsea.png"):
        img = cv2.imread(os.path.join(IMAGES, name), cv2.IMREAD_UNCHANGED)
        if img is None:
            continue
        path = os.path.join(tmp, "in_" + name)
        cv2.imwrite(path, img)
        out.append((name, path, cv2.imread(path, cv2.IMREAD_UNCHANGED)))
    if camera is not None:
        rng = np.random.default_rng(7)
        deep = camera.astype(np.uint16) * 257 + rng.integers(0, 257, camera.shape, dtype=np.uint16)
        path = os.path.join(tmp, "camera16.png")
        cv2.imwrite(path, deep)
        out.append(("camera 16-bit", path, deep))
    return out


def check_integer(tmp, name, path, img):
    for radius in (1, 2, 3, 5, 7, 8, 12):
        k = 2 * radius + 1
        borders = ("reflect101", "replicate", "zero", "shrink") if radius in (1, 3, 8) else ("reflect101",)
        for border in borders:
            got = run("mean radius=%d border=%s" % (radius, border), path, os.path.join(tmp, "out.png"))
            want = expected_integer(img, k, border)
            ok = got is not None and got.shape == want.shape and np.array_equal(got, want)
            diff = "n/a" if got is None or got.shape != want.shape else \
                int(np.abs(got.astype(np.int64) - want).max())
            check(ok, "%s mean radius=%d border=%s: max diff %s" % (name, radius, border, diff))
            if got is not None and img.dtype == np.uint16 and border in CV_BORDERS:
                opencv = cv2.blur(img, (k, k), borderType=CV_BORDERS[border]).astype(np.int64)
                check(np.abs(got - opencv).max() <= 1, "%s radius=%d: more than 1 from cv2.blur" % (name, radius))


def check_float(tmp, name, img):
    f = img.astype(np.float32) / 255.0
    path = os.path.join(tmp, "float.tif")
    if not cv2.imwrite(path, f):
        return
    for radius, border, cv_border in ((1, "reflect101", cv2.BORDER_REFLECT_101), (4, "replicate", cv2.BORDER_REPLICATE)):
        got = run("mean radius=%d border=%s" % (radius, border), path, os.path.join(tmp, "out.tif"))
        want = cv2.blur(f, (2 * radius + 1, 2 * radius + 1), borderType=cv_border)
        ok = got is not None and got.shape == want.shape and np.abs(got - want).max() <= 1e-5
        check(ok, "%s float mean radius=%d %s" % (name, radius, border))


def check_threads(tmp, path):
    outs = [run("mean radius=4 border=shrink", path, os.path.join(tmp, "t%d.png" % t), threads=t) for t in (1, 2, 3)]
    check(all(o is not None for o in outs) and np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2]),
          "threads 1, 2, 3 give the same mean")


def main():
    if not BIN:
        print("SKIP: IMGPIPE_BIN is not set")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        cases = inputs(tmp)
        if not cases:
            print("FAIL: no sample images in", IMAGES)
            return 1
        for name, path, img in cases:
            check_integer(tmp, name, path, img)
        check_float(tmp, cases[0][0], cases[0][2])
        check_threads(tmp, cases[0][1])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
