/* Run-time fusion (core/src/fuse_plan.c): median 3x3 on u8 whose load applies a chain of point
 * stages to the original pixels (ip_chain, with IP_T, IP_IN_CH, IP_OUT_CH == 1 and IP_BORDER put
 * before this file by the core), so that e.g. grayscale -> median reads the RGB image once and
 * never writes the gray one. The layout is the vec median's (kernels/gpu/median_vec_block.cuh),
 * whose lane arithmetic (kernels/common/median_vec.h) it runs: a thread makes 16 columns x
 * IPF_ROWS rows, a warp 512 columns, a block IPF_WARPS warps stacked down the image (fuse.c's
 * launch shape). A thread issues its input rows' 16-byte loads first (IPF_MINB says how far ptxas
 * takes that), then runs the chain on each row's 16 pixels and packs them as the loaded bytes of
 * the gray image would be; the columns each side come from the neighbouring lanes by shuffles,
 * and the warp's first and last lanes run the chain on their edge pixel through the border. A
 * median only selects, so the result is the unfused chain's bit for bit. Compiled by NVRTC. */
#include "fused_load.cuh"
#include "median_vec.h"

#define IPF_ROWS 4
#define IPF_WARPS 4
/* Blocks of 128 threads per SM: 5 (at most 102 registers) keeps every chain unspilled (sm_90,
 * CUDA 13.0: 89 to 95 registers for 1 to 4 channels); at 6 (80) some spilled a few bytes, at 7
 * (72, the vec median's) all did. ptxas issues a 1-channel thread's 6 loads first, but those of
 * 3 or 4 channels about two rows ahead of the chain, whatever the bound. */
#define IPF_MINB 5

/* Pixels as 4 little-endian words of bytes (the layout median_vec.h takes). */
__device__ __forceinline__ uint4 ipf_pack(const unsigned *g)
{
    unsigned q[4];
#pragma unroll
    for (int i = 0; i < 4; i++) q[i] = g[4 * i] | g[4 * i + 1] << 8 | g[4 * i + 2] << 16 | g[4 * i + 3] << 24;
    return make_uint4(q[0], q[1], q[2], q[3]);
}

/* The chain's outputs at columns x .. x+15 of row through the border: out of line, so that it
 * does not weigh on the fast path's registers. */
static __device__ __noinline__ uint4 ipf_gather(const char *row, int x, int width)
{
    unsigned g[16];
#pragma unroll
    for (int i = 0; i < 16; i++) g[i] = ipf_pixel(row, x + i, width);
    return ipf_pack(g);
}

/* The chain's outputs at columns x .. x+15 of input rows y0-1 .. y0+IPF_ROWS (bordered; zeros
 * where the border drops a row). fast: the columns lie in the image and take 16-byte loads;
 * rows_in: the rows all lie in the image, which then takes one straight run of loads. */
__device__ __forceinline__ void ipf_load_rows(const char *src, long long ss, int width, int height, int x, int y0,
                                              bool fast, bool rows_in, uint4 *in)
{
    if (fast && rows_in) {
        const char *first = src + (long long)(y0 - 1) * ss + (long long)x * IP_IN_CH;
        uint4 raw[IPF_ROWS + 2][IP_IN_CH];
#pragma unroll
        for (int r = 0; r < IPF_ROWS + 2; r++)
#pragma unroll
            for (int v = 0; v < IP_IN_CH; v++) raw[r][v] = __ldg((const uint4 *)(first + r * ss) + v);
#pragma unroll
        for (int r = 0; r < IPF_ROWS + 2; r++) {
            unsigned w[4 * IP_IN_CH], g[16];
#pragma unroll
            for (int v = 0; v < IP_IN_CH; v++) {
                w[4 * v] = raw[r][v].x; w[4 * v + 1] = raw[r][v].y; w[4 * v + 2] = raw[r][v].z; w[4 * v + 3] = raw[r][v].w;
            }
            ipf_chain_words(w, g);
            in[r] = ipf_pack(g);
        }
        return;
    }
#pragma unroll
    for (int r = 0; r < IPF_ROWS + 2; r++) {
        const int yy = ipk_border_index(y0 - 1 + r, height, IP_BORDER);
        in[r] = make_uint4(0u, 0u, 0u, 0u);
        if (yy < 0) continue;
        const char *row = src + (long long)yy * ss;
        if (fast) {
            unsigned g[16];
            ipf_chain16(row, x, g);
            in[r] = ipf_pack(g);
        } else {
            in[r] = ipf_gather(row, x, width);
        }
    }
}

