/* Strip kernel for exact integer window sums over a 1-channel u8 image, in 16-bit lanes
 * (the arithmetic is kernels/common/conv_swar.h, which test_conv_swar checks on the host).
 *
 * Each thread makes 16 output columns of a band of rows and walks down it: every input row is
 * read once, as one 16-byte load per thread; the bytes on each side come from the neighbouring
 * lanes by shuffles (the warp's first and last lanes load one word more); threads at the
 * image's sides and unaligned rows gather bytes through the border instead. Rows are loaded
 * SW_DEPTH(K) ahead of their use, so a warp keeps that many loads in flight, and the K outputs
 * still open stay in registers as lane accumulators. The bands are sized so that the grid is
 * one wave of resident blocks: no tail, and halo rows are a few percent of a band. */
#ifndef IPK_SWAR_STRIP_CUH
#define IPK_SWAR_STRIP_CUH
#include "gpu_common.cuh"
#include "conv_swar.h"

#define SW_PX 16
#define SW_BX 128
#define SW_MIN_BAND 16
#define SW_DEPTH(K) ((K) == 3 ? 6 : (K))   /* rows in flight per thread, a multiple of K */

struct sw_row {
    uint4 q;            /* bytes x .. x+15 */
    uint32_t lw, rw;    /* bytes x-4 .. x-1 and x+16 .. x+19: lanes 0 and 31 only */
};

/* Bytes x .. x+3 of a row through the border, 0 where it drops them. */
__device__ __forceinline__ uint32_t sw_gather4(const uint8_t *row, int x, int width, int border)
{
    uint32_t w = 0;
    #pragma unroll
    for (int k = 0; k < 4; k++) {
        const int xi = ipk_border_index(x + k, width, border);
        if (xi >= 0) w |= (uint32_t)row[xi] << (8 * k);
    }
    return w;
}

/* The row through the border, byte by byte: threads at the image's sides or rows that are not
 * 16-byte aligned. Kept out of line so that it does not weigh on the registers of the fast path. */
static __device__ __noinline__ sw_row sw_gather_row(const uint8_t *row, int x, int width, int border, int lane)
{
    sw_row r;
    r.q = make_uint4(0, 0, 0, 0);
    if (x < width + SW_PX) {
        r.q.x = sw_gather4(row, x, width, border);
        if (x < width) {
            r.q.y = sw_gather4(row, x + 4, width, border);
            r.q.z = sw_gather4(row, x + 8, width, border);
            r.q.w = sw_gather4(row, x + 12, width, border);
        }
    }
    r.lw = lane == 0 ? sw_gather4(row, x - 4, width, border) : 0;
    r.rw = lane == 31 ? sw_gather4(row, x + SW_PX, width, border) : 0;
    return r;
}

/* Input row y for the thread at column x: 16-byte loads where the thread's bytes (and, on the
 * warp's first and last lanes, the word beyond) lie inside the image and rows are aligned.
 * A thread right of the image only needs its first word (its left neighbour reads it). */
__device__ __forceinline__ sw_row sw_load(const uint8_t *__restrict__ src, ptrdiff_t ss, int width, int height,
                                          int border, int x, int y, bool fast, int lane)
{
    const int yi = ipk_border_index(y, height, border);
    if (yi < 0) {
        sw_row r;
        r.q = make_uint4(0, 0, 0, 0);
        r.lw = r.rw = 0;
        return r;
    }
    const uint8_t *row = src + (ptrdiff_t)yi * ss;
    if (!fast) return sw_gather_row(row, x, width, border, lane);
    sw_row r;
    r.q = __ldg((const uint4 *)(row + x));
    r.lw = lane == 0 ? __ldg((const uint32_t *)(row + x - 4)) : 0;
    r.rw = lane == 31 ? __ldg((const uint32_t *)(row + x + SW_PX)) : 0;
    return r;
}

