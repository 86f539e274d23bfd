#!/usr/bin/env python3
"""Seed corpora for the fuzz harnesses, made from the project's samples: small images of every
depth, channel count and compression the readers take, and the ready pipelines plus pipeline
text that reaches every part of the grammar. usage: make-seeds.py SOURCE_DIR OUT_DIR"""
import glob
import io
import os
import sys

import cv2
import numpy as np
from PIL import Image

src, out = sys.argv[1], sys.argv[2]
dirs = {h: os.path.join(out, h) for h in ("pipeline", "png", "tiff", "jpeg", "bands", "stream")}
for d in dirs.values():
    os.makedirs(d, exist_ok=True)


def put(harness, name, data):
    with open(os.path.join(dirs[harness], name), "wb") as f:
        f.write(data)


for path in glob.glob(os.path.join(src, "pipelines", "*.pipe")):
    put("pipeline", os.path.basename(path), open(path, "rb").read())
for i, text in enumerate([
    "grayscale | median radius=2 border=reflect101 | mean radius=3 border=shrink",
    'convolve kernel="1 2 1; 2 4 2; 1 2 1" divisor=16 offset=0.5 border=zero output=f32',
    "entropy radius=3 levels=65536 bins=64 base=2 output=u8 | histogram bins=17 out=h.csv plot=h.png",
    "transpose\n# comment\n\n  median   radius=25 # trailing\nconvolve kernel=sobel-x",
    'grayscale weights=bt709 | convolve kernel="0 -1 0; -1 5 -1; 0 -1 0"',
    "meidan radius=1 | grayscale weigths=average",
]):
    put("pipeline", "text%d.pipe" % i, text.encode())

# The band planner's inputs: 8 bytes of shape and memory limit (fuzz_bands.c), then pipeline text.
headers = [bytes([0, 63, 0, 47, 0, 2, 0, 14]), bytes([16, 0, 16, 0, 4, 0, 1, 2]), bytes([0, 0, 0, 0, 0, 3, 2, 0]),
           bytes([255, 255, 0, 2, 4, 1, 0, 9])]
for i, name in enumerate(sorted(os.listdir(dirs["pipeline"]))):
    text = open(os.path.join(dirs["pipeline"], name), "rb").read()
    put("bands", "b%d_%s" % (i, name), headers[i % len(headers)] + text)

rgb = cv2.imread(os.path.join(src, "samples", "astronaut.png"))[100:116, 180:203]
gray = cv2.cvtColor(rgb, cv2.COLOR_BGR2GRAY)
rgba = np.dstack([rgb, gray])
wide16 = (gray.astype(np.uint16) * 257)


def png(img):
    ok, buf = cv2.imencode(".png", img, [cv2.IMWRITE_PNG_COMPRESSION, 6])
    return buf.tobytes()


def pillow(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, fmt, **kw)
    return b.getvalue()


put("png", "gray8.png", png(gray))
put("png", "rgb8.png", png(rgb))
put("png", "rgba8.png", png(rgba))
put("png", "gray16.png", png(wide16))
put("png", "rgb16.png", png(np.dstack([wide16] * 3)))
put("png", "palette.png", pillow(Image.fromarray(rgb[:, :, ::-1]).convert("P"), "PNG"))
put("png", "bilevel.png", pillow(Image.fromarray(gray).convert("1"), "PNG"))
put("png", "gray_trns.png", pillow(Image.fromarray(gray), "PNG", transparency=17))

tiff_codecs = {"none": 1, "lzw": 5, "deflate": 8, "packbits": 32773}
for name, code in tiff_codecs.items():
    for label, img in (("gray8", gray), ("rgb8", rgb), ("rgba8", rgba), ("gray16", wide16)):
        ok, buf = cv2.imencode(".tif", img, [cv2.IMWRITE_TIFF_COMPRESSION, code])
        put("tiff", "%s_%s.tif" % (label, name), buf.tobytes())
ok, buf = cv2.imencode(".tif", gray.astype(np.float32) / 255.0, [cv2.IMWRITE_TIFF_COMPRESSION, 1])
put("tiff", "float.tif", buf.tobytes())
put("tiff", "palette.tif", pillow(Image.fromarray(rgb[:, :, ::-1]).convert("P"), "TIFF"))
put("tiff", "bilevel.tif", pillow(Image.fromarray(gray).convert("1"), "TIFF"))
put("tiff", "jpeg.tif", pillow(Image.fromarray(rgb[:, :, ::-1]), "TIFF", compression="jpeg"))
put("tiff", "pillow_deflate.tif", pillow(Image.fromarray(gray), "TIFF", compression="tiff_deflate"))