/* The chain's output at column xe (already through the border; < 0: none) of row y (inside the
 * image when rows_in): the warp's first and last lanes only. Computed IPF_EDGE_AHEAD rows before
 * its use, so that few are held. */
#define IPF_EDGE_AHEAD 2
__device__ __forceinline__ unsigned ipf_edge_pixel(const char *src, long long ss, int height, int xe, int y,
                                                   bool rows_in)
{
    const int yy = rows_in ? y : ipk_border_index(y, height, IP_BORDER);
    if (xe < 0 || yy < 0) return 0u;
    IP_T out[IP_OUT_CH];
    ipf_chain_at(src + (long long)yy * ss, xe, out);
    return out[0];
}

/* A row as median_vec.h takes it: the packed pixels and the edge word, from the neighbouring
 * lanes' split words 7 and 0 (or the edge pixel on the warp's first and last lanes). */
__device__ __forceinline__ void ipf_row(uint4 q, unsigned edge_px, int lane, uint32_t *row)
{
    row[0] = q.x, row[1] = q.y, row[2] = q.z, row[3] = q.w;
    const uint32_t l = __shfl_up_sync(0xffffffffu, ipk_mvec_word(row, 7), 1);
    const uint32_t r = __shfl_down_sync(0xffffffffu, ipk_mvec_word(row, 0), 1);
    row[IPK_MVEC_EDGE] = ipk_mvec_edge(lane == 0 ? edge_px << 16 : l, lane == 31 ? edge_px : r);
}

/* The n (1..16) bytes of out at column x of row: one 16-byte store where whole and aligned. The
 * byte loop is unrolled so that out stays in registers (indexed by a variable, it went through
 * local memory on every row). */
__device__ __forceinline__ void ipf_store(unsigned char *row, int x, int n, const uint32_t *out)
{
    if (n == 16 && ((size_t)(row + x) & 15) == 0) {
        *(uint4 *)(row + x) = make_uint4(out[0], out[1], out[2], out[3]);
        return;
    }
#pragma unroll
    for (int j = 0; j < 16; j++)
        if (j < n) row[x + j] = (unsigned char)(out[j >> 2] >> (8 * (j & 3)));
}

/* Every thread of a warp runs to the end (the shuffles need the whole warp); threads right of the
 * image gather their columns through the border for their neighbours and store nothing. */
extern "C" __global__ void __launch_bounds__(32 * IPF_WARPS, IPF_MINB)
    ip_fused_median3(const char *src, long long ss, char *dst, long long ds, int width, int height)
{
    const int y0 = (blockIdx.y * IPF_WARPS + threadIdx.y) * IPF_ROWS;
    if (y0 >= height) return;   /* the whole warp */
    const int lane = threadIdx.x, x = (blockIdx.x * 32 + lane) * 16;
    const bool fast = x + 16 <= width && ((size_t)src & 15) == 0 && (ss & 15) == 0;
    const bool rows_in = y0 >= 1 && y0 + IPF_ROWS < height;
    const int xe = lane == 0 ? ipk_border_index(x - 1, width, IP_BORDER)
                   : lane == 31 ? ipk_border_index(x + 16, width, IP_BORDER) : -1;
    uint4 in[IPF_ROWS + 2];
    ipf_load_rows(src, ss, width, height, x, y0, fast, rows_in, in);
    unsigned edge[IPF_ROWS + 2];
#pragma unroll
    for (int r = 0; r < 2 + IPF_EDGE_AHEAD && r < IPF_ROWS + 2; r++)
        edge[r] = ipf_edge_pixel(src, ss, height, xe, y0 - 1 + r, rows_in);

    const int n = min(16, width - x);
    uint32_t rows[IPF_ROWS + 2][IPK_MVEC_ROW];
#pragma unroll
    for (int r = 0; r < 2; r++) ipf_row(in[r], edge[r], lane, rows[r]);
#pragma unroll
    for (int o = 0; o < IPF_ROWS; o++) {
        ipf_row(in[o + 2], edge[o + 2], lane, rows[o + 2]);
        const int ahead = o + 2 + IPF_EDGE_AHEAD;
        if (ahead < IPF_ROWS + 2) edge[ahead] = ipf_edge_pixel(src, ss, height, xe, y0 - 1 + ahead, rows_in);
        uint32_t out[4];
        ipk_mvec_row(rows[o], rows[o + 1], rows[o + 2], out);
        if (n > 0 && y0 + o < height) ipf_store((unsigned char *)(dst + (long long)(y0 + o) * ds), x, n, out);
    }
}
