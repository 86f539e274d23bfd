/* The separable vec kernel (IPK_GPU_VEC for separable integer kernels of radius 1 to 3 whose row
 * sums fit 16 bits, the 7x7 binomial above all): 1-channel u8 in, u8 or f32 out, bit-identical to
 * the CPU integer path (the arithmetic is kernels/common/convolve_vecsep.h, which test_conv_vecsep
 * checks on the host), sized for bytes in flight and occupancy as convolve_vec_block.cuh is.
 *
 * A thread makes 8 outputs x ROWS rows; a warp covers 256 columns, a block VECSEP_WARPS warps
 * stacked down the image. A thread first issues all of its ROWS + 2R input rows as 8-byte loads,
 * before any arithmetic; then it streams them down: each row's row pass in 16-bit lanes (its side
 * bytes are the neighbouring lanes' words, by shuffles), kept in a rolling window of the last
 * 2R + 1 row sums (4 words each: 8 columns, not 16, so that the window fits the registers), and
 * each output row is the column pass over the window in 32 bits, then the CPU's finish. A warp's
 * first and last lanes load the word beyond their side, VECSEP_EDGE_AHEAD rows before its use.
 * Threads at the image's sides and unaligned rows gather their bytes through the border instead.
 * No shared memory; ptxas is held to 64 registers so that 8 blocks (32 warps) stay resident. */
#ifndef IPK_VECSEP_BLOCK_CUH
#define IPK_VECSEP_BLOCK_CUH
#include "gpu_common.cuh"
#include "convolve_vecf_block.cuh"
#include "convolve_vecsep.h"

#define VECSEP_WARPS 4
#define VECSEP_MIN_BLOCKS 8   /* 8 blocks of 128 threads per SM: at most 64 registers a thread */
#define VECSEP_EDGE_AHEAD 2

/* Output rows a thread makes (ROWS + 2R input rows in flight, 8 bytes each): the most (of 8, 6, 4,
 * 2) with which ptxas keeps the instantiation at 64 registers without spilling (sm_90, CUDA 13.0).
 * Radius 3 with the SHIFT or ODD finish (gaussian7) 6: 8 spilled 4 to 8 bytes. The double finishes
 * (u8 DOUBLE, every f32 output) take more registers: radius 3 2 (4 spilled 28 to 36 bytes), radius
 * 2 4, radius 1 8 (u8) and 6 (f32). */
template <int R, int FIN, typename Out> struct vecsep_rows {
    static constexpr bool dbl = FIN == IPK_VECSEP_FIN_DOUBLE || sizeof(Out) == 4;
    static constexpr int value = R == 3 ? (dbl ? 2 : 6) : R == 2 ? (dbl ? 4 : 8) : sizeof(Out) == 4 ? 6 : 8;
};

/* One output row from the window of row sums (stores as vecf_put). */
template <int R, int FIN>
__device__ __forceinline__ void vecsep_store(uint8_t *d, const uint32_t *win, const ipk_vecsep_plan &p, int n, bool vec)
{
    uint32_t q[IPK_VECSEP_PX];
    #pragma unroll
    for (int k = 0; k < IPK_VECSEP_PX; k++) q[k] = ipk_vecsep_u8(&p, FIN, ipk_vecsep_vsum(win, p.col, R, k));
    vecf_put<IPK_VECSEP_PX>(d, q, n, vec);
}
template <int R, int FIN>
__device__ __forceinline__ void vecsep_store(float *d, const uint32_t *win, const ipk_vecsep_plan &p, int n, bool vec)
{
    float o[IPK_VECSEP_PX];
    #pragma unroll
    for (int k = 0; k < IPK_VECSEP_PX; k++) o[k] = (float)ipk_vecsep_value(&p, ipk_vecsep_vsum(win, p.col, R, k));
    vecf_put<IPK_VECSEP_PX>(d, o, n, vec);
}

/* Every thread of a warp runs to the end (the shuffles need the whole warp); threads right of
 * the image gather their columns through the border for their neighbours and store nothing. */
