/* The vec kernel (IPK_GPU_VEC): exact 3x3 and 5x5 integer window sums of a 1-channel u8 image, sized for
 * bytes in flight and occupancy rather than reuse (the arithmetic is kernels/common/convolve_vec.h,
 * which test_conv_vec checks on the host).
 *
 * A thread makes 16 output bytes x ROWS rows (vec_rows); a warp covers 512 columns, a block
 * VEC_WARPS warps stacked down the image. A thread first issues all of its ROWS + 2 input rows
 * as 16-byte loads, before any arithmetic; the columns on each side come as the neighbouring
 * lanes' column sums by shuffles, and a warp's first and last lanes load the byte beyond their
 * side, VEC_EDGE_AHEAD rows before its use. Threads at the image's sides and unaligned rows
 * gather their bytes through the border instead. No shared memory; ptxas is held to 64
 * registers so that 8 blocks (32 warps) stay resident on each SM. vec5_kernel is the same at
 * radius 2: ROWS + 4 input rows, two side columns each side (two edge bytes a row). */
#ifndef IPK_VEC_BLOCK_CUH
#define IPK_VEC_BLOCK_CUH
#include "gpu_common.cuh"
#include "gpu_bytes.cuh"
#include "convolve_vec.h"

#define VEC_WARPS 4
#define VEC_MIN_BLOCKS 8   /* 8 blocks of 128 threads per SM: at most 64 registers a thread */

/* Output rows a thread makes: the most (of 8, 6, 4) with which ptxas keeps the instantiation at
 * 64 registers without spilling (sm_90, CUDA 13.0). 8 rows took 80 to 96 registers unbounded
 * and spilled at 64; 6 fit the unit sums with the mean, shift and odd-divisor finishes. */
template <int MODE, int FIN> struct vec_rows {
    static constexpr int value =
        MODE == IPK_VEC_UNIT && (FIN == IPK_SWAR_FIN_MEAN || FIN == IPK_SWAR_FIN_SHIFT || FIN == IPK_SWAR_FIN_LANE_ODD)
            ? 6 : 4;
};

/* Bytes x .. x+15 of a row through the border (0 where it drops them): out of line, so that it
 * does not weigh on the fast path's registers. */
static __device__ __noinline__ uint4 vec_gather(const uint8_t *row, int x, int width, int border)
{
    return make_uint4(sw_gather4(row, x, width, border), sw_gather4(row, x + 4, width, border),
                      sw_gather4(row, x + 8, width, border), sw_gather4(row, x + 12, width, border));
}

/* Every input row of the thread: in[rr] is row y0 - R + rr through the border (R the radius).
 * Inside the image, one straight run of 16-byte loads; fast says whether the thread's columns
 * allow them, rows_in whether its rows are all inside. */
template <int ROWS, int R>
__device__ __forceinline__ void vec_load_rows(const uint8_t *__restrict__ src, ptrdiff_t ss, int width, int height,
                                              int border, int x, int y0, bool fast, bool rows_in, uint4 *in)
{
    if (fast && rows_in) {
        const uint8_t *row = src + (ptrdiff_t)(y0 - R) * ss + x;
        #pragma unroll
        for (int rr = 0; rr < ROWS + 2 * R; rr++, row += ss) in[rr] = __ldg((const uint4 *)row);
        return;
    }
    #pragma unroll
    for (int rr = 0; rr < ROWS + 2 * R; rr++) {
        const int yi = ipk_border_index(y0 - R + rr, height, border);
        in[rr] = make_uint4(0, 0, 0, 0);
        if (yi < 0) continue;
        const uint8_t *row = src + (ptrdiff_t)yi * ss;
        in[rr] = fast ? __ldg((const uint4 *)(row + x)) : vec_gather(row, x, width, border);
    }
}

/* The byte at column xe of row y (0 when xe < 0 or the border drops the row): the warp's first
 * and last lanes only. Loaded VEC_EDGE_AHEAD rows before its use, so that few are held. */
