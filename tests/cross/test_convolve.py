"""Cross-check of the convolve stage against OpenCV filter2D on real photographs.

Same-type output within 1 of cv2.filter2D(src, -1, kernel / divisor, delta=offset,
borderType=...) (OpenCV computes 8-bit filters in float, we round the exact integer sum);
the zero and shrink borders against BORDER_CONSTANT (shrink only cuts the window: the divisor
stays); f32 output against filter2D in float. Thread counts must not change a single pixel."""
import os
import sys
import tempfile

import cv2
import numpy as np
from crosslib import BIN, IMAGES, check, run_image as run, summary


NAMED = {
    "box3": np.ones((3, 3)),
    "gaussian3": np.outer([1, 2, 1], [1, 2, 1]),
    "gaussian5": np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]),
    "sharpen": np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]]),
    "laplacian": np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]]),
    "sobel-x": np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]),
    "sobel-y": np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]]),
    "emboss": np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]]),
}

# (kernel text, weights, divisor or None for auto, offset)
LITERALS = [
    ("1 2 1; 0 0 0; -1 -2 -1", [[1, 2, 1], [0, 0, 0], [-1, -2, -1]], 4, 128),
    ("0.1 0.2 0.4 0.2 0.1", [[0.1, 0.2, 0.4, 0.2, 0.1]], None, 0),
    ("1; 3; 5; 3; 1", [[1], [3], [5], [3], [1]], None, 0),
    ("0.5 -1.25 0.75; 2 0.1 -0.3; 1 1 1", [[0.5, -1.25, 0.75], [2, 0.1, -0.3], [1, 1, 1]], 2.5, 10),
    ("1 0 2 0 1; 0 3 0 3 0; 2 0 -4 0 2; 0 3 0 3 0; 1 0 2 0 1",
     [[1, 0, 2, 0, 1], [0, 3, 0, 3, 0], [2, 0, -4, 0, 2], [0, 3, 0, 3, 0], [1, 0, 2, 0, 1]], None, 0),
    ("; ".join(" ".join(str(v) for v in row) for row in np.outer([1, 6, 15, 20, 15, 6, 1], [1, 6, 15, 20, 15, 6, 1])),
     np.outer([1, 6, 15, 20, 15, 6, 1], [1, 6, 15, 20, 15, 6, 1]), None, 0),
]

BORDERS = {"reflect101": cv2.BORDER_REFLECT_101, "replicate": cv2.BORDER_REPLICATE,
           "zero": cv2.BORDER_CONSTANT, "shrink": cv2.BORDER_CONSTANT}


def opencv_result(img, weights, divisor, offset, border, ddepth=-1):
    w = np.asarray(weights, np.float64)
    if divisor is None:
        divisor = w.sum() if w.sum() != 0 else 1.0
    src = img.astype(np.float32) if ddepth == cv2.CV_32F else img
    return cv2.filter2D(src, ddepth, (w / divisor).astype(np.float32), delta=offset, borderType=BORDERS[border])


def stage_text(kernel_text, divisor, offset, border, output="same"):
    text = 'convolve kernel="%s" border=%s output=%s offset=%g' % (kernel_text, border, output, offset)
    return text + (" divisor=%g" % divisor if divisor is not None else "")


def compare(tmp, name, path, img, kernel_text, weights, divisor, offset, border):
    got = run(stage_text(kernel_text, divisor, offset, border), path, os.path.join(tmp, "out.png"))
    want = opencv_result(img, weights, divisor, offset, border)
    ok = got is not None and got.shape == want.shape
    diff = int(np.abs(got.astype(np.int64) - want).max()) if ok else "n/a"
    check(ok and diff <= 1, "%s kernel=%s divisor=%s offset=%g border=%s: max diff %s" %
          (name, kernel_text[:30], divisor, offset, border, diff))


def check_f32_output(tmp, name, path, img):
    for kernel in ("sobel-x", "laplacian"):
        got = run(stage_text(kernel, None, 0, "reflect101", "f32"), path, os.path.join(tmp, "out.tif"))
        want = opencv_result(img, NAMED[kernel], None, 0, "reflect101", cv2.CV_32F)
        ok = got is not None and got.dtype == np.float32 and got.shape == want.shape
        check(ok and np.abs(got - want).max() <= 1e-3, "%s %s output=f32" % (name, kernel))
        check(ok and got.min() < 0, "%s %s output=f32 keeps negative values" % (name, kernel))


def check_threads(tmp, path):
    stages = [stage_text("0.5 -1.25 0.75; 2 0.1 -0.3; 1 1 1", 2.5, 10, "zero"), "convolve kernel=gaussian5"]
    for stage in stages:
        outs = [run(stage, path, os.path.join(tmp, "t%d.png" % t), threads=t) for t in (1, 2, 3)]
        check(all(o is not None for o in outs) and np.array_equal(outs[0], outs[1]) and
              np.array_equal(outs[0], outs[2]), "threads 1, 2, 3 give the same result: " + stage)


def inputs(tmp):
    out = []
    for name in ("camera.png", "astronaut.png", "coffee.png"):
        img = cv2.imread(os.path.join(IMAGES, name), cv2.IMREAD_UNCHANGED)
        if img is None:
            continue
        path = os.path.join(tmp, "in_" + name)
        cv2.imwrite(path, img)
        out.append((name, path, cv2.imread(path, cv2.IMREAD_UNCHANGED)))
    if out and out[0][2].ndim == 2:
        rng = np.random.default_rng(3)
        deep = out[0][2].astype(np.uint16) * 257 + rng.integers(0, 257, out[0][2].shape, dtype=np.uint16)
        path = os.path.join(tmp, "deep.png")
        cv2.imwrite(path, deep)
        out.append(("camera 16-bit", path, deep))
    return out


def main():
    if not BIN:
        print("SKIP: IMGPIPE_BIN is not set")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        cases = inputs(tmp)
        if not cases:
            print("FAIL: no sample images in", IMAGES)
            return 1
        for index, (name, path, img) in enumerate(cases):
            for kernel, weights in NAMED.items():
                offset = 128 if weights.sum() == 0 and img.dtype == np.uint8 else 0
                borders = BORDERS if index == 0 else ("reflect101",)
                for border in borders:
                    compare(tmp, name, path, img, kernel, weights, None, offset, border)
            for text, weights, divisor, offset in LITERALS:
                for border in ("reflect101", "replicate", "zero") if index == 0 else ("reflect101",):
                    compare(tmp, name, path, img, text, weights, divisor, offset, border)
        check_f32_output(tmp, cases[0][0], cases[0][1], cases[0][2])
        check_threads(tmp, cases[0][1])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
