/* Convolution (correlation, as OpenCV filter2D) on the GPU, following the exact arithmetic
 * of kernels/cpu/convolve.c so that integer outputs are bit-identical:
 * - integer path (u8/u16 input, whole weights |w| <= 2^16): exact sums (int32 when the
 *   weights' bound allows, else int64), v = (double)S / divisor + offset, rint, saturate;
 * - float path: float products and sums without contraction (__fmul_rn, __fadd_rn), kx
 *   ascending inside ky ascending, or for a split kernel (convolve_separable.h) a row pass into
 *   float intermediates then a column pass; v = acc / divisor + offset in float.
 * What a plain call (IPK_GPU_AUTO) runs, the first that takes the case (ipk_convolve_gpu_path):
 * on 1-channel u8 input, the float vec kernel for float 3x3 (convolve_vecf_block.cuh); the vec
 * kernel for 3x3 and 5x5 integer weights whose sums fit 16-bit lanes, u8 out
 * (convolve_vec_block.cuh, rounding with convolve_swar.h); the separable vec kernel for separable
 * integer 7x7, u8 out (convolve_vecsep_block.cuh); the tensor-core kernel for direct float 5x5 and
 * 7x7, u8 out (convolve_tc.cuh), or the certified tile kernel for those and 9x9
 * (convolve_cert.cuh), where their plan has a certificate; then the register-blocked fast path
 * (rb_kernel of gpu_common.cuh) for square kernels up to 9x9. Everything else, and what those
 * refuse, takes the shared-memory tiles below: one block computes a CONV_TW x CONV_TH tile, the
 * input tile with its halo in shared memory once (borders resolved while loading), a split
 * kernel's row pass into shared memory too, then each thread computes CONV_TH / CONV_ROWS output
 * rows of one column. Every kernel gives the CPU's bytes. */
#include <math.h>
#include <string.h>
#include "gpu_common.cuh"
#include "ipk_bench.h"
#include "convolve_separable.h"
#include "convolve_vec_block.cuh"
#include "convolve_vecf_block.cuh"
#include "convolve_vecsep_block.cuh"
#include "convolve_cert.cuh"
#include "convolve_tc.cuh"

/* 1: plain calls take the vec kernel (convolve_vec_block.cuh) for the 3x3 integer cases it takes (see
 * conv_vec_launch); 0: the tile kernels. 1: gaussian3 0.060 against 0.121 ms, sharpen3 0.063
 * against 0.173, at 8192x8192 on the H100. 5x5: CONV_VEC5_AUTO in convolve_vec.h. */
#define CONV_VEC_AUTO 1
/* 1: plain calls take the float vec kernel (convolve_vecf_block.cuh) for the float-weight 3x3 cases it
 * takes (see conv_vecf_launch); 0: the tile kernels. 1: a float 3x3 0.088 against 0.139 ms, a
 * separable one 0.072 against 0.133, at 8192x8192 on the H100. */
#define CONV_VECF_AUTO 1
/* 1: plain calls take the separable vec kernel (convolve_vecsep_block.cuh) for the separable integer 7x7
 * kernels with u8 output it takes (gaussian7 above all; see conv_vecsep_launch and
 * conv_vecsep_auto); 0: the tile kernels. Fusion needs no change with it: core/src/exec/fuse_window.c
 * already runs every separable integer kernel apart. 1: gaussian7 0.149 against 0.161 ms at
 * 8192x8192 on the H100; its 3x3 and 5x5 cases and f32 outputs are not timed, so AUTO leaves them
 * to the tiles. */
#define CONV_VECSEP_AUTO 1

/* 1: plain calls take the certified tile kernel (convolve_cert.cuh) for direct float-weight 5x5, 7x7
 * and 9x9 kernels with u8 output whose plan has a certificate (see conv_cert_launch), where the
 * tensor-core kernel does not take them; 0: the tile kernels. 1: 9x9 0.386 against 0.602 ms, 5x5
 * 0.186 against 0.227, 7x7 0.262 against 0.369, at 8192x8192 on the H100 (2026-11-27). */
#define CONV_CERT_AUTO 1

/* 1: plain calls take the tensor-core kernel (convolve_tc.cuh) for direct float-weight 5x5 and 7x7
 * kernels with u8 output whose plan has a certificate (see conv_tc_launch), before the certified
 * tile kernel; 0: not. 1: 5x5 0.097 against 0.186 (certified tiles) and 0.226 (tiles) ms, 7x7
 * 0.109 against 0.262 and 0.369, at 8192x8192 on the H100 (2026-11-27, 6b542a3). */
#define CONV_TC_AUTO 1

/* What AUTO sends the separable vec kernel: the case CONV_VECSEP_AUTO's timing covers. */
static bool conv_vecsep_auto(const ipk_img *dst, const ipk_conv_params *p)
{
    return CONV_VECSEP_AUTO && p->kw == 7 && p->kh == 7 && dst->dtype == IPK_U8;
}

