"""Cross-check of the median stage on real photographs.

8-bit gray and RGB must equal cv2.medianBlur (replicate borders) at ksize 3, 5, 7, 9, 15;
16-bit and 32-bit float at 3 and 5, the sizes OpenCV supports for them. Reflect101 and zero
borders against scipy.ndimage.median_filter (modes 'mirror' and 'constant'), shrink against
a numpy loop on a crop. Thread counts must not change a single pixel."""
import os
import sys
import tempfile

import cv2
import numpy as np
from scipy import ndimage
from crosslib import BIN, IMAGES, check, run_image as run, summary


def same(got, want):
    return got is not None and got.shape == want.shape and got.dtype == want.dtype and \
        np.array_equal(got, want)


def describe(got, want):
    if got is None:
        return "no output"
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.shape} {got.dtype}, want {want.shape} {want.dtype}"
    diff = np.argwhere(got != want)
    return f"{len(diff)} values differ, first at {tuple(diff[0])}" if len(diff) else "equal"


def write_input(tmp, name, img):
    path = os.path.join(tmp, name)
    if not cv2.imwrite(path, img):
        raise SystemExit(f"cannot write {path}")
    return path, cv2.imread(path, cv2.IMREAD_UNCHANGED)


def photo_inputs(tmp):
    """(name, path, array as read back) for the 8-bit photographs, gray and colour."""
    out = []
    for name in ("camera.png", "astronaut.png", "coffee.png", "chelsea.png"):
        img = cv2.imread(os.path.join(IMAGES, name), cv2.IMREAD_UNCHANGED)
        if img is not None:
            out.append((name,) + write_input(tmp, "in_" + name, img))
    return out


def deep_inputs(tmp):
    """camera as 16-bit with random low bits, and coffee in gray as 32-bit float in [0, 1]."""
    out = []
    camera = cv2.imread(os.path.join(IMAGES, "camera.png"), cv2.IMREAD_GRAYSCALE)
    coffee = cv2.imread(os.path.join(IMAGES, "coffee.png"), cv2.IMREAD_COLOR)
    rng = np.random.default_rng(11)
    if camera is not None:
        deep = camera.astype(np.uint16) * 257 + rng.integers(0, 257, camera.shape, dtype=np.uint16)
        out.append(("camera 16-bit",) + write_input(tmp, "camera16.png", deep))
    if coffee is not None:
        gray = cv2.cvtColor(coffee, cv2.COLOR_BGR2GRAY).astype(np.float32) / 255.0
        gray += rng.random(gray.shape, dtype=np.float32) * np.float32(1e-3)
        out.append(("coffee f32",) + write_input(tmp, "coffee32.tif", gray))
    return out


def shrink_reference(img, r):
    """Lower median of the window cut to the image, pixel by pixel."""
    h, w = img.shape[:2]
    out = np.empty_like(img)
    for y in range(h):
        for x in range(w):
            win = img[max(0, y - r):y + r + 1, max(0, x - r):x + r + 1]
            win = win.reshape(-1, img.shape[2]) if img.ndim == 3 else win.reshape(-1, 1)
            srt = np.sort(win, axis=0)
            out[y, x] = srt[(len(srt) - 1) // 2].reshape(out[y, x].shape)
    return out


def check_opencv(tmp, inputs, ksizes):
    for name, path, img in inputs:
        for k in ksizes:
            got = run(f"median radius={k // 2}", path, os.path.join(tmp, "out.png" if img.dtype != np.float32 else "out.tif"))
            want = cv2.medianBlur(img, k)
            check(same(got, want), f"{name} ksize {k} vs cv2.medianBlur: {describe(got, want)}")


def check_scipy_borders(tmp, name, img):
    crop = img[100:197, 50:181]
    path, crop = write_input(tmp, "crop_" + name.split(".")[0] + ".png", crop)
    size = (1, 1, 1) if crop.ndim == 3 else (1, 1)
    for r in (1, 2, 4, 7):
        fp = np.ones((2 * r + 1, 2 * r + 1) + size[2:], bool)
        for border, mode in (("reflect101", "mirror"), ("zero", "constant"), ("replicate", "nearest")):
            got = run(f"median radius={r} border={border}", path, os.path.join(tmp, "b.png"))
            want = ndimage.median_filter(crop, footprint=fp, mode=mode, cval=0)
            check(same(got, want), f"{name} crop r={r} {border} vs scipy: {describe(got, want)}")
        if r <= 4:
            got = run(f"median radius={r} border=shrink", path, os.path.join(tmp, "s.png"))
            want = shrink_reference(crop, r)
            check(same(got, want), f"{name} crop r={r} shrink: {describe(got, want)}")


def check_threads(tmp, name, path):
    for r in (1, 2, 6):
        outs = [run(f"median radius={r} border=shrink", path, os.path.join(tmp, f"t{t}.png"), threads=t)
                for t in (1, 2, 3)]
        ok = all(o is not None for o in outs) and all(np.array_equal(outs[0], o) for o in outs[1:])
        check(ok, f"{name} r={r}: 1, 2 and 3 threads differ")


def main():
    if not BIN:
        print("SKIP: IMGPIPE_BIN is not set")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        photos = photo_inputs(tmp)
        if not photos:
            print("FAIL: no sample photographs in", IMAGES)
            return 1
        check_opencv(tmp, photos, (3, 5, 7, 9, 15))
        check_opencv(tmp, deep_inputs(tmp), (3, 5))
        for name, _, img in photos[:2]:
            check_scipy_borders(tmp, name, img)
        check_threads(tmp, photos[0][0], photos[0][1])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
