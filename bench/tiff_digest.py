"""tiff_digest.py FILE...: one line a file, a SHA-256 of its first page's decoded samples, then the
file. The samples are hashed in blocks of BLOCK_ROWS rows, each block decoded and hashed by a pool
of processes (a strip or tile at a time, tifffile's decoder), and the blocks' hashes hashed in row
order. So files whose bytes differ (strips compressed by the GPU or by the CPU, strips of other
heights) match when their pixels do, in bounded memory, and a 10-gigapixel pair takes seconds on
many cores rather than minutes on one."""
import hashlib
import multiprocessing
import os
import sys

import numpy as np
import tifffile

BLOCK_ROWS = 2048
_open = {}


def _page(path):
    if path not in _open:
        _open.clear()
        _open[path] = tifffile.TiffFile(path)
    return _open[path].pages[0]


def _segments(page):
    """The rows a strip or a row of tiles spans, the segments across, and a segment's width."""
    if page.is_tiled:
        return page.tilelength, -(-page.imagewidth // page.tilewidth), page.tilewidth
    return page.rowsperstrip, 1, page.imagewidth


def _block(args):
    path, r0, r1 = args
    page = _page(path)
    fh = page.parent.filehandle
    seg_rows, across, seg_width = _segments(page)
    h = hashlib.sha256()
    for band in range(r0 // seg_rows, -(-r1 // seg_rows)):
        parts = []
        for k in range(across):
            index = band * across + k
            fh.seek(page.dataoffsets[index])
            seg, _, _ = page.decode(fh.read(page.databytecounts[index]), index)
            # a tile past the image's right edge is cut to it
            seg = np.asarray(seg).reshape(-1, seg_width, page.samplesperpixel)
            parts.append(seg[:, : page.imagewidth - k * seg_width])
        rows = np.concatenate(parts, axis=1)
        top = band * seg_rows
        lo, hi = max(r0, top) - top, min(r1, top + rows.shape[0]) - top
        h.update(np.ascontiguousarray(rows[lo:hi]).tobytes())
    return h.hexdigest()


def digest(path, pool):
    with tifffile.TiffFile(path) as tif:   # not _page's: the pool's processes open their own
        page = tif.pages[0]
        height = page.imagelength
        h = hashlib.sha256(f"{page.imagewidth}x{height}x{page.samplesperpixel} {page.dtype}".encode())
    jobs = [(path, r, min(height, r + BLOCK_ROWS)) for r in range(0, height, BLOCK_ROWS)]
    for block in pool.imap(_block, jobs, chunksize=1):
        h.update(block.encode())
    return h.hexdigest()


if __name__ == "__main__":
    with multiprocessing.Pool(min(32, os.cpu_count() or 1)) as workers:
        for p in sys.argv[1:]:
            print(digest(p, workers), p)