#define CONV_TW 32
#define CONV_TH 32
#define CONV_ROWS 8
#define CONV_MAXK 31

struct conv_weights {
    int32_t wi[CONV_MAXK * CONV_MAXK];    /* integer path: the kernel, or row then col when split */
    float wf[CONV_MAXK * CONV_MAXK];      /* float path: the same */
    int kw, kh, split;
    double divisor, offset;
    float divisor_f, offset_f;
};

template <typename Acc> __device__ __forceinline__ Acc conv_weight(const conv_weights &w, int i);
template <> __device__ __forceinline__ int conv_weight<int>(const conv_weights &w, int i) { return w.wi[i]; }
template <> __device__ __forceinline__ long long conv_weight<long long>(const conv_weights &w, int i) { return w.wi[i]; }
template <> __device__ __forceinline__ float conv_weight<float>(const conv_weights &w, int i) { return w.wf[i]; }

template <typename Acc> __device__ __forceinline__ Acc conv_mac(Acc acc, Acc w, Acc v) { return acc + w * v; }
template <> __device__ __forceinline__ float conv_mac<float>(float acc, float w, float v)
{
    return __fadd_rn(acc, __fmul_rn(w, v));
}

/* Final value -> output type, as the CPU: rint, saturate, NaN to 0.
 * Integer path: double v; float path: float v. */
__device__ __forceinline__ double conv_saturate(double v, double max_value)
{
    double r = rint(v);
    return r >= 0 ? (r <= max_value ? r : max_value) : 0;
}
__device__ __forceinline__ float conv_saturate_f(float v, float max_value)
{
    float r = rintf(v);
    return r >= 0 ? (r <= max_value ? r : max_value) : 0;
}

template <typename Out> __device__ __forceinline__ Out conv_store_int(double v);
template <> __device__ __forceinline__ float conv_store_int<float>(double v) { return (float)v; }
template <> __device__ __forceinline__ uint8_t conv_store_int<uint8_t>(double v)
{
    return (uint8_t)conv_saturate(v, 255.0);
}
template <> __device__ __forceinline__ uint16_t conv_store_int<uint16_t>(double v)
{
    return (uint16_t)conv_saturate(v, 65535.0);
}

template <typename Out> __device__ __forceinline__ Out conv_store_float(float v);
template <> __device__ __forceinline__ float conv_store_float<float>(float v) { return v; }
template <> __device__ __forceinline__ uint8_t conv_store_float<uint8_t>(float v)
{
    return (uint8_t)conv_saturate_f(v, 255.0f);
}
template <> __device__ __forceinline__ uint16_t conv_store_float<uint16_t>(float v)
{
    return (uint16_t)conv_saturate_f(v, 65535.0f);
}

template <typename Acc, typename Out>
__device__ __forceinline__ Out conv_finish(Acc acc, const conv_weights &w)
{
    return conv_store_int<Out>(__dadd_rn(__ddiv_rn((double)acc, w.divisor), w.offset));
}
template <>
__device__ __forceinline__ float conv_finish<float, float>(float acc, const conv_weights &w)
{
    return conv_store_float<float>(__fadd_rn(__fdiv_rn(acc, w.divisor_f), w.offset_f));
}
template <>
__device__ __forceinline__ uint8_t conv_finish<float, uint8_t>(float acc, const conv_weights &w)
{
    return conv_store_float<uint8_t>(__fadd_rn(__fdiv_rn(acc, w.divisor_f), w.offset_f));
}
template <>
__device__ __forceinline__ uint16_t conv_finish<float, uint16_t>(float acc, const conv_weights &w)
{
    return conv_store_float<uint16_t>(__fadd_rn(__fdiv_rn(acc, w.divisor_f), w.offset_f));
}

/* Input tile with halo into shared memory as Acc values; pixels the border drops are 0. */
template <typename T, typename Acc>
__device__ void conv_load_tile(const void *src, ptrdiff_t ss, int width, int height, int channels, int border,
                               int x0, int y0, int rx, int ry, int tile_w, int tile_h, Acc *tile)
{
    const int row_vals = tile_w * channels;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
    for (int i = tid; i < row_vals * tile_h; i += nthreads) {
        int r = i / row_vals, v = i % row_vals;
        int xi = ipk_border_index(x0 - rx + v / channels, width, border);
        int yi = ipk_border_index(y0 - ry + r, height, border);
        Acc val = 0;
        if (xi >= 0 && yi >= 0) val = (Acc)ipk_crow<T>(src, ss, yi)[(size_t)xi * channels + v % channels];
        tile[i] = val;
    }
}

