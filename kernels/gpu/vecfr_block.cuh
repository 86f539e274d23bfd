/* The float vec kernel at radius 2 and 3 (IPK_GPU_VEC for float-weight 5x5 and 7x7): convolve of a
 * 1-channel u8 image, u8 or f32 output, bit-identical to the CPU float path (the arithmetic is
 * kernels/common/conv_vecf.h's ipk_vecfr_*, which test_conv_vecf checks on the host), built as
 * vecf_block.cuh's 3x3 kernel is.
 *
 * A thread makes 4 outputs x ROWS rows (vecfr_rows); a warp covers 128 columns, a block VECF_WARPS
 * warps stacked down the image. A thread first issues all of its ROWS + 2R input rows as 4-byte
 * loads, before any arithmetic; then it streams them down, converting each row once and adding it
 * into the 2R + 1 outputs still open (4 columns a thread, not 8, so that 5 or 7 open sums of each
 * column fit the registers). The 4 columns on each side are the neighbouring lanes' words, by
 * shuffles; a warp's first and last lanes load the word beyond their side, VECF_EDGE_AHEAD rows
 * before its use. Threads at the image's sides and unaligned rows gather their bytes through the
 * border instead. No shared memory; 64 registers, 8 blocks of 128 threads an SM.
 *
 * The work: a direct k x k is k^2 products and k^2 additions a pixel, each rounded once, so no
 * fused multiply-add: 50 (5x5) or 98 (7x7) FP32 instructions a pixel before the conversions and
 * the finish. */
#ifndef IPK_VECFR_BLOCK_CUH
#define IPK_VECFR_BLOCK_CUH
#include "vecf_block.cuh"

/* Output rows a thread makes: the most (of 16, 12, 8) with which ptxas keeps the instantiation at
 * 64 registers without spilling (sm_90, CUDA 13.0); more rows read fewer halo rows (2R per ROWS)
 * and convert fewer of them. Radius 2: 16 (the separable kernel with a true division and f32
 * output spilled 32 bytes at 16: 12). Radius 3: direct 8 (12 spilled 16 to 40 bytes), separable 12
 * (8 with a true division). 8 rows fit every instantiation at 52 to 64 registers. */
template <int R, int MODE, int FIN, typename Out> struct vecfr_rows {
    static constexpr int value = R == 2 ? (MODE == IPK_VECF_SEP && FIN == IPK_VECF_FIN_DIV && sizeof(Out) == 4 ? 12 : 16)
                                        : (MODE == IPK_VECF_SEP && FIN != IPK_VECF_FIN_DIV ? 12 : 8);
};

/* Every thread of a warp runs to the end (the shuffles need the whole warp); threads right of
 * the image gather their columns through the border for their neighbours and store nothing. */
