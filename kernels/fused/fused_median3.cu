/* Run-time fusion (core/src/exec/fuse_plan.c): median 3x3 on u8 whose load applies a chain of point
 * stages to the original pixels (ip_chain, with IP_T, IP_IN_CH, IP_OUT_CH == 1 and IP_BORDER put
 * before this file by the core), so that e.g. grayscale -> median reads the RGB image once and
 * never writes the gray one. The layout is the vec median's (kernels/gpu/median_vec_block.cuh),
 * whose lane arithmetic (kernels/common/median_vec.h) it runs: a thread makes 16 columns x
 * IPF_ROWS rows, a warp 512 columns, a block IPF_WARPS warps stacked down the image (fuse.c's
 * launch shape). The block first runs the chain once on each pixel of its IPF_TILE_ROWS input
 * rows (16 a thread at a time, the 16-byte loads of all its chunks issued first; the columns each
 * side through the border) into shared memory, so that the rows two warps share are not run
 * twice: the kernel is bound by the SM's arithmetic, not by memory (ncu: 88% SM, 60% DRAM, with
 * every warp running the chain on its own 6 rows). Each warp then takes its rows' packed pixels,
 * the columns each side from the neighbouring lanes by shuffles. A median only selects, so the
 * result is the unfused chain's bit for bit. Compiled by NVRTC. */
#include "fused_load.cuh"
#include "median_vec.h"

#define IPF_ROWS 4
#define IPF_WARPS 4
#define IPF_TILE_ROWS (IPF_WARPS * IPF_ROWS + 2)
#define IPF_LANE_CHUNKS 32                                        /* 16-pixel chunks a row: a warp's */
#define IPF_CHUNK_ITER ((IPF_TILE_ROWS * IPF_LANE_CHUNKS + 32 * IPF_WARPS - 1) / (32 * IPF_WARPS))
/* Blocks of 128 threads per SM: 7 (at most 72 registers) for 1 to 3 channels into the chain, 5
 * (102) for 4, where 6 and 7 spilled (sm_90, CUDA 13.0, grayscale's chain: 68 to 71 registers at
 * 7). Grayscale -> median 3x3 on the H100: 0.1085 ms at 7, 0.1094 at 5. */
#define IPF_MINB (IP_IN_CH < 4 ? 7 : 5)

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

/* The block's input rows y_first .. y_first+IPF_TILE_ROWS-1 through the chain (bordered; zeros
 * where the border drops a row), 16 pixels a chunk, chunk i at tile[i]: row i / 32, columns x0 +
 * 16 (i % 32) .. +15. fast: every chunk lies in the image and takes 16-byte loads, all issued
 * before the chain runs. */
__device__ __forceinline__ void ipf_m3_load_tile(const char *src, long long ss, int width, int height, int x0,
                                                 int y_first, bool fast, uint4 *tile)
{
    const int t = threadIdx.y * 32 + threadIdx.x;
    if (fast) {
        uint4 raw[IPF_CHUNK_ITER][IP_IN_CH];
#pragma unroll
        for (int k = 0; k < IPF_CHUNK_ITER; k++) {
            const int i = t + k * 32 * IPF_WARPS;
            if (i >= IPF_TILE_ROWS * IPF_LANE_CHUNKS) break;
            const char *at = src + (long long)(y_first + i / IPF_LANE_CHUNKS) * ss +
                             (long long)(x0 + 16 * (i % IPF_LANE_CHUNKS)) * IP_IN_CH;
#pragma unroll
            for (int v = 0; v < IP_IN_CH; v++) raw[k][v] = __ldg((const uint4 *)at + v);
        }
#pragma unroll
        for (int k = 0; k < IPF_CHUNK_ITER; k++) {
            const int i = t + k * 32 * IPF_WARPS;
            if (i >= IPF_TILE_ROWS * IPF_LANE_CHUNKS) break;
            unsigned w[4 * IP_IN_CH], g[16];
#pragma unroll
            for (int v = 0; v < IP_IN_CH; v++) {
                w[4 * v] = raw[k][v].x; w[4 * v + 1] = raw[k][v].y; w[4 * v + 2] = raw[k][v].z; w[4 * v + 3] = raw[k][v].w;
            }
            ipf_chain_words(w, g);
            tile[i] = ipf_pack(g);
        }
        return;
    }
    for (int i = t; i < IPF_TILE_ROWS * IPF_LANE_CHUNKS; i += 32 * IPF_WARPS) {
        const int yy = ipk_border_index(y_first + i / IPF_LANE_CHUNKS, height, IP_BORDER);
        const int x = x0 + 16 * (i % IPF_LANE_CHUNKS);
        uint4 q = make_uint4(0u, 0u, 0u, 0u);
        if (yy >= 0) {
            const char *row = src + (long long)yy * ss;
            if (x + 16 <= width && ((size_t)(row + (size_t)x * IP_IN_CH) & 15) == 0) {
                unsigned g[16];
                ipf_chain16(row, x, g);
                q = ipf_pack(g);
            } else {
                q = ipf_gather(row, x, width);
            }
        }
        tile[i] = q;
    }
}