template <typename T, typename Acc, typename Out, bool SPLIT>
__global__ void conv_kernel(const void *src, ptrdiff_t ss, void *dst, ptrdiff_t ds, int width, int height,
                            int channels, int border, const __grid_constant__ conv_weights w)
{
    extern __shared__ __align__(16) unsigned char conv_smem[];
    const int kw = w.kw, kh = w.kh, rx = kw / 2, ry = kh / 2;
    const int tile_w = CONV_TW + kw - 1, tile_h = CONV_TH + kh - 1;
    const int x0 = blockIdx.x * CONV_TW, y0 = blockIdx.y * CONV_TH;
    Acc *tile = (Acc *)conv_smem;
    conv_load_tile<T, Acc>(src, ss, width, height, channels, border, x0, y0, rx, ry, tile_w, tile_h, tile);
    __syncthreads();

    const int tx = threadIdx.x;
    const int row_vals = tile_w * channels;
    if (SPLIT) {
        /* Row pass for every tile row: hs[r][tx*channels + c], kx ascending. */
        Acc *hs = tile + (size_t)row_vals * tile_h;
        for (int r = threadIdx.y; r < tile_h; r += CONV_ROWS)
            for (int c = 0; c < channels; c++) {
                Acc acc = 0;
                for (int kx = 0; kx < kw; kx++)
                    acc = conv_mac<Acc>(acc, conv_weight<Acc>(w, kx), tile[(size_t)r * row_vals + (tx + kx) * channels + c]);
                hs[(size_t)r * CONV_TW * channels + tx * channels + c] = acc;
            }
        __syncthreads();
        if (x0 + tx >= width) return;
        for (int ty = threadIdx.y; ty < CONV_TH && y0 + ty < height; ty += CONV_ROWS) {
            Out *d = ipk_wrow<Out>(dst, ds, y0 + ty) + (size_t)(x0 + tx) * channels;
            for (int c = 0; c < channels; c++) {
                Acc acc = 0;
                for (int ky = 0; ky < kh; ky++)
                    acc = conv_mac<Acc>(acc, conv_weight<Acc>(w, kw + ky),
                                        hs[(size_t)(ty + ky) * CONV_TW * channels + tx * channels + c]);
                d[c] = conv_finish<Acc, Out>(acc, w);
            }
        }
        return;
    }
    if (x0 + tx >= width) return;
    for (int ty = threadIdx.y; ty < CONV_TH && y0 + ty < height; ty += CONV_ROWS) {
        Out *d = ipk_wrow<Out>(dst, ds, y0 + ty) + (size_t)(x0 + tx) * channels;
        for (int c = 0; c < channels; c++) {
            Acc acc = 0;
            for (int ky = 0; ky < kh; ky++) {
                const Acc *t = tile + (size_t)(ty + ky) * row_vals + tx * channels + c;
                for (int kx = 0; kx < kw; kx++) acc = conv_mac<Acc>(acc, conv_weight<Acc>(w, ky * kw + kx), t[kx * channels]);
            }
            d[c] = conv_finish<Acc, Out>(acc, w);
        }
    }
}

template <typename T, typename Acc, typename Out, bool SPLIT>
static int conv_launch_one(const ipk_img *src, const ipk_img *dst, int border, const conv_weights &w, cudaStream_t s)
{
    const size_t tile = (size_t)(CONV_TW + w.kw - 1) * (CONV_TH + w.kh - 1) * src->channels;
    const size_t hs = SPLIT ? (size_t)CONV_TW * (CONV_TH + w.kh - 1) * src->channels : 0;
    const size_t smem = (tile + hs) * sizeof(Acc);
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(conv_kernel<T, Acc, Out, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem) != cudaSuccess)
        return IPK_ECUDA;
    dim3 block(CONV_TW, CONV_ROWS), grid(ipk_div_up(src->width, CONV_TW), ipk_div_up(src->height, CONV_TH));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    conv_kernel<T, Acc, Out, SPLIT><<<grid, block, smem, s>>>(src->data, src->stride, dst->data, dst->stride,
                                                              src->width, src->height, src->channels, border, w);
    return ipk_launch_status();
}

template <typename T, typename Acc, typename Out>
static int conv_launch_split(const ipk_img *src, const ipk_img *dst, int border, const conv_weights &w, cudaStream_t s)
{
    return w.split ? conv_launch_one<T, Acc, Out, true>(src, dst, border, w, s)
                   : conv_launch_one<T, Acc, Out, false>(src, dst, border, w, s);
}

template <typename T, typename Acc>
static int conv_launch_out(const ipk_img *src, const ipk_img *dst, int border, const conv_weights &w, cudaStream_t s)
{
    if (dst->dtype == IPK_F32) return conv_launch_split<T, Acc, float>(src, dst, border, w, s);
    return conv_launch_split<T, Acc, T>(src, dst, border, w, s);
}