#define VEC_EDGE_AHEAD 2
__device__ __forceinline__ uint32_t vec_edge_byte(const uint8_t *__restrict__ src, ptrdiff_t ss, int height,
                                                  int border, int xe, int y, bool rows_in)
{
    const int yi = rows_in ? y : ipk_border_index(y, height, border);
    return xe >= 0 && yi >= 0 ? (uint32_t)__ldg(src + (ptrdiff_t)yi * ss + xe) : 0u;
}

/* The column on each side from the neighbouring lanes' column sums (left: their odd word 3,
 * right: their even word 0), or from the thread's own edge word at the warp's ends. */
__device__ __forceinline__ void vec_sides(const uint32_t *left_cs, const uint32_t *right_cs, int lane, uint32_t *left,
                                          uint32_t *right)
{
    const uint32_t l = __shfl_up_sync(0xffffffffu, left_cs[7], 1);
    const uint32_t r = __shfl_down_sync(0xffffffffu, right_cs[0], 1);
    *left = lane == 0 ? left_cs[IPK_VEC_EDGE] : l;
    *right = lane == 31 ? right_cs[IPK_VEC_EDGE] : r;
}

/* The accumulator of one output row from its three split input rows. */
template <int MODE>
__device__ __forceinline__ void vec_row(const uint32_t *a0, const uint32_t *a1, const uint32_t *a2,
                                        const ipk_vec_plan &vp, int lane, uint32_t *acc)
{
    const ipk_swar_plan &p = vp.p;
    const uint32_t start = p.start * IPK_SWAR_LANES;
    uint32_t left, right;
    if (MODE == IPK_VEC_DIRECT) {
        uint32_t c0[IPK_VEC_WORDS], c1[IPK_VEC_WORDS], c2[IPK_VEC_WORDS];
        ipk_vec_vsum(a0, a1, a2, (uint32_t)p.w[0], (uint32_t)p.w[3], (uint32_t)p.w[6],
                     vp.col_start[0] * IPK_SWAR_LANES, c0);
        ipk_vec_vsum(a0, a1, a2, (uint32_t)p.w[1], (uint32_t)p.w[4], (uint32_t)p.w[7],
                     vp.col_start[1] * IPK_SWAR_LANES, c1);
        ipk_vec_vsum(a0, a1, a2, (uint32_t)p.w[2], (uint32_t)p.w[5], (uint32_t)p.w[8],
                     vp.col_start[2] * IPK_SWAR_LANES, c2);
        vec_sides(c0, c2, lane, &left, &right);
        ipk_vec_hsum_direct(c0, c1, c2, left, right, acc);
        return;
    }
    uint32_t v[IPK_VEC_WORDS];
    if (MODE == IPK_VEC_UNIT) ipk_vec_vsum(a0, a1, a2, 1, 1, 1, 0, v);
    else ipk_vec_vsum(a0, a1, a2, (uint32_t)p.col[0], (uint32_t)p.col[1], (uint32_t)p.col[2], 0, v);
    vec_sides(v, v, lane, &left, &right);
    if (MODE == IPK_VEC_UNIT) ipk_vec_hsum(v, left, right, 1, 1, 1, start, acc);
    else ipk_vec_hsum(v, left, right, (uint32_t)p.row[0], (uint32_t)p.row[1], (uint32_t)p.row[2], start, acc);
}

/* The n bytes of output row y from the thread's accumulator (mean with shrink: its own counts
 * at the image's edges, radius R). */
template <int FIN, int R>
__device__ __forceinline__ void vec_store_row(const uint32_t *acc, const ipk_vec_plan &vp, uint8_t *__restrict__ dst,
                                              ptrdiff_t ds, int x, int y, int width, int height, int border, int n,
                                              bool vec_out)
{
    uint32_t out[4];
    #pragma unroll
    for (int m = 0; m < 4; m++)
        out[m] = FIN == IPK_SWAR_FIN_MEAN && border == IPK_SHRINK && ipk_vec_at_edge(x, y, width, height, R)
                     ? ipk_vec_shrink_word(acc, m, x, y, width, height, R)
                     : ipk_swar_out_word(&vp.p, FIN, acc, m);
    sw_store(ipk_wrow<uint8_t>(dst, ds, y) + x, out, n, vec_out);
}

