"""--fail-on: a file decoded past damage (a JPEG cut short or with a bad Huffman code near its
end, a bad CRC on a PNG ancillary chunk through our decoder and through libpng's, a TIFF whose
strip byte counts libtiff has to work out, read whole and streamed) is decoded by default, with one
warning line naming the file, to the pixels Pillow gives (for JPEG, Pillow told to load truncated
images; a JPEG turned upright by its EXIF orientation as Pillow's exif_transpose turns it); with
--fail-on warning it is refused in one line and nothing is left. Broken files are refused either
way; a TIFF with a tag libtiff does not know decodes without a warning. In a folder the summary
counts the images decoded with warnings."""
import io
import os
import struct
import sys
import tempfile
import zlib

import numpy as np
import tifffile
from PIL import Image, ImageFile, ImageOps
from crosslib import IMAGES, check, cli, require_setup, summary


def messages(res):
    return [line for line in res.stderr.splitlines() if "device:" not in line]


def no_leftovers(folder, what):
    left = [n for n in os.listdir(folder) if n.startswith(".imgpipe-tmp-")]
    check(not left, what + ": temporaries left: %s" % left)


def with_chunk_crc_broken(png_bytes, chunk_type, text):
    """The PNG with a text chunk after IHDR whose CRC is wrong."""
    body = chunk_type + text
    chunk = struct.pack(">I", len(text)) + body + struct.pack(">I", (zlib.crc32(body) + 1) & 0xFFFFFFFF)
    return png_bytes[:33] + chunk + png_bytes[33:]


def damaged_after_image_data(png):
    """A PNG damaged where Pillow does not look once every row is inflated: (what, bytes, words)."""
    idat = png.rindex(b"IDAT") - 4   # the last IDAT
    end = idat + 12 + struct.unpack(">I", png[idat:idat + 4])[0]
    bad_crc = bytearray(png)
    bad_crc[end - 1] ^= 0x20
    return (("no IEND", png[:-12], "the image data is whole"),
            ("cut in the adler32", png[:end - 6], "the image data is whole"),
            ("bad IDAT CRC", bytes(bad_crc), "CRC error"),
            ("broken chunk after the image data", png[:end] + b"\x00\x00\x00\x05t\x01XT" + png[end:], "invalid chunk"))


