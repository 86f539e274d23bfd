#include <cuda_runtime.h>
#include "ipk.h"

template <typename T>
__global__ void gray_kernel(const char *src, ptrdiff_t src_stride, char *dst, ptrdiff_t dst_stride,
                            int width, int height, int ch, uint32_t w0, uint32_t w1, uint32_t w2)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x >= width || y >= height) return;
    const T *s = (const T *)(src + (ptrdiff_t)y * src_stride) + (size_t)x * ch;
    T *d = (T *)(dst + (ptrdiff_t)y * dst_stride);
    if constexpr (sizeof(T) == 4) {
        d[x] = s[0] * (w0 / 32768.0f) + s[1] * (w1 / 32768.0f) + s[2] * (w2 / 32768.0f);
    } else {
        d[x] = (T)(((unsigned long long)s[0] * w0 + (unsigned long long)s[1] * w1 +
                    (unsigned long long)s[2] * w2 + 16384u) >> 15);
    }
}

extern "C" int ipk_grayscale_gpu(const ipk_img *src, const ipk_img *dst, const int32_t weights_q15[3], void *stream)
{
    if ((src->channels != 3 && src->channels != 4) || dst->channels != 1 || src->dtype != dst->dtype ||
        src->width != dst->width || src->height != dst->height)
        return IPK_EINVAL;
    dim3 block(256), grid((src->width + 255) / 256, src->height);
    cudaStream_t s = (cudaStream_t)stream;
    uint32_t w0 = weights_q15[0], w1 = weights_q15[1], w2 = weights_q15[2];
    if (src->dtype == IPK_U8)
        gray_kernel<uint8_t><<<grid, block, 0, s>>>((const char *)src->data, src->stride, (char *)dst->data,
                                                   dst->stride, src->width, src->height, src->channels, w0, w1, w2);
    else if (src->dtype == IPK_U16)
        gray_kernel<uint16_t><<<grid, block, 0, s>>>((const char *)src->data, src->stride, (char *)dst->data,
                                                    dst->stride, src->width, src->height, src->channels, w0, w1, w2);
    else
        gray_kernel<float><<<grid, block, 0, s>>>((const char *)src->data, src->stride, (char *)dst->data,
                                                 dst->stride, src->width, src->height, src->channels, w0, w1, w2);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
