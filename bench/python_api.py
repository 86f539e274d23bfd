#!/usr/bin/python3
"""The Python package's numbers (issue 30): the overhead of one call on a 64x64 image (median of
10,000 warm calls, CPU); an 8192x8192 device array (CuPy, else PyTorch) through
pipelines/denoise.pipe on the GPU against its kernels' own time (PyTorch's profiler, which also
counts any copy between host and device: there must be none); an 8192x8192 numpy array through
denoise.pipe on the CPU and the GPU against OpenCV called from this process (cvtColor,
medianBlur, filter2D with the 3x3 gaussian). Prints a markdown table (and writes it to
OUT/python-api.md when OUT is given). GPU rows are left out, saying why, without a GPU.
Usage: bench/python_api.py [OUT]"""
import os
import pathlib
import statistics
import sys
import time

import numpy as np

import imgpipe

ROOT = pathlib.Path(__file__).resolve().parents[1]
DENOISE = ROOT / "pipelines" / "denoise.pipe"
SIDE = 8192
rows = []   # (what, time, note)


def median_time(fn, runs, sync=lambda: None):
    times = []
    for _ in range(runs):
        sync()
        begin = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def image(shape, seed=1):
    return np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)


def call_overhead():
    small = image((64, 64, 3))
    for text in ("transpose", "grayscale | median radius=1 | convolve kernel=gaussian3"):
        p = imgpipe.Pipeline(text)
        for _ in range(1000):
            p(small, device="cpu", threads=1)
        t = median_time(lambda: p(small, device="cpu", threads=1), 10000)
        rows.append((f"64x64 RGB, `{text.replace('|', chr(92) + '|')}`, one call (CPU, threads=1, median of 10,000 warm)", f"{t * 1e6:.1f} us",
                     "target: under 30 us"))


def opencv_denoise(cv2, rgb):
    kernel = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32) / 16
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    return cv2.filter2D(cv2.medianBlur(gray, 3), -1, kernel, borderType=cv2.BORDER_REFLECT_101)


def host_denoise(gpu):
    p = imgpipe.Pipeline.from_file(DENOISE)
    rgb = image((SIDE, SIDE, 3))
    ours = p(rgb, device="cpu")
    t = median_time(lambda: p(rgb, device="cpu"), 5)
    rows.append((f"{SIDE}x{SIDE} numpy RGB through denoise.pipe, imgpipe CPU (all cores)", f"{t * 1e3:.1f} ms", ""))
    try:
        import cv2
    except ImportError:
        rows.append(("OpenCV from Python", "-", "cv2 is not installed"))
        cv2 = None
    if cv2 is not None:
        theirs = opencv_denoise(cv2, rgb)
        t = median_time(lambda: opencv_denoise(cv2, rgb), 5)
        same = "same pixels" if np.array_equal(ours, theirs) else \
            f"{np.count_nonzero(ours != theirs)} pixels differ (max {np.abs(ours.astype(int) - theirs).max()})"
        rows.append((f"{SIDE}x{SIDE} numpy RGB, OpenCV cvtColor + medianBlur + filter2D (cv2 {cv2.__version__}, "
                     f"{cv2.getNumThreads()} threads)", f"{t * 1e3:.1f} ms", same))
    if gpu:
        for _ in range(2):
            out = p(rgb, device="gpu")
        t = median_time(lambda: p(rgb, device="gpu"), 5)
        same = "same pixels as imgpipe CPU" if np.array_equal(out, ours) else "DIFFERS from imgpipe CPU"
        rows.append((f"{SIDE}x{SIDE} numpy RGB through denoise.pipe, imgpipe GPU (upload, stages, download)",
                     f"{t * 1e3:.1f} ms", same))


def device_array():
    """An 8192x8192 RGB device array and its stream's synchronize: CuPy, else PyTorch."""
    host = image((SIDE, SIDE, 3))
    try:
        import cupy
        return "CuPy", cupy.asarray(host), lambda: cupy.cuda.get_current_stream().synchronize()
    except ImportError:
        import torch
        return "PyTorch", torch.from_numpy(host).cuda(), torch.cuda.synchronize


def back_to_back(p, array, calls):
    for _ in range(calls):
        p(array)