/* A thread of a radius-1 vec kernel (16 columns x ROWS rows): its lane, first column x and row y0,
 * the column of its edge byte (the warp's first and last lanes; -1 on the others), whether its
 * columns take 16-byte loads (fast) and whether its input rows all lie inside the image (rows_in). */
struct vec_thread {
    int lane, x, y0, xe;
    bool fast, rows_in;
};

/* The first output row of the thread's warp. */
template <int ROWS> __device__ __forceinline__ int vec_first_row()
{
    return (blockIdx.y * VEC_WARPS + threadIdx.y) * ROWS;
}

/* The rest of vec_thread, once the kernel knows that row y0 is in the image. */
template <int ROWS>
__device__ __forceinline__ vec_thread vec_thread_at(const uint8_t *src, ptrdiff_t ss, int width, int height,
                                                    int border, int y0)
{
    vec_thread t;
    t.lane = threadIdx.x;
    t.x = (blockIdx.x * 32 + t.lane) * IPK_VEC_PX;
    t.y0 = y0;
    t.fast = t.x + IPK_VEC_PX <= width && ((uintptr_t)src % 16) == 0 && (ss % 16) == 0;
    t.xe = t.lane == 0 ? ipk_border_index(t.x - 1, width, border)
           : t.lane == 31 ? ipk_border_index(t.x + IPK_VEC_PX, width, border) : -1;
    t.rows_in = t.y0 >= 1 && t.y0 + ROWS < height;
    return t;
}

/* Every thread of a warp runs to the end (the shuffles need the whole warp); threads right of
 * the image gather their columns through the border for their neighbours and store nothing. */
template <int MODE, int FIN, int ROWS>
__global__ void __launch_bounds__(32 * VEC_WARPS, VEC_MIN_BLOCKS)
    vec3_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds, int width,
                int height, int border, const __grid_constant__ ipk_vec_plan vp)
{
    const int y0 = vec_first_row<ROWS>();
    if (y0 >= height) return;   /* the whole warp */
    const vec_thread t = vec_thread_at<ROWS>(src, ss, width, height, border, y0);
    const int lane = t.lane, x = t.x, xe = t.xe;
    const bool rows_in = t.rows_in;
    uint4 in[ROWS + 2];
    vec_load_rows<ROWS, 1>(src, ss, width, height, border, x, y0, t.fast, rows_in, in);
    uint32_t edge[ROWS + 2];
    #pragma unroll
    for (int rr = 0; rr < 2 + VEC_EDGE_AHEAD; rr++)
        edge[rr] = vec_edge_byte(src, ss, height, border, xe, y0 - 1 + rr, rows_in);

    const int n = min(IPK_VEC_PX, width - x);
    const bool vec_out = n == IPK_VEC_PX && ((uintptr_t)dst % 16) == 0 && (ds % 16) == 0;
    uint32_t a0[IPK_VEC_WORDS], a1[IPK_VEC_WORDS];
    ipk_vec_split(in[0].x, in[0].y, in[0].z, in[0].w, ipk_vec_edge(edge[0], lane == 0), a0);
    ipk_vec_split(in[1].x, in[1].y, in[1].z, in[1].w, ipk_vec_edge(edge[1], lane == 0), a1);
    #pragma unroll
    for (int o = 0; o < ROWS; o++) {
        uint32_t a2[IPK_VEC_WORDS], acc[8];
        const uint4 q = in[o + 2];
        ipk_vec_split(q.x, q.y, q.z, q.w, ipk_vec_edge(edge[o + 2], lane == 0), a2);
        if (o + 2 + VEC_EDGE_AHEAD < ROWS + 2)
            edge[o + 2 + VEC_EDGE_AHEAD] =
                vec_edge_byte(src, ss, height, border, xe, y0 + 1 + o + VEC_EDGE_AHEAD, rows_in);
        vec_row<MODE>(a0, a1, a2, vp, lane, acc);
        if (n > 0 && y0 + o < height)
            vec_store_row<FIN, 1>(acc, vp, dst, ds, x, y0 + o, width, height, border, n, vec_out);
        #pragma unroll
        for (int i = 0; i < IPK_VEC_WORDS; i++) {
            a0[i] = a1[i];
            a1[i] = a2[i];
        }
    }
}

