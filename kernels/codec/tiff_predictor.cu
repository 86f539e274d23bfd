#include <cuda_runtime.h>
#include "ipk.h"
#include "ipk_codec.h"

#define FULL_MASK 0xffffffffu
#define UNDO_WARPS 8

/* One warp a row: 32 pixels at a time, an inclusive scan per channel across the lanes, plus
 * the carry of the pixels before. Sums run in 32 bits; the store keeps the low bits, which is
 * the sum mod 2^8 or 2^16. */
template <typename T>
__global__ void predictor_undo_kernel(unsigned char *base, size_t pitch, int width, int height, int channels)
{
    int row_index = blockIdx.x * UNDO_WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row_index >= height) return;   /* the whole warp leaves together */
    T *row = (T *)(base + (size_t)row_index * pitch);
    unsigned carry[4] = { 0, 0, 0, 0 };
    for (int x0 = 0; x0 < width; x0 += 32) {
        int x = x0 + lane;
        unsigned v[4];
#pragma unroll
        for (int c = 0; c < 4; c++) v[c] = c < channels && x < width ? row[(size_t)x * channels + c] : 0u;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
#pragma unroll
            for (int c = 0; c < 4; c++) {
                unsigned before = __shfl_up_sync(FULL_MASK, v[c], offset);
                if (lane >= offset) v[c] += before;
            }
        }
#pragma unroll
        for (int c = 0; c < 4; c++) {
            v[c] += carry[c];
            if (c < channels && x < width) row[(size_t)x * channels + c] = (T)v[c];
            carry[c] = __shfl_sync(FULL_MASK, v[c], 31);
        }
    }
}

template <typename T>
__global__ void predictor_apply_kernel(const unsigned char *src, size_t src_pitch, unsigned char *dst,
                                       size_t dst_pitch, int row_samples, int height, int channels)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= row_samples) return;
    for (int y = blockIdx.y; y < height; y += gridDim.y) {
        const T *s = (const T *)(src + (size_t)y * src_pitch);
        T *d = (T *)(dst + (size_t)y * dst_pitch);
        d[i] = i >= channels ? (T)(s[i] - s[i - channels]) : s[i];
    }
}

__global__ void tiles_to_image_kernel(const unsigned char *tiles, int tile_w, int tile_h, size_t pixel_bytes,
                                      unsigned char *dst, size_t dst_pitch, size_t row_bytes, int height)
{
    size_t xb = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (xb >= row_bytes) return;
    size_t px = xb / pixel_bytes;
    size_t tiles_across = (row_bytes / pixel_bytes + tile_w - 1) / tile_w;
    size_t tile_row_bytes = (size_t)tile_w * pixel_bytes;
    size_t tile_bytes = tile_row_bytes * tile_h;
    size_t tx = px / tile_w, in_x = xb - tx * tile_row_bytes;
    for (int y = blockIdx.y; y < height; y += gridDim.y) {
        size_t ty = (size_t)y / tile_h, in_y = (size_t)y - ty * tile_h;
        dst[(size_t)y * dst_pitch + xb] = tiles[(ty * tiles_across + tx) * tile_bytes + in_y * tile_row_bytes + in_x];
    }
}

static int bad_rows(int width, int height, int channels, int sample_bytes, size_t pitch)
{
    return width < 1 || height < 0 || channels < 1 || channels > 4 || (sample_bytes != 1 && sample_bytes != 2) ||
           pitch % sample_bytes != 0 || pitch < (size_t)width * channels * sample_bytes;
}

static unsigned rows_grid(int height)
{
    return height < 65535 ? (unsigned)height : 65535u;
}

extern "C" int ipk_tiff_predictor_undo(void *rows, size_t pitch, int width, int height, int channels,
                                       int sample_bytes, void *stream)
{
    if (!rows || bad_rows(width, height, channels, sample_bytes, pitch)) return IPK_EINVAL;
    if (height == 0) return IPK_OK;
    unsigned blocks = (unsigned)((height + UNDO_WARPS - 1) / UNDO_WARPS);
    cudaStream_t s = (cudaStream_t)stream;
    if (sample_bytes == 1)
        predictor_undo_kernel<unsigned char><<<blocks, UNDO_WARPS * 32, 0, s>>>((unsigned char *)rows, pitch, width,
                                                                                height, channels);
    else
        predictor_undo_kernel<unsigned short><<<blocks, UNDO_WARPS * 32, 0, s>>>((unsigned char *)rows, pitch, width,
                                                                                 height, channels);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

extern "C" int ipk_tiff_predictor_apply(const void *src, size_t src_pitch, void *dst, size_t dst_pitch, int width,
                                        int height, int channels, int sample_bytes, void *stream)
{
    if (!src || !dst || bad_rows(width, height, channels, sample_bytes, src_pitch) ||
        bad_rows(width, height, channels, sample_bytes, dst_pitch) || (size_t)width * channels > 0x7fffffffu)
        return IPK_EINVAL;
    if (height == 0) return IPK_OK;
    int row_samples = width * channels;
    dim3 grid((unsigned)((row_samples + 255) / 256), rows_grid(height));
    cudaStream_t s = (cudaStream_t)stream;
    if (sample_bytes == 1)
        predictor_apply_kernel<unsigned char><<<grid, 256, 0, s>>>((const unsigned char *)src, src_pitch,
                                                                   (unsigned char *)dst, dst_pitch, row_samples,
                                                                   height, channels);
    else
        predictor_apply_kernel<unsigned short><<<grid, 256, 0, s>>>((const unsigned char *)src, src_pitch,
                                                                    (unsigned char *)dst, dst_pitch, row_samples,
                                                                    height, channels);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

extern "C" int ipk_tiff_tiles_to_image(const void *tiles, int tile_w, int tile_h, size_t pixel_bytes, void *dst,
                                       size_t dst_pitch, int width, int height, void *stream)
{
    if (!tiles || !dst || tile_w < 1 || tile_h < 1 || pixel_bytes == 0 || width < 1 || height < 0 ||
        dst_pitch < (size_t)width * pixel_bytes)
        return IPK_EINVAL;
    size_t row_bytes = (size_t)width * pixel_bytes;
    if (height == 0) return IPK_OK;
    if ((row_bytes + 255) / 256 > 0x7fffffffu) return IPK_EINVAL;
    dim3 grid((unsigned)((row_bytes + 255) / 256), rows_grid(height));
    tiles_to_image_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>((const unsigned char *)tiles, tile_w, tile_h,
                                                                  pixel_bytes, (unsigned char *)dst, dst_pitch,
                                                                  row_bytes, height);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