/* Integer path weights; *wide says whether the exact sum may leave int32; *sum_bound bounds
 * |partial sums| / max pixel. */
static void conv_prepare_int(const ipk_conv_params *p, ipk_dtype dtype, conv_weights *w, int *wide, double *sum_bound)
{
    const int n = p->kw * p->kh;
    int64_t col[CONV_MAXK], row[CONV_MAXK];
    w->split = ipk_conv_split_int(p->weights, p->kw, p->kh, col, row);
    double bound = 0, bound_h = 0, bound_v = 0;
    for (int i = 0; i < n; i++) bound += fabs(p->weights[i]);
    if (w->split) {
        for (int j = 0; j < p->kw; j++) { w->wi[j] = (int32_t)row[j]; bound_h += fabs((double)row[j]); }
        for (int i = 0; i < p->kh; i++) { w->wi[p->kw + i] = (int32_t)col[i]; bound_v += fabs((double)col[i]); }
        bound = bound_h * bound_v > bound ? bound_h * bound_v : bound;
    } else {
        for (int i = 0; i < n; i++) w->wi[i] = (int32_t)p->weights[i];
    }
    *wide = bound * (dtype == IPK_U8 ? 255.0 : 65535.0) >= 2147483647.0;
    *sum_bound = bound;
}

static void conv_prepare_float(const ipk_conv_params *p, conv_weights *w)
{
    const int n = p->kw * p->kh;
    float col[CONV_MAXK], row[CONV_MAXK];
    w->split = ipk_conv_split_float(p->weights, p->kw, p->kh, col, row);
    if (w->split) {
        for (int j = 0; j < p->kw; j++) w->wf[j] = row[j];
        for (int i = 0; i < p->kh; i++) w->wf[p->kw + i] = col[i];
    } else {
        for (int i = 0; i < n; i++) w->wf[i] = (float)p->weights[i];
    }
}

/* Fast path (rb_kernel of gpu_common.cuh): 1-channel u8 input, a square K x K kernel with
 * K <= RB_MAXK. Float path: float taps without contraction, as above. Integer path: when
 * sum|w| * 255 < 2^24 every partial sum is an integer that float holds exactly, so float
 * fused multiply-adds in any order give the exact S. */
struct fin_float {
    float inv, div, off;
    bool pow2;
    __device__ __forceinline__ float value(float acc) const
    {
        return __fadd_rn(pow2 ? __fmul_rn(acc, inv) : __fdiv_rn(acc, div), off);
    }
};
struct fin_float_u8 : fin_float {
    __device__ __forceinline__ uint32_t operator()(float acc) const { return rb_rint_u8(value(acc)); }
};
struct fin_float_f32 : fin_float {
    __device__ __forceinline__ float operator()(float acc) const { return value(acc); }
};

/* Exact sum S in acc. With offset 0 and a power-of-two divisor, S / divisor is exact in float
 * and equals the CPU's double value; otherwise the CPU's double arithmetic. */
struct fin_int {
    double div, off;
    float inv;
    bool pow2;
};
/* The double arithmetic out of line: inlined at every store of the unrolled fast-path kernels, its
 * registers made the power-of-two case spill. */
static __device__ __noinline__ double fin_int_general(float acc, double div, double off)
{
    return __dadd_rn(__ddiv_rn((double)acc, div), off);
}
struct fin_int_u8 : fin_int {
    __device__ __forceinline__ uint32_t operator()(float acc) const
    {
        if (pow2) return rb_rint_u8(__fmul_rn(acc, inv));
        return (uint32_t)conv_saturate(fin_int_general(acc, div, off), 255.0);
    }
};
struct fin_int_f32 : fin_int {
    __device__ __forceinline__ float operator()(float acc) const
    {
        if (pow2) return __fmul_rn(acc, inv);
        return (float)fin_int_general(acc, div, off);
    }
};

/* |d| = 2^k with 1/d a normal float: x / d == x * (1/d) exactly, both being x*2^-k rounded once. */
static int conv_pow2(float d, float *inv)
{
    int e = 0;
    float m = frexpf(fabsf(d), &e);
    if (m != 0.5f || !isfinite(d)) return 0;
    *inv = 1.0f / d;
    return fabsf(*inv) >= 1.17549435e-38f;
}

template <int K, bool SEP, bool CONTRACT, typename FinU8, typename FinF32>
static int conv_fast_out(const ipk_img *src, const ipk_img *dst, int border, const rb_weights &w, const FinU8 &fu8,
                         const FinF32 &ff32, cudaStream_t s)
{
    if (dst->dtype == IPK_F32) return rb_launch<K, SEP, CONTRACT, float>(src, dst, border, w, ff32, s);
    return rb_launch<K, SEP, CONTRACT, uint8_t>(src, dst, border, w, fu8, s);
}

