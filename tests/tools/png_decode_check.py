"""Decodes PNG files with Pillow and OpenCV and compares them with the pixels they were written
from, for the C tests of writers that have no Python of their own (the GPU PNG writer's).

Usage: png_decode_check.py LIST, each line of LIST: png raw width height channels depth, raw
holding the source's rows packed, 16-bit samples in the machine's order. Exit 0 when every file
decodes equal in both (Pillow where it has the mode: no 16-bit colour), 1 naming each that
does not, 77 when Pillow or OpenCV is missing."""
import sys

try:
    import cv2
    import numpy as np
    from PIL import Image
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)


def opencv_pixels(path, c):
    """Back to the source's channel order: OpenCV gives BGR(A), and gray+alpha as BGRA."""
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
