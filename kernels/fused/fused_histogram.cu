/* Run-time fusion (core/src/fuse_plan.c): a chain of point stages, then histogram (a reduction
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
