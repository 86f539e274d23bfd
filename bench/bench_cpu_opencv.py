#!/usr/bin/python3
"""Times the OpenCV and scikit-image peers of the imgpipe CPU kernels on the bench pattern
(the same values as bench_common.c), 4096x4096 8-bit. scikit-image's rank.entropy is slow,
so it runs on a smaller image and its time is scaled per megapixel to 4096x4096.
Prints "key<TAB>ms<TAB>peer" lines for bench/run-cpu; lines starting with '#' are information.
Usage: bench_cpu_opencv.py [runs] [entropy_side]"""
import statistics
import sys
import time

import cv2
import numpy as np
from skimage.filters import rank

SIDE = 4096


def pattern(w, h, c=0, shift=0):
    """bench_pattern() of bench_common.c: gradient plus hashed noise, uint32 arithmetic."""
    x = np.arange(w, dtype=np.uint32)[None, :]
    y = np.arange(h, dtype=np.uint32)[:, None]
    hsh = (x * np.uint32(0x9E3779B1)) ^ (y * np.uint32(0x85EBCA77)) ^ np.uint32((c * 0xC2B2AE3D) & 0xFFFFFFFF)
    hsh ^= hsh >> np.uint32(15)
    hsh *= np.uint32(0x2C1B3C6D)
    hsh ^= hsh >> np.uint32(12)
    v = (((x + y) >> np.uint32(4)) + (hsh >> np.uint32(26))) & np.uint32(0xFF)
    return (v >> np.uint32(shift)).astype(np.uint8)


def median_ms(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    ent_side = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    gray = pattern(SIDE, SIDE)
    rgb = np.dstack([pattern(SIDE, SIDE, c) for c in range(3)])
    sharpen = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
    gauss3 = np.outer([1, 2, 1], [1, 2, 1]).astype(np.float32) / 16
    gauss5 = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]).astype(np.float32) / 256
    peers = [
        ("median3", "cv2.medianBlur 3", lambda: cv2.medianBlur(gray, 3)),
        ("median5", "cv2.medianBlur 5", lambda: cv2.medianBlur(gray, 5)),
        ("median7", "cv2.medianBlur 7", lambda: cv2.medianBlur(gray, 7)),
        ("median15", "cv2.medianBlur 15", lambda: cv2.medianBlur(gray, 15)),
        ("mean3", "cv2.blur 3x3", lambda: cv2.blur(gray, (3, 3))),
        ("mean7", "cv2.blur 7x7", lambda: cv2.blur(gray, (7, 7))),
        ("conv3", "cv2.filter2D 3x3", lambda: cv2.filter2D(gray, -1, sharpen)),
        ("gauss3", "cv2.filter2D gaussian 3x3", lambda: cv2.filter2D(gray, -1, gauss3)),
        ("gauss3f", "cv2.filter2D gaussian 3x3", lambda: cv2.filter2D(gray, -1, gauss3)),
        ("gauss5", "cv2.filter2D gaussian 5x5", lambda: cv2.filter2D(gray, -1, gauss5)),
        ("gauss5f", "cv2.filter2D gaussian 5x5", lambda: cv2.filter2D(gray, -1, gauss5)),
        ("hist", "cv2.calcHist 256", lambda: cv2.calcHist([gray], [0], None, [256], [0, 256])),
        ("gray", "cv2.cvtColor RGB2GRAY", lambda: cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)),
        ("transpose", "cv2.transpose", lambda: cv2.transpose(gray)),
    ]
    print(f"# OpenCV {cv2.__version__} ({cv2.getNumThreads()} threads), {SIDE}x{SIDE} u8, "
          f"median of {runs} runs after 1 warm-up")
    print("operation\tms\tpeer")
    for key, peer, fn in peers:
        print(f"{key}\t{median_ms(fn, runs):.3f}\t{peer}", flush=True)
    small = pattern(ent_side, ent_side, 0, 4)
    footprint = np.ones((5, 5), np.uint8)
    ms = median_ms(lambda: rank.entropy(small, footprint), max(1, min(runs, 3)))
    scaled = ms * (SIDE * SIDE) / (ent_side * ent_side)
    print(f"entropy5\t{scaled:.3f}\tskimage rank.entropy 5x5 ({ent_side}^2: {ms:.0f} ms, scaled)")


if __name__ == "__main__":
    main()
