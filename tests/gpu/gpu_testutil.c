#include <stdio.h>
#include <stdlib.h>
#include "gpu_testutil.h"

void need_gpu(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
        tu_skip(msg);
    }
}

int cuda_ok(cudaError_t e, const char *what)
{
    CHECK(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

size_t esize(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }

ipk_img dev_alloc(int w, int h, int c, ipk_dtype t, int aligned16)
{
    ipk_img d = { 0 };
    size_t row = (size_t)w * c * esize(t);
    size_t pitch = aligned16 ? (row + 16 + 15) / 16 * 16 : row + 3 * esize(t);
    d.width = w;
    d.height = h;
    d.channels = c;
    d.dtype = t;
    d.stride = (ptrdiff_t)pitch;
    if (!cuda_ok(cudaMalloc(&d.data, pitch * (size_t)(h > 0 ? h : 1)), "cudaMalloc")) exit(1);
    cuda_ok(cudaMemset(d.data, 0xA5, pitch * (size_t)(h > 0 ? h : 1)), "cudaMemset");
    return d;
}

ipk_img dev_upload(const ipk_img *host, int aligned16)
{
    ipk_img d = dev_alloc(host->width, host->height, host->channels, host->dtype, aligned16);
    size_t row = (size_t)host->width * host->channels * esize(host->dtype);
    if (host->height > 0 && row > 0)
        cuda_ok(cudaMemcpy2D(d.data, d.stride, host->data, host->stride, row, host->height, cudaMemcpyHostToDevice),
                "upload");
    return d;
}

ipk_img dev_download(const ipk_img *d)
{
    ipk_img h = tu_img_zeros(d->width, d->height, d->channels, d->dtype, 5 * (int)esize(d->dtype));
    size_t row = (size_t)d->width * d->channels * esize(d->dtype);
    if (d->height > 0 && row > 0)
        cuda_ok(cudaMemcpy2D(h.data, h.stride, d->data, d->stride, row, d->height, cudaMemcpyDeviceToHost), "download");
    return h;
}

void dev_free(ipk_img *d)
{
    cuda_ok(cudaFree(d->data), "cudaFree");
    d->data = NULL;
}

int gpu_finish_ok(int status, const char *what)
{
    CHECK(status == IPK_OK, "%s returned %d", what, status);
    return status == IPK_OK && cuda_ok(cudaDeviceSynchronize(), what);
}

