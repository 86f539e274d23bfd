"""TIFFs written by imgpipe, read by Pillow, OpenCV and tifffile (each through its own decoder setup).

Every depth (u8, u16, f32), channel count 1-4 and --tiff-compression: the transposed output
must hold exactly the transposed input samples, the file must be byte-identical for
--threads 1, 2, 3 and 8, and Pillow must read what it has modes for (8-bit 1-4 channels,
16-bit and float gray), OpenCV the rest (IMGPIPE_TEST_QUICK: 1 thread and one of the others, in
turn, so that each count still appears). The streamed writer's file (--stream on, --threads 1
and 4) must be the whole-image writer's bytes, and Pillow and tifffile (deflate on integers, and
none) must read the input's samples from it. A TIFF with a corrupt strip in the middle is one
error line and no output file."""
import os
import sys
import tempfile

import cv2
import numpy as np
import tifffile
from PIL import Image
from crosslib import BIN, IMAGES, check, cli, quick, require_setup, summary

THREADS = (1, 2, 3, 8)
COMPRESSIONS = ("deflate", "lzw", "zstd", "none")


def to_bgr(a):
    """RGB(A) order to OpenCV's BGR(A); gray unchanged."""
    if a.ndim == 3 and a.shape[2] >= 3:
        return a[..., [2, 1, 0] + list(range(3, a.shape[2]))]
    return a


def inputs(tmp):
    """(name, input path, samples in RGB order) for every depth and channel count."""
    photo = np.asarray(Image.open(os.path.join(IMAGES, "astronaut.png")).convert("RGB"))[:383, :509]
    rng = np.random.default_rng(11)
    alpha = rng.integers(0, 256, photo.shape[:2], dtype=np.uint8)
    gray = np.asarray(Image.fromarray(photo).convert("L"))
    u8 = {1: gray, 2: np.dstack([gray, alpha]), 3: photo, 4: np.dstack([photo, alpha])}
    out = []
    for c, a in u8.items():
        path = os.path.join(tmp, "u8_%d.png" % c)
        Image.fromarray(a).save(path)
        out.append(("u8 x%d" % c, path, a))
    for c in (1, 3, 4):
        a = u8[c].astype(np.uint16) * 257 + rng.integers(0, 257, u8[c].shape, dtype=np.uint16)
        path = os.path.join(tmp, "u16_%d.png" % c)
        cv2.imwrite(path, to_bgr(a))
        out.append(("u16 x%d" % c, path, a))
    for c in (1, 3):
        a = (u8[c].astype(np.float32) / 255 - 0.25 + rng.standard_normal(u8[c].shape).astype(np.float32) * 1e-3)
        path = os.path.join(tmp, "f32_%d.tif" % c)
        # uncompressed: OpenCV's default for float RGB is lossy LogLuv
        cv2.imwrite(path, to_bgr(a), [cv2.IMWRITE_TIFF_COMPRESSION, 1])
        out.append(("f32 x%d" % c, path, a))
    return out


def transposed(a):
    return np.ascontiguousarray(np.swapaxes(a, 0, 1))


def read_pillow(path, a):
    """Pillow's reading, or None where it has no mode for this depth and channel count."""
    if a.dtype == np.uint8 or a.ndim == 2:
        with Image.open(path) as im:
            return np.asarray(im)
    return None


def read_opencv(path, a):
    if a.ndim == 3 and a.shape[2] == 2:
        return None   # OpenCV has no gray+alpha
    if a.ndim == 3 and a.shape[2] == 4 and a.dtype == np.uint8:
        return None   # OpenCV reads 8-bit RGBA through TIFFReadRGBAImage, which premultiplies
    return to_bgr(cv2.imread(path, cv2.IMREAD_UNCHANGED))