def kernel_time(p, calls):
    """(kernels' time a call in seconds, host<->device copies a call) by PyTorch's profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    t = torch.from_numpy(image((SIDE, SIDE, 3))).cuda()
    for _ in range(3):
        p(t)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            p(t)
        torch.cuda.synchronize()
    kernels = copies = 0.0
    for event in prof.events():
        name = event.name
        duration = next((getattr(event, a) for a in ("self_device_time_total", "self_cuda_time_total", "cuda_time")
                         if getattr(event, a, None)), 0)
        if "Memcpy" in name and ("HtoD" in name or "DtoH" in name):
            copies += 1
        elif "Memcpy" not in name and "Memset" not in name:
            kernels += duration
    return kernels * 1e-6 / calls, copies / calls


def device_denoise():
    library, array, sync = device_array()
    p = imgpipe.Pipeline.from_file(DENOISE)
    for _ in range(3):
        out = p(array)
    t = median_time(lambda: p(array), 20, sync)
    rows.append((f"{SIDE}x{SIDE} {library} RGB array through denoise.pipe on the GPU (a call, synchronized)",
                 f"{t * 1e3:.3f} ms", f"result {type(out).__name__} on cuda:{out.device}"))
    queued = median_time(lambda: back_to_back(p, array, 50), 7, sync) / 50
    rows.append(("  the same calls back to back, as a loop makes them (50 queued, then one synchronize; a call)",
                 f"{queued * 1e3:.3f} ms", ""))
    try:
        kernels, copies = kernel_time(p, 20)
        rows.append(("  its kernels' own time (PyTorch profiler)", f"{kernels * 1e3:.3f} ms",
                     f"call / kernels = {t / kernels:.2f} synchronized, {queued / kernels:.2f} back to back "
                     f"(target within 1.10); host<->device copies a call: {copies:g}"))
    except Exception as e:   # no torch, or its profiler cannot see the device
        rows.append(("  its kernels' own time", "-", f"not measured: {type(e).__name__}: {e}"))
    kept = []
    t = median_time(lambda: kept.append(p(array)), 20, sync)
    rows.append(("  the same call with every result kept (none freed during the loop)", f"{t * 1e3:.3f} ms", ""))
    del kept
    try:
        call_breakdown(p, 20)
    except Exception as e:
        rows.append(("  where a call's time goes", "-", f"not measured: {type(e).__name__}: {e}"))


def call_breakdown(p, calls):
    """The CUDA runtime calls and device operations of a call (PyTorch's profiler, CPU and CUDA
    activities), the five largest of each by time a call."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    t = torch.from_numpy(image((SIDE, SIDE, 3))).cuda()
    for _ in range(3):
        p(t)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            p(t)
        torch.cuda.synchronize()
    api, device = {}, {}
    for event in prof.events():
        name = event.name
        if name.startswith("cuda") or name.startswith("cu"):
            host = getattr(event, "cpu_time_total", 0) or 0
            api[name] = api.get(name, 0) + host
        dev = next((getattr(event, a) for a in ("self_device_time_total", "self_cuda_time_total")
                    if getattr(event, a, None)), 0)
        if dev:
            device[name] = device.get(name, 0) + dev
    for label, table in (("runtime calls (host time)", api), ("device operations", device)):
        top = sorted(table.items(), key=lambda kv: -kv[1])[:5]
        text = "; ".join(f"{name[:48]} {us / calls:.1f} us" for name, us in top)
        rows.append((f"  a call's {label}, per call", "", text or "none seen"))


def main():
    out_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else None
    gpu = imgpipe.gpu_available()
    call_overhead()
    host_denoise(gpu)
    if gpu:
        try:
            device_denoise()
        except ImportError:
            rows.append(("device arrays", "-", "neither CuPy nor PyTorch is installed"))
    else:
        rows.append(("GPU rows", "-", "no GPU here (or imgpipe built without CUDA)"))
    lines = [f"imgpipe {imgpipe.version()} from Python {sys.version.split()[0]}, numpy {np.__version__}", "",
             "| what | time | note |", "| --- | --- | --- |"]
    lines += [f"| {what} | {t} | {note} |" for what, t, note in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "python-api.md").write_text(text)


if __name__ == "__main__":
    main()