/* 5x5: rows a thread makes, as vec_rows: the most with which ptxas keeps each instantiation at 64
 * registers without spilling (sm_90, CUDA 13.0). Separable with the shift finish (gaussian5) 5 (6
 * spilled); the other unit and separable finishes 4, the mean 3 (4 spilled); direct kernels and
 * the double finish 1 (2 spilled 40 to 200 bytes). */
template <int MODE, int FIN> struct vec5_rows {
    static constexpr int value = MODE == IPK_VEC_DIRECT || FIN == IPK_SWAR_FIN_LANE_DOUBLE ? 1
                                 : FIN == IPK_SWAR_FIN_MEAN ? 3
                                 : MODE == IPK_VEC_SEP && FIN == IPK_SWAR_FIN_SHIFT ? 5 : 4;
};

/* The side words of a 5x5 column sum or split row: the neighbours' columns by shuffles, the edge
 * word at the warp's ends. */
__device__ __forceinline__ void vec5_sides(const uint32_t *v, int lane, uint32_t *left, uint32_t *right)
{
    const uint32_t l = __shfl_up_sync(0xffffffffu, ipk_vec5_to_right(v), 1);
    const uint32_t r = __shfl_down_sync(0xffffffffu, ipk_vec5_to_left(v), 1);
    *left = lane == 0 ? v[IPK_VEC_EDGE] : l;
    *right = lane == 31 ? v[IPK_VEC_EDGE] : r;
}

/* Column sums of five input rows (the top one first), weighed by c[0..4] (all 1 for UNIT). */
template <int MODE>
__device__ __forceinline__ void vec5_vsum(const uint4 *in, const uint32_t *edge, const int32_t *c, uint32_t *v)
{
    #pragma unroll
    for (int i = 0; i < IPK_VEC_WORDS; i++) v[i] = 0;
    #pragma unroll
    for (int k = 0; k < 5; k++)
        ipk_vec5_vadd(in[k].x, in[k].y, in[k].z, in[k].w, edge[k], MODE == IPK_VEC_UNIT ? 1u : (uint32_t)c[k], v);
}

/* The accumulator of one output row from its five input rows: UNIT and SEP one vertical pass and
 * five shifted additions of it; DIRECT each split row's five taps added at their shifts (the
 * start covers the negative taps, as in convolve_swar.h, so no lane leaves 0..65535). */
template <int MODE>
__device__ __forceinline__ void vec5_row(const uint4 *in, const uint32_t *edge, const ipk_vec_plan &vp, int lane,
                                         uint32_t *acc)
{
    const ipk_swar_plan &p = vp.p;
    uint32_t v[IPK_VEC_WORDS], left = 0, right = 0;
    if constexpr (MODE != IPK_VEC_DIRECT) {
        #pragma unroll
        for (int i = 0; i < 8; i++) acc[i] = p.start * IPK_SWAR_LANES;
        vec5_vsum<MODE>(in, edge, p.col, v);
        vec5_sides(v, lane, &left, &right);
        #pragma unroll
        for (int d = 0; d < 5; d++)
            ipk_vec5_hadd(v, left, right, d - 2, MODE == IPK_VEC_UNIT ? 1u : (uint32_t)p.row[d], acc);
    } else {
        #pragma unroll
        for (int i = 0; i < 8; i++) acc[i] = p.start * IPK_SWAR_LANES;
        #pragma unroll
        for (int ky = 0; ky < 5; ky++) {
            ipk_vec_split(in[ky].x, in[ky].y, in[ky].z, in[ky].w, edge[ky], v);
            vec5_sides(v, lane, &left, &right);
            #pragma unroll
            for (int kx = 0; kx < 5; kx++) ipk_vec5_hadd(v, left, right, kx - 2, (uint32_t)p.w[ky * 5 + kx], acc);
        }
    }
}

