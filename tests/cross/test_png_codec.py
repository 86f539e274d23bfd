"""Cross-check of imgpipe's PNG writer (bands deflated in parallel, one zlib stream) and
reader against OpenCV and Pillow.

Inputs are written here by a minimal PNG writer of our own (zlib, filter None), so every
depth and channel count exists as input; imgpipe passes them through `transpose | transpose`
and writes PNG. OpenCV must read every output, Pillow every one it supports (it has no 16-bit
colour mode), pixel for pixel equal to the source; --threads 1 and 3 must give the same bytes.
A PNG whose image data is damaged in the middle must fail with a one-line message and leave
no output."""
import os
import struct
import sys
import tempfile
import zlib

import numpy as np
from PIL import Image
from crosslib import BIN, check, cli, opencv_pixels, summary

COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_png(path, arr):
    """arr: HxWxC uint8 or uint16, C in 1..4."""
    h, w, c = arr.shape
    depth = 16 if arr.dtype == np.uint16 else 8
    raw = arr.astype(">u2" if depth == 16 else np.uint8).reshape(h, -1).view(np.uint8)
    rows = np.concatenate([np.zeros((h, 1), np.uint8), raw], axis=1)
    ihdr = struct.pack(">IIBBBBB", w, h, depth, COLOR_TYPES[c], 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
                + chunk(b"IEND", b""))


def pillow_pixels(path, c, depth):
    """None where Pillow cannot hold the image (16-bit with more than one channel)."""
    if depth == 16 and c > 1:
        return None
    with Image.open(path) as im:
        arr = np.array(im)
    if arr.ndim == 2:
        arr = arr[..., None]
    return arr.astype(np.uint16) if depth == 16 else arr


def random_image(rng, h, w, c, depth):
    """Smooth gradients plus noise, so the filters have something to choose between."""
    top = 65535 if depth == 16 else 255
    yy, xx = np.mgrid[0:h, 0:w]
    base = ((xx * 7 + yy * 3) % (top + 1)).astype(np.int64)[..., None] + np.arange(c) * 1000
    noise = rng.integers(0, 16, size=(h, w, c))
    return ((base + noise) % (top + 1)).astype(np.uint16 if depth == 16 else np.uint8)


def check_case(tmp, rng, h, w, c, depth):
    name = "%dx%dx%d_%d" % (w, h, c, depth)
    src = random_image(rng, h, w, c, depth)
    inp = os.path.join(tmp, name + ".in.png")
    write_png(inp, src)
    outs = []
    for threads in (1, 3):
        out = os.path.join(tmp, "%s.t%d.png" % (name, threads))
        res = cli("--threads", str(threads), "-e", "transpose | transpose", inp, out)
        check(res.returncode == 0, "%s threads %d: %s" % (name, threads, res.stderr.strip()))
        outs.append(out)
    if not all(os.path.exists(o) for o in outs):
        return
    with open(outs[0], "rb") as a, open(outs[1], "rb") as b:
        check(a.read() == b.read(), "%s: --threads 1 and 3 wrote different files" % name)
    cv = opencv_pixels(outs[1], c)
    check(cv is not None and cv.shape == src.shape and np.array_equal(cv, src), "%s: OpenCV pixels differ" % name)
    pil = pillow_pixels(outs[1], c, depth)
    if pil is not None:
        check(pil.shape == src.shape and np.array_equal(pil, src), "%s: Pillow pixels differ" % name)


def check_corrupt_idat(tmp, rng):
    """A byte of the compressed data changed (CRC fixed up, so the data itself is wrong)."""
    src = random_image(rng, 1500, 700, 3, 8)
    src[::7] = rng.integers(0, 256, size=src[::7].shape, dtype=np.uint8)
    inp = os.path.join(tmp, "big.in.png")
    good = os.path.join(tmp, "big.png")
    write_png(inp, src)
    res = cli("-e", "transpose | transpose", inp, good)
    check(res.returncode == 0, "big: %s" % res.stderr.strip())
    data = bytearray(open(good, "rb").read())
    at, idats = 8, []
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idats.append((at, n))
        at += 12 + n
    check(len(idats) >= 3, "big: only %d IDAT chunks" % len(idats))
    at, n = idats[len(idats) // 2]
    data[at + 8 + n // 2] ^= 0x55
    data[at + 8 + n:at + 12 + n] = struct.pack(">I", zlib.crc32(bytes(data[at + 4:at + 8 + n])))
    bad = os.path.join(tmp, "bad.png")
    open(bad, "wb").write(bytes(data))
    out = os.path.join(tmp, "bad.out.png")
    res = cli("-e", "transpose", bad, out)
    lines = [l for l in res.stderr.strip().split("\n") if not l.startswith("imgpipe: device")]
    check(res.returncode != 0, "damaged IDAT decoded")
    check(len(lines) == 1 and "corrupt PNG" in lines[0], "damaged IDAT message: %r" % res.stderr)
    check(not os.path.exists(out), "damaged IDAT left an output")


def main():
    if not BIN:
        print("SKIP: IMGPIPE_BIN is not set (run through ctest)")
        return 77
    rng = np.random.default_rng(2024)
    sizes = [(1, 1), (1, 37), (41, 1), (97, 89), (13, 1031)]
    with tempfile.TemporaryDirectory() as tmp:
        for depth in (8, 16):
            for c in (1, 2, 3, 4):
                for h, w in sizes:
                    check_case(tmp, rng, h, w, c, depth)
        # Several bands plus one row: a band holds 2 MiB of filtered rows.
        row = 1 + 1200 * 3
        check_case(tmp, rng, 3 * ((1 << 21) // row) + 1, 1200, 3, 8)
        check_corrupt_idat(tmp, rng)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
