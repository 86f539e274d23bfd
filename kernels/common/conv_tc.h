/* Certified float convolve on the tensor cores (kernels/gpu/conv_tc.cuh): the CPU float path's u8
 * result of a direct 5x5 or 7x7 float kernel, bit for bit, from exact integer sums; in C that the
 * host compiles too, so that tests/unit/test_conv_tc.c checks it against the CPU without a GPU.
 *
 * Each float weight, scaled by 2^s so that the largest is at most 126, is rounded to a multiple
 * of 2^-16: n = rint(w 2^(s+16)), written in three balanced base-256 digits n = q0 2^16 + q1 2^8 +
 * q2 (each in -128..127). The tensor cores sum x q_i over the window exactly in int32 (u8 times
 * s8), so S = 2^-(s+16) (S0 2^16 + S1 2^8 + S2) is the exact sum of the rounded weights, within
 * 255 sum|w - n 2^-(s+16)| <= 255 taps 2^-(s+17) of the exact sum of the weights. The kernel
 * forms the value S / divisor + offset from them with three fused multiply-adds
 * (ipk_conv_tc_value) and goes on as the certified FMA kernel does (conv_cert.h): the CPU's value
 * lies within the plan's bound of this one, so a value farther than that from every half-integer
 * gives the CPU's byte; the other pixels are recomputed in the CPU's order. */
#ifndef IPK_CONV_TC_H
#define IPK_CONV_TC_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "conv_cert.h"

#define IPK_CONV_TC_MAXK 7
#define IPK_CONV_TC_LIMBS 3

typedef struct {
    int k;                                                   /* 5 or 7 */
    int8_t q[IPK_CONV_TC_LIMBS][IPK_CONV_TC_MAXK * IPK_CONV_TC_MAXK];   /* limb, then ky, kx */
    float scale;                                             /* 2^-s */
    float k0, off;                                           /* 2^-s / divisor rounded, offset */
    float thr;                                               /* certain when |v - rint v| < thr */
    double bound;                                            /* |v_cpu - v_tc| <= bound */
} ipk_conv_tc_plan;

/* An upper bound of |v_cpu - v_tc|, both against the exact value V = X / d + off (X the exact
 * sum, |X| <= a): the CPU's sum within e of X, then its quotient and sum rounded; the tensor
 * cores' S within q of X, and ipk_conv_tc_value's S0 k0 + off, then + (S1 2^8 + S2) k0 2^-16 with
 * k0 = 2^-s / d rounded: k0's rounding, the conversion of S1 2^8 + S2 and the two roundings, each
 * at most u of a value below reach (the S1 and S2 terms are below 255 taps 2^-(s+1) <= a / 2 before
 * the division).
 * -1 when the values may pass IPK_CONV_CERT_MAX_VALUE. Widened by 1% for the double arithmetic. */
static inline double ipk_conv_tc_bound(double e, double q, double a, float divisor, float offset)
{
    const double u = 0x1p-24, eta = 0x1p-126;
    const double d = fabs((double)divisor), off = fabs((double)offset), big = 1.02 * (a + q) + e;
    if (!(e >= 0) || !(q >= 0) || !(d > 0) || !isfinite(d) || !isfinite(off)) return -1.0;
    const double reach = big * (1 + 4 * u) / d + off;
    if (!(reach * (1 + 4 * u) + 1.0 < IPK_CONV_CERT_MAX_VALUE)) return -1.0;
    const double cpu = e / d + u * big / d + u * reach + 2 * eta;
    const double tc = q / d + 2 * u * big / d + 2 * u * reach + 3 * eta;
    return (cpu + tc) * 1.01;
}

/* The limbs and the bound of float weights w (k x k, k 5 or 7) for the finish divisor and
 * offset; 1 when the plan has a threshold (conv_cert.h), 0 otherwise. */
static inline int ipk_conv_tc_plan_make(const float *w, int k, float divisor, float offset, ipk_conv_tc_plan *p)
{
    const int taps = k * k;
    p->k = k;
    p->bound = -1.0;
    if (k != 5 && k != 7) return 0;
    double g_fma = 0.0, a = 0.0;
    const double e = ipk_conv_cert_sum_errors(w, taps, &g_fma, &a);
    double top = 0.0;
    for (int t = 0; t < taps; t++) top = fabs((double)w[t]) > top ? fabs((double)w[t]) : top;
    if (e < 0 || !(top > 0x1p-60) || !(top < 0x1p60)) return 0;   /* 2^-s a normal float */
    int s = 0;
    while (top * ldexp(1.0, s) > 126.0) s--;
    while (top * ldexp(1.0, s + 1) <= 126.0) s++;
    double quant = 0.0;
    for (int t = 0; t < taps; t++) {
        const double n = rint(ldexp((double)w[t], s + 16));
        quant += fabs((double)w[t] - ldexp(n, -(s + 16)));
        int64_t rest = (int64_t)n;
        for (int l = IPK_CONV_TC_LIMBS - 1; l > 0; l--) {
            const int64_t digit = ((rest + 128) & 255) - 128;
            p->q[l][t] = (int8_t)digit;
            rest = (rest - digit) / 256;
        }
        p->q[0][t] = (int8_t)rest;
    }
    p->scale = (float)ldexp(1.0, -s);
    p->k0 = (float)(ldexp(1.0, -s) / (double)divisor);
    p->off = offset;
    if (!(fabsf(p->k0) > 0x1p-100f) || !(fabsf(p->k0) < 0x1p100f)) return 0;   /* k0 2^-16 normal */
    p->bound = ipk_conv_tc_bound(e, 255.0 * quant, a, divisor, offset);
    return ipk_conv_cert_threshold_of(p->bound, &p->thr);
}

/* An int32 below 2^22 in magnitude as a float, exactly, without the conversion unit: its bits
 * added to those of 1.5 x 2^23, less 1.5 x 2^23. */
IPK_HD float ipk_conv_tc_float(int32_t v)
{
    const uint32_t bits = (uint32_t)v + 0x4B400000u;
#ifdef __CUDA_ARCH__
    return __fadd_rn(__uint_as_float(bits), -12582912.0f);
#else
    float f;
    memcpy(&f, &bits, sizeof f);
    return f - 12582912.0f;
#endif
}

/* The value S / divisor + offset from the limb sums, as the kernel forms it: S0 (below 2^22 in
 * magnitude: 49 x 255 x 127) exactly, S1 2^8 + S2 (below 2^29) rounded once to float. */
IPK_HD float ipk_conv_tc_value(int32_t s0, int32_t s1, int32_t s2, float k0, float off)
{
    const int32_t low = s1 * 256 + s2;
#ifdef __CUDA_ARCH__
    const float low_f = __int2float_rn(low);
#else
    const float low_f = (float)low;
#endif
    return fmaf(low_f, k0 * 0x1p-16f, fmaf(ipk_conv_tc_float(s0), k0, off));
}
#endif
