/* Register-streaming kernel for K x K windows (K = 3, 5, 7) over a 1-channel u8 image, the
 * path IPK_GPU_REG of convolve and mean; the per-thread arithmetic is kernels/common/reg_block.h,
 * which tests/unit/test_reg_block.c runs on the host.
 *
 * No shared memory and no barrier: each thread makes 8 columns of a band of rows, reading each
 * input row once as one 8-byte load (a warp reads 256 contiguous bytes), its halo columns from
 * the neighbouring lanes by two shuffles, and keeps the K open outputs in registers. Rows are
 * loaded RG_DEPTH(K) ahead of their use so that several loads per thread are in flight. Every
 * thread of a block walks the same rows (the shuffles need whole warps); threads right of the
 * image load (their neighbours need the bytes) but do not store. */
#ifndef IPK_REG_BLOCK_CUH
#define IPK_REG_BLOCK_CUH
#include "gpu_common.cuh"
#include "reg_block.h"

#define RG_BX 128

__device__ __forceinline__ void rg_store(uint8_t *d, const uint32_t *q, int n, bool vec)
{
    if (n == RG_PX && vec) {
        *(uint2 *)d = make_uint2(q[0] | (q[1] << 8) | (q[2] << 16) | (q[3] << 24),
                                 q[4] | (q[5] << 8) | (q[6] << 16) | (q[7] << 24));
        return;
    }
    for (int j = 0; j < n; j++) d[j] = (uint8_t)q[j];
}
__device__ __forceinline__ void rg_store(float *d, const float *q, int n, bool vec)
{
    if (n == RG_PX && vec) {
        ((float4 *)d)[0] = make_float4(q[0], q[1], q[2], q[3]);
        ((float4 *)d)[1] = make_float4(q[4], q[5], q[6], q[7]);
        return;
    }
    for (int j = 0; j < n; j++) d[j] = q[j];
}

/* Row r of the band (input row j_first + r): its values added to the open outputs, the output
 * it completes stored; the ring slot I is refilled with row r + RG_DEPTH(K) first. */
template <int K, bool SEP, bool CONTRACT, typename Out, typename Fin, int I>
__device__ __forceinline__ void rg_step(float (&acc)[K][RG_PX], rg_row (&ring)[RG_DEPTH(K)], const uint8_t *src,
                                        ptrdiff_t ss, Out *dst, ptrdiff_t ds, int width, int height, int border,
                                        int x, int j_first, int y0, int r, int n_in, bool fast, bool vec_out,
                                        int lane, const rg_weights &w, const Fin &fin)
{
    constexpr int R = K / 2, D = RG_DEPTH(K);
    const rg_row cur = ring[I];
    if (r + D < n_in) ring[I] = rg_load(src, ss, width, height, border, x, j_first + r + D, fast, lane);
    const uint32_t left = __shfl_up_sync(0xffffffffu, cur.m1, 1);
    const uint32_t right = __shfl_down_sync(0xffffffffu, cur.m0, 1);
    float v[RG_NV];
    rg_values(cur, left, right, lane, R, v);
    rg_add_row(acc, K, SEP, CONTRACT, &w, v, I % K);
    if (r < K - 1 || x >= width) return;
    const int done = (I % K + 1) % K;
    typename rb_out<Out>::value q[RG_PX];
    #pragma unroll
    for (int j = 0; j < RG_PX; j++) q[j] = fin(acc[done][j]);
    rg_store(ipk_wrow<Out>(dst, ds, y0 + r - (K - 1)) + x, q, min(RG_PX, width - x), vec_out);
}

template <int K, bool SEP, bool CONTRACT, typename Out, typename Fin>
__global__ void __launch_bounds__(RG_BX, RG_MIN_BLOCKS(K))
    rg_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, Out *__restrict__ dst, ptrdiff_t ds, int width,
              int height, int border, int band, const __grid_constant__ rg_weights w,
              const __grid_constant__ Fin fin)
{
    constexpr int R = K / 2, D = RG_DEPTH(K);
    const int lane = threadIdx.x & 31;
    const int x = (blockIdx.x * RG_BX + threadIdx.x) * RG_PX;
    const int y0 = blockIdx.y * band, j_first = y0 - R;
    const int n_in = min(band, height - y0) + K - 1;
    const bool fast = rg_fast(src, ss, width, x) != 0;
    const bool vec_out = ((uintptr_t)dst % (RG_PX * sizeof(Out) >= 16 ? 16 : 8)) == 0 &&
                         (ds % (RG_PX * sizeof(Out) >= 16 ? 16 : 8)) == 0;
    float acc[K][RG_PX];
    #pragma unroll
    for (int s = 0; s < K; s++)
        #pragma unroll
        for (int j = 0; j < RG_PX; j++) acc[s][j] = 0.0f;
    rg_row ring[D];
    #pragma unroll
    for (int i = 0; i < D; i++)
        ring[i] = i < n_in ? rg_load(src, ss, width, height, border, x, j_first + i, fast, lane) : rg_row{ 0, 0, 0 };
    for (int g = 0; g < n_in; g += D) {
#define RG_STEP(I)                                                                                              \
    if (I < D && g + I < n_in)                                                                                  \
        rg_step<K, SEP, CONTRACT, Out, Fin, (I < D ? I : 0)>(acc, ring, src, ss, dst, ds, width, height, border, \
                                                              x, j_first, y0, g + I, n_in, fast, vec_out, lane, w, \
                                                              fin);
        RG_STEP(0) RG_STEP(1) RG_STEP(2) RG_STEP(3) RG_STEP(4) RG_STEP(5) RG_STEP(6)
#undef RG_STEP
    }
}

/* Blocks of RG_BX threads of `kernel` the device holds at once, for rg_band. */
template <typename Kernel>
static bool rg_resident_slots(Kernel kernel, long long *slots)
{
    return ipk_resident_blocks(kernel, RG_BX, slots);
}

template <int K, bool SEP, bool CONTRACT, typename Out, typename Fin>
static int rg_launch(const ipk_img *src, const ipk_img *dst, int border, const rg_weights &w, const Fin &fin,
                     cudaStream_t s)
{
    long long slots = 0;
    if (!rg_resident_slots(rg_kernel<K, SEP, CONTRACT, Out, Fin>, &slots)) return IPK_ECUDA;
    const unsigned gx = ipk_div_up(src->width, (long long)RG_BX * RG_PX);
    const int band = rg_band(src->height, (int)gx, slots, rg_min_band(K));
    dim3 grid(gx, ipk_div_up(src->height, band));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    rg_kernel<K, SEP, CONTRACT, Out, Fin><<<grid, RG_BX, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                                 (Out *)dst->data, dst->stride, src->width,
                                                                 src->height, border, band, w, fin);
    return ipk_launch_status();
}

/* rb_weights (the tile kernels' layout) to the register kernel's. */
static inline rg_weights rg_from_rb(const rb_weights &b)
{
    rg_weights w;
    for (int i = 0; i < RG_MAXK * RG_MAXK; i++) w.w[i] = b.w[i];   /* both row-major K x K, K <= RG_MAXK */
    for (int i = 0; i < RG_MAXK; i++) {
        w.row[i] = b.row[i];
        w.col[i] = b.col[i];
    }
    return w;
}
#endif
