"""Metadata and orientation through imgpipe, with the files made and read back by Pillow.

EXIF orientations 1-8 of JPEG, PNG and TIFF inputs turned upright as Pillow's exif_transpose
turns them (and kept as stored, with the tag, under --no-autorotate); ICC profiles round-tripped
byte for byte from every input format to every output format (one of them large enough for
several JPEG APP2 pieces); EXIF (IFD0, Exif and GPS directories), XMP, PNG text and DPI carried,
all of it dropped by --strip; a grayscale stage dropping an RGB profile; folders as single images."""
import io
import os
import shutil
import sys
import tempfile

import numpy as np
from PIL import Image, ImageCms, ImageOps, PngImagePlugin
from PIL.TiffImagePlugin import IFDRational
from crosslib import check, cli, require_setup, summary

FORMATS = ("jpg", "png", "tif")
IDENTITY = "transpose | transpose"
XMP = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description about="imgpipe test"/></rdf:RDF></x:xmpmeta>'


def srgb_profile():
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def large_profile():
    """An RGB profile of 150000 bytes (three JPEG APP2 pieces): the sRGB header, seeded bytes."""
    head = bytearray(srgb_profile()[:128])
    head[0:4] = (150000).to_bytes(4, "big")
    body = np.random.default_rng(3).integers(0, 256, 150000 - 128, dtype=np.uint8).tobytes()
    return bytes(head) + body


def exif_bytes(orientation=1):
    exif = Image.Exif()
    exif[0x010F] = "TestMake"
    exif[0x0110] = "TestModel"
    exif[0x0132] = "2021:02:03 04:05:06"
    if orientation:
        exif[0x0112] = orientation
    exif[0x8769] = {0x9003: "2020:01:02 03:04:05", 0x829A: IFDRational(1, 250), 0x829D: IFDRational(28, 10),
                    0x8827: 400}
    exif[0x8825] = {1: "N", 2: (IFDRational(52, 1), IFDRational(30, 1), IFDRational(7, 2))}
    return exif.tobytes()


def insert_jpeg_xmp(path):
    """Pillow 9 writes no XMP into JPEG: the APP1 segment goes in after SOI by hand."""
    data = open(path, "rb").read()
    payload = b"http://ns.adobe.com/xap/1.0/\x00" + XMP
    segment = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    open(path, "wb").write(data[:2] + segment + data[2:])


def save(pixels, path, icc=None, exif=None, dpi=None, xmp=False, text=None):
    """Writes pixels with the given metadata in the format of path's extension."""
    im = Image.fromarray(pixels)
    kw = {}
    if icc:
        kw["icc_profile"] = icc
    if exif:
        kw["exif"] = exif
    if dpi:
        kw["dpi"] = dpi
    ext = path.rsplit(".", 1)[1]
    if ext == "jpg":
        im.save(path, quality=95, **kw)
        if xmp:
            insert_jpeg_xmp(path)
    elif ext == "png":
        info = PngImagePlugin.PngInfo()
        for kind, key, value in text or []:
            if kind == "iTXt":
                info.add_itxt(key, value, lang="fr", tkey="Clef", zip=True)
            else:
                info.add_text(key, value, zip=kind == "zTXt")
        if xmp:
            info.add_itxt("XML:com.adobe.xmp", XMP.decode())
        im.save(path, pnginfo=info, **kw)
    else:
        if xmp:
            # Pillow takes XMP (tag 700) for TIFF among the EXIF tags of IFD0.
            exif = Image.Exif()
            exif.load(kw.pop("exif", b"") or Image.Exif().tobytes())
            exif[700] = XMP
            kw["exif"] = exif
        im.save(path, **kw)


def run(*args):
    res = cli("-q", *args)
    if res.returncode != 0:
        print("imgpipe failed:", args, res.stderr.strip())
    return res.returncode == 0


def pixels_of(path):
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def xmp_of(path):
    im = Image.open(path)
    if path.endswith(".jpg"):
        prefix = b"http://ns.adobe.com/xap/1.0/\x00"
        found = [c[len(prefix):] for s, c in im.applist if s == "APP1" and c.startswith(prefix)]
        return found[0] if found else None
    if path.endswith(".png"):
        value = im.info.get("XML:com.adobe.xmp")
        return value.encode() if value else None
    value = im.tag_v2.get(700)
    return bytes(value) if value is not None else None


