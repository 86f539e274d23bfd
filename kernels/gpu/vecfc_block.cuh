/* The certified float kernel (what AUTO runs for float-weight direct 5x5 and 7x7 convolves with u8
 * output): the CPU float path's bytes from sums of fused multiply-adds, k^2 FP32 instructions a
 * pixel instead of 2 k^2 (conv_vecfc.h says why the result is the same, and test_conv_vecfc checks
 * it on the host).
 *
 * A thread makes 8 outputs x ROWS rows: it first issues all of its ROWS + 2R input rows as 8-byte
 * loads, then streams them down, converting each row once and adding it into the 2R + 1 outputs
 * still open; the 4 columns on each side are the neighbouring lanes' words, by shuffles (a warp's
 * first and last lanes load the word beyond their side). Eight columns a thread, so that a row's
 * fixed costs (shuffles, addresses, the store) spread over more pixels than in vecfr_block.cuh's
 * four; that needs up to 128 registers (4 blocks of 128 threads an SM).
 *
 * A thread's row of 8 pixels holding one whose fused value is too near a half-integer to be
 * certain is flagged; once the warp's band is done, the flagged rows' pixels go into the warp's
 * queue in shared memory (column in the warp, row in the band) and the warp's lanes recompute them
 * in the CPU's order from the image (vecfc_exact), over the fused bytes already stored. */
#ifndef IPK_VECFC_BLOCK_CUH
#define IPK_VECFC_BLOCK_CUH
#include "vecf_block.cuh"
#include "conv_vecfc.h"

#define VECFC_MIN_BLOCKS 4   /* 4 blocks of 128 threads per SM: at most 128 registers a thread */

/* Output rows a thread makes: 16 at radius 2, 12 at radius 3 (more rows read fewer halo rows, 2R
 * per ROWS; within 128 registers without spilling, sm_90, CUDA 13.0). */
template <int R> struct vecfc_rows {
    static constexpr int value = R == 2 ? 16 : 12;
};

/* Pixel (x, y) in the CPU's order (conv_vecf.h: each product and each sum rounded, ky then kx
 * ascending), through the border: every value loaded first, then the sum. */
template <int R, int FIN>
__device__ __forceinline__ uint8_t vecfc_exact(const uint8_t *__restrict__ src, ptrdiff_t ss, int width, int height,
                                               int border, int x, int y, const ipk_vecf_plan &p)
{
    constexpr int K = 2 * R + 1;
    const bool inside = x >= R && x + R < width && y >= R && y + R < height;
    float v[K * K];
    #pragma unroll
    for (int ky = 0; ky < K; ky++) {
        const int yi = inside ? y - R + ky : ipk_border_index(y - R + ky, height, border);
        #pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const int xi = inside ? x - R + kx : ipk_border_index(x - R + kx, width, border);
            v[ky * K + kx] = yi < 0 || xi < 0 ? 0.0f : (float)__ldg(src + (ptrdiff_t)yi * ss + xi);
        }
    }
    float acc = ipk_vecf_mul(p.w[0], v[0]);
    #pragma unroll
    for (int t = 1; t < K * K; t++) acc = ipk_vecf_add(acc, ipk_vecf_mul(p.w[t], v[t]));
    return (uint8_t)ipk_vecf_rint_u8(ipk_vecf_value(&p, FIN, 0, acc));
}

/* The n pixels of each output row of the thread flagged in rows into the warp's queue: entry (row
 * in the band) << 8 | column in the warp. After the rows, so that the streaming loop has no branch. */
__device__ __forceinline__ void vecfc_enqueue(uint16_t *queue, int *queued, uint32_t rows, int lane, int n)
{
    while (rows) {
        const int row = __ffs(rows) - 1;
        rows &= rows - 1;
        const int at = atomicAdd(queued, n);
        for (int j = 0; j < n; j++) queue[at + j] = (uint16_t)(row << 8 | (lane * IPK_VECFC_PX + j));
    }
}

/* The side word of row y beyond the warp's first or last lane (xw: its first column), 0 on the other
 * lanes; at: its address when rows_in, stepped down the rows by the caller. */
__device__ __forceinline__ uint32_t vecfc_edge(const uint8_t *__restrict__ src, ptrdiff_t ss, int width, int height,
                                               int border, int xw, int y, bool edge_lane, bool edge_fast, bool rows_in,
                                               const uint8_t *at)
{
    if (!edge_lane) return 0u;
    if (edge_fast && rows_in) return __ldg((const uint32_t *)at);
    return vecf_edge_word(src, ss, width, height, border, xw, y, edge_lane, edge_fast, rows_in);
}

/* Every thread of a warp runs to the end (the shuffles and the queue need the whole warp);
 * threads right of the image gather their columns through the border for their neighbours and
 * store nothing. */
