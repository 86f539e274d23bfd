"""Decodes PNG files with Pillow and OpenCV and compares them with the pixels they were written
from, for the C tests of writers that have no Python of their own (the GPU PNG writer's).

Usage: png_decode_check.py LIST, each line of LIST: png raw width height channels depth, raw
holding the source's rows packed, 16-bit samples in the machine's order. Exit 0 when every file
decodes equal in both (Pillow where it has the mode: no 16-bit colour), 1 naming each that
does not, 77 when Pillow or OpenCV is missing."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cross"))
try:
    import numpy as np
    from PIL import Image
    from crosslib import opencv_pixels
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)


def pillow_pixels(path, depth):
    with Image.open(path) as im:
        arr = np.array(im)
    if arr.ndim == 2:
        arr = arr[..., None]
    return arr.astype(np.uint16) if depth == 16 else arr


def main():
    failed = checked = 0
    with open(sys.argv[1]) as f:
        lines = [line.split() for line in f if line.strip()]
    for png, raw, w, h, c, depth in lines:
        w, h, c, depth = int(w), int(h), int(c), int(depth)
        want = np.fromfile(raw, dtype=np.uint16 if depth == 16 else np.uint8).reshape(h, w, c)
        decoders = {"OpenCV": lambda: opencv_pixels(png, c)}
        if depth == 8 or c == 1:
            decoders["Pillow"] = lambda: pillow_pixels(png, depth)
        for name, decode in decoders.items():
            checked += 1
            try:
                got = decode()
            except Exception as e:  # a decoder's refusal is a failure like a wrong pixel
                got, why = None, str(e)
            else:
                why = "no image" if got is None else "pixels differ"
            if got is None or got.shape != want.shape or not np.array_equal(got, want):
                failed += 1
                print("%s: %s: %s" % (png, name, why))
    print("png_decode_check: %d decodes, %d failed" % (checked, failed))
    return 1 if failed or not checked else 0


sys.exit(main())
