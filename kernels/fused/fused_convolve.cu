/* Run-time fusion (core/src/exec/fuse_plan.c): convolve with integer weights on u8 whose load applies
 * a chain of point stages to the original pixels (ip_chain, with IP_T, IP_IN_CH, IP_OUT_CH and
 * IP_BORDER put before this file by the core), so that e.g. grayscale -> convolve reads the RGB
 * image once and never writes the gray one. The core also puts IPF_KW, IPF_KH, IPF_WEIGHTS (the
 * kernel row-major, whole numbers) and how the sum is finished: IPF_FINISH (conv_round.h's
 * IPK_CONV_FINISH_*) with IPF_ROUNDING, or IPF_DIVISOR and IPF_OFFSET for the general case.
 * A block of 256 threads makes IPF_TW x IPF_TH outputs: the chain once per pixel of the tile and
 * its halo into shared memory (fused_load.cuh), then 4 adjacent outputs per thread and row, the
 * weights constants in the code. The sum is exact in int32 (the core checks sum |w| * 255 fits)
 * and finished as kernels/cpu/convolve.c and kernels/gpu/convolve.cu finish it, equal to
 * rint((double)S / divisor + offset) saturated, so the result is the unfused chain's bit for bit.
 * Compiled by NVRTC. */
#include "fused_load.cuh"
#include "conv_round.h"

#define IPF_RX (IPF_KW / 2)
#define IPF_RY (IPF_KH / 2)
#define IPF_TH 64
#define IPF_ROWS_IN (IPF_TH + 2 * IPF_RY)
#define IPF_VSEG (IPF_TH / 8)               /* 256 threads: 32 column quads by 8 row segments */
#define IPF_RW ((IPF_RX + 3) / 4)           /* words of margin each side of a quad's bytes */

/* IPF_FINISH is a number, compared as the enum it comes from: every branch is compiled, one kept. */
__device__ __forceinline__ unsigned ipf_finish(int sum)
{
    const ipk_conv_rounding r = IPF_ROUNDING;
    if (IPF_FINISH == IPK_CONV_FINISH_SHIFT)
        return (unsigned)ipk_conv_clamp(ipk_conv_round_shift(r, r.sign * sum + r.bias), 255);
    if (IPF_FINISH == IPK_CONV_FINISH_ODD)
        return (unsigned)ipk_conv_clamp(ipk_conv_round_odd(r, r.sign * sum + r.bias), 255);
    return (unsigned)ipk_conv_saturate(__dadd_rn(__ddiv_rn((double)sum, IPF_DIVISOR), IPF_OFFSET), 255.0);
}

/* The four outputs at tile column j (a multiple of 4) of tile output row ty, packed in a word. */
__device__ __forceinline__ unsigned ipf_quad(const unsigned char *tile, int ty, int j)
{
    constexpr int weights[IPF_KW * IPF_KH] = IPF_WEIGHTS;
    int s[4] = { 0, 0, 0, 0 };
#pragma unroll
    for (int ky = 0; ky < IPF_KH; ky++) {
        const unsigned *row = (const unsigned *)(tile + (ty + ky) * IPF_PITCH + IPF_HALO + j) - IPF_RW;
        unsigned w[2 * IPF_RW + 1];
#pragma unroll
        for (int i = 0; i < 2 * IPF_RW + 1; i++) w[i] = row[i];
#pragma unroll
        for (int kx = 0; kx < IPF_KW; kx++) {
            if (weights[ky * IPF_KW + kx] == 0) continue;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int b = 4 * IPF_RW + i + kx - IPF_RX;
                s[i] += weights[ky * IPF_KW + kx] * (int)((w[b >> 2] >> (8 * (b & 3))) & 0xffu);
            }
        }
    }
    return ipf_finish(s[0]) | ipf_finish(s[1]) << 8 | ipf_finish(s[2]) << 16 | ipf_finish(s[3]) << 24;
}

extern "C" __global__ void __launch_bounds__(256) ip_fused_convolve(const char *src, long long ss, char *dst,
                                                                    long long ds, int width, int height)
{
    __shared__ __align__(16) unsigned char tile[IPF_ROWS_IN * IPF_PITCH];
    const int x0 = blockIdx.x * IPF_TW, y0 = blockIdx.y * IPF_TH;
    ipf_load_tile(src, ss, width, height, x0, y0 - IPF_RY, IPF_ROWS_IN, tile);
    __syncthreads();

    const int q = threadIdx.x & 31, ty0 = (threadIdx.x >> 5) * IPF_VSEG, x = x0 + 4 * q;
    if (x >= width) return;
#pragma unroll 1
    for (int k = 0; k < IPF_VSEG && y0 + ty0 + k < height; k++)
        ipf_store4((unsigned char *)(dst + (long long)(y0 + ty0 + k) * ds), x, width, ipf_quad(tile, ty0 + k, 4 * q));
}
