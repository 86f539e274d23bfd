"""readers_agree.py A B [A B ...]: each pair of image files read by every reader that takes the
format (TIFF: Pillow, tifffile; PNG: Pillow, OpenCV) gives the same samples. A reader not
installed is named and skipped; exit 1 when any reader fails to read a file or reads a pair
differently, naming it."""
import sys

import numpy as np


def pillow(path):
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im)


def tifffile_read(path):
    import tifffile
    return tifffile.imread(path)


def opencv(path):
    import cv2
    a = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if a is None:
        raise ValueError("OpenCV cannot read it")
    return a


READERS = {".tif": (("Pillow", pillow), ("tifffile", tifffile_read)), ".png": (("Pillow", pillow), ("OpenCV", opencv))}


def main(args):
    problems = []
    for a, b in zip(args[::2], args[1::2]):
        for name, read in READERS[a[a.rfind("."):]]:
            try:
                x, y = read(a), read(b)
            except ImportError:
                print("readers_agree: %s is not installed here: %s not read with it" % (name, a))
                continue
            except Exception as e:
                problems.append("%s cannot read %s or %s: %s" % (name, a, b, e))
                continue
            if x.shape != y.shape or not np.array_equal(x, y):
                problems.append("%s reads %s (%s) differently from %s (%s)" % (name, a, x.shape, b, y.shape))
    for p in problems:
        print("readers_agree: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