/* EXACT: integer weights, whose sums fused multiply-adds give exactly (fin_int); otherwise the
 * float taps without contraction (fin_float). A template argument, so that neither functor is
 * compiled with the other's arithmetic. */
template <int K, bool EXACT, typename FinU8, typename FinF32>
static int conv_fast_k(const ipk_img *src, const ipk_img *dst, int border, const rb_weights &w, bool split,
                       const FinU8 &fu8, const FinF32 &ff32, cudaStream_t s)
{
    return split ? conv_fast_out<K, true, EXACT>(src, dst, border, w, fu8, ff32, s)
                 : conv_fast_out<K, false, EXACT>(src, dst, border, w, fu8, ff32, s);
}

template <bool EXACT, typename FinU8, typename FinF32>
static int conv_fast_launch(const ipk_img *src, const ipk_img *dst, int border, const conv_weights &cw,
                            const FinU8 &fu8, const FinF32 &ff32, cudaStream_t s)
{
    rb_weights w;
    memset(&w, 0, sizeof w);
    const int k = cw.kw, n = cw.split ? 2 * k : k * k;
    for (int i = 0; i < n; i++) {
        float v = EXACT ? (float)cw.wi[i] : cw.wf[i];
        if (!cw.split) w.w[i] = v;
        else if (i < k) w.row[i] = v;
        else w.col[i - k] = v;
    }
    const bool split = cw.split != 0;
    switch (k) {
    case 3: return conv_fast_k<3, EXACT>(src, dst, border, w, split, fu8, ff32, s);
    case 5: return conv_fast_k<5, EXACT>(src, dst, border, w, split, fu8, ff32, s);
    case 7: return conv_fast_k<7, EXACT>(src, dst, border, w, split, fu8, ff32, s);
    default: return conv_fast_k<9, EXACT>(src, dst, border, w, split, fu8, ff32, s);
    }
}

static bool conv_fast_fits(const ipk_img *src, const ipk_conv_params *p)
{
    return src->dtype == IPK_U8 && src->channels == 1 && p->kw == p->kh && p->kw >= 3 && p->kw <= RB_MAXK;
}

static int conv_fast_int(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, const conv_weights &cw,
                         cudaStream_t s)
{
    fin_int f;
    f.div = p->divisor;
    f.off = p->offset;
    f.inv = 0;
    f.pow2 = p->offset == 0.0 && (double)(float)p->divisor == p->divisor && conv_pow2((float)p->divisor, &f.inv);
    fin_int_u8 fu8;
    fin_int_f32 ff32;
    (fin_int &)fu8 = f;
    (fin_int &)ff32 = f;
    return conv_fast_launch<true>(src, dst, (int)p->border, cw, fu8, ff32, s);
}

static int conv_fast_float(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, const conv_weights &cw,
                           cudaStream_t s)
{
    fin_float f;
    f.div = cw.divisor_f;
    f.off = cw.offset_f;
    f.inv = 0;
    f.pow2 = conv_pow2(cw.divisor_f, &f.inv);
    fin_float_u8 fu8;
    fin_float_f32 ff32;
    (fin_float &)fu8 = f;
    (fin_float &)ff32 = f;
    return conv_fast_launch<false>(src, dst, (int)p->border, cw, fu8, ff32, s);
}

/* The certified kernels' cases: 1-channel u8 in and out, a direct (not separable) float K x K
 * kernel, K 5 or 7, or also 9 with nine; fills their weights and the CPU's finish. */
static bool conv_cert_case(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, bool nine, float *w,
                           rbc_finish *f)
{
    const int k = p->kw, n = k * k;
    if (!conv_fast_fits(src, p) || dst->dtype != IPK_U8 || (k != 5 && k != 7 && !(nine && k == 9)) ||
        ipk_conv_weights_integral(p->weights, n))
        return false;
    float col[CONV_MAXK], row[CONV_MAXK];
    if (ipk_conv_split_float(p->weights, k, k, col, row)) return false;
    for (int i = 0; i < n; i++) w[i] = (float)p->weights[i];
    f->div = (float)p->divisor;
    f->off = (float)p->offset;
    f->inv = 0;
    f->pow2 = conv_pow2(f->div, &f->inv);
    return true;
}

/* The certified tile kernel: conv_cert_case's with K up to 9 whose weights and finish have a
 * certificate (convolve_cert.h). */
static int conv_cert_launch(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, cudaStream_t s,
                            int *taken)
{
    *taken = 0;
    const int k = p->kw;
    rb_weights w;
    memset(&w, 0, sizeof w);
    rbc_finish f;
    if (!conv_cert_case(src, dst, p, true, w.w, &f) || !ipk_conv_cert_threshold(w.w, k * k, f.div, f.off, &f.thr))
        return IPK_EINVAL;
    *taken = 1;
    const int border = (int)p->border;
    if (k == 5) return rbc_launch<5>(src, dst, border, w, f, s);
    if (k == 7) return rbc_launch<7>(src, dst, border, w, f, s);
    return rbc_launch<9>(src, dst, border, w, f, s);
}

