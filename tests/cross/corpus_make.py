"""The conformance corpus of test_corpus.py, written at test time into a folder: PNG by a writer
here (every colour type and bit depth, tRNS, Adam7, every row filter, split and empty IDATs,
text and colour chunks), TIFF by tifffile, libtiff (tiffwrite.py) and Pillow, JPEG by Pillow,
OpenCV and libjpeg (tools/jpeg_variant_write.c). Each entry: (file name, JPEG tolerance, the
samples imgpipe must give as (h, w, c), or None where only Pillow is the reference)."""
import os
import struct
import subprocess
import zlib

import cv2
import numpy as np
import tifffile
from PIL import Image, ImageCms
from tiffwrite import Writer, pack_bits

ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_raw_rows(a, depth):
    """(h, w, c) samples to their bytes, a row of the image per row."""
    h, w, c = a.shape
    if depth < 8:
        return pack_bits(a[..., 0], depth)
    dtype = ">u2" if depth == 16 else np.uint8
    return np.frombuffer(a.astype(dtype).tobytes(), np.uint8).reshape(h, -1)


def png_filtered(raw, bpp, rng):
    """Each row behind a filter type drawn from rng (0 to 4), encoded from the raw bytes."""
    out = bytearray()
    prev = np.zeros(raw.shape[1], np.int32)
    for row in raw.astype(np.int32):
        left, upleft = np.zeros_like(row), np.zeros_like(row)
        left[bpp:], upleft[bpp:] = row[:-bpp], prev[:-bpp]
        kind = int(rng.integers(0, 5))
        p = left + prev - upleft
        pa, pb, pc = np.abs(p - left), np.abs(p - prev), np.abs(p - upleft)
        paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
        pred = (np.zeros_like(row), left, prev, (left + prev) // 2, paeth)[kind]
        out += bytes([kind]) + ((row - pred) & 0xFF).astype(np.uint8).tobytes()
        prev = row
    return bytes(out)


def png_bytes(a, ctype, depth, rng, interlace=False, plte=None, trns=None, idats=1, empty_idats=False,
              early=(), late=()):
    """A PNG of samples a (h, w, c); early chunks go before PLTE, late ones after the IDATs."""
    h, w, c = a.shape
    bpp = max(1, c * depth // 8)
    if interlace:
        parts = [a[ys::dy, xs::dx] for xs, ys, dx, dy in ADAM7]
        data = b"".join(png_filtered(png_raw_rows(p, depth), bpp, rng) for p in parts if p.size)
    else:
        data = png_filtered(png_raw_rows(a, depth), bpp, rng)
    z = zlib.compress(data, 6)
    cuts = sorted(set([0, len(z)] + [len(z) * i // idats for i in range(1, idats)]))
    pieces = [z[s:e] for s, e in zip(cuts, cuts[1:])]
    if empty_idats:
        pieces = [b""] + pieces[:1] + [b""] + pieces[1:] + [b""]
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, int(interlace)))
    out += b"".join(png_chunk(k, d) for k, d in early)
    if plte is not None:
        out += png_chunk(b"PLTE", plte.astype(np.uint8).tobytes())
    if trns is not None:
        out += png_chunk(b"tRNS", trns)
    out += b"".join(png_chunk(b"IDAT", p) for p in pieces)
    out += b"".join(png_chunk(k, d) for k, d in late) + png_chunk(b"IEND", b"")
    return out


COLOUR_CHUNKS = ((b"gAMA", struct.pack(">I", 45455)), (b"cHRM", struct.pack(">8I", 31270, 32900, 64000, 33000,
                                                                              30000, 60000, 15000, 6000)),
                 (b"sRGB", b"\x00"), (b"pHYs", struct.pack(">IIB", 2835, 2835, 1)))
TEXT_CHUNKS = ((b"tEXt", b"Title\x00corpus"), (b"zTXt", b"Comment\x00\x00" + zlib.compress(b"zipped text")),
               (b"iTXt", b"Author\x00\x00\x00en\x00Autor\x00imgpipe"))


def png_case(rng, kind, depth, h, w, interlace, variant):
    """(bytes, the samples imgpipe gives) for one colour type, depth and size."""
    top = (1 << depth) - 1
    chans = dict(gray=1, rgb=3, palette=1, ga=2, rgba=4, gray_trns=1, rgb_trns=3, palette_trns=1)[kind]
    a = rng.integers(0, top + 1, (h, w, chans))
    ctype = dict(gray=0, gray_trns=0, rgb=2, rgb_trns=2, palette=3, palette_trns=3, ga=4, rgba=6)[kind]
    plte = trns = None
    scale = 255 // top if depth < 8 else 1
    want = a * scale
    if kind.startswith("palette"):
        # "idats" files also hold indices past a short PLTE: Pillow pads its palette with gray (i, i, i)
        entries = max(1, (top + 1) // 2) if variant == "idats" else min(top + 1, 200)
        if variant != "idats":
            a %= entries
        plte = rng.integers(0, 256, (entries, 3))
        padded = np.concatenate([plte, np.repeat(np.arange(entries, top + 1)[:, None], 3, axis=1)])
        want = padded[a[..., 0]]
        if kind == "palette_trns":
            alpha = rng.integers(0, 256, max(1, entries // 2))
            trns = alpha.astype(np.uint8).tobytes()
            full = np.full(top + 1, 255)
            full[:alpha.size] = alpha
            want = np.dstack([want, full[a[..., 0]]])
    elif kind.endswith("trns"):
        key = a[0, 0].copy()
        a[rng.random((h, w)) < 0.3] = key
        trns = struct.pack(">%dH" % chans, *[int(v) for v in key])
        alpha = np.where((a == key).all(axis=2), 0, 255 if depth < 16 else 65535)
        want = np.dstack([a * scale, alpha])
    extra = dict(early=COLOUR_CHUNKS + TEXT_CHUNKS[:1], late=TEXT_CHUNKS[1:]) if variant == "chunks" else {}
    data = png_bytes(a, ctype, depth, rng, interlace, plte, trns, idats=3 if variant == "idats" else 1,
                     empty_idats=variant == "idats", **extra)
    return data, want


PNG_KINDS = (("gray", (1, 2, 4, 8, 16)), ("rgb", (8, 16)), ("palette", (1, 2, 4, 8)), ("palette_trns", (1, 2, 4, 8)),
             ("ga", (8, 16)), ("rgba", (8, 16)), ("gray_trns", (2, 8, 16)), ("rgb_trns", (8, 16)))
PNG_SIZES = ((1, 1), (1, 13), (11, 1), (17, 29))   # (height, width)


def make_png(folder, rng, add):
    for kind, depths in PNG_KINDS:
        for depth in depths:
            for n, (h, w) in enumerate(PNG_SIZES):
                for interlace in (False, True):
                    variant = ("plain", "idats", "chunks", "plain")[n]
                    data, want = png_case(rng, kind, depth, h, w, interlace, variant)
                    name = "png_%s%d_%dx%d%s_%s.png" % (kind, depth, w, h, "_adam7" if interlace else "", variant)
                    open(os.path.join(folder, name), "wb").write(data)
                    add(name, 0, want)


def unpremultiplied(a, top):
    """Associated alpha divided out as Pillow does it for 8 bits: c * top // alpha clipped, 0 where alpha is 0."""
    alpha = a[..., -1:].astype(np.int64)
    colour = np.where(alpha == 0, 0, np.minimum(top, a[..., :-1].astype(np.int64) * top // np.maximum(alpha, 1)))
    return np.dstack([colour, alpha])


def tifffile_cases(rng):
    """(name, array, tifffile keywords): sample formats, layouts, byte orders, BigTIFF."""
    layouts = (("strips", dict(rowsperstrip=3)),
               ("tiles_zlib_pred_be", dict(tile=(16, 16), compression="zlib", predictor=True, byteorder=">")),
               ("bigtiff_zlib", dict(rowsperstrip=5, compression="zlib", bigtiff=True)),
               ("bigtiff_be_pred", dict(rowsperstrip=7, compression="zlib", predictor=True, byteorder=">",
                                        bigtiff=True)))
    for dtype in ("uint8", "uint16", "uint32", "int8", "int16", "int32", "float32", "float64"):
        for spp in (1, 3):
            for label, kw in layouts:
                for planar in ((False, True) if spp == 3 else (False,)):
                    for h, w in ((1, 1), (19, 37)) if label == "strips" else ((19, 37),):
                        shape = (h, w, spp) if spp > 1 else (h, w)
                        if dtype.startswith("float"):
                            a = rng.normal(0, 1000, shape).astype(dtype)
                        else:
                            info = np.iinfo(dtype)
                            a = rng.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True).astype(dtype)
                        opts = dict(kw, photometric="rgb" if spp == 3 else "minisblack")
                        if planar:
                            opts["planarconfig"] = "separate"
                        if "predictor" in opts and dtype.startswith("float"):
                            opts.pop("predictor")
                        yield ("tif_%s_x%d_%s%s_%dx%d.tif" % (dtype, spp, label, "_planar" if planar else "", w, h),
                               np.moveaxis(a, 2, 0) if planar else a, opts, a)
    for dtype in ("uint8", "uint16"):
        top = np.iinfo(dtype).max
        for spp, extra in ((2, 2), (4, 1), (4, 2), (4, 0)):
            a = rng.integers(0, top, (23, 31, spp), endpoint=True).astype(dtype)
            a[0, :3, -1] = (0, top, 1)   # alpha 0, full and 1 among the random ones
            yield ("tif_%s_x%d_extra%d.tif" % (dtype, spp, extra), a,
                   dict(photometric="rgb" if spp == 4 else "minisblack", extrasamples=[extra]),
                   unpremultiplied(a, top) if extra == 1 else a)
        a = rng.integers(0, top, (23, 31), endpoint=True).astype(dtype)
        yield "tif_%s_miniswhite.tif" % dtype, a, dict(photometric="miniswhite"), top - a
    a = rng.random((23, 31, 4)).astype(np.float32)
    a[0, 0, 3] = 0
    straight = np.dstack([np.where(a[..., 3:] == 0, 0, a[..., :3] / np.where(a[..., 3:] == 0, 1, a[..., 3:])),
                          a[..., 3]]).astype(np.float32)
    yield "tif_float32_x4_extra1.tif", a, dict(photometric="rgb", extrasamples=[1]), straight


def libtiff_blocks(a, tiled, planar, rows=4, tile=16):
    """The strips (rows at a time) or tiles (tile x tile, padded) of a (h, w, c), plane after plane if planar."""
    planes = [a[..., p:p + 1] for p in range(a.shape[2])] if planar else [a]
    blocks = []
    for p in planes:
        if not tiled:
            blocks += [p[y:y + rows].tobytes() for y in range(0, p.shape[0], rows)]
            continue
        for ty in range(0, p.shape[0], tile):
            for tx in range(0, p.shape[1], tile):
                block = np.zeros((tile, tile, p.shape[2]), p.dtype)
                part = p[ty:ty + tile, tx:tx + tile]
                block[:part.shape[0], :part.shape[1]] = part
                blocks.append(block.tobytes())
    return blocks


def make_libtiff(folder, rng, add):
    """Every compression libtiff has, predictors 2 and 3, strips and tiles, planar, both byte orders."""
    kinds = (("u8rgb", np.uint8, 3), ("u16gray", np.uint16, 1), ("f32gray", np.float32, 1), ("u8gray", np.uint8, 1),
             ("f32rgb", np.float32, 3))
    for label, dtype, spp in kinds:
        h, w = 21, 35
        if dtype == np.float32:
            a = rng.normal(0, 100, (h, w, spp)).astype(dtype)
        else:
            a = rng.integers(0, np.iinfo(dtype).max, (h, w, spp), endpoint=True).astype(dtype)
        comps = ["none", "lzw", "deflate", "packbits", "zstd", "lzma"] + (["jpeg"] if dtype == np.uint8 else [])
        for n, comp in enumerate(comps):
            predictor = 1 if comp in ("none", "packbits", "jpeg") else (3 if dtype == np.float32 else 2)
            tiled, planar, order = n % 2 == 1, spp == 3 and n % 3 == 2 and comp != "jpeg", ("w", "wb")[n % 2]
            if predictor == 3:
                order = "w"   # libtiff 4.5's writer swaps big-endian floats before the predictor: a wrong file
            tags = dict(width=w, length=h, bps=a.itemsize * 8, spp=spp, photometric=2 if spp == 3 else 1,
                        compression=comp, planar=2 if planar else 1, sampleformat=3 if dtype == np.float32 else 1)
            if predictor != 1:
                tags["predictor"] = predictor   # the tag exists only under the codecs that have it
            rows = 8 if comp == "jpeg" else 4   # libtiff's JPEG strips are whole MCU rows
            tags.update(dict(tilewidth=16, tilelength=16) if tiled else dict(rowsperstrip=rows))
            name = "tif_libtiff_%s_%s_pred%d%s%s_%s.tif" % (label, comp, predictor, "_tiles" if tiled else "",
                                                           "_planar" if planar else "", "be" if order == "wb" else "le")
            with Writer(os.path.join(folder, name), order) as wr:
                wr.page(tags, libtiff_blocks(a, tiled, planar, rows), tiled=tiled)
            add(name, 1 if comp == "jpeg" else 0, None if comp == "jpeg" else a)


def make_ycbcr_jpeg(folder, rng, add):
    """YCbCr TIFF compressed with JPEG (2x2 subsampled, libtiff's default), RGB handed to libtiff's
    JPEG codec (its RGB colour mode), in strips and tiles."""
    a = smooth(rng, 21, 35, 3)
    for tiled in (False, True):
        tags = dict(width=35, length=21, bps=8, spp=3, photometric=6, compression="jpeg", planar=1,
                    jpegcolormode=1, jpegquality=90)
        tags.update(dict(tilewidth=16, tilelength=16) if tiled else dict(rowsperstrip=16))
        name = "tif_ycbcr_jpeg%s.tif" % ("_tiles" if tiled else "")
        with Writer(os.path.join(folder, name)) as wr:
            wr.page(tags, libtiff_blocks(a, tiled, False, 16), tiled=tiled)
        add(name, 1, None)


def make_bilevel(folder, rng, add):
    for h, w in ((1, 1), (13, 29), (40, 67)):
        a = rng.integers(0, 2, (h, w)).astype(np.uint8)
        im = Image.fromarray(a * 255).convert("1")
        for comp in ("group3", "group4", "packbits", "tiff_lzw", "raw"):
            name = "tif_bilevel_%s_%dx%d.tif" % (comp, w, h)
            im.save(os.path.join(folder, name), compression=comp)
            add(name, 0, a[..., None] * 255)
        for comp in ("ccittfax3", "ccittfax4", "ccittrle", "none"):
            name = "tif_bilevel_miniswhite_%s_%dx%d.tif" % (comp, w, h)
            with Writer(os.path.join(folder, name)) as wr:
                wr.page(dict(width=w, length=h, bps=1, spp=1, photometric=0, compression=comp, rowsperstrip=h),
                        [pack_bits(a, 1).tobytes()])
            add(name, 0, (1 - a[..., None]) * 255)


def make_pillow_tiff(folder, rng, add):
    """Palette, JPEG-compressed and the other layouts Pillow writes."""
    a = rng.integers(0, 256, (26, 39, 3)).astype(np.uint8)
    pal = Image.fromarray(a).quantize(200)
    for comp in ("raw", "tiff_lzw", "tiff_adobe_deflate", "packbits"):
        name = "tif_pillow_palette_%s.tif" % comp
        pal.save(os.path.join(folder, name), compression=comp)
        add(name, 0, np.asarray(pal.convert("RGB")))
    for mode in ("RGB", "L", "CMYK"):
        im = Image.fromarray(a).convert(mode)
        for comp in ("jpeg", "tiff_lzw"):
            name = "tif_pillow_%s_%s.tif" % (mode, comp)
            im.save(os.path.join(folder, name), compression=comp)
            add(name, 1 if comp == "jpeg" else 0, None)


def make_tiff(folder, rng, add):
    for name, stored, opts, want in tifffile_cases(rng):
        tifffile.imwrite(os.path.join(folder, name), stored, **opts)
        if want.dtype.kind == "i" or want.dtype == np.uint32:
            want = want.astype(np.float32)   # signed and 32-bit unsigned: float samples of the same values
        add(name, 0, None if want.dtype == np.float64 else want)
    make_libtiff(folder, rng, add)
    make_bilevel(folder, rng, add)
    make_ycbcr_jpeg(folder, rng, add)
    make_pillow_tiff(folder, rng, add)


def smooth(rng, h, w, c):
    """Photograph-like content (JPEG keeps it close): random values blurred."""
    a = rng.integers(0, 256, (h, w, c)).astype(np.float32)
    return np.clip(cv2.GaussianBlur(a, (5, 5), 2).reshape(h, w, c) * 1.5 - 64, 0, 255).astype(np.uint8)


def make_jpeg(folder, rng, add, variant_writer):
    profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    exif = Image.Exif()
    exif[0x010F] = "Corpus"
    for h, w in ((1, 1), (1, 9), (9, 1), (17, 23), (40, 33)):
        a = smooth(rng, h, w, 3)
        im = Image.fromarray(a)
        pillow = (("444", dict(subsampling=0)), ("422", dict(subsampling=1)), ("420", dict(subsampling=2)),
                  ("progressive", dict(progressive=True)), ("optimized", dict(optimize=True)),
                  ("meta", dict(icc_profile=profile, exif=exif.tobytes())), ("q100", dict(quality=100, subsampling=0)))
        for label, kw in pillow:
            name = "jpg_%s_%dx%d.jpg" % (label, w, h)
            im.save(os.path.join(folder, name), **dict(dict(quality=90), **kw))
            add(name, 1, None)
        for mode in ("L", "CMYK"):
            name = "jpg_%s_%dx%d.jpg" % (mode, w, h)
            im.convert(mode).save(os.path.join(folder, name), quality=90)
            add(name, 1, None)
        name = "jpg_restart_%dx%d.jpg" % (w, h)
        cv2.imwrite(os.path.join(folder, name), a[..., ::-1], [cv2.IMWRITE_JPEG_RST_INTERVAL, 1,
                                                               cv2.IMWRITE_JPEG_QUALITY, 90])
        add(name, 1, None)
        if not variant_writer:
            continue
        raw = os.path.join(folder, "pixels.raw")
        for comps, factors, coding, restart in ((3, "4x1", "huffman", 0), (3, "2x2", "arithmetic", 0),
                                                (3, "1x2", "huffman", 1), (3, "2x1", "arithmetic", 2),
                                                (1, "1x1", "arithmetic", 0), (3, "2x2", "progressive", 1)):
            pixels = a if comps == 3 else a[..., :1]
            pixels.tofile(raw)
            name = "jpg_lib_%s_%s_rst%d_%dx%d_c%d.jpg" % (factors, coding, restart, w, h, comps)
            subprocess.run([variant_writer, str(w), str(h), str(comps), factors, coding, str(restart), "90", raw,
                            os.path.join(folder, name)], check=True)
            add(name, 1, None)
        os.remove(raw)


def make_corpus(folder, variant_writer, seed=1212):
    """Writes the corpus; returns {file name: (tolerance, samples or None)}."""
    rng = np.random.default_rng(seed)
    entries = {}

    def add(name, tolerance, want):
        entries[name] = (tolerance, None if want is None else np.asarray(want))

    make_png(folder, rng, add)
    make_tiff(folder, rng, add)
    make_jpeg(folder, rng, add, variant_writer)
    return entries


def hostile_variants(data, rng):
    """Truncations at several offsets and bit flips (one, and a burst of eight): (label, bytes)."""
    n = len(data)
    out = [("cut%d" % cut, data[:cut]) for cut in sorted({n // 8, n // 3, n * 2 // 3, n - 1}) if 0 < cut < n]
    for flips in (1, 8):
        b = bytearray(data)
        for pos in rng.integers(0, n, flips):
            b[pos] ^= 1 << int(rng.integers(0, 8))
        out.append(("flip%d" % flips, bytes(b)))
    return out

