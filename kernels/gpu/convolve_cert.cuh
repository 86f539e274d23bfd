/* The certified tile kernel (convolve_cert.h): rb_kernel's tile and sums, with fused multiply-adds, for
 * a direct K x K float kernel with u8 output. Each thread flags the pixels the certificate leaves
 * open, a bit each in a word (RB_ROWS x RB_PX = 32), stores every byte, then recomputes the flagged
 * ones from the shared tile in the CPU's order and stores them again: the same thread's later
 * store wins, and the sums' registers are free by then. */
#ifndef IPK_RB_CERT_CUH
#define IPK_RB_CERT_CUH
#include "convolve_cert.h"

static_assert(RB_ROWS * RB_PX <= 32, "a thread's pixels flagged in one word");

/* The CPU's finish (acc / div + off; inv = 1 / div where pow2) and the certificate's threshold. */
struct rbc_finish {
    float div, inv, off, thr;
    int pow2;
};

/* The u8 output of a sum in the CPU's order, through the CPU's finish. */
__device__ __forceinline__ uint32_t rbc_cpu_byte(float acc, const rbc_finish &f)
{
    return ipk_vecf_rint_u8(ipk_conv_cert_value(acc, f.div, f.inv, f.pow2, f.off)) & 0xffu;
}

/* Pixel (o, j) of the thread in the CPU's order: every product and sum rounded, ky then kx. */
template <int K>
__device__ __forceinline__ uint32_t rbc_exact(const float4 *tile, const rb_weights &w, const rbc_finish &f, int o, int j)
{
    const float *t = (const float *)tile + (threadIdx.y * RB_ROWS + o) * (4 * RB_SW4) + 4 * threadIdx.x + j +
                     RB_HALO - K / 2;
    float acc = 0.0f;
    #pragma unroll
    for (int ky = 0; ky < K; ky++)
        #pragma unroll
        for (int kx = 0; kx < K; kx++) acc = __fadd_rn(acc, __fmul_rn(w.w[ky * K + kx], t[ky * 4 * RB_SW4 + kx]));
    return rbc_cpu_byte(acc, f);
}

template <int K>
__global__ void __launch_bounds__(RB_TX *RB_TY)
    rbc_kernel(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height, int border,
               const __grid_constant__ rb_weights w, const __grid_constant__ rbc_finish f)
{
    __shared__ float4 tile[(RB_TH + K - 1) * RB_SW4];
    float acc[RB_ROWS][RB_PX];
    rb_block_sums<K, false, true>(src, ss, width, height, border, tile, w, acc);

    const int x0 = blockIdx.x * RB_TW, y0 = blockIdx.y * RB_TH;

    const int x = x0 + threadIdx.x * RB_PX, n = min(RB_PX, width - x);
    if (n <= 0) return;
    const bool word_ok = ((uintptr_t)dst % RB_PX) == 0 && (ds % RB_PX) == 0;
    uint32_t open = 0;
    #pragma unroll
    for (int o = 0; o < RB_ROWS; o++) {
        const int y = y0 + threadIdx.y * RB_ROWS + o;
        if (y >= height) break;
        uint32_t q[RB_PX];
        #pragma unroll
        for (int j = 0; j < RB_PX; j++) {
            uint32_t uncertain;
            q[j] = ipk_conv_cert_u8(ipk_conv_cert_value(acc[o][j], f.div, f.inv, f.pow2, f.off), f.thr, &uncertain) &
                   0xffu;
            open |= (uint32_t)(uncertain && j < n) << (o * RB_PX + j);
        }
        rb_store(ipk_wrow<uint8_t>(dst, ds, y) + x, q, n, word_ok);
    }
    while (open) {
        const int i = __ffs(open) - 1, o = i / RB_PX, j = i % RB_PX;
        open &= open - 1;
        ipk_wrow<uint8_t>(dst, ds, y0 + threadIdx.y * RB_ROWS + o)[x + j] = (uint8_t)rbc_exact<K>(tile, w, f, o, j);
    }
}

template <int K>
static int rbc_launch(const ipk_img *src, const ipk_img *dst, int border, const rb_weights &w, const rbc_finish &f,
                      cudaStream_t s)
{
    dim3 block(RB_TX, RB_TY), grid(ipk_div_up(src->width, RB_TW), ipk_div_up(src->height, RB_TH));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    rbc_kernel<K><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data, dst->stride,
                                         src->width, src->height, border, w, f);
    return ipk_launch_status();
}
#endif