/* The tensor-core kernel: conv_cert_case's with K 5 or 7 whose limbs and bound give a certificate
 * (convolve_tc.h); other_limbs: the limb count the plan does not choose (the timing hook's). */
static int conv_tc_launch(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, cudaStream_t s,
                          int *taken, bool other_limbs = false)
{
    *taken = 0;
    const int k = p->kw;
    tc_params tp;
    memset(&tp, 0, sizeof tp);
    ipk_conv_tc_plan plan;
    if (!conv_cert_case(src, dst, p, false, tp.w, &tp.fin) || !ipk_conv_tc_plan_make(tp.w, k, tp.fin.div, tp.fin.off, &plan))
        return IPK_EINVAL;
    if (other_limbs && !ipk_conv_tc_plan_limbs(tp.w, k, tp.fin.div, tp.fin.off, plan.limbs == 2 ? 3 : 2, &plan))
        return IPK_EINVAL;
    tc_rows(plan, tp);
    tp.plan = plan;
    *taken = 1;
    const int border = (int)p->border;
    if (plan.limbs == 2) return k == 5 ? tc_launch<5, 2>(src, dst, border, tp, s) : tc_launch<7, 2>(src, dst, border, tp, s);
    return k == 5 ? tc_launch<5, 3>(src, dst, border, tp, s) : tc_launch<7, 3>(src, dst, border, tp, s);
}

static int conv_args_ok(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p)
{
    if (!ipk_img_ok(src) || !ipk_img_ok(dst) || !ipk_same_shape(src, dst) || !p || !p->weights) return 0;
    if (dst->dtype != src->dtype && dst->dtype != IPK_F32) return 0;
    if (p->kw < 1 || p->kh < 1 || p->kw > CONV_MAXK || p->kh > CONV_MAXK || !(p->kw & 1) || !(p->kh & 1)) return 0;
    if (p->divisor == 0.0 || !isfinite(p->divisor) || !isfinite(p->offset)) return 0;
    return p->border >= IPK_REPLICATE && p->border <= IPK_SHRINK;
}

extern "C" size_t ipk_convolve_gpu_scratch(int width, int height, int channels, ipk_dtype dtype, int kw, int kh)
{
    (void)width; (void)height; (void)channels; (void)dtype; (void)kw; (void)kh;
    return 0;
}

template <int R, int MODE>
static int conv_vec_mode(const ipk_img *src, const ipk_img *dst, int border, const ipk_vec_plan &vp, cudaStream_t s)
{
    switch (vp.p.fin) {
    case IPK_SWAR_FIN_SHIFT: return vec_launch<R, MODE, IPK_SWAR_FIN_SHIFT>(src, dst, border, vp, s);
    case IPK_SWAR_FIN_LANE_SHIFT: return vec_launch<R, MODE, IPK_SWAR_FIN_LANE_SHIFT>(src, dst, border, vp, s);
    case IPK_SWAR_FIN_LANE_ODD: return vec_launch<R, MODE, IPK_SWAR_FIN_LANE_ODD>(src, dst, border, vp, s);
    case IPK_SWAR_FIN_LANE_DOUBLE: return vec_launch<R, MODE, IPK_SWAR_FIN_LANE_DOUBLE>(src, dst, border, vp, s);
    }
    return IPK_EINVAL;
}

template <int R>
static int conv_vec_radius(const ipk_img *src, const ipk_img *dst, int border, const ipk_vec_plan &vp, cudaStream_t s)
{
    if (vp.mode == IPK_VEC_UNIT) return conv_vec_mode<R, IPK_VEC_UNIT>(src, dst, border, vp, s);
    if (vp.mode == IPK_VEC_SEP) return conv_vec_mode<R, IPK_VEC_SEP>(src, dst, border, vp, s);
    return conv_vec_mode<R, IPK_VEC_DIRECT>(src, dst, border, vp, s);
}

/* The vec kernel of convolve_vec_block.cuh: 1-channel u8 in and out, 3x3 or 5x5 integer weights that the
 * 16-bit lanes hold (convolve_vec.h's planner), every border (shrink adds nothing outside, as zero
 * does). *taken says whether it applies. */
static int conv_vec_launch(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, cudaStream_t s,
                           int *taken)
{
    ipk_vec_plan vp;
    *taken = src->dtype == IPK_U8 && dst->dtype == IPK_U8 && src->channels == 1 &&
             ipk_vec_plan_conv(p->weights, p->kw, p->kh, p->divisor, p->offset, &vp);
    if (!*taken) return IPK_EINVAL;
    const int b = (int)p->border;
    return vp.p.k == 5 ? conv_vec_radius<2>(src, dst, b, vp, s) : conv_vec_radius<1>(src, dst, b, vp, s);
}