def check_case(tmp, name, src, a, compression, threads):
    want = transposed(a)
    files = []
    for t in threads:
        out = os.path.join(tmp, "out_%d.tif" % t)
        res = cli("--threads", str(t), "--tiff-compression", compression, "-e", "transpose", src, out)
        check(res.returncode == 0, "%s %s --threads %d: %s" % (name, compression, t, res.stderr.strip()))
        files.append(open(out, "rb").read() if res.returncode == 0 else b"")
    what = "%s %s" % (name, compression)
    check(all(f == files[0] for f in files), what + ": files differ between thread counts")
    path = os.path.join(tmp, "out_1.tif")
    readers = 0
    for reader_name, reader in (("Pillow", read_pillow), ("OpenCV", read_opencv)):
        got = reader(path, a)
        if got is None:
            continue
        readers += 1
        same = got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)
        check(same, "%s: %s reads %s %s, not the transposed input" % (what, reader_name, got.shape, got.dtype))
    check(readers > 0, what + ": no reader tried")


def check_streamed(tmp, name, src, a, compression):
    """histogram passes the image on unchanged: streamed, the strips are compressed as rows arrive."""
    what = "%s %s streamed" % (name, compression)
    stage = "histogram out=" + os.path.join(tmp, "h.csv")
    files = []
    for mode, t in (("off", 1), ("on", 1), ("on", 4)):
        out = os.path.join(tmp, "s_%s_%d.tif" % (mode, t))
        res = cli("--stream", mode, "--threads", str(t), "--tiff-compression", compression, "-e", stage, src, out)
        check(res.returncode == 0, "%s --stream %s --threads %d: %s" % (what, mode, t, res.stderr.strip()))
        files.append(open(out, "rb").read() if res.returncode == 0 else b"")
    check(files[0] and all(f == files[0] for f in files), what + ": not the whole-image writer's bytes")
    path = os.path.join(tmp, "s_on_4.tif")
    # tifffile undoes deflate (zlib) and the horizontal predictor itself; LZW, zstd and the
    # floating-point predictor need imagecodecs, not installed here
    readers = [("Pillow", read_pillow)]
    if compression == "none" or (compression == "deflate" and a.dtype != np.float32):
        readers.append(("tifffile", lambda p, _: tifffile.imread(p)))
    for reader_name, reader in readers:
        got = reader(path, a)
        if got is None:
            continue
        check(got.shape == a.shape and got.dtype == a.dtype and np.array_equal(got, a),
              "%s: %s reads %s %s, not the input" % (what, reader_name, got.shape, got.dtype))


def check_corrupt_strip(tmp):
    """A strip in the middle overwritten: exit 1, one error line naming it, no output."""
    src = os.path.join(tmp, "multi.tif")
    res = cli("-e", "transpose", os.path.join(IMAGES, "astronaut.png"), src)
    check(res.returncode == 0, "multi-strip write: " + res.stderr.strip())
    with Image.open(src) as im:
        offsets, counts = im.tag_v2[273], im.tag_v2[279]
    check(len(offsets) >= 3, "want 3 or more strips, got %d" % len(offsets))
    data = bytearray(open(src, "rb").read())
    mid = len(offsets) // 2
    for k in range(counts[mid]):
        data[offsets[mid] + k] = 0xA5 ^ (k * 29 & 0xFF)
    bad = os.path.join(tmp, "bad.tif")
    open(bad, "wb").write(bytes(data))
    for t in THREADS:
        out = os.path.join(tmp, "never.tif")
        res = cli("--threads", str(t), "-e", "transpose", bad, out)
        errors = [line for line in res.stderr.splitlines() if "device:" not in line]
        check(res.returncode == 1 and len(errors) == 1 and "truncated or corrupt TIFF" in errors[0],
              "corrupt strip, --threads %d: rc %d, %s" % (t, res.returncode, errors))
        check(not os.path.exists(out), "corrupt strip, --threads %d: an output was left" % t)


def main():
    require_setup("astronaut.png")
    with tempfile.TemporaryDirectory() as tmp:
        turn = 0
        for name, src, a in inputs(tmp):
            for compression in COMPRESSIONS:
                threads = (1, THREADS[1 + turn % (len(THREADS) - 1)]) if quick() else THREADS
                turn += 1
                check_case(tmp, name, src, a, compression, threads)
                check_streamed(tmp, name, src, a, compression)
        check_corrupt_strip(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
