"""CMYK and YCCK JPEG decoded to RGB exactly as Pillow decodes them (both take 4-component JPEG
with Adobe's inverted inks and apply k - round(ink * k / 255), k = 255 - K): files written by
libjpeg (tools/jpeg_cmyk_write: YCCK, CMYK with and without the Adobe marker) and by Pillow, odd
sizes, and close to the image the inks were made from."""
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image
from crosslib import check, cli, require_setup, summary

WRITER = os.environ.get("IMGPIPE_JPEG_CMYK_WRITE")
SIZES = ((1, 1), (1, 17), (23, 37), (64, 131))   # (height, width)


def smooth_inks(h, w, seed):
    """Inks that vary slowly (so JPEG keeps them close): C, M, Y, K in 0..255, 0 = no ink."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = [np.sin(xx / 9.0 + k) * np.cos(yy / 7.0 - k) for k in range(4)]
    inks = np.dstack([(b + 1) * 110 + rng.integers(0, 8, (h, w)) for b in base])
    return np.clip(inks, 0, 255).astype(np.uint8)


def rgb_of_inks(inks):
    c = inks.astype(np.int64)
    k = 255 - c[..., 3:4]
    return k - (c[..., :3] * k + 127) // 255


def write_with_libjpeg(tmp, inks, colour, marker):
    """Stored as Adobe stores CMYK, 255 - ink (what Pillow and imgpipe expect with or without the marker)."""
    raw, out = os.path.join(tmp, "inks.raw"), os.path.join(tmp, "%s_%s.jpg" % (colour, marker))
    (255 - inks).tofile(raw)
    h, w = inks.shape[:2]
    res = subprocess.run([WRITER, str(w), str(h), colour, marker, "95", raw, out], capture_output=True, text=True)
    check(res.returncode == 0, "jpeg_cmyk_write %s %s: %s" % (colour, marker, res.stderr.strip()))
    return out


def write_with_pillow(tmp, inks):
    out = os.path.join(tmp, "pillow_cmyk.jpg")
    Image.fromarray(inks, "CMYK").save(out, quality=95)
    return out


def check_file(tmp, path, inks, name):
    with Image.open(path) as im:
        check(im.mode == "CMYK", "%s: Pillow reads mode %s" % (name, im.mode))
        want = np.asarray(im.convert("RGB"))
    out = os.path.join(tmp, "out.png")
    res = cli("-e", "transpose | transpose", path, out)
    check(res.returncode == 0, "%s: %s" % (name, res.stderr.strip()))
    if res.returncode != 0:
        return
    got = np.asarray(Image.open(out))
    same = got.shape == want.shape and np.array_equal(got, want)
    diff = np.abs(got.astype(int) - want.astype(int)).max() if got.shape == want.shape else None
    check(same, "%s: %s against Pillow's %s, max difference %s" % (name, got.shape, want.shape, diff))
    # The inks themselves through the same formula: JPEG's loss only.
    err = np.abs(got.astype(float) - rgb_of_inks(inks)).mean()
    check(err < 4, "%s: mean difference %.2f from the RGB of the inks" % (name, err))


def main():
    require_setup()
    if not WRITER or not os.path.exists(WRITER):
        print("FAIL: IMGPIPE_JPEG_CMYK_WRITE does not name the built jpeg_cmyk_write")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for i, (h, w) in enumerate(SIZES):
            inks = smooth_inks(h, w, i)
            for colour, marker in (("ycck", "adobe"), ("cmyk", "adobe"), ("cmyk", "noadobe")):
                path = write_with_libjpeg(tmp, inks, colour, marker)
                check_file(tmp, path, inks, "%s %s %dx%d" % (colour, marker, w, h))
            check_file(tmp, write_with_pillow(tmp, inks), inks, "Pillow's CMYK %dx%d" % (w, h))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