/* The float vec kernel of convolve_vecf_block.cuh: 1-channel u8 in, u8 or f32 out, 3x3 weights that take
 * the float path (not all whole numbers), every border. *taken says whether it applies. */
static int conv_vecf_launch(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, cudaStream_t s,
                            int *taken)
{
    ipk_vecf_plan vp;
    *taken = src->dtype == IPK_U8 && src->channels == 1 && (dst->dtype == IPK_U8 || dst->dtype == IPK_F32) &&
             p->kw == 3 && p->kh == 3 && ipk_vecf_plan_conv_k(p->weights, 3, p->divisor, p->offset, &vp);
    if (!*taken) return IPK_EINVAL;
    const int b = (int)p->border;
    if (dst->dtype == IPK_F32) return vecf3_launch<float>(src, dst, b, vp, s);
    return vecf3_launch<uint8_t>(src, dst, b, vp, s);
}

/* The separable vec kernel of convolve_vecsep_block.cuh: 1-channel u8 in, u8 or f32 out, separable integer
 * 3x3, 5x5 or 7x7 weights whose row sums fit 16 bits (convolve_vecsep.h's planner), every border.
 * *taken says whether it applies. */
static int conv_vecsep_launch(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, cudaStream_t s,
                              int *taken)
{
    ipk_vecsep_plan vp;
    *taken = src->dtype == IPK_U8 && src->channels == 1 && (dst->dtype == IPK_U8 || dst->dtype == IPK_F32) &&
             ipk_vecsep_plan_conv(p->weights, p->kw, p->kh, p->divisor, p->offset, dst->dtype == IPK_F32, &vp);
    if (!*taken) return IPK_EINVAL;
    return vecsep_launch(src, dst, (int)p->border, vp, s);
}

/* The tiled kernels: the register-blocked fast path, else shared-memory halo tiles. */
static int conv_tile_launch(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, cudaStream_t s)
{
    conv_weights local;
    memset(&local, 0, sizeof(local));
    local.kw = p->kw;
    local.kh = p->kh;
    local.divisor = p->divisor;
    local.offset = p->offset;
    local.divisor_f = (float)p->divisor;
    local.offset_f = (float)p->offset;
    const int border = (int)p->border;
    const int integral = src->dtype != IPK_F32 && ipk_conv_weights_integral(p->weights, p->kw * p->kh);
    if (integral) {
        int wide = 0;
        double bound = 0;
        conv_prepare_int(p, src->dtype, &local, &wide, &bound);
        if (conv_fast_fits(src, p) && bound * 255.0 < 16777216.0) return conv_fast_int(src, dst, p, local, s);
        if (src->dtype == IPK_U8)
            return wide ? conv_launch_out<uint8_t, long long>(src, dst, border, local, s)
                        : conv_launch_out<uint8_t, int>(src, dst, border, local, s);
        return wide ? conv_launch_out<uint16_t, long long>(src, dst, border, local, s)
                    : conv_launch_out<uint16_t, int>(src, dst, border, local, s);
    }
    conv_prepare_float(p, &local);
    if (conv_fast_fits(src, p)) return conv_fast_float(src, dst, p, local, s);
    if (src->dtype == IPK_U8) return conv_launch_out<uint8_t, float>(src, dst, border, local, s);
    if (src->dtype == IPK_U16) return conv_launch_out<uint16_t, float>(src, dst, border, local, s);
    return conv_launch_split<float, float, float>(src, dst, border, local, s);
}

extern "C" int ipk_convolve_gpu_path(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, void *scratch,
                                     size_t scratch_bytes, void *stream, ipk_gpu_path path)
{
    (void)scratch; (void)scratch_bytes;
    if (!conv_args_ok(src, dst, p) || (path != IPK_GPU_AUTO && path != IPK_GPU_TILE && path != IPK_GPU_VEC))
        return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    cudaStream_t s = (cudaStream_t)stream;
    if (path == IPK_GPU_VEC || (path == IPK_GPU_AUTO && CONV_VECF_AUTO)) {
        int taken = 0;
        const int rc = conv_vecf_launch(src, dst, p, s, &taken);
        if (taken && !(path == IPK_GPU_AUTO && rc == IPK_ERANGE)) return rc;   /* too tall: the tiles */
    }
    if (path == IPK_GPU_VEC || (path == IPK_GPU_AUTO && (p->kw == 5 ? CONV_VEC5_AUTO : CONV_VEC_AUTO))) {
        int taken = 0;
        const int rc = conv_vec_launch(src, dst, p, s, &taken);
        if (taken && (path == IPK_GPU_VEC || rc != IPK_ERANGE)) return rc;
    }
    if (path == IPK_GPU_VEC || (path == IPK_GPU_AUTO && conv_vecsep_auto(dst, p))) {
        int taken = 0;
        const int rc = conv_vecsep_launch(src, dst, p, s, &taken);
        if (taken && (path == IPK_GPU_VEC || rc != IPK_ERANGE)) return rc;
    }
    if (path == IPK_GPU_VEC) return IPK_EINVAL;   /* no vec kernel takes it */
    if (path == IPK_GPU_AUTO && CONV_TC_AUTO) {
        int taken = 0;
        const int rc = conv_tc_launch(src, dst, p, s, &taken);
        if (taken) return rc;
    }
    if (path == IPK_GPU_AUTO && CONV_CERT_AUTO) {
        int taken = 0;
        const int rc = conv_cert_launch(src, dst, p, s, &taken);
        if (taken) return rc;
    }
    return conv_tile_launch(src, dst, p, s);
}

