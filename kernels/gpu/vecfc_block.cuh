/* The certified float kernel (what AUTO runs for float-weight direct 5x5 and 7x7 convolves with u8
 * output): the CPU float path's bytes from sums of fused multiply-adds, k^2 FP32 instructions a
 * pixel instead of 2 k^2 (conv_vecfc.h says why the result is the same, and test_conv_vecfc checks
 * it on the host).
 *
 * The layout is vecfr_block.cuh's: a thread makes 4 outputs x ROWS rows, every input row loaded
 * first, side columns from the neighbouring lanes. A pixel whose fused value is too near a
 * half-integer to be certain goes into its warp's queue in shared memory (its column in the warp
 * and its row in the thread's band); once the warp's band is done, its lanes take the queue and
 * recompute those pixels in the CPU's order from the image (vecfc_exact), over the fused bytes
 * already stored. */
#ifndef IPK_VECFC_BLOCK_CUH
#define IPK_VECFC_BLOCK_CUH
#include "vecfr_block.cuh"
#include "conv_vecfc.h"

/* Output rows a thread makes (64 registers without spilling, sm_90, CUDA 13.0, as vecfr_rows):
 * 16 at radius 2, 8 at radius 3. */
template <int R> struct vecfc_rows {
    static constexpr int value = R == 2 ? 16 : 8;
};

/* Pixel (x, y) in the CPU's order (conv_vecf.h: each product and each sum rounded, ky then kx
 * ascending), through the border; out of line, off the fast path's registers. */
static __device__ __noinline__ uint8_t vecfc_exact(const uint8_t *__restrict__ src, ptrdiff_t ss, int width, int height,
                                                   int border, int x, int y, const ipk_vecf_plan *p)
{
    const int r = p->r, k = 2 * r + 1;
    float acc = 0.0f;
    for (int ky = 0; ky < k; ky++) {
        const int yi = ipk_border_index(y - r + ky, height, border);
        for (int kx = 0; kx < k; kx++) {
            const int xi = ipk_border_index(x - r + kx, width, border);
            const float v = yi < 0 || xi < 0 ? 0.0f : (float)__ldg(src + (ptrdiff_t)yi * ss + xi);
            const float prod = ipk_vecf_mul(p->w[ky * k + kx], v);
            acc = ky == 0 && kx == 0 ? prod : ipk_vecf_add(acc, prod);
        }
    }
    return (uint8_t)ipk_vecf_rint_u8(ipk_vecf_value(p, p->fin, 0, acc));
}

/* The uncertain pixels of one output row of the thread (bits of mask) into the warp's queue:
 * entry (row in the band) << 7 | column in the warp. */
__device__ __forceinline__ void vecfc_enqueue(uint16_t *queue, int *queued, uint32_t mask, int lane, int row)
{
    for (int j = 0; j < IPK_VECFR_PX; j++)
        if (mask >> j & 1u) queue[atomicAdd(queued, 1)] = (uint16_t)(row << 7 | (lane * IPK_VECFR_PX + j));
}

/* Every thread of a warp runs to the end (the shuffles and the queue need the whole warp);
 * threads right of the image gather their columns through the border for their neighbours and
 * store nothing. */