template <int R, int MODE, int FIN, typename Out, int ROWS>
__global__ void __launch_bounds__(32 * VECF_WARPS, VECF_MIN_BLOCKS)
    vecfr_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, Out *__restrict__ dst, ptrdiff_t ds, int width,
                 int height, int border, const __grid_constant__ ipk_vecf_plan p)
{
    constexpr int K = 2 * R + 1, IN = ROWS + 2 * R;
    const int lane = threadIdx.x;
    const int x = (blockIdx.x * 32 + lane) * IPK_VECFR_PX;
    const int y0 = (blockIdx.y * VECF_WARPS + threadIdx.y) * ROWS;
    if (y0 >= height) return;   /* the whole warp */
    const bool fast = x + IPK_VECFR_PX <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    const bool rows_in = y0 >= R && y0 + ROWS + R <= height;
    uint32_t in[IN];
    vecf_load_rows<ROWS, R>(src, ss, width, height, border, x, y0, fast, rows_in, in);
    const bool edge_lane = lane == 0 || lane == 31;
    const int xw = lane == 0 ? x - 4 : x + IPK_VECFR_PX;
    const bool edge_fast = xw >= 0 && xw + 4 <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    uint32_t edge[IN];
    #pragma unroll
    for (int rr = 0; rr < VECF_EDGE_AHEAD; rr++)
        edge[rr] = vecf_edge_word(src, ss, width, height, border, xw, y0 - R + rr, edge_lane, edge_fast, rows_in);

    const int n = min(IPK_VECFR_PX, width - x);
    const size_t align = IPK_VECFR_PX * sizeof(Out);
    const bool vec_out = ((uintptr_t)dst % align) == 0 && (ds % align) == 0;
    float open[K * IPK_VECFR_PX] = {};
    #pragma unroll
    for (int rr = 0; rr < IN; rr++) {
        if (rr + VECF_EDGE_AHEAD < IN)
            edge[rr + VECF_EDGE_AHEAD] = vecf_edge_word(src, ss, width, height, border, xw,
                                                        y0 - R + rr + VECF_EDGE_AHEAD, edge_lane, edge_fast, rows_in);
        const uint32_t l = __shfl_up_sync(0xffffffffu, in[rr], 1), r = __shfl_down_sync(0xffffffffu, in[rr], 1);
        float v[IPK_VECFR_PX + 2 * IPK_VECF_MAXR];
        ipk_vecfr_values(lane == 0 ? edge[rr] : l, in[rr], lane == 31 ? edge[rr] : r, R, v);
        ipk_vecfr_step(&p, MODE, R, v, rr, ROWS, open);
        if (rr >= 2 * R && n > 0 && y0 + rr - 2 * R < height)
            vecf_store<FIN, IPK_VECFR_PX>(ipk_wrow<Out>(dst, ds, y0 + rr - 2 * R) + x, open + 2 * R * IPK_VECFR_PX, p, n, vec_out);
        #pragma unroll
        for (int i = K * IPK_VECFR_PX - 1; i >= IPK_VECFR_PX; i--) open[i] = open[i - IPK_VECFR_PX];
    }
}

/* The kernel with ROWS rows a thread (vecfr_launch_one: vecfr_rows; ipk_convolve_gpu_vec_shape: others). */
template <int R, int MODE, int FIN, typename Out, int ROWS>
static int vecfr_launch_rows(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p,
                             cudaStream_t s)
{
    dim3 block(32, VECF_WARPS);
    dim3 grid(ipk_div_up(src->width, 32 * IPK_VECFR_PX), ipk_div_up(src->height, (long long)ROWS * VECF_WARPS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    vecfr_kernel<R, MODE, FIN, Out, ROWS><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                                 (Out *)dst->data, dst->stride, src->width,
                                                                 src->height, border, p);
    return ipk_launch_status();
}

template <int R, int MODE, int FIN, typename Out>
static int vecfr_launch_one(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    return vecfr_launch_rows<R, MODE, FIN, Out, vecfr_rows<R, MODE, FIN, Out>::value>(src, dst, border, p, s);
}

template <int R, int MODE, typename Out>
static int vecfr_launch_fin(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    if (p.fin == IPK_VECF_FIN_ONE) return vecfr_launch_one<R, MODE, IPK_VECF_FIN_ONE, Out>(src, dst, border, p, s);
    if (p.fin == IPK_VECF_FIN_MUL) return vecfr_launch_one<R, MODE, IPK_VECF_FIN_MUL, Out>(src, dst, border, p, s);
    return vecfr_launch_one<R, MODE, IPK_VECF_FIN_DIV, Out>(src, dst, border, p, s);
}

template <int R, typename Out>
static int vecfr_launch_mode(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    return p.mode == IPK_VECF_SEP ? vecfr_launch_fin<R, IPK_VECF_SEP, Out>(src, dst, border, p, s)
                                  : vecfr_launch_fin<R, IPK_VECF_DIRECT, Out>(src, dst, border, p, s);
}

/* 1-channel u8 in, u8 or f32 out (the caller checks), the plan of ipk_vecf_plan_conv_k with r = 2 or 3. */
template <typename Out>
static int vecfr_launch(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    return p.r == 2 ? vecfr_launch_mode<2, Out>(src, dst, border, p, s) : vecfr_launch_mode<3, Out>(src, dst, border, p, s);
}
#endif
