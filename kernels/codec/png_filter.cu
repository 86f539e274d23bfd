#include <cuda_runtime.h>
#include "ipk.h"
#include "ipk_codec.h"

/* Rows are filtered by groups of GROUP_MAX threads or fewer (a power of two, at least a warp);
 * a block of BLOCK_THREADS holds BLOCK_THREADS / group rows. */
#define BLOCK_THREADS 256
#define N_FILTERS 5

/* Byte i of a row as PNG stores it: 16-bit samples (little-endian on the device) big-endian. */
__device__ __forceinline__ int png_byte(const uint8_t *row, size_t i, int swap16)
{
    return row[swap16 ? i ^ 1 : i];
}

__device__ __forceinline__ int paeth(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Filtered byte i of the row for every filter (None, Sub, Up, Avg, Paeth). */
__device__ __forceinline__ void filter_all(const uint8_t *cur, const uint8_t *prev, size_t i, unsigned bpp,
                                           int swap16, int out[N_FILTERS])
{
    int x = png_byte(cur, i, swap16);
    int a = i >= bpp ? png_byte(cur, i - bpp, swap16) : 0;
    int b = prev ? png_byte(prev, i, swap16) : 0;
    int c = prev && i >= bpp ? png_byte(prev, i - bpp, swap16) : 0;
    out[0] = x;
    out[1] = (x - a) & 0xff;
    out[2] = (x - b) & 0xff;
    out[3] = (x - ((a + b) >> 1)) & 0xff;
    out[4] = (x - paeth(a, b, c)) & 0xff;
}

/* Each row's filter chosen as the CPU writer (io_png_filter.c) and libpng choose it: the least
 * sum of the filtered bytes taken as signed magnitudes among the allowed filters, ties to the
 * earlier one; then the row written after its filter byte. */
__global__ void png_filter_kernel(const uint8_t *src, ptrdiff_t stride, size_t n, size_t height, unsigned bpp,
                                  int swap16, unsigned allowed, unsigned group, uint8_t *out)
{
    __shared__ unsigned long long sums[BLOCK_THREADS / 32][N_FILTERS];
    __shared__ int chosen[BLOCK_THREADS / 32];
    unsigned rows_per_block = BLOCK_THREADS / group, slot = threadIdx.x / group, lane = threadIdx.x % group;
    size_t y = (size_t)blockIdx.x * rows_per_block + slot;
    int live = y < height;
    const uint8_t *cur = live ? src + y * stride : src;
    const uint8_t *prev = live && y > 0 ? cur - stride : NULL;
    unsigned long long sum[N_FILTERS] = { 0, 0, 0, 0, 0 };
    for (size_t i = lane; live && i < n; i += group) {
        int f[N_FILTERS];
        filter_all(cur, prev, i, bpp, swap16, f);
        for (int k = 0; k < N_FILTERS; k++) sum[k] += f[k] < 128 ? f[k] : 256 - f[k];
    }
    for (int k = 0; k < N_FILTERS; k++)
        for (int d = 16; d > 0; d >>= 1) sum[k] += __shfl_down_sync(0xffffffffu, sum[k], d);
    unsigned warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0)
        for (int k = 0; k < N_FILTERS; k++) sums[warp][k] = sum[k];
    __syncthreads();
    if (lane == 0 && live) {
        unsigned first_warp = slot * group / 32, warps = group / 32;
        int best = -1;
        unsigned long long best_sum = 0;
        for (int k = 0; k < N_FILTERS; k++) {
            if (!(allowed & (1u << k))) continue;
            unsigned long long s = 0;
            for (unsigned w = 0; w < warps; w++) s += sums[first_warp + w][k];
            if (best < 0 || s < best_sum) best = k, best_sum = s;
        }
        chosen[slot] = best;
    }
    __syncthreads();
    if (!live) return;
    int best = chosen[slot];
    uint8_t *dst = out + y * (n + 1);
    if (lane == 0) dst[0] = (uint8_t)best;
    for (size_t i = lane; i < n; i += group) {
        int f[N_FILTERS];
        filter_all(cur, prev, i, bpp, swap16, f);
        dst[1 + i] = (uint8_t)f[best];
    }
}

extern "C" int ipk_png_filter(const uint8_t *src, ptrdiff_t stride, size_t row_bytes, size_t height, unsigned bpp,
                              int sample_bytes, unsigned allowed, uint8_t *out, void *stream)
{
    if (height == 0 || row_bytes == 0) return IPK_OK;
    if (!src || !out || bpp == 0 || bpp > 8 || (sample_bytes != 1 && sample_bytes != 2) || row_bytes % bpp ||
        (allowed & 0x1fu) == 0 || stride < 0 || (height > 1 && (size_t)stride < row_bytes))
        return IPK_EINVAL;
    unsigned group = 32;
    while (group < BLOCK_THREADS && group * 16 < row_bytes) group *= 2;
    size_t rows_per_block = BLOCK_THREADS / group, blocks = (height + rows_per_block - 1) / rows_per_block;
    if (blocks > 0x7fffffffu) return IPK_EINVAL;
    png_filter_kernel<<<(unsigned)blocks, BLOCK_THREADS, 0, (cudaStream_t)stream>>>(
        src, stride, row_bytes, height, bpp, sample_bytes == 2, allowed & 0x1fu, group, out);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
