"""TIFF variants decoded to the values Pillow (or tifffile) gives, each with 1 and 3 threads:
1, 2, 4-bit gray (min-is-black and min-is-white) and palette scaled or expanded to 8 bits;
10, 12, 14-bit kept as 16-bit values; signed 8, 16, 32-bit and unsigned 32-bit integers as
float; CMYK 8 and 16-bit, contiguous and planar, with an unnamed or an alpha extra sample;
YCbCr subsampled 1x1 to 4x4 in strips and tiles, uncompressed, LZW, deflate and PackBits.
The files are made here: tifffile where it can write them, libtiff itself (tiffwrite.py) for
packed bits, YCbCr data units and the compressions tifffile cannot write without imagecodecs."""
import os
import sys
import tempfile

import numpy as np
import tifffile
from PIL import Image, TiffImagePlugin
from crosslib import check, cli, require_setup, summary
from tiffwrite import Writer, pack_bits

RNG = np.random.default_rng(2024)
SIZES = ((1, 1), (1, 17), (23, 37), (64, 131))   # (height, width)


def decode(tmp, src, name):
    """imgpipe's decoding of src (with 1 and 3 threads, which must agree), or None."""
    got = []
    for threads in (1, 3):
        out = os.path.join(tmp, "out%d.tif" % threads)
        # --strip: tifffile's shape note in the source's ImageDescription would reshape the output.
        res = cli("--threads", str(threads), "--tiff-compression", "none", "--strip", "-e", "transpose | transpose",
                  src, out)
        check(res.returncode == 0, "%s, --threads %d: %s" % (name, threads, res.stderr.strip()))
        if res.returncode != 0:
            return None
        got.append(tifffile.imread(out))
    check(np.array_equal(got[0], got[1]), name + ": 1 and 3 threads differ")
    return got[0]


def same(name, got, want, tolerance=0):
    if got is None:
        return
    ok = got.shape == want.shape and np.abs(got.astype(np.float64) - want.astype(np.float64)).max() <= tolerance
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max() if got.shape == want.shape else None
    check(ok, "%s: got %s %s, want %s %s (max difference %s, allowed %s)" %
          (name, got.shape, got.dtype, want.shape, want.dtype, diff, tolerance))


def pillow(path, mode=None):
    with Image.open(path) as im:
        return np.asarray(im.convert(mode) if mode else im)


def write_packed(path, a, bps, photometric, compression="lzw", rows=4, colormap=None, planar=False):
    """a: (h, w) or (h, w, spp) integers below 2^bps, packed bps bits a sample, strips of `rows` rows."""
    h, w = a.shape[:2]
    spp = 1 if a.ndim == 2 else a.shape[2]
    tags = dict(width=w, length=h, bps=bps, spp=spp, photometric=photometric, compression=compression,
                rowsperstrip=rows, planar=2 if planar else 1)
    planes = [a[..., p] for p in range(spp)] if planar and spp > 1 else [a]
    blocks = []
    for plane in planes:
        packed = pack_bits(plane.reshape(h, -1), bps)
        blocks += [packed[y:y + rows].tobytes() for y in range(0, h, rows)]
    with Writer(path) as wr:
        wr.page(tags, blocks, colormap=colormap, extrasamples=[2] if photometric == 2 and spp == 4 else None)


def check_low_depths(tmp):
    for h, w in SIZES:
        for bps in (1, 2, 4):
            a = RNG.integers(0, 1 << bps, (h, w)).astype(np.uint16)
            for photometric, label in ((1, "min-is-black"), (0, "min-is-white")):
                src = os.path.join(tmp, "low.tif")
                write_packed(src, a, bps, photometric)
                name = "%d-bit %s %dx%d" % (bps, label, w, h)
                want = pillow(src, "L")
                scaled = a * 255 // ((1 << bps) - 1)
                same(name + " (the written values)", want, (255 - scaled if photometric == 0 else scaled).astype(np.uint8))
                same(name, decode(tmp, src, name), want)
            if bps > 1:
                cmap = [list(RNG.integers(0, 65536, 1 << bps)) for _ in range(3)]
                src = os.path.join(tmp, "pal.tif")
                write_packed(src, a, bps, 3, compression="deflate", colormap=cmap)
                name = "%d-bit palette %dx%d" % (bps, w, h)
                same(name, decode(tmp, src, name), pillow(src, "RGB"))


