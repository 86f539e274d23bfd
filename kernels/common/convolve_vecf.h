/* Float-weight 3x3 convolve of 1-channel u8 rows for the GPU vecf kernel
 * (kernels/gpu/convolve_vecf_block.cuh), in C that the host compiles too, so that
 * tests/unit/test_conv_vecf.c runs it, lane by lane of a modelled warp, against the CPU convolve
 * without a GPU.
 *
 * The operations are the CPU float path's (kernels/cpu/convolve.c), each rounded once, no fused
 * multiply-add: a separable kernel (ipk_conv_split_float) as the row pass h = r0*v(x-1) + r1*v(x) +
 * r2*v(x+1), then the column pass over h, ky ascending; any other as the nine taps, kx ascending
 * inside ky ascending; then acc / divisor + offset in float, rintf and saturation for u8.
 * Radius 2 and 3 (ipk_vecfr_*) are the same operations over 5 or 7 taps a row and rows: the
 * deleted 5x5 and 7x7 kernel's, which only tests/unit/test_conv_vecf.c runs now.
 * One departure: each sum starts with its first product, where the CPU starts from 0.0f + it.
 * 0.0f + p is p except for p = -0 (it gives +0), so the sums can differ only in the sign of a zero
 * (the CPU's is never -0: a round-to-nearest sum is -0 only when both terms are). A u8 output cannot
 * see it; the f32 finish adds +0.0f first, which turns -0 into +0 as the CPU has it.
 *
 * A thread owns 8 pixels x .. x+7 of a row, loaded as two words (lo, hi); the value of column x-1
 * is the left neighbour's last (or the edge byte's on a warp's first lane), that of column x+8 the
 * right neighbour's first (or the edge byte's on its last lane). */
#ifndef IPK_CONV_VECF_H
#define IPK_CONV_VECF_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "convolve_separable.h"
#include "swar_ops.h"
#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

#define IPK_VECF_PX 8

/* SEP: a kernel ipk_conv_split_float splits; DIRECT: the nine taps. */
enum { IPK_VECF_SEP = 0, IPK_VECF_DIRECT };
/* How acc becomes the value v: ONE, divisor 1 and offset +-0: v = acc; MUL, |divisor| = 2^k with
 * a normal reciprocal: v = acc * (1/divisor) + offset, which equals acc / divisor + offset (both
 * the exact quotient rounded once); DIV: v = acc / divisor + offset. */
enum { IPK_VECF_FIN_ONE = 0, IPK_VECF_FIN_MUL, IPK_VECF_FIN_DIV };

#define IPK_VECF_MAXR 3
typedef struct {
    float w[49];        /* DIRECT: the k x k taps, row-major; SEP: row factors w[0..k-1], column factors w[k..2k-1] */
    float inv, div, off;
    int mode, fin;
    int r;              /* radius: 1 (k = 3, the 3x3 kernel), 2 or 3 (the radius kernel below) */
    int narrow;         /* every u8 input gives |v| <= IPK_VECF_NARROW_MAX (ipk_vecf_narrow_pack4 applies) */
    int scaled;         /* r = 1 and ws holds the weights below (IPK_VECF_CVT_HALF applies) */
    float ws[9];        /* r = 1: w with the factors that multiply input values times 2^24 (DIRECT: all nine,
                           SEP: the row factors w[0..2]), for values that come as b x 2^-24 */
} ipk_vecf_plan;

/* How the 3x3 kernel makes floats of the bytes: MAGIC, each as 2^23 + b built in the bits less 2^23
 * (PRMT and FADD); I2F, bytes 0 and 3 of a word by one I2F.U8 each (the conversion pipe), the
 * others as MAGIC; HALF, two bytes into the low bytes of a word's halves by one PRMT, each half
 * (the f16 subnormal b x 2^-24) to float by one HADD2.F32, which the plan's ws undo exactly. */
enum { IPK_VECF_CVT_MAGIC = 0, IPK_VECF_CVT_I2F, IPK_VECF_CVT_HALF };

/* rint(v) of a narrow plan's values fits a signed 16-bit lane (2^15 less room for the rounding). */
#define IPK_VECF_NARROW_MAX 32000.0