__device__ __forceinline__ void sw_store(uint8_t *d, const uint32_t *o, int n, bool vec)
{
    if (vec) {
        *(uint4 *)d = make_uint4(o[0], o[1], o[2], o[3]);
        return;
    }
    for (int b = 0; b < n; b++) d[b] = (uint8_t)(o[b >> 2] >> (8 * (b & 3)));
}

/* Adds input row j (group position i of SW_DEPTH) to the open outputs j + R - ky, ky = K-1 down
 * to 0; the output of ky = K-1 is complete and stored, the slot of ky = 0 starts afresh. The
 * slot of output y is (y - first input row + R) mod K, known at compile time here. */
template <int K, bool SEP, int FIN, int I>
__device__ __forceinline__ void sw_add_row(uint32_t (&acc)[K][8], const uint32_t *lanes, const ipk_swar_plan &p,
                                           uint8_t *d, int n, bool store, bool vec_out)
{
    uint32_t h[8];
    if (SEP) {
        #pragma unroll
        for (int t = 0; t < 8; t++) h[t] = 0;
        ipk_swar_hadd(lanes, p.row, K, h);
    }
    #pragma unroll
    for (int ky = K - 1; ky >= 0; ky--) {
        constexpr int base = I % K;
        const int slot = (base - ky + K) % K;
        if (ky == 0) {
            #pragma unroll
            for (int t = 0; t < 8; t++) acc[slot][t] = p.start * IPK_SWAR_LANES;
        }
        if (SEP) ipk_swar_vadd(acc[slot], p.col[ky], h);
        else ipk_swar_hadd(lanes, p.w + ky * K, K, acc[slot]);
        if (ky == K - 1 && store) {
            uint32_t o[4];
            #pragma unroll
            for (int t = 0; t < 4; t++) o[t] = ipk_swar_out_word(&p, FIN, acc[slot], t);
            sw_store(d, o, n, vec_out);
        }
    }
}

template <int K, bool SEP, int FIN, int I>
__device__ __forceinline__ void sw_step(uint32_t (&acc)[K][8], sw_row (&ring)[SW_DEPTH(K)], const uint8_t *src,
                                        ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height, int border,
                                        int x, int j, int y0, int j_last, bool vec, bool vec_out, int lane,
                                        const ipk_swar_plan &p)
{
    constexpr int R = K / 2, D = SW_DEPTH(K);
    const sw_row cur = ring[I];
    if (j + D <= j_last) ring[I] = sw_load(src, ss, width, height, border, x, j + D, vec, lane);
    const uint32_t left = __shfl_up_sync(0xffffffffu, cur.q.w, 1);
    const uint32_t right = __shfl_down_sync(0xffffffffu, cur.q.x, 1);
    const uint32_t words[6] = { lane == 0 ? cur.lw : left, cur.q.x, cur.q.y, cur.q.z, cur.q.w,
                                lane == 31 ? cur.rw : right };
    uint32_t lanes[IPK_SWAR_NX];
    ipk_swar_lanes(words, R, lanes);
    const int y = j - R;
    const bool store = y >= y0 && x < width;
    sw_add_row<K, SEP, FIN, I>(acc, lanes, p, dst + (ptrdiff_t)(store ? y : 0) * ds + x, min(SW_PX, width - x),
                               store, vec_out);
}

template <int K, bool SEP, int FIN, int I>
__device__ __forceinline__ bool sw_group(uint32_t (&acc)[K][8], sw_row (&ring)[SW_DEPTH(K)], const uint8_t *src,
                                         ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height, int border,
                                         int x, int g, int y0, int j_last, bool vec, bool vec_out, int lane,
                                         const ipk_swar_plan &p)
{
    if (g + I > j_last) return false;
    sw_step<K, SEP, FIN, I>(acc, ring, src, ss, dst, ds, width, height, border, x, g + I, y0, j_last, vec, vec_out,
                            lane, p);
    if constexpr (I + 1 < SW_DEPTH(K))
        return sw_group<K, SEP, FIN, I + 1>(acc, ring, src, ss, dst, ds, width, height, border, x, g, y0, j_last,
                                            vec, vec_out, lane, p);
    return true;
}