def exif_summary(path):
    """IFD0's make, model and date, and the Exif and GPS directories, as Pillow reads them."""
    exif = Image.open(path).getexif()
    ifd0 = {tag: exif.get(tag) for tag in (0x010F, 0x0110, 0x0132)}
    return ifd0, dict(exif.get_ifd(0x8769)), dict(exif.get_ifd(0x8825))


def orientation_tag(path):
    return Image.open(path).getexif().get(0x0112)


def test_orientations(tmp, rng):
    stored = rng.integers(0, 256, (17, 29, 3), dtype=np.uint8)
    for o in range(1, 9):
        png_ref = os.path.join(tmp, "ref%d.png" % o)
        save(stored, png_ref, exif=exif_bytes(o))
        upright = np.asarray(ImageOps.exif_transpose(Image.open(png_ref))).astype(int)
        for fmt in FORMATS:
            src = os.path.join(tmp, "o%d.%s" % (o, fmt))
            save(stored, src, exif=exif_bytes(o))
            # JPEG is compared with Pillow's own decoding of the file (both libjpeg-turbo).
            want = upright if fmt != "jpg" else np.asarray(ImageOps.exif_transpose(Image.open(src))).astype(int)
            as_stored = stored.astype(int) if fmt != "jpg" else pixels_of(src)
            for out_fmt in ("png", "jpg", "tif"):
                out = os.path.join(tmp, "o%d_%s.%s" % (o, fmt, out_fmt))
                if not run("-e", IDENTITY, src, out):
                    check(False, "orientation %d %s -> %s ran" % (o, fmt, out_fmt))
                    continue
                got = pixels_of(out)
                tol = 0 if out_fmt != "jpg" else 40
                same = got.shape == want.shape and np.abs(got - want).max() <= tol
                check(same, "orientation %d %s -> %s: upright as exif_transpose (shape %s, want %s)"
                      % (o, fmt, out_fmt, got.shape, want.shape))
                tag = orientation_tag(out)
                check(tag in (None, 1), "orientation %d %s -> %s: output tagged %s, not upright" % (o, fmt, out_fmt, tag))
            out = os.path.join(tmp, "o%d_%s_stored.png" % (o, fmt))
            if run("--no-autorotate", "-e", IDENTITY, src, out):
                got = pixels_of(out)
                check(got.shape == as_stored.shape and np.abs(got - as_stored).max() == 0,
                      "orientation %d %s --no-autorotate: stored pixels" % (o, fmt))
                check(orientation_tag(out) == o or o == 1,
                      "orientation %d %s --no-autorotate: tag kept (%s)" % (o, fmt, orientation_tag(out)))
            out = os.path.join(tmp, "o%d_%s_stored.tif" % (o, fmt))
            if run("--no-autorotate", "-e", IDENTITY, src, out):
                tag = Image.open(out).tag_v2.get(0x0112)
                check(tag == o or (o == 1 and tag is None), "orientation %d %s --no-autorotate -> TIFF tag %s" % (o, fmt, tag))


def test_profiles(tmp, rng):
    pixels = rng.integers(0, 256, (23, 31, 3), dtype=np.uint8)
    for name, icc in (("srgb", srgb_profile()), ("large", large_profile())):
        for fmt in FORMATS:
            src = os.path.join(tmp, "icc_%s.%s" % (name, fmt))
            save(pixels, src, icc=icc)
            for out_fmt in FORMATS:
                out = os.path.join(tmp, "icc_%s_%s.%s" % (name, fmt, out_fmt))
                if run("-e", IDENTITY, src, out):
                    got = Image.open(out).info.get("icc_profile")
                    check(got == icc, "%s profile %s -> %s byte for byte (%s bytes, want %d)"
                          % (name, fmt, out_fmt, len(got) if got else None, len(icc)))
            gray = os.path.join(tmp, "icc_%s_%s_gray.png" % (name, fmt))
            if run("-e", "grayscale", src, gray):
                check("icc_profile" not in Image.open(gray).info, "%s: grayscale drops the RGB profile" % fmt)


