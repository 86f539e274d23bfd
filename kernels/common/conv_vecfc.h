/* Certified float convolve (kernels/gpu/vecfc_block.cuh): the CPU float path's u8 result for a
 * direct 5x5 or 7x7, bit for bit, from sums computed with fused multiply-adds, in C that the host
 * compiles too, so that tests/unit/test_conv_vecfc.c checks it against the CPU without a GPU.
 *
 * The CPU's order (conv_vecf.h) rounds every product and every sum: 2 k^2 FP32 instructions a
 * pixel, the whole of the H100's FP32 rate for 5x5 and 7x7. A fused multiply-add in the same order
 * rounds once a tap, half the instructions, and gives a slightly different sum. Both lie within a
 * bound E of the exact sum, known from the weights alone (ipk_vecfc_certify): so when the fused
 * value v is farther than E from every half-integer, the CPU's value rounds to the same integer
 * as v, and so does its saturation (both monotone). The rest, about 2E of the pixels (0.1 to 1%
 * for weights that sum to about 1), are marked uncertain and recomputed in the CPU's order (the
 * kernel recomputes the four pixels of a thread's row when one of them is). */
#ifndef IPK_CONV_VECFC_H
#define IPK_CONV_VECFC_H
#include <math.h>
#include <stdint.h>
#include "conv_vecf.h"

/* Plans whose bound is larger than this are left to the exact kernels: past it, more than one
 * pixel in ten would need the CPU's order again. */
#define IPK_VECFC_MAX_BOUND 0.05

IPK_HD float ipk_vecfc_fma(float a, float b, float c)
{
#ifdef __CUDA_ARCH__
    return __fmaf_rn(a, b, c);
#else
    return fmaf(a, b, c);
#endif
}

/* An upper bound of |cpu - fused| for the plan's values, or a negative number when the plan is not
 * one this applies to. The sums run t = 0 .. k^2 - 1 (ky, then kx ascending) on both sides, inputs
 * x_t in 0..255. With u = 2^-24, each rounding of z adds at most u|z| (plus eta below the normal
 * range, FTZ or not). A_t = 255 max(sum of positive w_j, sum of negative |w_j|), j <= t, bounds the
 * exact partial sum |S_t|; e_t bounds |cpu_t - S_t|, g_t |fused_t - S_t|:
 *   e_t = e_{t-1} + u 255 |w_t| + u (A_t + e_{t-1} + u 255 |w_t|)   (product, then sum, rounded)
 *   g_t = g_{t-1} + u (A_t + g_{t-1})                                 (one rounding a tap)
 * Then the finish: ONE v = acc on both sides; MUL and DIV: the CPU's fl(fl(acc / d) + off) (MUL's
 * quotient is a product by the exact 1/d) against fl(fused * fl(1/d) + off), every rounding of
 * either added. The result is widened by 1% for the double arithmetic here. */
static inline double ipk_vecfc_bound(const ipk_vecf_plan *p)
{
    const double u = 0x1p-24, eta = 0x1p-126;
    const int k = 2 * p->r + 1;
    if (p->mode != IPK_VECF_DIRECT || (k != 5 && k != 7)) return -1.0;
    double pos = 0.0, neg = 0.0, a = 0.0, e = 0.0, g = 0.0;
    for (int t = 0; t < k * k; t++) {
        const double w = p->w[t], prod = 255.0 * fabs(w);
        if (!isfinite(w)) return -1.0;
        if (w > 0) pos += 255.0 * w;
        else neg -= 255.0 * w;
        a = pos > neg ? pos : neg;
        e = e + u * prod + u * (a + e + u * prod) + 2 * eta;
        g = g + u * (a + g) + eta;
    }
    double b = e + g;
    if (p->fin != IPK_VECF_FIN_ONE) {
        const double d = fabs((double)p->div), off = fabs((double)p->off);
        if (!(d > 0) || !isfinite(d)) return -1.0;
        b = b / d + u * (a + e) / d + u * ((a + e) * (1 + u) / d + off) + u * (a + g) / d +
            u * ((a + g) * (1 + u) / d + off) + 4 * eta;
    }
    return b * 1.01;
}

/* Fills the plan's certificate (cert, cert_thr, cert_inv) for u8 outputs: 1 when it applies (a
 * direct 5x5 or 7x7 plan whose values are narrow, so that v + 1.5 x 2^23 rounds v to an integer in
 * its low bits and v - rint(v) is exact, and whose bound is at most IPK_VECFC_MAX_BOUND). The
 * threshold is 0.5 - bound rounded down: a pixel is certain when |v - rint(v)| < cert_thr. */