/* The chain's outputs at the columns left and right of the block (x0 - 1 and x0 + 512, through
 * the border; 0 where it drops them) of its input rows: edges[2 r + side]. */
__device__ __forceinline__ void ipf_m3_load_edges(const char *src, long long ss, int width, int height, int x0,
                                                  int y_first, unsigned *edges)
{
    const int t = threadIdx.y * 32 + threadIdx.x;
    if (t >= 2 * IPF_TILE_ROWS) return;
    const int xe = ipk_border_index((t & 1) ? x0 + 16 * IPF_LANE_CHUNKS : x0 - 1, width, IP_BORDER);
    const int yy = ipk_border_index(y_first + t / 2, height, IP_BORDER);
    unsigned px = 0u;
    if (xe >= 0 && yy >= 0) {
        IP_T out[IP_OUT_CH];
        ipf_chain_at(src + (long long)yy * ss, xe, out);
        px = out[0];
    }
    edges[t] = px;
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

/* Every thread runs to the end (the barrier and the shuffles need them all); threads right of the
 * image or below it store nothing. */
extern "C" __global__ void __launch_bounds__(32 * IPF_WARPS, IPF_MINB)
    ip_fused_median3(const char *src, long long ss, char *dst, long long ds, int width, int height)
{
    __shared__ uint4 tile[IPF_TILE_ROWS * IPF_LANE_CHUNKS];
    __shared__ unsigned edges[2 * IPF_TILE_ROWS];
    const int yb = blockIdx.y * IPF_WARPS * IPF_ROWS, x0 = blockIdx.x * 32 * 16;
    const bool fast = yb >= 1 && yb - 1 + IPF_TILE_ROWS <= height && x0 + 16 * IPF_LANE_CHUNKS <= width &&
                      ((size_t)src & 15) == 0 && (ss & 15) == 0;
    ipf_m3_load_tile(src, ss, width, height, x0, yb - 1, fast, tile);
    ipf_m3_load_edges(src, ss, width, height, x0, yb - 1, edges);
    __syncthreads();

    const int lane = threadIdx.x, r0 = threadIdx.y * IPF_ROWS, y0 = yb + r0, x = x0 + 16 * lane;
    const int n = min(16, width - x);
    uint32_t rows[IPF_ROWS + 2][IPK_MVEC_ROW];
#pragma unroll
    for (int r = 0; r < 2; r++)
        ipf_row(tile[(r0 + r) * IPF_LANE_CHUNKS + lane], edges[2 * (r0 + r) + (lane == 31)], lane, rows[r]);
#pragma unroll
    for (int o = 0; o < IPF_ROWS; o++) {
        const int r = r0 + o + 2;
        ipf_row(tile[r * IPF_LANE_CHUNKS + lane], edges[2 * r + (lane == 31)], lane, rows[o + 2]);
        uint32_t out[4];
        ipk_mvec_row(rows[o], rows[o + 1], rows[o + 2], out);
        if (n > 0 && y0 + o < height) ipf_store((unsigned char *)(dst + (long long)(y0 + o) * ds), x, n, out);
    }
}