for q in (50, 90):
    ok, buf = cv2.imencode(".jpg", rgb, [cv2.IMWRITE_JPEG_QUALITY, q])
    put("jpeg", "rgb_q%d.jpg" % q, buf.tobytes())
ok, buf = cv2.imencode(".jpg", gray, [cv2.IMWRITE_JPEG_QUALITY, 90])
put("jpeg", "gray.jpg", buf.tobytes())
ok, buf = cv2.imencode(".jpg", rgb, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
put("jpeg", "progressive.jpg", buf.tobytes())
ok, buf = cv2.imencode(".jpg", rgb, [cv2.IMWRITE_JPEG_RST_INTERVAL, 1])
put("jpeg", "restarts.jpg", buf.tobytes())
put("jpeg", "full_chroma.jpg", pillow(Image.fromarray(rgb[:, :, ::-1]), "JPEG", subsampling=0, quality=95))
put("jpeg", "cmyk.jpg", pillow(Image.fromarray(rgb[:, :, ::-1]).convert("CMYK"), "JPEG"))
# The TIFF variants converted on reading: CMYK, YCbCr with subsampling, 12-bit, signed and 32-bit
# integers, several pages (libtiff itself writes what tifffile cannot, see tests/cross/tiffwrite.py).
sys.path.insert(0, os.path.join(src, "tests", "cross"))
import tifffile  # noqa: E402
from tiffwrite import Writer, pack_bits  # noqa: E402


def tifffile_bytes(a, **kw):
    b = io.BytesIO()
    tifffile.imwrite(b, a, **kw)
    return b.getvalue()


cmyk = np.dstack([rgb, gray])
put("tiff", "cmyk8.tif", tifffile_bytes(cmyk, photometric="separated", rowsperstrip=4))
put("tiff", "cmyk16_planar.tif", tifffile_bytes(np.moveaxis(cmyk.astype(np.uint16) * 257, 2, 0),
                                                photometric="separated", planarconfig="separate",
                                                compression="zlib"))
put("tiff", "int16.tif", tifffile_bytes(wide16.astype(np.int16), compression="zlib", predictor=True))
put("tiff", "int32_rgb.tif", tifffile_bytes(rgb.astype(np.int32) - 128, photometric="rgb"))
put("tiff", "uint32.tif", tifffile_bytes(gray.astype(np.uint32) << 20))
put("tiff", "pages.tif", tifffile_bytes(np.stack([gray, gray[::-1]]), photometric="minisblack"))
h, w = gray.shape
seed_dir = os.path.join(out, "tiff")
g12 = gray.astype(np.uint16) << 4
with Writer(os.path.join(seed_dir, "gray12.tif")) as wr:
    wr.page(dict(width=w, length=h, bps=12, spp=1, photometric=1, compression="lzw", rowsperstrip=4, planar=1),
            [pack_bits(g12[y:y + 4], 12).tobytes() for y in range(0, h, 4)])
units = np.concatenate([gray[:h // 2 * 2, :w // 2 * 2].reshape(h // 2, 2, w // 2, 2).transpose(0, 2, 1, 3)
                        .reshape(h // 2, w // 2, 4), rgb[:h // 2 * 2:2, :w // 2 * 2:2, :2]], axis=2)
for name in ("none", "lzw"):
    with Writer(os.path.join(seed_dir, "ycbcr22_%s.tif" % name)) as wr:
        wr.page(dict(width=w // 2 * 2, length=h // 2 * 2, bps=8, spp=3, photometric=6, compression=name,
                     rowsperstrip=4, planar=1), [units[r:r + 2].tobytes() for r in range(0, h // 2, 2)],
                subsampling=(2, 2), refbw=[0, 255, 128, 255, 128, 255])

png_bytes = png(rgb)   # a text chunk with a bad CRC: skipped with a warning
text = b"tEXtComment\0seed"
put("png", "bad_text_crc.png", png_bytes[:33] + len(text[4:]).to_bytes(4, "big") + text + b"\0\0\0\0" + png_bytes[33:])
full = open(os.path.join(dirs["jpeg"], "rgb_q90.jpg"), "rb").read()
put("jpeg", "truncated.jpg", full[:len(full) - 40])

# The streamed readers take any format: every image seed.
for h in ("png", "tiff", "jpeg"):
    for name in os.listdir(dirs[h]):
        put("stream", h + "_" + name, open(os.path.join(dirs[h], name), "rb").read())

print("seeds: %s" % ", ".join("%s %d" % (h, len(os.listdir(d))) for h, d in dirs.items()))
