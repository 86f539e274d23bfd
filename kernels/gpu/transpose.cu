#include <cuda_runtime.h>
#include "ipk.h"

/* Placeholder until the tiled kernel lands: one thread per pixel, byte copies. */
__global__ void transpose_naive(const char *src, ptrdiff_t ss, char *dst, ptrdiff_t ds, int w, int h, int px)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    for (int b = 0; b < px; b++) dst[(ptrdiff_t)x * ds + (ptrdiff_t)y * px + b] = src[(ptrdiff_t)y * ss + (ptrdiff_t)x * px + b];
}

extern "C" int ipk_transpose_gpu(const ipk_img *src, const ipk_img *dst, void *stream)
{
    if (src->width != dst->height || src->height != dst->width || src->channels != dst->channels ||
        src->dtype != dst->dtype)
        return IPK_EINVAL;
    int px = src->channels * (src->dtype == IPK_U8 ? 1 : src->dtype == IPK_U16 ? 2 : 4);
    dim3 block(32, 8), grid((src->width + 31) / 32, (src->height + 7) / 8);
    transpose_naive<<<grid, block, 0, (cudaStream_t)stream>>>((const char *)src->data, src->stride, (char *)dst->data,
                                                             dst->stride, src->width, src->height, px);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