def make_files(tmp):
    """name -> (path, the pixels Pillow gives, the warning's words); and the broken files."""
    photo = Image.open(os.path.join(IMAGES, "astronaut.png")).convert("RGB").crop((0, 0, 331, 257))
    full = os.path.join(tmp, "full.jpg")
    photo.save(full, quality=90)
    data = open(full, "rb").read()
    files = {}

    cut = os.path.join(tmp, "cut.jpg")
    open(cut, "wb").write(data[:len(data) * 3 // 5])
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    files["truncated JPEG"] = (cut, np.asarray(Image.open(cut).convert("RGB")), "Premature end of JPEG file")
    # The warning of a file read through the pass that turns it upright (options copied inside).
    exif = Image.Exif()
    exif[0x0112] = 6
    oriented = os.path.join(tmp, "oriented.jpg")
    photo.save(oriented, quality=90, exif=exif.tobytes())
    odata = open(oriented, "rb").read()
    cut6 = os.path.join(tmp, "cut6.jpg")
    open(cut6, "wb").write(odata[:len(odata) * 3 // 5])
    upright = np.asarray(ImageOps.exif_transpose(Image.open(cut6)).convert("RGB"))
    check(upright.shape == (331, 257, 3), "Pillow did not turn the oriented JPEG: %s" % (upright.shape,))
    files["truncated JPEG, EXIF orientation 6"] = (cut6, upright, "Premature end of JPEG file")
    ImageFile.LOAD_TRUNCATED_IMAGES = False

    # 64 one-bits (stuffed 0xFF bytes) at 85% of the scan: JPEG never uses an all-ones code
    huff = bytearray(data)
    sos = huff.index(b"\xff\xda")
    start = sos + 2 + struct.unpack(">H", huff[sos + 2:sos + 4])[0]
    at = start + (len(huff) - 2 - start) * 85 // 100
    huff[at:at + 16] = b"\xff\x00" * 8
    bad_code = os.path.join(tmp, "huffman.jpg")
    open(bad_code, "wb").write(bytes(huff))
    files["bad Huffman code"] = (bad_code, np.asarray(Image.open(bad_code).convert("RGB")), "Corrupt JPEG data")

    for label, image in (("RGB PNG", photo), ("palette PNG", photo.quantize(64))):
        good = os.path.join(tmp, "good_%s.png" % label.split()[0].lower())
        image.save(good)
        bad = os.path.join(tmp, "crc_%s.png" % label.split()[0].lower())
        open(bad, "wb").write(with_chunk_crc_broken(open(good, "rb").read(), b"tEXt", b"Comment\0hello"))
        files["bad ancillary CRC, " + label] = (bad, np.asarray(Image.open(good).convert("RGB")), "tEXt: CRC error")

    for label, image in (("RGB PNG", photo), ("palette PNG", photo.quantize(64))):
        png = open(os.path.join(tmp, "good_%s.png" % label.split()[0].lower()), "rb").read()
        want = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        for what, damaged, words in damaged_after_image_data(png):
            path = os.path.join(tmp, "%s_%s.png" % (what.replace(" ", "_"), label.split()[0].lower()))
            open(path, "wb").write(damaged)
            with Image.open(path) as im:   # Pillow decodes each of them whole
                check(np.array_equal(np.asarray(im.convert("RGB")), want), "Pillow does not decode " + path)
            files["%s, %s" % (what, label)] = (path, want, words)

    a = np.random.default_rng(5).integers(0, 256, (19, 23), dtype=np.uint8)
    tif = os.path.join(tmp, "counts.tif")
    tifffile.imwrite(tif, a)
    with tifffile.TiffFile(tif) as t:
        at = t.pages[0].tags["StripByteCounts"].valueoffset
    raw = bytearray(open(tif, "rb").read())
    struct.pack_into("<I", raw, at, 0)
    open(tif, "wb").write(bytes(raw))
    files["TIFF without strip byte counts"] = (tif, a, "StripByteCounts")

    broken = {}
    png = open(os.path.join(tmp, "good_rgb.png"), "rb").read()
    idat = png.index(b"IDAT")
    damaged = bytearray(png)
    damaged[idat + 10] ^= 0x55
    broken["corrupt image data"] = os.path.join(tmp, "idat.png")
    open(broken["corrupt image data"], "wb").write(bytes(damaged))
    broken["JPEG cut in its header"] = os.path.join(tmp, "header.jpg")
    open(broken["JPEG cut in its header"], "wb").write(data[:300])
    broken["TIFF cut short"] = os.path.join(tmp, "short.tif")
    tifffile.imwrite(broken["TIFF cut short"], np.zeros((64, 64), np.uint8))
    raw = open(broken["TIFF cut short"], "rb").read()
    open(broken["TIFF cut short"], "wb").write(raw[:2000])
    return files, broken


def cases(files):
    """Each file read whole; a TIFF also streamed (its own reader, warnings settled band by band)."""
    for name, (path, want, words) in files.items():
        yield name, path, want, words, ()
        if path.endswith(".tif"):
            yield name + ", streamed", path, want, words, ("--stream", "on")


def check_single(tmp, files, broken):
    for name, path, want, words, extra in cases(files):
        out = os.path.join(tmp, "out.png")
        res = cli(*extra, "-e", "transpose | transpose", path, out)
        lines = messages(res)
        check(res.returncode == 0, "%s: exit %d, %s" % (name, res.returncode, lines))
        check(len(lines) == 1 and lines[0].startswith("imgpipe: warning: " + path + ": ") and words in lines[0]
              and "decoded anyway" in lines[0], "%s: want one warning naming the file, got %s" % (name, lines))
        if res.returncode == 0:
            got = np.asarray(Image.open(out))
            check(got.shape == want.shape and np.array_equal(got, want), name + ": not Pillow's pixels")
            os.remove(out)
        if extra:
            check("streamed in bands" in res.stderr, name + ": not streamed: " + res.stderr.strip())
        res = cli(*extra, "--fail-on", "warning", "-e", "transpose | transpose", path, out)
        lines = messages(res)
        check(res.returncode == 1 and len(lines) == 1 and path in lines[0] and words in lines[0]
              and "--fail-on warning" in lines[0], "%s, --fail-on warning: exit %d, %s" % (name, res.returncode, lines))
        check(not os.path.exists(out), name + ", --fail-on warning: an output was left")
        no_leftovers(tmp, name)
    for name, path in broken.items():
        for mode in ("error", "warning"):
            out = os.path.join(tmp, "never.png")
            res = cli("--fail-on", mode, "-e", "transpose", path, out)
            lines = messages(res)
            check(res.returncode == 1 and len(lines) == 1 and "warning" not in lines[0].split(":")[1],
                  "%s, --fail-on %s: exit %d, %s" % (name, mode, res.returncode, lines))
            check(not os.path.exists(out), "%s, --fail-on %s: an output was left" % (name, mode))
    unknown = os.path.join(tmp, "unknown_tag.tif")
    tifffile.imwrite(unknown, np.zeros((5, 7), np.uint8), extratags=[(65000, "s", 0, "private", True)])
    res = cli("-e", "transpose", unknown, os.path.join(tmp, "unknown.png"))
    check(res.returncode == 0 and not messages(res), "TIFF with an unknown tag: %s" % messages(res))


def check_folder(tmp, files, broken):
    folder = os.path.join(tmp, "in")
    os.mkdir(folder)
    for name, (path, _, _) in files.items():
        os.link(path, os.path.join(folder, os.path.basename(path)))
    os.link(broken["corrupt image data"], os.path.join(folder, "idat.png"))
    os.link(os.path.join(tmp, "good_rgb.png"), os.path.join(folder, "good.png"))
    n_warned = len(files)
    for mode, done, failed in (("error", n_warned + 1, 1), ("warning", 1, n_warned + 1)):
        out = os.path.join(tmp, "out_" + mode)
        res = cli("--fail-on", mode, "--jobs", "2", "--format", "png", "-e", "transpose", folder, out)
        lines = messages(res)
        summary_line = [line for line in lines if "succeeded" in line]
        want = "%d succeeded, %d failed" % (done, failed)
        check(res.returncode == 1 and summary_line and want in summary_line[0],
              "folder, --fail-on %s: want '%s', got %s" % (mode, want, summary_line))
        warned = "%d decoded with warnings" % n_warned
        check(bool(summary_line) and (warned in summary_line[0]) == (mode == "error"),
              "folder, --fail-on %s: summary %s (decoded with warnings: %s)" % (mode, summary_line, warned))
        warnings = [line for line in lines if line.startswith("imgpipe: warning:")]
        check(len(warnings) == (n_warned if mode == "error" else 0),
              "folder, --fail-on %s: %d warning lines %s" % (mode, len(warnings), warnings))
        outputs = sorted(os.listdir(out))
        check(len(outputs) == done, "folder, --fail-on %s: outputs %s" % (mode, outputs))


def main():
    require_setup("astronaut.png")
    with tempfile.TemporaryDirectory() as tmp:
        files, broken = make_files(tmp)
        check_single(tmp, files, broken)
        check_folder(tmp, files, broken)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