static inline int ipk_vecfc_certify(ipk_vecf_plan *p)
{
    p->cert = 0;
    const double b = ipk_vecfc_bound(p);
    if (!p->narrow || b < 0 || !(b <= IPK_VECFC_MAX_BOUND)) return 0;
    float thr = (float)(0.5 - b);
    if ((double)thr > 0.5 - b) thr = nextafterf(thr, 0.0f);
    p->cert_thr = thr;
    p->cert_inv = p->fin == IPK_VECF_FIN_ONE ? 1.0f : p->fin == IPK_VECF_FIN_MUL ? p->inv : 1.0f / p->div;
    p->cert = 1;
    return 1;
}

/* A thread owns IPK_VECFC_PX pixels x .. x+7 of a row, loaded as two words (lo, hi); `left` holds
 * bytes x-4 .. x-1 (the left neighbour's hi, or the warp's first lane's own load through the
 * border), `right` bytes x+8 .. x+11. */
#define IPK_VECFC_PX 8

/* The 8 + 2r values of a row the thread's outputs read: column x - r first. */
IPK_HD void ipk_vecfc_values(uint32_t left, uint32_t lo, uint32_t hi, uint32_t right, int r, float *v)
{
    IPK_UNROLL
    for (int i = 0; i < IPK_VECFC_PX + 2 * IPK_VECF_MAXR; i++) {
        if (i >= IPK_VECFC_PX + 2 * r) break;
        const int c = i - r;
        v[i] = c < 0 ? ipk_vecf_byte(left, c + 4) : c < 4 ? ipk_vecf_byte(lo, c) : c < 8 ? ipk_vecf_byte(hi, c - 4)
                                                                                       : ipk_vecf_byte(right, c - 8);
    }
}

/* acc[j] (+)= c[0]*v[j] + .. + c[2r]*v[j+2r], one fused multiply-add a tap in the CPU's order;
 * first: acc starts with the rounded product c[0]*v[j]. */
IPK_HD void ipk_vecfc_taps(float *acc, const float *v, const float *c, int r, int first)
{
    IPK_UNROLL
    for (int j = 0; j < IPK_VECFC_PX; j++) {
        float a = first ? ipk_vecf_mul(c[0], v[j]) : ipk_vecfc_fma(c[0], v[j], acc[j]);
        IPK_UNROLL
        for (int kx = 1; kx <= 2 * r; kx++) a = ipk_vecfc_fma(c[kx], v[j + kx], a);
        acc[j] = a;
    }
}

/* Input row rr of a thread's ROWS outputs (row y0 - r + rr) into the open sums: open + ky * PX is
 * output rr - ky (ky = 0 .. 2r, each only for 0 <= output < rows); output rr - 2r is complete after
 * the call. The caller then moves every open sum down one place. */
IPK_HD void ipk_vecfc_step(const ipk_vecf_plan *p, int r, const float *v, int rr, int rows, float *open)
{
    const int k = 2 * r + 1;
    IPK_UNROLL
    for (int ky = 0; ky <= 2 * IPK_VECF_MAXR; ky++)
        if (ky < k && rr - ky >= 0 && rr - ky < rows) ipk_vecfc_taps(open + ky * IPK_VECFC_PX, v, p->w + ky * k, r, ky == 0);
}

/* Whether the CPU's value for a fused sum is certain to round to the fused value's integer (see
 * above); *shifted gets the bits of v + 1.5 x 2^23, which hold that integer (ipk_vecf_narrow_pack_bits4). */
IPK_HD int ipk_vecfc_certain(const ipk_vecf_plan *p, int fin, float acc, uint32_t *shifted)
{
    const float c = 12582912.0f;
    const float v = fin == IPK_VECF_FIN_ONE ? acc : ipk_vecfc_fma(acc, p->cert_inv, p->off);
    const float s = ipk_vecf_add(v, c), nearest = ipk_vecf_add(s, -c);
    *shifted = ipk_vecf_bits(s);
    return fabsf(ipk_vecf_add(v, -nearest)) < p->cert_thr;
}

/* The u8 outputs of four fused sums, packed (first in the low byte), as ipk_vecf_narrow_pack4;
 * *uncertain: 1 when any of the four is not certain (the kernel then recomputes all four). */
IPK_HD uint32_t ipk_vecfc_finish4(const ipk_vecf_plan *p, int fin, const float *acc, int *uncertain)
{
    uint32_t t[4];
    int all = 1;
    IPK_UNROLL
    for (int j = 0; j < 4; j++) all &= ipk_vecfc_certain(p, fin, acc[j], &t[j]);
    *uncertain = !all;
    return ipk_vecf_narrow_pack_bits4(t);
}
#endif