def check_mid_depths(tmp):
    """10 to 14 bits: the values unchanged in 16-bit samples (Pillow reads 12-bit gray as I;16)."""
    for h, w in SIZES:
        for bps, spp, planar in ((12, 1, False), (10, 1, False), (14, 1, False), (12, 3, False), (12, 3, True)):
            a = RNG.integers(0, 1 << bps, (h, w, spp) if spp > 1 else (h, w)).astype(np.uint16)
            src = os.path.join(tmp, "mid.tif")
            write_packed(src, a, bps, 2 if spp == 3 else 1, compression="none" if planar else "lzw", rows=3,
                         planar=planar)
            name = "%d-bit x%d%s %dx%d" % (bps, spp, " planar" if planar else "", w, h)
            got = decode(tmp, src, name)
            same(name, got, a)
            if bps == 12 and spp == 1:
                same(name + " against Pillow", got, pillow(src))


def check_integers(tmp):
    """Signed and 32-bit unsigned integers: float samples of the same values (tifffile's reading)."""
    for h, w in SIZES:
        for dtype, spp, planar in (("int8", 1, False), ("int16", 3, True), ("int16", 1, False), ("int32", 1, False),
                                   ("uint32", 2, False), ("int32", 3, False)):
            info = np.iinfo(dtype)
            a = RNG.integers(info.min, info.max, (h, w, spp) if spp > 1 else (h, w), dtype=np.int64, endpoint=True)
            a = a.astype(dtype)
            src = os.path.join(tmp, "int.tif")
            stored = np.moveaxis(a, 2, 0) if planar else a
            tifffile.imwrite(src, stored, photometric="rgb" if spp == 3 else "minisblack",
                             planarconfig="separate" if planar else None, compression="zlib", predictor=True,
                             extrasamples=[2] if spp == 2 else None, rowsperstrip=5)
            name = "%s x%d%s %dx%d" % (dtype, spp, " planar" if planar else "", w, h)
            want = tifffile.imread(src)
            want = np.moveaxis(want, 0, 2) if planar else want
            got = decode(tmp, src, name)
            same(name, got, want.astype(np.float32))
            if got is not None:
                check(got.dtype == np.float32, name + ": not float")


