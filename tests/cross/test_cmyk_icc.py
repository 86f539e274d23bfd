"""CMYK converted through its embedded ICC profile with lcms2 (issue 12, item 3): TIFF at 8 and
16 bits, contiguous and planar, with an alpha extra sample, and JPEG (Adobe's inverted inks, the
profile in several APP2 pieces), each carrying a CMYK profile made here whose table has red and
blue exchanged, so that following the profile and following the plain formula give different
colours. imgpipe's RGB must be Pillow's ImageCms conversion through the same profile (perceptual
intent, lcms2 too), and far from the plain formula; the output carries no CMYK profile, and no
warning is printed. A file whose profile is not CMYK is converted by the formula, with one
warning, and --fail-on warning does not refuse it for that. Exits 77 without lcms2."""
import io
import os
import subprocess
import sys
import tempfile

import numpy as np
import tifffile
from PIL import Image, ImageCms
from crosslib import check, cli, require_setup, summary

WRITER = os.environ.get("IMGPIPE_CMYK_PROFILE_WRITE")
SIZES = ((1, 1), (7, 1), (23, 37))   # (height, width)


def profile(tmp):
    path = os.path.join(tmp, "swapped.icc")
    subprocess.run([WRITER, "swapped", path], check=True)
    return open(path, "rb").read()


def icc_tag(icc):
    """TIFF's InterColorProfile tag (34675, undefined bytes) for tifffile."""
    return (34675, 7, len(icc), icc, True)


def through_pillow(cmyk8, icc):
    """Pillow's ImageCms conversion of 8-bit inks (0 = no ink) to sRGB through icc."""
    im = Image.frombytes("CMYK", (cmyk8.shape[1], cmyk8.shape[0]), np.ascontiguousarray(cmyk8).tobytes())
    out = ImageCms.profileToProfile(im, ImageCms.ImageCmsProfile(io.BytesIO(icc)), ImageCms.createProfile("sRGB"),
                                    renderingIntent=ImageCms.Intent.PERCEPTUAL, outputMode="RGB")
    return np.asarray(out).astype(np.int64)


def plain(cmyk8):
    k = 255 - cmyk8[..., 3:4].astype(np.int64)
    return k - (cmyk8[..., :3].astype(np.int64) * k + 127) // 255


def run(tmp, src, *extra):
    out = os.path.join(tmp, "out.tif")
    res = cli(*extra, "--tiff-compression", "none", "-e", "transpose | transpose", src, out)
    lines = [line for line in res.stderr.splitlines() if "device:" not in line]
    if res.returncode != 0:
        check(False, "%s: exit %d, %s" % (src, res.returncode, lines))
        return None, lines, None
    with tifffile.TiffFile(out) as t:
        page = t.pages[0]
        icc = page.tags.get("InterColorProfile")
        return page.asarray().reshape(page.imagelength, page.imagewidth, -1), lines, icc


def compare(name, got, lines, out_icc, want, tolerance):
    if got is None:
        return
    diff = np.abs(got[..., :3].astype(np.int64) - want).max() if got.shape[:2] == want.shape[:2] else None
    check(diff is not None and diff <= tolerance, "%s: %s against Pillow's ImageCms: max difference %s (allowed %d)"
          % (name, got.shape, diff, tolerance))
    check(not lines, "%s: messages %s" % (name, lines))
    check(out_icc is None, "%s: the output carries the CMYK profile" % name)


def check_tiff(tmp, icc, rng):
    for h, w in SIZES:
        for bits in (8, 16):
            for planar in (False, True):
                for alpha in (False, True):
                    inks = rng.integers(0, 1 << bits, (h, w, 5 if alpha else 4)).astype("uint%d" % bits)
                    src = os.path.join(tmp, "cmyk.tif")
                    tifffile.imwrite(src, np.moveaxis(inks, 2, 0) if planar else inks, photometric="separated",
                                     planarconfig="separate" if planar else "contig", extratags=[icc_tag(icc)],
                                     extrasamples=[2] if alpha else None, compression="zlib")
                    name = "TIFF CMYK %d-bit %s%s %dx%d" % (bits, "planar" if planar else "contiguous",
                                                            " + alpha" if alpha else "", w, h)
                    got, lines, out_icc = run(tmp, src)
                    high = (inks >> 8 if bits == 16 else inks).astype(np.uint8)
                    want = through_pillow(high[..., :4], icc)
                    # 16-bit: lcms2 on all 16 bits against Pillow on the high bytes
                    compare(name, None if got is None else (got >> 8 if bits == 16 else got), lines, out_icc, want,
                            0 if bits == 8 else 2)
                    if got is not None and h * w > 100:
                        far = np.abs((got >> 8 if bits == 16 else got)[..., :3].astype(np.int64) - plain(high)).max()
                        check(far > 64, name + ": close to the plain formula: the profile was not used")
                    if got is not None and alpha:
                        check(np.array_equal(got[..., 3], inks[..., 4]), name + ": alpha not kept")


def check_jpeg(tmp, icc, rng):
    for h, w in SIZES:
        inks = rng.integers(0, 256, (h, w, 4)).astype(np.uint8)
        src = os.path.join(tmp, "cmyk.jpg")
        Image.frombytes("CMYK", (w, h), inks.tobytes()).save(src, quality=95, icc_profile=icc)
        with Image.open(src) as im:
            decoded = np.asarray(im)   # Pillow's inks after JPEG (0 = no ink)
        name = "JPEG CMYK %dx%d" % (w, h)
        got, lines, out_icc = run(tmp, src)
        compare(name, got, lines, out_icc, through_pillow(decoded, icc), 0)
        # a streamed run reads such a file whole (the profile needs every row): the same pixels
        outs = [os.path.join(tmp, "s%s.tif" % mode) for mode in ("on", "off")]
        for mode, out in zip(("on", "off"), outs):
            cli("--stream", mode, "--tiff-compression", "none", "-e", "median", src, out)
        check(os.path.exists(outs[0]) and open(outs[0], "rb").read() == open(outs[1], "rb").read(),
              name + ": streamed run differs from the whole-image run")


def check_not_cmyk_profile(tmp, rng):
    """An sRGB profile on CMYK inks: the plain formula, one warning, not refused under --fail-on warning."""
    inks = rng.integers(0, 256, (9, 11, 4)).astype(np.uint8)
    src = os.path.join(tmp, "wrong.tif")
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    tifffile.imwrite(src, inks, photometric="separated", extratags=[icc_tag(srgb)])
    for extra in ((), ("--fail-on", "warning")):
        got, lines, _ = run(tmp, src, *extra)
        name = "CMYK with an sRGB profile %s" % " ".join(extra)
        if got is not None:
            check(np.array_equal(got.astype(np.int64), plain(inks)), name + ": not the plain formula")
        check(len(lines) == 1 and "warning" in lines[0] and "profile" in lines[0], "%s: messages %s" % (name, lines))


def main():
    require_setup()
    if not WRITER:
        print("SKIP: built without lcms2: CMYK is converted by the plain formula")
        return 77
    rng = np.random.default_rng(1212)
    with tempfile.TemporaryDirectory() as tmp:
        icc = profile(tmp)
        check_tiff(tmp, icc, rng)
        check_jpeg(tmp, icc, rng)
        check_not_cmyk_profile(tmp, rng)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
