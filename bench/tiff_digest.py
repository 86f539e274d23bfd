"""tiff_digest.py FILE...: one line a file, the SHA-256 of its first page's decoded samples in row
order, then the file. Reads a strip or tile at a time (tifffile's segments), so that 10-gigapixel
files whose bytes differ (strips compressed by the GPU or by the CPU) can be compared by their
pixels in bounded memory."""
import hashlib
import sys

import numpy as np
import tifffile


def digest(path):
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        h = hashlib.sha256()
        if page.is_tiled:
            h.update(page.asarray().tobytes())
            return h.hexdigest()
        height = page.imagelength
        done = 0
        for segment, _index, _shape in page.segments():
            rows = np.asarray(segment).reshape(-1, *segment.shape[-2:]) if segment.ndim > 2 else segment
            rows = rows.reshape(-1, page.imagewidth * page.samplesperpixel * page.bitspersample // 8 // rows.itemsize)
            take = min(rows.shape[0], height - done)
            h.update(np.ascontiguousarray(rows[:take]).tobytes())
            done += take
        return h.hexdigest()


for p in sys.argv[1:]:
    print(digest(p), p)