def test_exif_xmp_dpi(tmp, rng):
    pixels = rng.integers(0, 256, (19, 27, 3), dtype=np.uint8)
    text = [("tEXt", "Title", "plain"), ("zTXt", "Comment", "squeezed " * 20), ("iTXt", "Author", "\u00e9crivain")]
    for fmt in FORMATS:
        src = os.path.join(tmp, "exif.%s" % fmt)
        save(pixels, src, icc=srgb_profile(), exif=exif_bytes(1), dpi=(300, 150), xmp=True, text=text)
        want = exif_summary(src)
        check(want[0][0x010F] == "TestMake" and want[1].get(0x829A) == 0.004 and want[2].get(1) == "N",
              "%s input holds the EXIF made for it: %s" % (fmt, want))
        for out_fmt in FORMATS:
            out = os.path.join(tmp, "exif_%s.%s" % (fmt, out_fmt))
            if not run("-e", IDENTITY, src, out):
                check(False, "%s -> %s ran" % (fmt, out_fmt))
                continue
            check(exif_summary(out) == want, "%s -> %s: EXIF kept: %s" % (fmt, out_fmt, exif_summary(out)))
            check(xmp_of(out) == XMP, "%s -> %s: XMP kept: %r" % (fmt, out_fmt, xmp_of(out)))
            # PNG holds whole pixels per metre: 150 dpi is 5906, read back as 150.012.
            dpi = Image.open(out).info.get("dpi")
            check(dpi is not None and abs(dpi[0] - 300) < 0.02 and abs(dpi[1] - 150) < 0.02,
                  "%s -> %s: 300 x 150 dpi carried: %s" % (fmt, out_fmt, dpi))
            if fmt == "png" and out_fmt == "png":
                got = Image.open(out).text
                check(all(got.get(k) == v for _, k, v in text), "PNG text chunks kept: %s" % got)
            stripped = os.path.join(tmp, "strip_%s.%s" % (fmt, out_fmt))
            if run("--strip", "-e", IDENTITY, src, stripped):
                im = Image.open(stripped)
                # Pillow gives a TIFF without resolution tags 1 x 1 dpi.
                left = [k for k in ("icc_profile", "exif", "dpi", "xmp", "Title", "XML:com.adobe.xmp") if k in im.info
                        and not (k == "dpi" and out_fmt == "tif" and 282 not in im.tag_v2)]
                left += ["XMP"] if xmp_of(stripped) else []
                check(not left and not im.getexif().get(0x010F), "%s -> %s --strip: left %s" % (fmt, out_fmt, left))
    # A turned image has its resolutions exchanged with its sides.
    src = os.path.join(tmp, "dpi6.jpg")
    save(pixels, src, exif=exif_bytes(6), dpi=(600, 300))
    out = os.path.join(tmp, "dpi6.tif")
    if run("-e", IDENTITY, src, out):
        check(Image.open(out).info.get("dpi") == (300.0, 600.0), "orientation 6: dpi %s" % (Image.open(out).info.get("dpi"),))


def test_folder(tmp, rng):
    """Folders carry metadata and orientation as single images do, and --strip drops it there too."""
    pixels = rng.integers(0, 256, (13, 21, 3), dtype=np.uint8)
    src_dir = os.path.join(tmp, "folder_in")
    os.makedirs(src_dir)
    icc = srgb_profile()
    for fmt in FORMATS:
        save(pixels, os.path.join(src_dir, "a_%s.%s" % (fmt, fmt)), icc=icc, exif=exif_bytes(6), dpi=(200, 200))
    for strip in (False, True):
        out_dir = os.path.join(tmp, "folder_out_%d" % strip)
        args = (["--strip"] if strip else []) + ["-e", IDENTITY, "--format", "png", src_dir, out_dir]
        if not run(*args):
            check(False, "folder run")
            continue
        for fmt in FORMATS:
            out = os.path.join(out_dir, "a_%s.png" % fmt)
            src = os.path.join(src_dir, "a_%s.%s" % (fmt, fmt))
            stored = pixels_of(src) if fmt == "jpg" else pixels.astype(int)
            upright = np.rot90(stored, -1)
            got = pixels_of(out)
            check(got.shape == upright.shape and np.abs(got - upright).max() == 0, "folder %s: upright" % fmt)
            im = Image.open(out)
            if strip:
                check("icc_profile" not in im.info and not im.getexif().get(0x010F), "folder %s --strip: nothing kept" % fmt)
            else:
                check(im.info.get("icc_profile") == icc and im.getexif().get(0x010F) == "TestMake" and
                      im.getexif().get(0x0112) in (None, 1), "folder %s: profile and EXIF kept, tagged upright" % fmt)


def main():
    require_setup()
    tmp = tempfile.mkdtemp(prefix="imgpipe-meta-")
    rng = np.random.default_rng(2024)
    try:
        test_orientations(tmp, rng)
        test_profiles(tmp, rng)
        test_exif_xmp_dpi(tmp, rng)
        test_folder(tmp, rng)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