/* Every thread of a block walks the same rows, so the shuffles always have the whole warp;
 * threads right of the image load (their neighbours need the bytes) but do not store. */
template <int K, bool SEP, int FIN>
__global__ void __launch_bounds__(SW_BX)
    sw_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds, int width,
              int height, int border, int band, const __grid_constant__ ipk_swar_plan p)
{
    constexpr int R = K / 2, D = SW_DEPTH(K);
    const int lane = threadIdx.x & 31;
    const int x = (blockIdx.x * SW_BX + threadIdx.x) * SW_PX;
    const int y0 = blockIdx.y * band, y_end = min(y0 + band, height);
    const int j_first = y0 - R, j_last = y_end - 1 + R;
    const bool vec = x >= 4 && x + SW_PX + 4 <= width && ((uintptr_t)src % 16) == 0 && (ss % 16) == 0;
    const bool vec_out = x + SW_PX <= width && ((uintptr_t)dst % 16) == 0 && (ds % 16) == 0;
    uint32_t acc[K][8];
    #pragma unroll
    for (int s = 0; s < K; s++)
        #pragma unroll
        for (int t = 0; t < 8; t++) acc[s][t] = 0;
    sw_row ring[D];
    #pragma unroll
    for (int i = 0; i < D; i++) ring[i] = sw_load(src, ss, width, height, border, x, j_first + i, vec, lane);
    for (int g = j_first; g <= j_last; g += D)
        if (!sw_group<K, SEP, FIN, 0>(acc, ring, src, ss, dst, ds, width, height, border, x, g, y0, j_last, vec,
                                      vec_out, lane, p))
            break;
}

/* One wave: as many bands as the resident blocks allow next to the column blocks, at least
 * SW_MIN_BAND rows each. */
template <int K, bool SEP, int FIN>
static int sw_launch_fin(const ipk_img *src, const ipk_img *dst, int border, const ipk_swar_plan &p, cudaStream_t s)
{
    long long resident = 0;
    if (!ipk_resident_blocks(sw_kernel<K, SEP, FIN>, SW_BX, &resident)) return IPK_ECUDA;
    const long long gx = ipk_div_up(src->width, (long long)SW_BX * SW_PX);
    long long bands = (resident > 0 ? resident : 1) / gx;
    const long long most = (src->height + SW_MIN_BAND - 1) / SW_MIN_BAND;
    bands = bands < 1 ? 1 : bands > most ? most : bands;
    const int band = (int)((src->height + bands - 1) / bands);
    dim3 grid((unsigned)gx, ipk_div_up(src->height, band));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    sw_kernel<K, SEP, FIN><<<grid, SW_BX, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data,
                                                 dst->stride, src->width, src->height, border, band, p);
    return ipk_launch_status();
}

template <int K, bool SEP>
static int sw_launch_k(const ipk_img *src, const ipk_img *dst, int border, const ipk_swar_plan &p, cudaStream_t s)
{
    switch (p.fin) {
    case IPK_SWAR_FIN_SHIFT: return sw_launch_fin<K, SEP, IPK_SWAR_FIN_SHIFT>(src, dst, border, p, s);
    case IPK_SWAR_FIN_LANE_SHIFT: return sw_launch_fin<K, SEP, IPK_SWAR_FIN_LANE_SHIFT>(src, dst, border, p, s);
    case IPK_SWAR_FIN_LANE_ODD: return sw_launch_fin<K, SEP, IPK_SWAR_FIN_LANE_ODD>(src, dst, border, p, s);
    case IPK_SWAR_FIN_LANE_DOUBLE: return sw_launch_fin<K, SEP, IPK_SWAR_FIN_LANE_DOUBLE>(src, dst, border, p, s);
    }
    return IPK_EINVAL;
}
#endif
