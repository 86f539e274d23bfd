/* Run-time fusion (core/src/exec/fuse_plan.c): box mean of radius IP_RADIUS on u8 whose load applies a
 * chain of point stages to the original pixels (ip_chain, with IP_T, IP_IN_CH, IP_OUT_CH and
 * IP_BORDER put before this file by the core), so that e.g. grayscale -> mean reads the RGB image
 * once and never writes the gray one. A block of 256 threads makes IPF_TW x IPF_TH outputs:
 *   1. the chain once per pixel of the tile and its halo, into shared memory (fused_load.cuh);
 *   2. horizontal window sums of 16 outputs per thread, sliding over bytes, as uint16 pairs;
 *   3. vertical running sums down IPF_VSEG rows of 4 columns per thread, rounded and stored 4
 *      bytes at a time.
 * The sums are exact integers and the rounding is the mean stage's, floor((sum + n/2) / n) with n
 * the window's pixels (the shrink border: those inside the image), as kernels/gpu/mean.cu and
 * kernels/cpu/mean.c round, so the result is the unfused chain's bit for bit. Compiled by NVRTC. */
#include "fused_load.cuh"

#define IPF_R IP_RADIUS
#define IPF_TH 64
#define IPF_ROWS_IN (IPF_TH + 2 * IPF_R)
#define IPF_HSEG 16
#define IPF_HWORDS (IPF_TW / 2)             /* a row of horizontal sums as uint16 pairs */
#define IPF_VSEG (IPF_TH / 8)               /* 256 threads: 32 column quads by 8 row segments */
#define IPF_RW ((IPF_R + 3) / 4)            /* words of margin each side of a segment's bytes */

/* Byte o (-IPF_R .. 15+IPF_R) around a segment from its words w, w[0] starting 4*IPF_RW bytes before. */
#define IPF_BYTE(w, o) (((w)[(4 * IPF_RW + (o)) >> 2] >> (8 * ((4 * IPF_RW + (o)) & 3))) & 0xffu)

/* Window sums of tile row ry for outputs j0 .. j0+15, into hs as 8 uint16 pairs. */
__device__ __forceinline__ void ipf_row_sums(const unsigned char *tile, int ry, int j0, unsigned *hs)
{
    const unsigned *row = (const unsigned *)(tile + ry * IPF_PITCH + IPF_HALO + j0) - IPF_RW;
    unsigned w[2 * IPF_RW + 4];
#pragma unroll
    for (int i = 0; i < 2 * IPF_RW + 4; i++) w[i] = row[i];
    unsigned h[IPF_HSEG], sum = 0;
#pragma unroll
    for (int o = -IPF_R; o <= IPF_R; o++) sum += IPF_BYTE(w, o);
    h[0] = sum;
#pragma unroll
    for (int k = 1; k < IPF_HSEG; k++) {
        sum += IPF_BYTE(w, k + IPF_R) - IPF_BYTE(w, k - 1 - IPF_R);
        h[k] = sum;
    }
    uint4 *out = (uint4 *)(hs + ry * IPF_HWORDS + j0 / 2);
    out[0] = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
    out[1] = make_uint4(h[8] | h[9] << 16, h[10] | h[11] << 16, h[12] | h[13] << 16, h[14] | h[15] << 16);
}

/* Pixels of the window around i (of n) inside the image: the shrink border's count on one axis. */
__device__ __forceinline__ unsigned ipf_span(int i, int n)
{
    return (unsigned)(min(i + IPF_R, n - 1) - max(i - IPF_R, 0) + 1);
}

__device__ __forceinline__ unsigned ipf_round(unsigned sum, unsigned n) { return (sum + n / 2) / n; }

extern "C" __global__ void __launch_bounds__(256) ip_fused_mean(const char *src, long long ss, char *dst,
                                                                long long ds, int width, int height)
{
    __shared__ __align__(16) unsigned char tile[IPF_ROWS_IN * IPF_PITCH];
    __shared__ __align__(16) unsigned hs[IPF_ROWS_IN * IPF_HWORDS];
    const int x0 = blockIdx.x * IPF_TW, y0 = blockIdx.y * IPF_TH;
    ipf_load_tile(src, ss, width, height, x0, y0 - IPF_R, IPF_ROWS_IN, tile);
    __syncthreads();

    for (int item = threadIdx.x; item < IPF_ROWS_IN * (IPF_TW / IPF_HSEG); item += blockDim.x) {
        const int ry = item / (IPF_TW / IPF_HSEG), g = item - ry * (IPF_TW / IPF_HSEG);
        ipf_row_sums(tile, ry, g * IPF_HSEG, hs);
    }
    __syncthreads();

    const int q = threadIdx.x & 31, ty0 = (threadIdx.x >> 5) * IPF_VSEG, x = x0 + 4 * q;
    if (x >= width || y0 + ty0 >= height) return;
    const unsigned *col = hs + ty0 * IPF_HWORDS + 2 * q;
    unsigned s[4] = { 0, 0, 0, 0 };
#pragma unroll
    for (int r = 0; r < 2 * IPF_R + 1; r++) {
        const uint2 v = *(const uint2 *)(col + r * IPF_HWORDS);
        s[0] += v.x & 0xffffu; s[1] += v.x >> 16; s[2] += v.y & 0xffffu; s[3] += v.y >> 16;
    }
    unsigned wx[4];
#pragma unroll
    for (int i = 0; i < 4; i++) wx[i] = ipf_span(min(x + i, width - 1), width);
#pragma unroll
    for (int k = 0; k < IPF_VSEG; k++) {
        const int y = y0 + ty0 + k;
        if (y >= height) break;
        if (k > 0) {
            const uint2 in = *(const uint2 *)(col + (k + 2 * IPF_R) * IPF_HWORDS);
            const uint2 out = *(const uint2 *)(col + (k - 1) * IPF_HWORDS);
            s[0] += (in.x & 0xffffu) - (out.x & 0xffffu);
            s[1] += (in.x >> 16) - (out.x >> 16);
            s[2] += (in.y & 0xffffu) - (out.y & 0xffffu);
            s[3] += (in.y >> 16) - (out.y >> 16);
        }
        unsigned packed = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const unsigned n = IP_BORDER == 3 ? wx[i] * ipf_span(y, height) : (2 * IPF_R + 1) * (2 * IPF_R + 1);
            packed |= ipf_round(s[i], n) << (8 * i);
        }
        ipf_store4((unsigned char *)(dst + (long long)y * ds), x, width, packed);
    }
}