template <int R, int FIN, int ROWS, int MINB>
__global__ void __launch_bounds__(32 * VECF_WARPS, MINB)
    vecfc_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds, int width,
                 int height, int border, const __grid_constant__ ipk_vecf_plan p)
{
    constexpr int K = 2 * R + 1, IN = ROWS + 2 * R, PX = IPK_VECFR_PX;
    static_assert(32 * PX <= 128 && ROWS <= 256, "queue entries: 7 bits of column, 9 of row");
    __shared__ uint16_t queue[VECF_WARPS][32 * PX * ROWS];
    __shared__ int queued[VECF_WARPS];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int x = (blockIdx.x * 32 + lane) * PX;
    const int y0 = (blockIdx.y * VECF_WARPS + warp) * ROWS;
    if (y0 >= height) return;   /* the whole warp */
    if (lane == 0) queued[warp] = 0;
    __syncwarp();
    const bool fast = x + PX <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    const bool rows_in = y0 >= R && y0 + ROWS + R <= height;
    uint32_t in[IN];
    vecf_load_rows<ROWS, R>(src, ss, width, height, border, x, y0, fast, rows_in, in);
    const bool edge_lane = lane == 0 || lane == 31;
    const int xw = lane == 0 ? x - 4 : x + PX;
    const bool edge_fast = xw >= 0 && xw + 4 <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    uint32_t edge[IN];
    #pragma unroll
    for (int rr = 0; rr < VECF_EDGE_AHEAD; rr++)
        edge[rr] = vecf_edge_word(src, ss, width, height, border, xw, y0 - R + rr, edge_lane, edge_fast, rows_in);

    const int n = min(PX, width - x);
    const bool vec_out = ((uintptr_t)dst % PX) == 0 && (ds % PX) == 0;
    float open[K * PX] = {};
    #pragma unroll
    for (int rr = 0; rr < IN; rr++) {
        if (rr + VECF_EDGE_AHEAD < IN)
            edge[rr + VECF_EDGE_AHEAD] = vecf_edge_word(src, ss, width, height, border, xw,
                                                        y0 - R + rr + VECF_EDGE_AHEAD, edge_lane, edge_fast, rows_in);
        const uint32_t l = __shfl_up_sync(0xffffffffu, in[rr], 1), r = __shfl_down_sync(0xffffffffu, in[rr], 1);
        float v[PX + 2 * IPK_VECF_MAXR];
        ipk_vecfr_values(lane == 0 ? edge[rr] : l, in[rr], lane == 31 ? edge[rr] : r, R, v);
        ipk_vecfc_step(&p, R, v, rr, ROWS, open);
        const int y = y0 + rr - 2 * R;
        if (rr >= 2 * R && n > 0 && y < height) {
            uint32_t uncertain;
            const uint32_t word = ipk_vecfc_finish4(&p, FIN, open + 2 * R * PX, &uncertain);
            vecf_put_words<PX>(dst + (ptrdiff_t)y * ds + x, word, 0u, n, vec_out);
            uncertain &= (1u << n) - 1u;
            if (uncertain) vecfc_enqueue(queue[warp], &queued[warp], uncertain, lane, rr - 2 * R);
        }
        #pragma unroll
        for (int i = K * PX - 1; i >= PX; i--) open[i] = open[i - PX];
    }
    __syncwarp();
    const int count = queued[warp];
    for (int i = lane; i < count; i += 32) {
        const int e = queue[warp][i], xe = blockIdx.x * 32 * PX + (e & 127), ye = y0 + (e >> 7);
        dst[(ptrdiff_t)ye * ds + xe] = vecfc_exact(src, ss, width, height, border, xe, ye, &p);
    }
}

/* The kernel with ROWS rows a thread and MINB blocks an SM (vecfc_launch: vecfc_rows and
 * VECF_MIN_BLOCKS, 64 registers; ipk_convolve_gpu_vec_shape: others). p must hold a certificate
 * (ipk_vecfc_certify). */
template <int R, int FIN, int ROWS, int MINB = VECF_MIN_BLOCKS>
static int vecfc_launch_rows(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p,
                             cudaStream_t s)
{
    if (!p.cert || p.r != R || p.fin != FIN) return IPK_EINVAL;
    dim3 block(32, VECF_WARPS);
    dim3 grid(ipk_div_up(src->width, 32 * IPK_VECFR_PX), ipk_div_up(src->height, (long long)ROWS * VECF_WARPS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    vecfc_kernel<R, FIN, ROWS, MINB><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data,
                                                      dst->stride, src->width, src->height, border, p);
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