IPK_HD float ipk_vecf_mul(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

IPK_HD float ipk_vecf_add(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

IPK_HD float ipk_vecf_div(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

/* Byte k of word as a float, exact: 2^23 + byte built in the bits, less 2^23 (two instructions). */
IPK_HD float ipk_vecf_byte(uint32_t word, int k)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(ipk_swar_perm(word, 0x4B000000u, 0x7540u | (unsigned)k)) - 8388608.0f;
#else
    return (float)((word >> (8 * k)) & 0xffu);
#endif
}

/* ipk_vecf_byte of byte 0 or 3 (k), on the GPU one I2F.U8 with a byte select (IPK_VECF_CVT_I2F). */
IPK_HD float ipk_vecf_byte_i2f(uint32_t word, int k)
{
#ifdef __CUDA_ARCH__
    return __uint2float_rn(k == 0 ? word & 0xffu : word >> 24);
#else
    return ipk_vecf_byte(word, k);
#endif
}

/* The low byte b of half h (0: bits 0..15, 1: 16..31) of a word whose halves are below 256, as
 * the f16 subnormal it is, b x 2^-24: exact in float, one HADD2.F32 (IPK_VECF_CVT_HALF). */
IPK_HD float ipk_vecf_half(uint32_t halves, int h)
{
#ifdef __CUDA_ARCH__
    const __half2 x = *(const __half2 *)&halves;
    return h ? __high2float(x) : __low2float(x);
#else
    return (float)((halves >> (16 * h)) & 0xffu) * 0x1p-24f;
#endif
}

/* One byte conversion of kind cvt (see IPK_VECF_CVT_*) of byte k of word. */
IPK_HD float ipk_vecf_byte_cvt(uint32_t word, int k, int cvt)
{
    if (cvt == IPK_VECF_CVT_HALF) return ipk_vecf_half(ipk_swar_perm(word, 0u, 0x4040u | (unsigned)k), 0);
    if (cvt == IPK_VECF_CVT_I2F && (k == 0 || k == 3)) return ipk_vecf_byte_i2f(word, k);
    return ipk_vecf_byte(word, k);
}

/* The thread's own 8 values of a row into v[1] .. v[8] of the 10 its outputs read (v[0] is column
 * x-1, v[9] column x+8: the neighbours' v[8] and v[1], or the edge byte's value, set by the caller);
 * i2f: bytes 0 and 3 of each word by ipk_vecf_byte_i2f. */
IPK_HD void ipk_vecf_values(uint32_t lo, uint32_t hi, int cvt, float *v)
{
    if (cvt == IPK_VECF_CVT_HALF) {   /* bytes 0 and 2, then 1 and 3, of each word share a PRMT */
        const uint32_t w[2] = { lo, hi };
        IPK_UNROLL
        for (int i = 0; i < 2; i++) {
            const uint32_t even = ipk_swar_perm(w[i], 0u, 0x4240u), odd = ipk_swar_perm(w[i], 0u, 0x4341u);
            v[1 + 4 * i] = ipk_vecf_half(even, 0);
            v[2 + 4 * i] = ipk_vecf_half(odd, 0);
            v[3 + 4 * i] = ipk_vecf_half(even, 1);
            v[4 + 4 * i] = ipk_vecf_half(odd, 1);
        }
        return;
    }
    IPK_UNROLL
    for (int k = 0; k < 4; k++) {
        v[1 + k] = ipk_vecf_byte_cvt(lo, k, cvt);
        v[5 + k] = ipk_vecf_byte_cvt(hi, k, cvt);
    }
}

/* acc[j] (+)= c0*v[j] + c1*v[j+1] + c2*v[j+2], one term at a time; first: acc starts with c0*v[j]. */
IPK_HD void ipk_vecf_taps(float *acc, const float *v, float c0, float c1, float c2, int first)
{
    IPK_UNROLL
    for (int j = 0; j < IPK_VECF_PX; j++) {
        const float t = ipk_vecf_mul(c0, v[j]);
        float a = first ? t : ipk_vecf_add(acc[j], t);
        a = ipk_vecf_add(a, ipk_vecf_mul(c1, v[j + 1]));
        acc[j] = ipk_vecf_add(a, ipk_vecf_mul(c2, v[j + 2]));
    }
}

/* acc[j] (+)= c * h[j]; first: acc starts with it. */
IPK_HD void ipk_vecf_col(float *acc, const float *h, float c, int first)
{
    IPK_UNROLL
    for (int j = 0; j < IPK_VECF_PX; j++) {
        const float t = ipk_vecf_mul(c, h[j]);
        acc[j] = first ? t : ipk_vecf_add(acc[j], t);
    }
}

/* Input row rr of a thread's ROWS outputs (row y0 - 1 + rr) into the open sums: older is output
 * rr - 2 (this row is its last: complete after the call), newer output rr - 1, fresh output rr
 * (started here). Each exists only for 0 <= output < rows. scaled: the values are b x 2^-24 (HALF)
 * and the products take p->ws, so that each is the same float as p->w's with b. */
IPK_HD void ipk_vecf_step(const ipk_vecf_plan *p, int mode, int scaled, const float *v, int rr, int rows,
                          float *older, float *newer, float *fresh)
{
    const float *w = scaled ? p->ws : p->w;
    if (mode == IPK_VECF_SEP) {
        float h[IPK_VECF_PX];
        ipk_vecf_taps(h, v, w[0], w[1], w[2], 1);
        if (rr >= 2) ipk_vecf_col(older, h, w[5], 0);
        if (rr >= 1 && rr - 1 < rows) ipk_vecf_col(newer, h, w[4], 0);
        if (rr < rows) ipk_vecf_col(fresh, h, w[3], 1);
        return;
    }
    if (rr >= 2) ipk_vecf_taps(older, v, w[6], w[7], w[8], 0);
    if (rr >= 1 && rr - 1 < rows) ipk_vecf_taps(newer, v, w[3], w[4], w[5], 0);
    if (rr < rows) ipk_vecf_taps(fresh, v, w[0], w[1], w[2], 1);
}

/* The output value of a sum (see the finish kinds above); f32: for an f32 output (-0 to +0 first). */
IPK_HD float ipk_vecf_value(const ipk_vecf_plan *p, int fin, int f32, float acc)
{
    const float a = f32 ? ipk_vecf_add(acc, 0.0f) : acc;
    if (fin == IPK_VECF_FIN_ONE) return a;
    if (fin == IPK_VECF_FIN_MUL) return ipk_vecf_add(ipk_vecf_mul(a, p->inv), p->off);
    return ipk_vecf_add(ipk_vecf_div(a, p->div), p->off);
}

IPK_HD uint32_t ipk_vecf_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

/* rintf(v) saturated to 0..255, NaN to 0, in the low byte (the rest is not zero): v + 1.5 * 2^23
 * rounds v half to even into the low mantissa bits for |v| < 2^22; larger |v| lands beyond the
 * clamp on the right side; fmaxf takes the other operand for a NaN. As rb_rint_u8. */
IPK_HD uint32_t ipk_vecf_rint_u8(float v)
{
    const float c = 12582912.0f;
    return ipk_vecf_bits(fminf(fmaxf(ipk_vecf_add(v, c), c), c + 255.0f));
}

/* Each signed 16-bit lane of h clamped to 0..255 (one VIMNMX.S16x2.RELU on sm_90). */
IPK_HD uint32_t ipk_vecf_clamp_u8x2(uint32_t h)
{
#ifdef __CUDA_ARCH__
    return __vimin_s16x2_relu(h, 0x00ff00ffu);
#else
    uint32_t r = 0;
    for (int i = 0; i < 2; i++) {
        int lane = (int)((h >> (16 * i)) & 0xffffu);
        if (lane >= 0x8000) lane -= 0x10000;
        r |= (uint32_t)(lane < 0 ? 0 : lane > 255 ? 255 : lane) << (16 * i);
    }
    return r;
#endif
}

/* ipk_vecf_pack4 of ipk_vecf_rint_u8 of four values of a narrow plan (|v| <= IPK_VECF_NARROW_MAX, so
 * never NaN), in 9 instructions instead of 15: v + 1.5 * 2^23 leaves rint(v) in its low 16 bits as
 * a two's complement number, two such halves share a word and are clamped at once, then the low
 * byte of each half is packed. */
IPK_HD uint32_t ipk_vecf_narrow_pack4(const float *v)
{
    uint32_t t[4];
    for (int j = 0; j < 4; j++) t[j] = ipk_vecf_bits(ipk_vecf_add(v[j], 12582912.0f));
    const uint32_t lo = ipk_vecf_clamp_u8x2(ipk_swar_perm(t[0], t[1], 0x5410u));
    const uint32_t hi = ipk_vecf_clamp_u8x2(ipk_swar_perm(t[2], t[3], 0x5410u));
    return ipk_swar_perm(lo, hi, 0x6420u);
}

/* The low bytes of four words into one word, first in the low byte. */
IPK_HD uint32_t ipk_vecf_pack4(const uint32_t *q)
{
    return ipk_swar_perm(ipk_swar_perm(q[0], q[1], 0x0040u), ipk_swar_perm(q[2], q[3], 0x0040u), 0x5410u);
}

/* |d| = 2^k with a normal reciprocal: then x / d == x * (1 / d) exactly (as convolve.cu's conv_pow2). */
static inline int ipk_vecf_pow2(float d, float *inv)
{
    int e = 0;
    if (!isfinite(d) || frexpf(fabsf(d), &e) != 0.5f) return 0;
    *inv = 1.0f / d;
    return fabsf(*inv) >= 1.17549435e-38f;
}

/* An upper bound of |v| over every u8 input: sum |w| x 255 through the finish, each step widened
 * by 1.001, far more than its roundings (at most 2 x 49 + 3 of 2^-24 each) can add; inf or NaN
 * when a weight is. */
static inline double ipk_vecf_value_bound(const ipk_vecf_plan *p)
{
    const int k = 2 * p->r + 1;
    const double slack = 1.001;
    double a = 0.0, b = 0.0;
    if (p->mode == IPK_VECF_SEP) {
        for (int i = 0; i < k; i++) {
            a += fabs(p->w[i]);
            b += fabs(p->w[k + i]);
        }
        a = 255.0 * a * slack * b * slack;
    } else {
        for (int i = 0; i < k * k; i++) a += fabs(p->w[i]);
        a = 255.0 * a * slack;
    }
    if (p->fin == IPK_VECF_FIN_MUL) a = a * fabs(p->inv) * slack;
    if (p->fin == IPK_VECF_FIN_DIV) a = a / fabs(p->div) * slack;
    return (a + fabs(p->off)) * slack;
}

/* ws of a 3x3 plan: c x 2^24 is exact unless it overflows, and then (c x 2^24) x (b x 2^-24) is the
 * product c x b itself, rounded once as c * b is. 1 when no factor overflows (|c| < 2^103). */
static inline int ipk_vecf_scale(ipk_vecf_plan *p)
{
    for (int i = 0; i < 9; i++) {
        const int by_value = p->mode == IPK_VECF_DIRECT || i < 3;
        if (by_value && !(fabsf(p->w[i]) < 0x1p103f)) return 0;
        p->ws[i] = by_value ? p->w[i] * 0x1p24f : p->w[i];
    }
    return 1;
}

/* The CPU's float path for a k x k on u8 input, k = 3, 5 or 7 (its weights not all whole numbers,
 * else the integer path applies): 1 with the plan, 0 when the kernel does not apply. */
static inline int ipk_vecf_plan_conv_k(const double *w, int k, double divisor, double offset, ipk_vecf_plan *p)
{
    memset(p, 0, sizeof *p);
    if ((k != 3 && k != 5 && k != 7) || ipk_conv_weights_integral(w, k * k)) return 0;
    float col[2 * IPK_VECF_MAXR + 1], row[2 * IPK_VECF_MAXR + 1];
    p->r = k / 2;
    p->mode = ipk_conv_split_float(w, k, k, col, row) ? IPK_VECF_SEP : IPK_VECF_DIRECT;
    for (int i = 0; i < k * k; i++) p->w[i] = p->mode == IPK_VECF_SEP ? (i < k ? row[i] : i < 2 * k ? col[i - k] : 0.0f)
                                                    : (float)w[i];
    p->div = (float)divisor;
    p->off = (float)offset;
    if (p->div == 1.0f && p->off == 0.0f) p->fin = IPK_VECF_FIN_ONE;
    else p->fin = ipk_vecf_pow2(p->div, &p->inv) ? IPK_VECF_FIN_MUL : IPK_VECF_FIN_DIV;
    p->narrow = ipk_vecf_value_bound(p) <= IPK_VECF_NARROW_MAX;
    p->scaled = p->r == 1 && ipk_vecf_scale(p);
    return 1;
}

/* The 3x3 kernel's plan (kw = kh = 3 only). */
static inline int ipk_vecf_plan_conv(const double *w, int kw, int kh, double divisor, double offset, ipk_vecf_plan *p)
{
    memset(p, 0, sizeof *p);
    return kw == 3 && kh == 3 && ipk_vecf_plan_conv_k(w, 3, divisor, offset, p);
}

/* Radius 2 and 3 (5x5, 7x7): a thread owns IPK_VECFR_PX pixels x .. x+3 of a row, one loaded word;
 * `left` holds bytes x-4 .. x-1 (the left neighbour's word, or the warp's first lane's own load
 * through the border), `right` bytes x+4 .. x+7. Fewer columns than the 3x3 kernel's 8, so that the
 * 2r + 1 open sums of each column fit the registers. */
#define IPK_VECFR_PX 4

/* The 4 + 2r values of a row the thread's outputs read: column x - r first. */
IPK_HD void ipk_vecfr_values(uint32_t left, uint32_t mid, uint32_t right, int r, float *v)
{
    IPK_UNROLL
    for (int i = 0; i < IPK_VECFR_PX + 2 * IPK_VECF_MAXR; i++) {
        if (i >= IPK_VECFR_PX + 2 * r) break;
        const int c = i - r;
        v[i] = c < 0 ? ipk_vecf_byte(left, c + 4) : c < 4 ? ipk_vecf_byte(mid, c) : ipk_vecf_byte(right, c - 4);
    }
}

/* acc[j] (+)= c[0]*v[j] + c[1]*v[j+1] + .. + c[2r]*v[j+2r], one term at a time, kx ascending;
 * first: acc starts with c[0]*v[j] (the first-term rule above). */
IPK_HD void ipk_vecfr_taps(float *acc, const float *v, const float *c, int r, int first)
{
    IPK_UNROLL
    for (int j = 0; j < IPK_VECFR_PX; j++) {
        float a = ipk_vecf_mul(c[0], v[j]);
        if (!first) a = ipk_vecf_add(acc[j], a);
        IPK_UNROLL
        for (int kx = 1; kx <= 2 * r; kx++) a = ipk_vecf_add(a, ipk_vecf_mul(c[kx], v[j + kx]));
        acc[j] = a;
    }
}

/* Input row rr of a thread's ROWS outputs (row y0 - r + rr) into the open sums: open + ky * PX is
 * output rr - ky (ky = 0 .. 2r; each exists only for 0 <= output < rows); output rr - 2r is complete
 * after the call, output rr starts here. The caller then moves every open sum down one place. */
IPK_HD void ipk_vecfr_step(const ipk_vecf_plan *p, int mode, int r, const float *v, int rr, int rows, float *open)
{
    const int k = 2 * r + 1;
    if (mode == IPK_VECF_SEP) {
        float h[IPK_VECFR_PX];
        ipk_vecfr_taps(h, v, p->w, r, 1);
        IPK_UNROLL
        for (int ky = 0; ky <= 2 * IPK_VECF_MAXR; ky++)
            if (ky < k && rr - ky >= 0 && rr - ky < rows) {
                IPK_UNROLL
                for (int j = 0; j < IPK_VECFR_PX; j++) {
                    const float t = ipk_vecf_mul(p->w[k + ky], h[j]);
                    open[ky * IPK_VECFR_PX + j] = ky == 0 ? t : ipk_vecf_add(open[ky * IPK_VECFR_PX + j], t);
                }
            }
        return;
    }
    IPK_UNROLL
    for (int ky = 0; ky <= 2 * IPK_VECF_MAXR; ky++)
        if (ky < k && rr - ky >= 0 && rr - ky < rows) ipk_vecfr_taps(open + ky * IPK_VECFR_PX, v, p->w + ky * k, r, ky == 0);
}
#endif
