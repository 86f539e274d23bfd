/* Run-time fusion (core/src/fuse_plan.c): box mean on u8 whose load applies a chain of point
 * stages to the original pixels (ip_chain, with IP_T, IP_IN_CH, IP_OUT_CH, IP_BORDER and
 * IP_RADIUS put before this file by the core). A block makes a tile of IPF_TW x IPF_TH outputs:
 * the chain's values of the tile and its halo go to shared memory once (0 outside a zero or
 * shrink border), then horizontal sums, then vertical sums and the stage's rounding,
 * floor((sum + n/2) / n), n the window's pixels (inside the image for shrink). Integer sums are
 * exact, so the result is the unfused chain's bit for bit. Compiled by NVRTC. */
#include "border.h"

#define IPF_TW 64
#define IPF_TH 32
#define IPF_SW (IPF_TW + 2 * IP_RADIUS)
#define IPF_SH (IPF_TH + 2 * IP_RADIUS)
#define IPF_SHRINK 3

__device__ __forceinline__ void ipf_chain_at(const char *src, long long ss, int width, int height, int x, int y,
                                             IP_T *out)
{
    int yy = ipk_border_index(y, height, IP_BORDER), xx = ipk_border_index(x, width, IP_BORDER);
    if (yy < 0 || xx < 0) {
#pragma unroll
        for (int c = 0; c < IP_OUT_CH; c++) out[c] = 0;
        return;
    }
    const IP_T *p = (const IP_T *)(src + (long long)yy * ss) + (size_t)xx * IP_IN_CH;
    IP_T in[IP_IN_CH];
#pragma unroll
    for (int c = 0; c < IP_IN_CH; c++) in[c] = __ldg(p + c);
    ip_chain(in, out);
}

/* Window positions of i inside 0..n-1. */
__device__ __forceinline__ unsigned ipf_inside(int i, int n)
{
    int lo = i - IP_RADIUS < 0 ? 0 : i - IP_RADIUS, hi = i + IP_RADIUS > n - 1 ? n - 1 : i + IP_RADIUS;
    return (unsigned)(hi - lo + 1);
}

extern "C" __global__ void __launch_bounds__(256) ip_fused_mean(const char *src, long long ss, char *dst,
                                                                long long ds, int width, int height)
{
    __shared__ unsigned char tile[IPF_SH][IPF_SW * IP_OUT_CH];
    __shared__ unsigned short hsum[IPF_SH][IPF_TW * IP_OUT_CH];
    const int x0 = blockIdx.x * IPF_TW, y0 = blockIdx.y * IPF_TH;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nt = blockDim.x * blockDim.y;
    for (int i = tid; i < IPF_SH * IPF_SW; i += nt) {
        const int ly = i / IPF_SW, lx = i % IPF_SW;
        IP_T out[IP_OUT_CH];
        ipf_chain_at(src, ss, width, height, x0 + lx - IP_RADIUS, y0 + ly - IP_RADIUS, out);
#pragma unroll
        for (int c = 0; c < IP_OUT_CH; c++) tile[ly][lx * IP_OUT_CH + c] = out[c];
    }
    __syncthreads();
    for (int i = tid; i < IPF_SH * IPF_TW * IP_OUT_CH; i += nt) {
        const int ly = i / (IPF_TW * IP_OUT_CH), v = i % (IPF_TW * IP_OUT_CH);
        unsigned s = 0;
#pragma unroll
        for (int d = 0; d <= 2 * IP_RADIUS; d++) s += tile[ly][v + d * IP_OUT_CH];
        hsum[ly][v] = (unsigned short)s;
    }
    __syncthreads();
    for (int i = tid; i < IPF_TH * IPF_TW * IP_OUT_CH; i += nt) {
        const int ly = i / (IPF_TW * IP_OUT_CH), v = i % (IPF_TW * IP_OUT_CH);
        const int y = y0 + ly, x = x0 + v / IP_OUT_CH;
        if (y >= height || x >= width) continue;
        unsigned s = 0;
#pragma unroll
        for (int d = 0; d <= 2 * IP_RADIUS; d++) s += hsum[ly + d][v];
        const unsigned n = IP_BORDER == IPF_SHRINK ? ipf_inside(x, width) * ipf_inside(y, height)
                                                   : (2 * IP_RADIUS + 1) * (2 * IP_RADIUS + 1);
        ((unsigned char *)(dst + (long long)y * ds))[(size_t)x0 * IP_OUT_CH + v] = (unsigned char)((s + n / 2) / n);
    }
}
