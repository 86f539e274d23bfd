/* Run-time fusion (core/src/exec/fuse_plan.c): the loads of the fused window kernels, which apply the
 * chain of point stages (ip_chain, with IP_T == unsigned char, IP_IN_CH, IP_OUT_CH and IP_BORDER
 * put before the kernel by the core) to the original pixels and keep the first output channel.
 * Compiled by NVRTC only. */
#ifndef IPF_LOAD_CUH
#define IPF_LOAD_CUH
#include "border.h"
#include "fused_pixels.cuh"

/* The chain's output at column x (bordered) of an input row; 0 outside a zero border. */
__device__ __forceinline__ unsigned ipf_pixel(const char *row, int x, int width)
{
    int xx = ipk_border_index(x, width, IP_BORDER);
    if (xx < 0) return 0u;
    IP_T out[IP_OUT_CH];
    ipf_chain_at(row, xx, out);
    return out[0];
}

/* The shared tile of the window kernels: the chain's outputs for IPF_TW output columns and a
 * halo of IPF_HALO columns each side (radii up to IPF_HALO), one byte each, computed once per
 * loaded pixel. */
#define IPF_TW 128
#define IPF_HALO 16
#define IPF_PITCH (IPF_TW + 2 * IPF_HALO)
#define IPF_CHUNKS (IPF_PITCH / 16)

/* Input rows y_first .. y_first+rows-1 (bordered; zeros where the border contributes nothing),
 * columns x0-IPF_HALO .. x0+IPF_TW+IPF_HALO-1, 16 pixels a thread at a time. */
__device__ __forceinline__ void ipf_load_tile(const char *src, long long ss, int width, int height, int x0,
                                              int y_first, int rows, unsigned char *tile)
{
    for (int item = threadIdx.x; item < rows * IPF_CHUNKS; item += blockDim.x) {
        const int ry = item / IPF_CHUNKS, gx = x0 - IPF_HALO + 16 * (item - ry * IPF_CHUNKS);
        const int yy = ipk_border_index(y_first + ry, height, IP_BORDER);
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (yy >= 0) {
            const char *row = src + (long long)yy * ss;
            unsigned g[16];
            if (gx >= 0 && gx + 16 <= width && ((size_t)(row + (size_t)gx * IP_IN_CH) & 15) == 0) {
                ipf_chain16(row, gx, g);
            } else {
#pragma unroll
                for (int i = 0; i < 16; i++) g[i] = ipf_pixel(row, gx + i, width);
            }
            unsigned q[4];
#pragma unroll
            for (int i = 0; i < 4; i++) q[i] = g[4 * i] | g[4 * i + 1] << 8 | g[4 * i + 2] << 16 | g[4 * i + 3] << 24;
            v = make_uint4(q[0], q[1], q[2], q[3]);
        }
        *(uint4 *)(tile + ry * IPF_PITCH + (gx - x0 + IPF_HALO)) = v;
    }
}

/* Four output bytes at x (of a row of width) from q, one 32-bit store where aligned and whole. */
__device__ __forceinline__ void ipf_store4(unsigned char *row, int x, int width, unsigned q)
{
    if (x + 4 <= width && ((size_t)(row + x) & 3) == 0) {
        *(unsigned *)(row + x) = q;
        return;
    }
    for (int i = 0; i < 4 && x + i < width; i++) row[x + i] = (unsigned char)(q >> (8 * i));
}
#endif
