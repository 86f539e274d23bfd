# Inputs for bench/stream.sh, made from the sample photographs with all cores:
#   rgb PATH SIDE        SIDE x SIDE RGB mosaic (bench/e2e_images.py's) with 2% salt-and-pepper
#                        noise, deflate TIFF in strips of 32 rows (strips compressed in parallel)
#   gray PATH WIDTH HEIGHT   gray tiled deflate TIFF (BigTIFF above 2 GiB): 512x512 tiles cut at
#                        scattered places from a 4096x4096 gray mosaic with 2% salt-and-pepper
#                        noise, made one at a time by a generator and compressed by a thread per
#                        core, so memory stays small whatever the size
# Prints the seconds it took and the file's size. LEVEL (env): the deflate level (default 1: the
# files are inputs, made quickly; decoding costs the same at any level).
import os
import sys
import time

import cv2
import numpy as np
import tifffile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_images import load_tiles, mosaic  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples")
TILE = 512
POOL = 4096
LEVEL = int(os.environ.get("LEVEL", "1"))
WORKERS = os.cpu_count() or 1


def salt_and_pepper(img, seed, fraction=0.02):
    """Sets fraction of the pixels (every channel) to 0 or 255, a band of rows at a time."""
    rng = np.random.default_rng(seed)
    band = max(1, (64 << 20) // (img.shape[1] * 8))
    for y in range(0, img.shape[0], band):
        r = rng.random((min(band, img.shape[0] - y), img.shape[1]))
        part = img[y:y + r.shape[0]]
        part[r < fraction / 2] = 0
        part[(r >= fraction / 2) & (r < fraction)] = 255


def make_rgb(path, side):
    img = mosaic(load_tiles(SAMPLES), side, side, seed=11)[:, :, ::-1]  # BGR -> RGB, a view
    img = np.ascontiguousarray(img)
    salt_and_pepper(img, 12)
    tifffile.imwrite(path, img, photometric="rgb", compression="zlib", compressionargs={"level": LEVEL},
                     rowsperstrip=32, maxworkers=WORKERS, bigtiff=img.nbytes > (2 << 30))


def make_gray(path, width, height):
    pool = cv2.cvtColor(mosaic(load_tiles(SAMPLES), POOL, POOL, seed=13), cv2.COLOR_BGR2GRAY)
    salt_and_pepper(pool, 14)
    across, down = -(-width // TILE), -(-height // TILE)
    span = POOL - TILE

    def tiles():
        for ty in range(down):
            for tx in range(across):
                # scattered, not repeating: a different piece of the pool for each tile
                k = ty * across + tx
                y, x = (k * 7919 + ty * 104729) % span, (k * 6271 + tx * 15485863) % span
                yield np.ascontiguousarray(pool[y:y + TILE, x:x + TILE])

    tifffile.imwrite(path, data=tiles(), shape=(height, width), dtype=np.uint8, photometric="minisblack",
                     tile=(TILE, TILE), compression="zlib", compressionargs={"level": LEVEL},
                     maxworkers=WORKERS, bigtiff=width * height > (2 << 30))


def main():
    kind, path = sys.argv[1], sys.argv[2]
    t0 = time.monotonic()
    if kind == "rgb":
        make_rgb(path, int(sys.argv[3]))
    elif kind == "gray":
        make_gray(path, int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("stream_images: unknown kind " + kind)
    print("%.1f %d" % (time.monotonic() - t0, os.path.getsize(path)))


if __name__ == "__main__":
    main()