/* Timing hook (bench_gpu's "(vec path, N rows)" rows): the vec path with other rows a thread, so that
 * one run times them beside the defaults. shape 1: gaussian7-like kernels (vecsep, radius 3, SHIFT
 * finish, u8 out) 4 rows instead of 6; float direct 3x3 with finish ONE and u8 out: 10 rows instead
 * of 8 (vecf3). Shapes 2 and 3: the float 3x3 of shape 1
 * with a narrow plan through the narrow finish, 8 and 10 rows; 4 and 5: that of shape 2 with the
 * I2F and the HALF conversions, 6: HALF with 10 rows (5 and 6: a scaled plan); 7: the certified
 * tile kernel (convolve_cert.cuh) for what it takes, which AUTO gives the tensor-core kernel at 5x5 and
 * 7x7; 8: the tensor-core kernel with the limb count its plan does not choose (convolve_tc.h). Other
 * cases and shapes: IPK_EINVAL. The winner goes into vecsep_rows, vecf_rows, VECF_NARROW_AUTO and
 * VECF_CVT_AUTO. */
extern "C" int ipk_convolve_gpu_vec_shape(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p,
                                          void *stream, int shape)
{
    if (!conv_args_ok(src, dst, p) || shape < 1 || shape > 8 || src->dtype != IPK_U8 || dst->dtype != IPK_U8 ||
        src->channels != 1)
        return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    cudaStream_t s = (cudaStream_t)stream;
    if (shape == 7 || shape == 8) {
        int taken = 0;
        const int rc = shape == 7 ? conv_cert_launch(src, dst, p, s, &taken)
                                  : conv_tc_launch(src, dst, p, s, &taken, true);
        return taken ? rc : IPK_EINVAL;
    }
    const int b = (int)p->border;
    ipk_vecsep_plan sp;
    if (shape == 1 && ipk_vecsep_plan_conv(p->weights, p->kw, p->kh, p->divisor, p->offset, 0, &sp) && sp.r == 3 &&
        sp.fin == IPK_VECSEP_FIN_SHIFT)
        return vecsep_launch_rows<3, IPK_VECSEP_FIN_SHIFT, uint8_t, 4>(src, dst, b, sp, s);
    ipk_vecf_plan fp;
    if (p->kw != 3 || p->kh != 3 || !ipk_vecf_plan_conv_k(p->weights, 3, p->divisor, p->offset, &fp) ||
        fp.mode != IPK_VECF_DIRECT || fp.fin != IPK_VECF_FIN_ONE)
        return IPK_EINVAL;
    const int d = IPK_VECF_DIRECT, one = IPK_VECF_FIN_ONE;
    if (shape == 2) return vecf3_launch_rows<d, one, uint8_t, 8, true>(src, dst, b, fp, s);
    if (shape == 3) return vecf3_launch_rows<d, one, uint8_t, 10, true>(src, dst, b, fp, s);
    if (shape == 4) return vecf3_launch_rows<d, one, uint8_t, 8, true, IPK_VECF_CVT_I2F>(src, dst, b, fp, s);
    if (shape == 5) return vecf3_launch_rows<d, one, uint8_t, 8, true, IPK_VECF_CVT_HALF>(src, dst, b, fp, s);
    if (shape == 6) return vecf3_launch_rows<d, one, uint8_t, 10, true, IPK_VECF_CVT_HALF>(src, dst, b, fp, s);
    return vecf3_launch_rows<d, one, uint8_t, 10>(src, dst, b, fp, s);
}

extern "C" int ipk_convolve_gpu(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p,
                                void *scratch, size_t scratch_bytes, void *stream)
{
    return ipk_convolve_gpu_path(src, dst, p, scratch, scratch_bytes, stream, IPK_GPU_AUTO);
}