template <int R, int FIN, typename Out, int ROWS>
__global__ void __launch_bounds__(32 * VECSEP_WARPS, VECSEP_MIN_BLOCKS)
    vecsep_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, Out *__restrict__ dst, ptrdiff_t ds, int width,
                  int height, int border, const __grid_constant__ ipk_vecsep_plan p)
{
    constexpr int K = 2 * R + 1, IN = ROWS + 2 * R;
    const int lane = threadIdx.x;
    const int x = (blockIdx.x * 32 + lane) * IPK_VECSEP_PX;
    const int y0 = (blockIdx.y * VECSEP_WARPS + threadIdx.y) * ROWS;
    if (y0 >= height) return;   /* the whole warp */
    const bool fast = x + IPK_VECSEP_PX <= width && ((uintptr_t)src % 8) == 0 && (ss % 8) == 0;
    const bool rows_in = y0 >= R && y0 + ROWS + R <= height;
    uint2 in[IN];
    vecf_load_rows<ROWS, R>(src, ss, width, height, border, x, y0, fast, rows_in, in);
    const bool edge_lane = lane == 0 || lane == 31;
    const int xw = lane == 0 ? x - 4 : x + IPK_VECSEP_PX;
    const bool edge_fast = xw >= 0 && xw + 4 <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    uint32_t edge[IN];
    #pragma unroll
    for (int rr = 0; rr < VECSEP_EDGE_AHEAD; rr++)
        edge[rr] = vecf_edge_word(src, ss, width, height, border, xw, y0 - R + rr, edge_lane, edge_fast, rows_in);

    const int n = min(IPK_VECSEP_PX, width - x);
    const size_t align = IPK_VECSEP_PX * sizeof(Out) < 16 ? IPK_VECSEP_PX * sizeof(Out) : 16;
    const bool vec_out = ((uintptr_t)dst % align) == 0 && (ds % align) == 0;
    uint32_t win[K * IPK_VECSEP_WORDS] = {};
    #pragma unroll
    for (int rr = 0; rr < IN; rr++) {
        if (rr + VECSEP_EDGE_AHEAD < IN)
            edge[rr + VECSEP_EDGE_AHEAD] = vecf_edge_word(src, ss, width, height, border, xw,
                                                            y0 - R + rr + VECSEP_EDGE_AHEAD, edge_lane, edge_fast,
                                                            rows_in);
        const uint32_t l = __shfl_up_sync(0xffffffffu, in[rr].y, 1), r = __shfl_down_sync(0xffffffffu, in[rr].x, 1);
        #pragma unroll
        for (int i = 0; i < (K - 1) * IPK_VECSEP_WORDS; i++) win[i] = win[i + IPK_VECSEP_WORDS];
        ipk_vecsep_hpass(lane == 0 ? edge[rr] : l, in[rr].x, in[rr].y, lane == 31 ? edge[rr] : r, p.row, R,
                         win + (K - 1) * IPK_VECSEP_WORDS);
        if (rr >= 2 * R && n > 0 && y0 + rr - 2 * R < height)
            vecsep_store<R, FIN>(ipk_wrow<Out>(dst, ds, y0 + rr - 2 * R) + x, win, p, n, vec_out);
    }
}

/* The kernel with ROWS rows a thread (vecsep_launch_one: vecsep_rows; ipk_convolve_gpu_vec_shape: others). */
template <int R, int FIN, typename Out, int ROWS>
static int vecsep_launch_rows(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecsep_plan &p,
                              cudaStream_t s)
{
    dim3 block(32, VECSEP_WARPS);
    dim3 grid(ipk_div_up(src->width, 32 * IPK_VECSEP_PX), ipk_div_up(src->height, (long long)ROWS * VECSEP_WARPS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    vecsep_kernel<R, FIN, Out, ROWS><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                            (Out *)dst->data, dst->stride, src->width, src->height,
                                                            border, p);
    return ipk_launch_status();
}

template <int R, int FIN, typename Out>
static int vecsep_launch_one(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecsep_plan &p,
                             cudaStream_t s)
{
    return vecsep_launch_rows<R, FIN, Out, vecsep_rows<R, FIN, Out>::value>(src, dst, border, p, s);
}

template <int R>
static int vecsep_launch_r(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecsep_plan &p,
                           cudaStream_t s)
{
    if (dst->dtype == IPK_F32) return vecsep_launch_one<R, IPK_VECSEP_FIN_DOUBLE, float>(src, dst, border, p, s);
    if (p.fin == IPK_VECSEP_FIN_SHIFT) return vecsep_launch_one<R, IPK_VECSEP_FIN_SHIFT, uint8_t>(src, dst, border, p, s);
    if (p.fin == IPK_VECSEP_FIN_ODD) return vecsep_launch_one<R, IPK_VECSEP_FIN_ODD, uint8_t>(src, dst, border, p, s);
    return vecsep_launch_one<R, IPK_VECSEP_FIN_DOUBLE, uint8_t>(src, dst, border, p, s);
}

/* 1-channel u8 in, u8 or f32 out (the caller checks), the plan of ipk_vecsep_plan_conv. */
static int vecsep_launch(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecsep_plan &p, cudaStream_t s)
{
    if (p.r == 1) return vecsep_launch_r<1>(src, dst, border, p, s);
    if (p.r == 2) return vecsep_launch_r<2>(src, dst, border, p, s);
    return vecsep_launch_r<3>(src, dst, border, p, s);
}
#endif
