"""Device arrays (CuPy, PyTorch, DLPack, __cuda_array_interface__) in and out without a copy, on
the caller's stream. Skipped, with the reason, without a GPU or without CuPy or PyTorch."""
import time

import numpy as np
import pytest

import imgpipe
from conftest import random_image

needs_gpu = pytest.mark.skipif(not imgpipe.gpu_available(), reason="no GPU here (or imgpipe built without CUDA)")
PIPE = "grayscale | median radius=1 | convolve kernel=gaussian3"


@pytest.fixture(scope="module")
def cupy():
    if not imgpipe.gpu_available():
        pytest.skip("no GPU here (or imgpipe built without CUDA)")
    return pytest.importorskip("cupy", reason="CuPy is not installed")


@pytest.fixture(scope="module")
def torch():
    if not imgpipe.gpu_available():
        pytest.skip("no GPU here (or imgpipe built without CUDA)")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_cupy_round_trip(cupy, rng, dtype):
    host = random_image(rng, (301, 257, 3), dtype)
    p = imgpipe.Pipeline("grayscale | median radius=1")
    out = p(cupy.asarray(host))
    assert isinstance(out, imgpipe.DeviceArray) and out.shape == (301, 257) and out.dtype == np.dtype(dtype).name
    back = cupy.asarray(out)
    assert back.data.ptr == out.ptr   # the result itself, not a copy
    np.testing.assert_array_equal(cupy.asnumpy(back), p(host, device="cpu"))
    np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(out)), p(host, device="cpu"))


def test_cupy_row_strided_view(cupy, rng):
    host = random_image(rng, (64, 96, 3), np.uint8)
    view = cupy.asarray(host)[:, 16:80]
    p = imgpipe.Pipeline(PIPE)
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(p(view))), p(host[:, 16:80], device="cpu"))
    with pytest.raises(ValueError, match="contiguous"):
        p(cupy.asarray(host).transpose(1, 0, 2))


def test_cupy_stream(cupy, rng):
    host = random_image(rng, (128, 128, 3), np.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        a = cupy.asarray(host)
        out = imgpipe.Pipeline(PIPE)(a)
        assert out.__cuda_array_interface__["stream"] == stream.ptr
        result = cupy.asnumpy(cupy.asarray(out))
    out2 = imgpipe.Pipeline(PIPE)(a, stream=stream)
    assert out2.__cuda_array_interface__["stream"] == stream.ptr
    stream.synchronize()
    np.testing.assert_array_equal(result, imgpipe.Pipeline(PIPE)(host, device="cpu"))


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_torch_round_trip(torch, rng, dtype):
    host = random_image(rng, (199, 211, 3), np.dtype(dtype))
    t = torch.from_numpy(host).cuda()
    p = imgpipe.Pipeline(PIPE if dtype == "uint8" else "median radius=1")
    out = p(t)
    tt = torch.from_dlpack(out)
    assert tt.is_cuda and tt.data_ptr() == out.ptr
    expected = p(host, device="cpu")
    del out   # the tensor keeps the memory alive
    np.testing.assert_array_equal(tt.cpu().numpy(), expected)


def test_torch_stream(torch, rng):
    host = random_image(rng, (256, 256, 3), np.uint8)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.from_numpy(host).cuda()
        out = imgpipe.Pipeline(PIPE)(t)
        assert out.__cuda_array_interface__["stream"] == s.cuda_stream
        tt = torch.from_dlpack(out)
        got = tt.cpu().numpy()
    np.testing.assert_array_equal(got, imgpipe.Pipeline(PIPE)(host, device="cpu"))
    out = imgpipe.Pipeline(PIPE)(t, stream=s)
    assert out.__cuda_array_interface__["stream"] == s.cuda_stream


class DLPackOnly:
    """An array that offers only DLPack (as JAX does)."""

    def __init__(self, t):
        self.t = t
        self.streams = []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_dlpack_input(torch, rng):
    host = random_image(rng, (97, 101, 3), np.uint8)
    wrapped = DLPackOnly(torch.from_numpy(host).cuda())
    out = imgpipe.Pipeline(PIPE)(wrapped)
    assert len(wrapped.streams) == 1 and wrapped.streams[0] is not None and wrapped.streams[0] != 0
    np.testing.assert_array_equal(torch.from_dlpack(out).cpu().numpy(), imgpipe.Pipeline(PIPE)(host, device="cpu"))


def test_result_freed_by_the_last_owner(torch, rng):
    host = random_image(rng, (1024, 1024), np.uint8)
    t = torch.from_numpy(host).cuda()
    p = imgpipe.Pipeline("median radius=1")
    torch.cuda.synchronize()
    for _ in range(3):   # warm
        torch.from_dlpack(p(t))
    free_before = torch.cuda.mem_get_info()[0]
    for _ in range(200):
        tt = torch.from_dlpack(p(t))
        del tt
    torch.cuda.synchronize()
    assert torch.cuda.mem_get_info()[0] >= free_before - 16 * 1024 * 1024


def test_no_host_copy_by_timing(cupy, rng):
    """An 8192x8192 device array through the pipeline takes less than one copy of it to the host:
    the run did not go through host memory."""
    a = cupy.asarray(random_image(rng, (8192, 8192, 3), np.uint8))
    p = imgpipe.Pipeline("grayscale | median radius=1")
    for _ in range(3):
        p(a)
    cupy.cuda.get_current_stream().synchronize()
    begin = time.perf_counter()
    for _ in range(5):
        out = p(a)
    cupy.cuda.get_current_stream().synchronize()
    run = (time.perf_counter() - begin) / 5
    begin = time.perf_counter()
    a.get()
    copy = time.perf_counter() - begin
    assert run < copy, (run, copy)
    del out


def test_host_array_on_the_gpu(rng):
    if not imgpipe.gpu_available():
        pytest.skip("no GPU here (or imgpipe built without CUDA)")
    host = random_image(rng, (211, 199, 3), np.uint8)
    p = imgpipe.Pipeline(PIPE)
    np.testing.assert_array_equal(p(host, device="gpu"), p(host, device="cpu"))
