"""entropy stage against scikit-image rank.entropy on real photographs, through the CLI."""
import os
import sys
import tempfile

import cv2
import numpy as np
from skimage.filters.rank import entropy as sk_entropy
from crosslib import BIN, IMAGES, check, cli, summary


def run(stage, src, dst, *extra):
    return cli(*extra, "-e", stage, src, dst)


def reference(img, radius, levels, bins):
    """Natural-log entropy: rank.entropy (base 2, in-image pixels of the square footprint) of the binned image."""
    binned = img.astype(np.int64) * bins // levels
    # entropy ignores bin labels: renumber the used bins densely so rank.entropy stays fast
    used, dense = np.unique(binned, return_inverse=True)
    binned = dense.reshape(img.shape).astype(np.uint8 if len(used) <= 256 else np.uint16)
    footprint = np.ones((2 * radius + 1, 2 * radius + 1), np.uint8)
    return sk_entropy(binned, footprint) * np.log(2.0)


def compare_f32(tmp, name, img, radius, levels, bins, base):
    src = os.path.join(tmp, name + ".png")
    dst = os.path.join(tmp, name + "_ent.tif")
    cv2.imwrite(src, img)
    stage = f"entropy radius={radius} levels={levels} bins={bins} base={base}"
    r = run(stage, src, dst)
    if r.returncode != 0:
        check(False, f"{name} {stage}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    ours = cv2.imread(dst, cv2.IMREAD_UNCHANGED)
    scale = {"e": 1.0, "2": 1 / np.log(2.0), "10": 1 / np.log(10.0)}[base]
    want = reference(img, radius, levels, bins) * scale
    err = np.abs(ours.astype(np.float64) - want).max() if ours is not None and ours.shape == want.shape else np.inf
    check(err < 1e-5, f"{name} {stage}: max error {err}")
    return ours


def compare_u8(tmp, name, img, radius, bins):
    src = os.path.join(tmp, name + ".png")
    dst = os.path.join(tmp, name + "_ent8.png")
    cv2.imwrite(src, img)
    r = run(f"entropy radius={radius} bins={bins} output=u8", src, dst)
    ours = cv2.imread(dst, cv2.IMREAD_UNCHANGED) if r.returncode == 0 else None
    top = np.log(min(bins, (2 * radius + 1) ** 2))
    want = np.clip(np.floor(reference(img, radius, 256, bins) / top * 255 + 0.5), 0, 255)
    ok = ours is not None and ours.dtype == np.uint8 and np.abs(ours.astype(int) - want).max() <= 1
    check(ok, f"{name} u8 radius={radius} bins={bins}: {r.stderr.strip()}")


def check_threads(tmp, img):
    src = os.path.join(tmp, "threads.png")
    cv2.imwrite(src, img)
    outs = []
    for n in ("1", "2", "3"):
        dst = os.path.join(tmp, f"threads{n}.tif")
        r = run("entropy radius=3 bins=64", src, dst, "--threads", n)
        outs.append(cv2.imread(dst, cv2.IMREAD_UNCHANGED) if r.returncode == 0 else None)
    ok = all(o is not None for o in outs) and all(np.array_equal(outs[0], o) for o in outs[1:])
    check(ok, "threads 1, 2, 3 give different results")


def check_range_error(tmp, img16):
    src = os.path.join(tmp, "sixteen.png")
    cv2.imwrite(src, img16)
    dst = os.path.join(tmp, "sixteen_ent.tif")
    r = run("entropy", src, dst)
    ok = r.returncode != 0 and "is >= levels=256" in r.stderr and "levels=65536" in r.stderr
    check(ok and not os.path.exists(dst), f"16-bit with levels=256: exit {r.returncode}: {r.stderr.strip()}")


def main():
    if not BIN:
        print("SKIP: IMGPIPE_BIN is not set")
        return 77
    images = IMAGES
    camera = cv2.imread(os.path.join(images, "camera.png"), cv2.IMREAD_GRAYSCALE)
    astronaut = cv2.cvtColor(cv2.imread(os.path.join(images, "astronaut.png")), cv2.COLOR_BGR2GRAY)
    coffee = cv2.cvtColor(cv2.imread(os.path.join(images, "coffee.png")), cv2.COLOR_BGR2GRAY)
    if camera is None or astronaut is None or coffee is None:
        print("FAIL: sample images not found in", images)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        compare_f32(tmp, "camera", camera, 2, 256, 256, "2")
        compare_f32(tmp, "camera", camera, 1, 256, 256, "2")
        compare_f32(tmp, "astronaut", astronaut[:301, :257], 3, 256, 256, "2")
        compare_f32(tmp, "coffee", coffee, 2, 256, 16, "e")
        compare_f32(tmp, "coffee", coffee[:199, :311], 5, 256, 32, "10")
        camera16 = camera.astype(np.uint16) * 257
        compare_f32(tmp, "camera16", camera16, 2, 65536, 65536, "2")
        compare_f32(tmp, "camera16", camera16[:200, :131], 2, 65536, 16, "e")
        compare_u8(tmp, "camera", camera, 2, 16)
        check_threads(tmp, astronaut[:131, :173])
        check_range_error(tmp, camera16[:50, :50])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
