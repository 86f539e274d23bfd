"""One pipeline from eight threads; no growth of memory or reference counts over 100,000 calls."""
import gc
import os
import sys
import threading
import time
import tracemalloc

import numpy as np

import imgpipe
from conftest import random_image


def test_eight_threads_one_pipeline(rng):
    p = imgpipe.Pipeline("grayscale | median radius=1 | convolve kernel=gaussian3")
    images = [random_image(rng, (40 + i, 50 + 2 * i, 3), np.uint8) for i in range(16)]
    expected = [p(image, threads=1) for image in images]
    failures = []
    start = threading.Barrier(8)

    def work(worker):
        start.wait()
        for round in range(25):
            i = (worker * 7 + round) % len(images)
            if not np.array_equal(p(images[i], threads=1), expected[i]):
                failures.append((worker, round))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_gil_released_while_running(rng):
    """A second thread runs Python while a long pipeline runs."""
    p = imgpipe.Pipeline("median radius=7")
    image = random_image(rng, (1024, 1024), np.uint8)
    ticks = []
    running = threading.Event()

    def count():
        while not running.is_set():
            time.sleep(0)
        while running.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    running.set()
    begin = time.perf_counter()
    p(image, threads=1)
    took = time.perf_counter() - begin
    running.clear()
    t.join()
    assert took < 0.02 or len(ticks) >= 3, (took, len(ticks))


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_growth_over_100000_calls(rng):
    p = imgpipe.Pipeline("grayscale | median radius=1")
    image = random_image(rng, (8, 8, 3), np.uint8)
    strided = random_image(rng, (16, 8, 3), np.uint8)[::2]
    for _ in range(2000):   # warm: allocator pools, numpy caches
        p(image, threads=1)
        p(strided, threads=1)
    gc.collect()
    refs = sys.getrefcount(image), sys.getrefcount(strided), sys.getrefcount(p)
    rss = rss_bytes()
    tracemalloc.start()
    traced = tracemalloc.get_traced_memory()[0]
    begin = time.perf_counter()
    for _ in range(50000):
        p(image, threads=1)
        p(strided, threads=1)
    took = time.perf_counter() - begin
    gc.collect()
    traced_growth = tracemalloc.get_traced_memory()[0] - traced
    tracemalloc.stop()
    assert (sys.getrefcount(image), sys.getrefcount(strided), sys.getrefcount(p)) == refs
    assert traced_growth < 64 * 1024, traced_growth
    # 100,000 leaked results of 64 bytes, or their Python objects, would be megabytes
    assert rss_bytes() - rss < 2 * 1024 * 1024, rss_bytes() - rss
    print(f"100000 calls in {took:.2f} s ({took * 10:.1f} us a call, under tracemalloc)")


def test_no_growth_errors(rng):
    """Failing calls leak nothing either."""
    p = imgpipe.Pipeline("median radius=1")
    bad = np.zeros((4, 4), np.int16)
    for _ in range(1000):
        try:
            p(bad)
        except TypeError:
            pass
    refs = sys.getrefcount(bad)
    tracemalloc.start()
    traced = tracemalloc.get_traced_memory()[0]
    for _ in range(20000):
        try:
            p(bad)
        except TypeError:
            pass
        try:
            imgpipe.Pipeline("meidan")
        except imgpipe.PipelineError:
            pass
    gc.collect()
    growth = tracemalloc.get_traced_memory()[0] - traced
    tracemalloc.stop()
    assert sys.getrefcount(bad) == refs
    assert growth < 64 * 1024, growth
