/* Run-time fusion (core/src/fuse_plan.c): median 3x3 on u8 whose load applies a chain of point
 * stages to the original pixels (ip_chain, with IP_T, IP_IN_CH, IP_OUT_CH == 1 and IP_BORDER put
 * before this file by the core), so that e.g. grayscale -> median reads the RGB image once and
 * never writes the gray one. The layout is kernels/gpu/median.cu's packed path at radius 1: 16
 * pixels by 4 rows per thread, two pixels per word in 16-bit lanes, columns sorted once per word.
 * A median only selects, so the result is the unfused chain's bit for bit. Compiled by NVRTC. */
#include "fused_load.cuh"
#include "median_packed.cuh"

#define IPF_ROWS 4

/* Logical row ly around gx: w[i] holds pixels gx+2i and gx+2i+1, w[8] gx+16 and gx-1. */
__device__ __forceinline__ void ipf_load(const char *src, long long ss, int width, int height, int gx, int ly,
                                         unsigned *w)
{
    int yy = ipk_border_index(ly, height, IP_BORDER);
    if (yy < 0) {
#pragma unroll
        for (int i = 0; i < 9; i++) w[i] = 0;
        return;
    }
    const char *row = src + (long long)yy * ss;
    unsigned g[16];
    if (gx + 16 <= width && ((size_t)(row + (size_t)gx * IP_IN_CH) & 15) == 0) {
        ipf_chain16(row, gx, g);
    } else {
#pragma unroll
        for (int i = 0; i < 16; i++) g[i] = ipf_pixel(row, gx + i, width);
    }
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = g[2 * i] | g[2 * i + 1] << 16;
    w[8] = ipf_pixel(row, gx + 16, width) | ipf_pixel(row, gx - 1, width) << 16;
}

/* Pixels gx+p and gx+p+1 as one word, p in -1..15. */
__device__ __forceinline__ unsigned ipf_pair(const unsigned *w, int p)
{
    if (p == -1) return __byte_perm(w[8], w[0], 0x5432);
    if ((p & 1) == 0) return w[p / 2];
    return __byte_perm(w[p / 2], p == 15 ? w[8] : w[p / 2 + 1], 0x5432);
}

__device__ __forceinline__ void ipf_row(unsigned (*sorted)[9], unsigned *out)
{
#pragma unroll
    for (int i = 0; i < 8; i++) {
        unsigned col[3][3];
#pragma unroll
        for (int k = 0; k < 3; k++)
#pragma unroll
            for (int d = -1; d <= 1; d++) col[k][1 + d] = ipf_pair(sorted[k], 2 * i + d);
        out[i] = med_from_sorted_columns<3>(col);
    }
}

__device__ __forceinline__ void ipf_store(char *dst, long long ds, int width, int gx, int y, const unsigned *v)
{
    unsigned char *row = (unsigned char *)(dst + (long long)y * ds);
    unsigned q[4];
#pragma unroll
    for (int i = 0; i < 4; i++) q[i] = __byte_perm(v[2 * i], v[2 * i + 1], 0x6420);
    if (gx + 16 <= width && ((size_t)(row + gx) & 15) == 0) {
        *(uint4 *)(row + gx) = make_uint4(q[0], q[1], q[2], q[3]);
        return;
    }
    for (int j = 0; j < 16 && gx + j < width; j++) row[gx + j] = (unsigned char)(q[j >> 2] >> (8 * (j & 3)));
}

/* Output rows y0..y0+3 in pairs: the two rows a pair shares are sorted once per word. */
extern "C" __global__ void __launch_bounds__(128) ip_fused_median3(const char *src, long long ss, char *dst,
                                                                   long long ds, int width, int height)
{
    const int gx = 16 * (blockIdx.x * blockDim.x + threadIdx.x);
    const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * IPF_ROWS;
    if (gx >= width || y0 >= height) return;
    unsigned rows[IPF_ROWS + 2][9];
#pragma unroll
    for (int j = 0; j < IPF_ROWS + 2; j++) ipf_load(src, ss, width, height, gx, y0 - 1 + j, rows[j]);
#pragma unroll
    for (int p = 0; p < IPF_ROWS; p += 2) {
        unsigned top[3][9], bottom[3][9];
#pragma unroll
        for (int i = 0; i < 9; i++) {
            unsigned shared[2] = { rows[p + 1][i], rows[p + 2][i] }, sa[3], sb[3];
            med_sort_n<2>(shared);
            med_insert<2>(shared, rows[p][i], sa);
            med_insert<2>(shared, rows[p + 3][i], sb);
#pragma unroll
            for (int k = 0; k < 3; k++) {
                top[k][i] = sa[k];
                bottom[k][i] = sb[k];
            }
        }
        unsigned out[8];
        ipf_row(top, out);
        if (y0 + p < height) ipf_store(dst, ds, width, gx, y0 + p, out);
        ipf_row(bottom, out);
        if (y0 + p + 1 < height) ipf_store(dst, ds, width, gx, y0 + p + 1, out);
    }
}