/* The edge word of row y (vec_edge_byte's two bytes, columns xe0 and xe1). */
__device__ __forceinline__ uint32_t vec5_edge_word(const uint8_t *__restrict__ src, ptrdiff_t ss, int height,
                                                   int border, int xe0, int xe1, int y, bool rows_in)
{
    return ipk_vec5_edge(vec_edge_byte(src, ss, height, border, xe0, y, rows_in),
                         vec_edge_byte(src, ss, height, border, xe1, y, rows_in));
}

/* vec3_kernel at radius 2: ROWS + 4 input rows loaded first, two side columns each side (the
 * warp's first and last lanes load two bytes a row). */
template <int MODE, int FIN, int ROWS>
__global__ void __launch_bounds__(32 * VEC_WARPS, VEC_MIN_BLOCKS)
    vec5_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds, int width,
                int height, int border, const __grid_constant__ ipk_vec_plan vp)
{
    const int lane = threadIdx.x;
    const int x = (blockIdx.x * 32 + lane) * IPK_VEC_PX;
    const int y0 = (blockIdx.y * VEC_WARPS + threadIdx.y) * ROWS;
    if (y0 >= height) return;   /* the whole warp */
    const bool fast = x + IPK_VEC_PX <= width && ((uintptr_t)src % 16) == 0 && (ss % 16) == 0;
    const bool edge_lane = lane == 0 || lane == 31;
    const int xe = lane == 0 ? x - 2 : x + IPK_VEC_PX;
    const int xe0 = edge_lane ? ipk_border_index(xe, width, border) : -1;
    const int xe1 = edge_lane ? ipk_border_index(xe + 1, width, border) : -1;
    const bool rows_in = y0 >= 2 && y0 + ROWS + 1 < height;
    uint4 in[ROWS + 4];
    vec_load_rows<ROWS, 2>(src, ss, width, height, border, x, y0, fast, rows_in, in);
    uint32_t edge[ROWS + 4];
    #pragma unroll
    for (int rr = 0; rr < 4 + VEC_EDGE_AHEAD && rr < ROWS + 4; rr++)
        edge[rr] = vec5_edge_word(src, ss, height, border, xe0, xe1, y0 - 2 + rr, rows_in);

    const int n = min(IPK_VEC_PX, width - x);
    const bool vec_out = n == IPK_VEC_PX && ((uintptr_t)dst % 16) == 0 && (ds % 16) == 0;
    #pragma unroll
    for (int o = 0; o < ROWS; o++) {
        if (o + 4 + VEC_EDGE_AHEAD < ROWS + 4)
            edge[o + 4 + VEC_EDGE_AHEAD] =
                vec5_edge_word(src, ss, height, border, xe0, xe1, y0 + 2 + o + VEC_EDGE_AHEAD, rows_in);
        uint32_t acc[8];
        vec5_row<MODE>(in + o, edge + o, vp, lane, acc);
        if (n > 0 && y0 + o < height)
            vec_store_row<FIN, 2>(acc, vp, dst, ds, x, y0 + o, width, height, border, n, vec_out);
    }
}

/* The vec kernel of radius R (1: 3x3, 2: 5x5) for the plan's mode and finish. */
template <int R, int MODE, int FIN>
static int vec_launch(const ipk_img *src, const ipk_img *dst, int border, const ipk_vec_plan &vp, cudaStream_t s)
{
    dim3 block(32, VEC_WARPS);
    constexpr int ROWS = R == 1 ? vec_rows<MODE, FIN>::value : vec5_rows<MODE, FIN>::value;
    dim3 grid(ipk_div_up(src->width, 32 * IPK_VEC_PX), ipk_div_up(src->height, (long long)ROWS * VEC_WARPS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    const uint8_t *in = (const uint8_t *)src->data;
    uint8_t *out = (uint8_t *)dst->data;
    if constexpr (R == 1)
        vec3_kernel<MODE, FIN, ROWS><<<grid, block, 0, s>>>(in, src->stride, out, dst->stride, src->width, src->height,
                                                            border, vp);
    else
        vec5_kernel<MODE, FIN, ROWS><<<grid, block, 0, s>>>(in, src->stride, out, dst->stride, src->width, src->height,
                                                            border, vp);
    return ipk_launch_status();
}
#endif