template <int R, int FIN, int ROWS, int MINB>
__global__ void __launch_bounds__(32 * VECF_WARPS, MINB)
    vecfc_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds, int width,
                 int height, int border, const __grid_constant__ ipk_vecf_plan p)
{
    constexpr int K = 2 * R + 1, IN = ROWS + 2 * R, PX = IPK_VECFC_PX;
    static_assert(32 * PX <= 256 && ROWS <= 32, "queue entries: 8 bits of column; a bit a row in flagged");
    __shared__ uint16_t queue[VECF_WARPS][32 * PX * ROWS];
    __shared__ int queued[VECF_WARPS];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int x = (blockIdx.x * 32 + lane) * PX;
    const int y0 = (blockIdx.y * VECF_WARPS + warp) * ROWS;
    if (y0 >= height) return;   /* the whole warp */
    if (lane == 0) queued[warp] = 0;
    __syncwarp();
    const bool fast = x + PX <= width && ((uintptr_t)src % 8) == 0 && (ss % 8) == 0;
    const bool rows_in = y0 >= R && y0 + ROWS + R <= height;
    uint2 in[IN];
    vecf_load_rows<ROWS, R>(src, ss, width, height, border, x, y0, fast, rows_in, in);
    const bool edge_lane = lane == 0 || lane == 31;
    const int xw = lane == 0 ? x - 4 : x + PX;
    const bool edge_fast = xw >= 0 && xw + 4 <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    const uint8_t *edge_at = src + (ptrdiff_t)(y0 - R) * ss + xw;
    uint32_t edge[IN];
    #pragma unroll
    for (int rr = 0; rr < VECF_EDGE_AHEAD; rr++, edge_at += ss)
        edge[rr] = vecfc_edge(src, ss, width, height, border, xw, y0 - R + rr, edge_lane, edge_fast, rows_in, edge_at);

    const int n = min(PX, width - x);
    const bool vec_out = ((uintptr_t)dst % PX) == 0 && (ds % PX) == 0;
    uint8_t *drow = dst + (ptrdiff_t)y0 * ds + x;   /* stepped down a row a store */
    float open[K * PX] = {};
    uint32_t flagged = 0;   /* bit i: output row i of the band has a pixel that is not certain */
    #pragma unroll
    for (int rr = 0; rr < IN; rr++) {
        if (rr + VECF_EDGE_AHEAD < IN) {
            edge[rr + VECF_EDGE_AHEAD] = vecfc_edge(src, ss, width, height, border, xw, y0 - R + rr + VECF_EDGE_AHEAD,
                                                    edge_lane, edge_fast, rows_in, edge_at);
            edge_at += ss;
        }
        const uint32_t l = __shfl_up_sync(0xffffffffu, in[rr].y, 1), r = __shfl_down_sync(0xffffffffu, in[rr].x, 1);
        float v[PX + 2 * IPK_VECF_MAXR];
        ipk_vecfc_values(lane == 0 ? edge[rr] : l, in[rr].x, in[rr].y, lane == 31 ? edge[rr] : r, R, v);
        ipk_vecfc_step(&p, R, v, rr, ROWS, open);
        if (rr >= 2 * R) {
            if (n > 0 && y0 + rr - 2 * R < height) {
                int lo_uncertain, hi_uncertain;
                const uint32_t lo = ipk_vecfc_finish4(&p, FIN, open + 2 * R * PX, &lo_uncertain);
                const uint32_t hi = ipk_vecfc_finish4(&p, FIN, open + 2 * R * PX + 4, &hi_uncertain);
                vecf_put_words<PX>(drow, lo, hi, n, vec_out);
                flagged |= (uint32_t)(lo_uncertain | hi_uncertain) << (rr - 2 * R);
            }
            drow += ds;
        }
        #pragma unroll
        for (int i = K * PX - 1; i >= PX; i--) open[i] = open[i - PX];
    }
    if (flagged) vecfc_enqueue(queue[warp], &queued[warp], flagged, lane, n);
    __syncwarp();
    const int count = queued[warp];
    for (int i = lane; i < count; i += 32) {
        const int e = queue[warp][i], xe = blockIdx.x * 32 * PX + (e & 255), ye = y0 + (e >> 8);
        dst[(ptrdiff_t)ye * ds + xe] = vecfc_exact<R, FIN>(src, ss, width, height, border, xe, ye, p);
    }
}

/* The kernel with ROWS rows a thread and MINB blocks an SM (vecfc_launch: vecfc_rows and
 * VECFC_MIN_BLOCKS; ipk_convolve_gpu_vec_shape: others). p must hold a certificate
 * (ipk_vecfc_certify). */
template <int R, int FIN, int ROWS, int MINB = VECFC_MIN_BLOCKS>
static int vecfc_launch_rows(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p,
                             cudaStream_t s)
{
    if (!p.cert || p.r != R || p.fin != FIN) return IPK_EINVAL;
    dim3 block(32, VECF_WARPS);
    dim3 grid(ipk_div_up(src->width, 32 * IPK_VECFC_PX), ipk_div_up(src->height, (long long)ROWS * VECF_WARPS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    vecfc_kernel<R, FIN, ROWS, MINB><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                            (uint8_t *)dst->data, dst->stride, src->width, src->height,
                                                            border, p);
    return ipk_launch_status();
}

template <int R>
static int vecfc_launch_fin(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    constexpr int rows = vecfc_rows<R>::value;
    if (p.fin == IPK_VECF_FIN_ONE) return vecfc_launch_rows<R, IPK_VECF_FIN_ONE, rows>(src, dst, border, p, s);
    if (p.fin == IPK_VECF_FIN_MUL) return vecfc_launch_rows<R, IPK_VECF_FIN_MUL, rows>(src, dst, border, p, s);
    return vecfc_launch_rows<R, IPK_VECF_FIN_DIV, rows>(src, dst, border, p, s);
}

/* 1-channel u8 in, u8 out (the caller checks), a plan of ipk_vecf_plan_conv_k with r = 2 or 3 and a
 * certificate. */
static int vecfc_launch(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    return p.r == 2 ? vecfc_launch_fin<2>(src, dst, border, p, s) : vecfc_launch_fin<3>(src, dst, border, p, s);
}
#endif
