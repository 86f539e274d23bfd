/* Run-time fusion (core/src/exec/fuse_plan.c): a chain of point stages, then histogram (a reduction
 * that passes the image on), as one kernel: each pixel is read once from the original image, the
 * chain's output is written (the stages after need it) and counted in the same pass, so the
 * chain's output is never read back. The core puts before this file ip_chain() with IP_T
 * (unsigned char), IP_IN_CH, IP_OUT_CH (1..4) and IP_HIST_BINS. Counting is kernels/gpu/
 * histogram.cu's for 8-bit images: values counted in shared memory (one copy per warp), mapped
 * to bins v * bins / 256 at the merge into counts, one atomic per non-zero counter per block.
 * Counts are integers, so the totals are the unfused kernel's whatever the order. Compiled by
 * NVRTC; blocks walk rows blockIdx.y, blockIdx.y + gridDim.y, ... */
#include "fused_pixels.cuh"

#define IPF_HIST_THREADS 256
#define IPF_HIST_WARPS (IPF_HIST_THREADS / 32)

#if IP_OUT_CH == 1
/* One channel out (grayscale's): a thread makes 16 pixels of a row, 16 rows of 256 pixels a block
 * step, with vector loads and a 16-byte store where aligned, and counts them in counters of its
 * own lane (value v of lane l at word v * 32 + l), so a warp's 32 atomics fall in 32 banks whatever
 * the values (histogram.cu's hist_u8c1_kernel). The one-pixel-a-thread kernel below took 0.157 ms
 * on the H100 at 8192x8192 RGB, slower than grayscale and histogram apart (0.121). */
#define IPF_HIST_ROWS (IPF_HIST_THREADS / 16)

extern "C" __global__ void __launch_bounds__(IPF_HIST_THREADS) ip_fused_histogram(const char *src, long long ss,
                                                                                   char *dst, long long ds,
                                                                                   int width, int height,
                                                                                   unsigned *counts)
{
    __shared__ unsigned sh[256 * 32];
    for (int i = threadIdx.x; i < 256 * 32; i += blockDim.x) sh[i] = 0;
    __syncthreads();
    unsigned *lane_counters = sh + (threadIdx.x & 31);
    const int x = blockIdx.x * blockDim.x + (threadIdx.x % 16) * 16;
    const int n = x < width ? min(16, width - x) : 0;
    for (int y = blockIdx.y * IPF_HIST_ROWS + threadIdx.x / 16; n > 0 && y < height; y += gridDim.y * IPF_HIST_ROWS) {
        const char *row = src + (long long)y * ss;
        unsigned char *d = (unsigned char *)(dst + (long long)y * ds) + x;
        unsigned g[16];
        if (n == 16 && ((size_t)(row + (size_t)x * IP_IN_CH) & 15) == 0) {
            ipf_chain16(row, x, g);
        } else {
            for (int i = 0; i < n; i++) {
                IP_T out[IP_OUT_CH];
                ipf_chain_at(row, x + i, out);
                g[i] = out[0];
            }
        }
        if (n == 16 && ((size_t)d & 15) == 0) {
            unsigned q[4];
#pragma unroll
            for (int i = 0; i < 4; i++) q[i] = g[4 * i] | g[4 * i + 1] << 8 | g[4 * i + 2] << 16 | g[4 * i + 3] << 24;
            *(uint4 *)d = make_uint4(q[0], q[1], q[2], q[3]);
#pragma unroll
            for (int i = 0; i < 16; i++) atomicAdd(&lane_counters[g[i] * 32], 1u);
        } else {
            for (int i = 0; i < n; i++) {
                d[i] = (unsigned char)g[i];
                atomicAdd(&lane_counters[g[i] * 32], 1u);
            }
        }
    }
    __syncthreads();
    /* value v sums its 32 copies starting at copy v % 32, so a warp's reads hit 32 banks */
    for (int v = threadIdx.x; v < 256; v += blockDim.x) {
        unsigned sum = 0;
        for (int k = 0; k < 32; k++) sum += sh[v * 32 + ((k + v) & 31)];
        if (sum) atomicAdd(&counts[(int)(((long long)v * IP_HIST_BINS) / 256)], sum);
    }
}
#else
extern "C" __global__ void __launch_bounds__(IPF_HIST_THREADS) ip_fused_histogram(const char *src, long long ss,
                                                                                   char *dst, long long ds,
                                                                                   int width, int height,
                                                                                   unsigned *counts)
{
    __shared__ unsigned sh[IPF_HIST_WARPS * IP_OUT_CH * 256];
    for (int i = threadIdx.x; i < IPF_HIST_WARPS * IP_OUT_CH * 256; i += blockDim.x) sh[i] = 0;
    __syncthreads();
    unsigned *mine = sh + (threadIdx.x / 32) * IP_OUT_CH * 256;
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x < width) {
        for (int y = blockIdx.y; y < height; y += gridDim.y) {
            IP_T *d = (IP_T *)(dst + (long long)y * ds) + (size_t)x * IP_OUT_CH;
            IP_T out[IP_OUT_CH];
            ipf_chain_at(src + (long long)y * ss, x, out);
#pragma unroll
            for (int c = 0; c < IP_OUT_CH; c++) {
                d[c] = out[c];
                atomicAdd(&mine[c * 256 + out[c]], 1u);
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < IP_OUT_CH * 256; i += blockDim.x) {
        unsigned sum = 0;
#pragma unroll
        for (int w = 0; w < IPF_HIST_WARPS; w++) sum += sh[w * IP_OUT_CH * 256 + i];
        const int ch = i / 256, v = i % 256;
        if (sum) atomicAdd(&counts[(long long)ch * IP_HIST_BINS + (int)(((long long)v * IP_HIST_BINS) / 256)], sum);
    }
}
#endif
