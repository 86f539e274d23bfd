# Test images for bench/e2e: mosaics of the sample photographs (at their own scale, so the codecs
# see photographic detail, not upscaled blur or noise), each size saved as PNG level 6, TIFF deflate
# with the horizontal predictor (as imgpipe writes it) and JPEG quality 90; plus a 64x64 PNG.
# usage: e2e_images.py SAMPLES_DIR OUT_DIR NAME=WxH ...   writes OUT_DIR/NAME.{png,tif,jpg}, tiny.png
import os
import sys
from multiprocessing import Pool

import cv2
import numpy as np
import tifffile

PHOTOS = ("astronaut.png", "coffee.png", "chelsea.png", "hubble_deep_field.jpg")
TILE_HEIGHT = 512
STRIP_BYTES = 256 << 10  # imgpipe's TIFF strip target, so the input has the strips imgpipe writes


def load_tiles(samples):
    tiles = []
    for name in PHOTOS:
        img = cv2.imread(os.path.join(samples, name), cv2.IMREAD_COLOR)
        if img is None:
            sys.exit("e2e_images: cannot read %s" % os.path.join(samples, name))
        width = round(img.shape[1] * TILE_HEIGHT / img.shape[0])
        tiles.append(cv2.resize(img, (width, TILE_HEIGHT), interpolation=cv2.INTER_AREA))
    return tiles


# Rows of tiles, each row shifted by a random amount, each tile possibly flipped and brightened.
def mosaic(tiles, width, height, seed):
    rng = np.random.default_rng(seed)
    out = np.empty((height, width, 3), np.uint8)
    for y in range(0, height, TILE_HEIGHT):
        rows = min(TILE_HEIGHT, height - y)
        x = -int(rng.integers(0, TILE_HEIGHT))
        while x < width:
            tile = tiles[int(rng.integers(0, len(tiles)))]
            if rng.integers(0, 2):
                tile = tile[:, ::-1]
            tile = cv2.convertScaleAbs(tile, alpha=1.0, beta=int(rng.integers(-20, 21)))
            left, right = max(x, 0), min(x + tile.shape[1], width)
            out[y:y + rows, left:right] = tile[:rows, left - x:right - x]
            x += tile.shape[1]
    return out


def write(job):
    img, path = job
    ext = path.rsplit(".", 1)[1]
    if ext == "png":
        ok = cv2.imwrite(path, img, [cv2.IMWRITE_PNG_COMPRESSION, 6])
    elif ext == "jpg":
        ok = cv2.imwrite(path, img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    else:
        rows = max(1, STRIP_BYTES // (img.shape[1] * 3))
        tifffile.imwrite(path, np.ascontiguousarray(img[:, :, ::-1]), photometric="rgb",
                         compression="zlib", compressionargs={"level": 6}, predictor=True,
                         rowsperstrip=rows)
        ok = True
    if not ok:
        sys.exit("e2e_images: cannot write " + path)
    return path


def main():
    samples, out, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    tiles = load_tiles(samples)
    jobs = [(cv2.resize(tiles[0], (64, 64), interpolation=cv2.INTER_AREA), os.path.join(out, "tiny.png"))]
    for i, spec in enumerate(specs):
        name, size = spec.split("=")
        width, height = (int(v) for v in size.split("x"))
        img = mosaic(tiles, width, height, seed=i + 1)
        jobs += [(img, os.path.join(out, name + "." + ext)) for ext in ("png", "tif", "jpg")]
    with Pool(min(len(jobs), os.cpu_count() or 1)) as pool:
        pool.map(write, jobs, chunksize=1)


if __name__ == "__main__":
    main()