def cmyk_to_rgb(c, bits):
    """Pillow's CMYK to RGB (its 8-bit formula, carried to 16 bits): k - round(ink * k / max), k = max - K."""
    mx = (1 << bits) - 1
    c = c.astype(np.int64)
    k = mx - c[..., 3:4]
    return k - (c[..., :3] * k + mx // 2) // mx


def check_cmyk(tmp):
    for h, w in SIZES:
        for bits in (8, 16):
            for planar in (False, True):
                a = RNG.integers(0, 1 << bits, (h, w, 4)).astype("uint%d" % bits)
                src = os.path.join(tmp, "cmyk.tif")
                tifffile.imwrite(src, np.moveaxis(a, 2, 0) if planar else a, photometric="separated",
                                 planarconfig="separate" if planar else "contig", compression="zlib", rowsperstrip=7)
                name = "CMYK %d-bit %s %dx%d" % (bits, "planar" if planar else "contiguous", w, h)
                got = decode(tmp, src, name)
                same(name + " (the formula on tifffile's samples)", got, cmyk_to_rgb(tifffile.imread(src) if not planar
                                                                                      else a, bits))
                if bits == 8:
                    same(name + " against Pillow", got, pillow(src, "RGB"))
                elif not planar and got is not None:
                    # Pillow keeps the high byte of each 16-bit ink before its 8-bit conversion
                    same(name + " against Pillow", np.round(got / 257.0), pillow(src, "RGB"), tolerance=2)
        for comp in ("lzw", "packbits"):
            a = RNG.integers(0, 256, (h, w, 4)).astype(np.uint8)
            src = os.path.join(tmp, "cmyk_%s.tif" % comp)
            with Writer(src) as wr:
                wr.page(dict(width=w, length=h, bps=8, spp=4, photometric=5, compression=comp, rowsperstrip=3,
                             planar=1), [a[y:y + 3].tobytes() for y in range(0, h, 3)])
            name = "CMYK %s %dx%d" % (comp, w, h)
            same(name, decode(tmp, src, name), pillow(src, "RGB"))
        a = RNG.integers(0, 256, (h, w, 5)).astype(np.uint8)
        for extra, label in ((0, "unnamed extra sample"), (2, "alpha")):
            src = os.path.join(tmp, "cmyka.tif")
            tifffile.imwrite(src, a, photometric="separated", planarconfig="contig", extrasamples=[extra])
            name = "CMYK with %s %dx%d" % (label, w, h)
            got = decode(tmp, src, name)
            if extra == 0:
                same(name + " against Pillow", got, pillow(src, "RGB"))
            else:
                same(name, got, np.dstack([cmyk_to_rgb(a[..., :4], 8), a[..., 4]]))


def ycbcr_units(y, cb, cr, hs, vs):
    """Data units: for each hs x vs block of luma, its samples row by row, then Cb and Cr."""
    bh, bw = cb.shape
    units = np.empty((bh, bw, hs * vs + 2), np.uint8)
    units[..., :hs * vs] = y.reshape(bh, vs, bw, hs).transpose(0, 2, 1, 3).reshape(bh, bw, hs * vs)
    units[..., hs * vs], units[..., hs * vs + 1] = cb, cr
    return units


def write_ycbcr(path, y, cb, cr, w, h, hs, vs, compression, tile):
    """y padded to whole blocks; strips of 2 block rows, or tiles of 16x16 pixels."""
    tags = dict(width=w, length=h, bps=8, spp=3, photometric=6, compression=compression, planar=1)
    units = ycbcr_units(y, cb, cr, hs, vs)
    if tile:
        tags.update(tilewidth=16, tilelength=16)
        th, tw = 16 // vs, 16 // hs
        bh, bw = units.shape[:2]
        blocks = []
        for ty in range(0, -(-h // 16) * th, th):
            for tx in range(0, -(-w // 16) * tw, tw):
                block = np.zeros((th, tw, units.shape[2]), np.uint8)
                part = units[ty:ty + th, tx:tx + tw]
                block[:part.shape[0], :part.shape[1]] = part
                blocks.append(block.tobytes())
    else:
        tags.update(rowsperstrip=2 * vs)
        blocks = [units[r:r + 2].tobytes() for r in range(0, units.shape[0], 2)]
    with Writer(path) as wr:
        wr.page(tags, blocks, tiled=tile, subsampling=(hs, vs), refbw=[0, 255, 128, 255, 128, 255])


def bt601_rgb(y, cb, cr, hs, vs, h, w):
    """Full-range BT.601 (the TIFF default coefficients and references), each chroma pair over its block."""
    cb = np.repeat(np.repeat(cb.astype(np.float64) - 128, vs, 0), hs, 1)[:h, :w]
    cr = np.repeat(np.repeat(cr.astype(np.float64) - 128, vs, 0), hs, 1)[:h, :w]
    y = y[:h, :w].astype(np.float64)
    g = y - (0.114 * 1.772 * cb + 0.299 * 1.402 * cr) / 0.587
    return np.clip(np.dstack([y + 1.402 * cr, g, y + 1.772 * cb]), 0, 255)


def check_ycbcr(tmp):
    """Against the BT.601 formula (libtiff's fixed-point tables round each term: within 2), and
    exactly against Pillow, which converts through libtiff's RGBA reader (READ_LIBTIFF: its own
    raw reader ignores subsampling), except 4x4: libtiff 4.5's reader takes the chroma of a 4x4
    block cut by the image's edge from the wrong bytes."""
    TiffImagePlugin.READ_LIBTIFF = True
    for h, w in SIZES:
        for hs, vs in ((1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (1, 2)):
            hp, wp = -(-h // vs) * vs, -(-w // hs) * hs
            y = RNG.integers(0, 256, (hp, wp)).astype(np.uint8)
            cb = RNG.integers(0, 256, (hp // vs, wp // hs)).astype(np.uint8)
            cr = RNG.integers(0, 256, (hp // vs, wp // hs)).astype(np.uint8)
            for compression in ("none", "lzw", "deflate", "packbits"):
                for tile in (False, True):
                    src = os.path.join(tmp, "ycbcr.tif")
                    write_ycbcr(src, y, cb, cr, w, h, hs, vs, compression, tile)
                    name = "YCbCr %dx%d %s %s %dx%d" % (hs, vs, compression, "tiles" if tile else "strips", w, h)
                    got = decode(tmp, src, name)
                    same(name + " against BT.601", got, bt601_rgb(y, cb, cr, hs, vs, h, w), tolerance=2)
                    if (hs, vs) != (4, 4):
                        same(name + " against Pillow", got, pillow(src, "RGB"))
    TiffImagePlugin.READ_LIBTIFF = False


def main():
    require_setup()
    with tempfile.TemporaryDirectory() as tmp:
        check_low_depths(tmp)
        check_mid_depths(tmp)
        check_integers(tmp)
        check_cmyk(tmp)
        check_ycbcr(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
