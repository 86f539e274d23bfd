/* Certified float sums for the GPU tile kernel (kernels/gpu/convolve_cert.cuh): the CPU float path's u8
 * result of a direct (not separable) K x K float kernel, bit for bit, from sums computed with fused
 * multiply-adds; in C that the host compiles too, so that tests/unit/test_conv_cert.c checks it
 * against the CPU's order without a GPU.
 *
 * The CPU (kernels/cpu/convolve.c) rounds every product and every sum: 2 K^2 FP32 instructions a
 * pixel, which for 5x5 and 7x7 is the H100's whole FP32 rate at the targets. A fused multiply-add
 * in the same order rounds once a tap: half the instructions, a slightly different sum. Both sums
 * lie within a bound of the exact one that the weights alone give, and both pass through the same
 * finish v = fl(fl(acc / divisor) + offset), so the two values v differ by at most a bound B
 * (ipk_conv_cert_bound). When the fused v is farther than B from every half-integer, the CPU's v
 * rounds to the same integer, and saturates to the same byte (rint and the clamp are monotone).
 * The other pixels, about 2B of them, are flagged and recomputed in the CPU's order. */
#ifndef IPK_CONV_CERT_H
#define IPK_CONV_CERT_H
#include <math.h>
#include <stdint.h>
#include "convolve_vecf.h"

/* Plans whose bound is larger are left to the exact kernels: past it, more than about one pixel
 * in ten would be computed twice. */
#define IPK_CONV_CERT_MAX_BOUND 0.05

/* Values v at most this large, so that v + 1.5 * 2^23 holds rint(v) exactly and v - rint(v) is
 * exact. */
#define IPK_CONV_CERT_MAX_VALUE 2097152.0

/* Error bounds of float sums over inputs 0..255, both against the exact sum, the sums running
 * over t = 0 .. taps-1. With u = 2^-24, a rounding of z adds at most u|z| + eta (eta for the
 * subnormal range). *reach gets A = 255 max(sum of positive w_t, sum of |negative w_t|), which
 * bounds every exact partial sum A_t. The CPU's order (product, then sum, each rounded):
 *   e_t = e_{t-1} + u 255 |w_t| + u (A_t + e_{t-1} + u 255 |w_t|) + 2 eta
 * A fused multiply-add a tap (one rounding):
 *   g_t = g_{t-1} + u (A_t + g_{t-1}) + eta
 * Returns e, *fused g; -1 when a weight is not finite. */
static inline double ipk_conv_cert_sum_errors(const float *w, int taps, double *fused, double *reach)
{
    const double u = 0x1p-24, eta = 0x1p-126;
    double pos = 0.0, neg = 0.0, a = 0.0, e = 0.0, g = 0.0;
    for (int t = 0; t < taps; t++) {
        const double wt = (double)w[t], prod = 255.0 * fabs(wt);
        if (!isfinite(wt)) return -1.0;
        if (wt > 0) pos += 255.0 * wt;
        else neg -= 255.0 * wt;
        a = pos > neg ? pos : neg;
        e = e + u * prod + u * (a + e + u * prod) + 2 * eta;
        g = g + u * (a + g) + eta;
    }
    *fused = g;
    *reach = a;
    return e;
}

/* An upper bound of |v_cpu - v_other| when the two sums lie within e and g of the exact one, whose
 * magnitude is at most a, and both pass through the finish; -1 when the values may pass
 * IPK_CONV_CERT_MAX_VALUE. The finish divides (each quotient within u(a + e + g)/d + eta of the
 * exact one) and adds the offset (each within u((a + e + g)(1 + u)/d + |off|) + eta). Widened by
 * 1% for the double arithmetic here. */
static inline double ipk_conv_cert_finish_bound(double e, double g, double a, float divisor, float offset)
{
    const double u = 0x1p-24, eta = 0x1p-126;
    const double d = fabs((double)divisor), off = fabs((double)offset), big = a + e + g;
    if (!(e >= 0) || !(g >= 0) || !(d > 0) || !isfinite(d) || !isfinite(off)) return -1.0;
    const double reach = big * (1 + u) / d + off;
    if (!(reach * (1 + 4 * u) + 1.0 < IPK_CONV_CERT_MAX_VALUE)) return -1.0;
    const double b = (e + g) / d + 2 * (u * big / d + eta) + 2 * (u * reach + eta);
    return b * 1.01;
}

/* An upper bound of |v_cpu - v_fused| for the fused sums, or -1 when the plan has none (weights
 * or values not finite, or values past IPK_CONV_CERT_MAX_VALUE). */
static inline double ipk_conv_cert_bound(const float *w, int taps, float divisor, float offset)
{
    double g, a;
    const double e = ipk_conv_cert_sum_errors(w, taps, &g, &a);
    return e < 0 ? -1.0 : ipk_conv_cert_finish_bound(e, g, a, divisor, offset);
}

/* The threshold for a bound b in *thr: 0.5 - b rounded down; 0 when b is negative or past
 * IPK_CONV_CERT_MAX_BOUND. */
static inline int ipk_conv_cert_threshold_of(double b, float *thr)
{
    if (b < 0 || !(b <= IPK_CONV_CERT_MAX_BOUND)) return 0;
    float t = (float)(0.5 - b);
    if ((double)t > 0.5 - b) t = nextafterf(t, 0.0f);
    *thr = t;
    return 1;
}

/* The certainty threshold of the fused sums for u8 outputs in *thr: a pixel is certain when
 * |v - rint(v)| < *thr. 1 when the plan has one; 0 otherwise. */
static inline int ipk_conv_cert_threshold(const float *w, int taps, float divisor, float offset, float *thr)
{
    return ipk_conv_cert_threshold_of(ipk_conv_cert_bound(w, taps, divisor, offset), thr);
}

/* The finish both sides share: acc / divisor (or acc * inv, the same for a power-of-two divisor
 * whose inverse is normal), plus the offset, each rounded. */
IPK_HD float ipk_conv_cert_value(float acc, float divisor, float inv, int pow2, float offset)
{
    return ipk_vecf_add(pow2 ? ipk_vecf_mul(acc, inv) : ipk_vecf_div(acc, divisor), offset);
}

/* The u8 output of a fused value v (rint, saturated, as ipk_vecf_rint_u8, in the low byte; the
 * rest is not zero), and in *uncertain 1 when v is not certain. A NaN is uncertain. */
IPK_HD uint32_t ipk_conv_cert_u8(float v, float thr, uint32_t *uncertain)
{
    const float c = 12582912.0f;
    const float shifted = ipk_vecf_add(v, c), nearest = ipk_vecf_add(shifted, -c);
    *uncertain = !(fabsf(ipk_vecf_add(v, -nearest)) < thr);
    return ipk_vecf_bits(fminf(fmaxf(shifted, c), c + 255.0f));
}

#endif
