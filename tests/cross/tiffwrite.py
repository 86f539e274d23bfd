"""TIFF files written through libtiff itself (ctypes), for layouts the Python writers lack:
packed 2, 4 and 12-bit samples, YCbCr with chroma subsampling, any compression libtiff has,
several pages. Samples are handed over already packed, a strip or tile at a time."""
import ctypes
import ctypes.util

import numpy as np

_lib = ctypes.CDLL(ctypes.util.find_library("tiff") or "libtiff.so.6")
_lib.TIFFOpen.restype = ctypes.c_void_p
_lib.TIFFOpen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_lib.TIFFClose.argtypes = [ctypes.c_void_p]
_lib.TIFFWriteDirectory.argtypes = [ctypes.c_void_p]
_lib.TIFFWriteEncodedStrip.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_ssize_t]
_lib.TIFFWriteEncodedStrip.restype = ctypes.c_ssize_t
_lib.TIFFWriteEncodedTile.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_ssize_t]
_lib.TIFFWriteEncodedTile.restype = ctypes.c_ssize_t
_lib.TIFFSetWarningHandler.argtypes = [ctypes.c_void_p]
_lib.TIFFSetWarningHandler.restype = ctypes.c_void_p
_lib.TIFFSetWarningHandler(None)

T = dict(width=256, length=257, bps=258, compression=259, photometric=262, fillorder=266, spp=277,
         rowsperstrip=278, planar=284, predictor=317, tilewidth=322, tilelength=323, inkset=332,
         extrasamples=338, sampleformat=339, ycbcrsubsampling=530, ycbcrpositioning=531, refbw=532,
         subfiletype=254, colormap=320, jpegquality=65537, jpegcolormode=65538)
COMPRESSION = dict(none=1, ccittrle=2, ccittfax3=3, ccittfax4=4, lzw=5, jpeg=7, deflate=8, packbits=32773,
                   lzma=34925, zstd=50000)


def _set(tif, tag, *args):
    if _lib.TIFFSetField(ctypes.c_void_p(tif), ctypes.c_uint32(tag), *args) != 1:
        raise RuntimeError("TIFFSetField %d failed" % tag)


def _set_int(tif, name, value):
    _set(tif, T[name], ctypes.c_uint32(value) if name in ("width", "length", "rowsperstrip", "tilewidth",
                                                           "tilelength", "subfiletype") else ctypes.c_int(value))


class Writer:
    """with Writer(path) as w: w.page(tags, blocks) for each page; mode as TIFFOpen takes it ("wb" big-endian,
    "w8" BigTIFF)."""

    def __init__(self, path, mode="w"):
        self.path = path
        self.mode = mode

    def __enter__(self):
        self.tif = _lib.TIFFOpen(self.path.encode(), self.mode.encode())
        if not self.tif:
            raise RuntimeError("TIFFOpen failed: " + self.path)
        return self

    def __exit__(self, *exc):
        _lib.TIFFClose(ctypes.c_void_p(self.tif))

    def page(self, tags, blocks, tiled=False, extrasamples=None, refbw=None, colormap=None, subsampling=None):
        """tags: names of T with integer values; blocks: bytes of each strip or tile, encoded by libtiff."""
        t = self.tif
        for name, value in tags.items():
            _set_int(t, name, COMPRESSION[value] if name == "compression" else value)
        if extrasamples is not None:
            arr = (ctypes.c_uint16 * len(extrasamples))(*extrasamples)
            _set(t, T["extrasamples"], ctypes.c_int(len(extrasamples)), arr)
        if subsampling is not None:
            _set(t, T["ycbcrsubsampling"], ctypes.c_int(subsampling[0]), ctypes.c_int(subsampling[1]))
        if refbw is not None:
            self._refbw = (ctypes.c_float * 6)(*refbw)
            _set(t, T["refbw"], self._refbw)
        if colormap is not None:
            self._cmap = [(ctypes.c_uint16 * len(c))(*c) for c in colormap]
            _set(t, T["colormap"], *self._cmap)
        write = _lib.TIFFWriteEncodedTile if tiled else _lib.TIFFWriteEncodedStrip
        for i, b in enumerate(blocks):
            b = bytes(b)
            if write(ctypes.c_void_p(t), i, b, len(b)) < 0:
                raise RuntimeError("writing block %d failed" % i)
        if _lib.TIFFWriteDirectory(ctypes.c_void_p(t)) != 1:
            raise RuntimeError("TIFFWriteDirectory failed")


def pack_bits(values, bps):
    """Rows of integer samples packed MSB first, bps bits each, every row padded to a byte."""
    values = np.asarray(values, dtype=np.uint32)
    rows = values.reshape(values.shape[0], -1)
    bits = ((rows[:, :, None] >> np.arange(bps - 1, -1, -1, dtype=np.uint32)) & 1).astype(np.uint8)
    return np.packbits(bits.reshape(rows.shape[0], -1), axis=1)
