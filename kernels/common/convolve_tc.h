/* Certified float convolve on the tensor cores (kernels/gpu/convolve_tc.cuh): the CPU float path's u8
 * result of a direct 5x5 or 7x7 float kernel, bit for bit, from exact integer sums; in C that the
 * host compiles too, so that tests/unit/test_conv_tc.c checks it against the CPU without a GPU.
 *
 * Each float weight, scaled by S so that the largest is at most 126, is rounded to a multiple
 * of 2^-8(L-1), L = 2 or 3 limbs: n = rint(w S 2^8(L-1)), written in L balanced base-256 digits
 * q0, q1 (, q2), each in -128..127. The tensor cores sum x q_l over the window exactly in int32
 * (u8 times s8); H = 256 S0 + S1 (and S2) give the exact sum of the rounded weights. The kernel
 * turns them into the value in 16.16 fixed point with two or three integer instructions
 * (ipk_conv_tc_fixed: 64-bit multiply-adds by the finish's constants) and reads the byte and the
 * certificate off the bits (ipk_conv_tc_byte): the CPU's value lies within the plan's bound of
 * this one, so a value whose fraction is at least a margin away from every half-integer gives
 * the CPU's byte; the other pixels are recomputed in the CPU's order. Two limbs save a third of
 * the tensor-core work and leave more pixels open: plans take them where their bound is small. */
#ifndef IPK_CONV_TC_H
#define IPK_CONV_TC_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "convolve_cert.h"

#define IPK_CONV_TC_MAXK 7
#define IPK_CONV_TC_LIMBS 3
/* Values v below this in magnitude: rint(v) and v + 1 in an int16 half of the fixed point. */
#define IPK_CONV_TC_MAX_VALUE 32000.0
/* Fixed-point values with at least 16 - this many fraction bits. */
#define IPK_CONV_TC_MAX_SHIFT 8
/* Two limbs where their bound is at most this (under 1% of pixels open), three otherwise: two
 * took 0.117 ms against three's 0.119 for bench_gpu's float 5x5 (bound 0.0033, a power-of-two
 * scale), 0.129 against 0.136 at 7x7, on the H100 (2026-11-27); with the searched scale (bound
 * 0.0003) 0.097 against 0.110, 0.109 against 0.129. */
#define IPK_CONV_TC_TWO_LIMB_BOUND 0.004

typedef struct {
    int k;                                                   /* 5 or 7 */
    int limbs;                                               /* 2 or 3 */
    int8_t q[IPK_CONV_TC_LIMBS][IPK_CONV_TC_MAXK * IPK_CONV_TC_MAXK];   /* limb, then ky, kx; unused limbs 0 */
    double scale;                                            /* 1 / S */
    int32_t mhi, mlo;                                        /* ipk_conv_tc_fixed's constants */
    int64_t c;
    int shift;                                               /* 0 .. IPK_CONV_TC_MAX_SHIFT */
    uint32_t open;                                           /* fractions (in 2^-16) below it: uncertain */
    double bound;                                            /* |v_cpu - fixed value| <= bound, in pixel values */
} ipk_conv_tc_plan;

/* The fixed-point value from the limb sums: x / 2^16 = v + 1/2 + margin, within the plan's error:
 * T = H mhi (+ S2 mlo) + c exactly in 64 bits (two's complement), x its bits 32 - shift up. Its
 * high half is rint(v) where the certificate holds. s2 and mlo count for three limbs only. */
IPK_HD int32_t ipk_conv_tc_fixed(int32_t s0, int32_t s1, int32_t s2, int limbs, int32_t mhi, int32_t mlo, int64_t c,
                                 int shift)
{
    uint64_t t = (uint64_t)((int64_t)(s0 * 256 + s1) * mhi) + (uint64_t)c;
    if (limbs == 3) t += (uint64_t)((int64_t)s2 * mlo);
    return (int32_t)(uint32_t)(t >> (32 - shift));
}

/* The u8 output of a fixed-point value (rint, saturated) and in *uncertain 1 when its fraction is
 * below open (the kernel reads the same bits two pixels at a time). */
IPK_HD uint32_t ipk_conv_tc_byte(int32_t x, uint32_t open, uint32_t *uncertain)
{
    *uncertain = ((uint32_t)x & 0xffffu) < open;
    const int32_t n = (int32_t)((uint32_t)x >> 16) - (x < 0 ? 65536 : 0);
    return n < 0 ? 0u : n > 255 ? 255u : (uint32_t)n;
}

/* The CPU's error against the exact value V = X / d + off (X the exact sum, |X| <= a, the CPU's sum
 * within e of X): its quotient and sum rounded, each at most u of a value below reach; with q the
 * limbs' error of X. -1 when the values may pass IPK_CONV_TC_MAX_VALUE. */
static inline double ipk_conv_tc_cpu_error(double e, double q, double a, float divisor, float offset)
{
    const double u = 0x1p-24, eta = 0x1p-126;
    const double d = fabs((double)divisor), off = fabs((double)offset), big = 1.02 * (a + q) + e;
    if (!(e >= 0) || !(q >= 0) || !(d > 0) || !isfinite(d) || !isfinite(off)) return -1.0;
    const double reach = big * (1 + 4 * u) / d + off;
    if (!(reach * (1 + 4 * u) + 1.0 < IPK_CONV_TC_MAX_VALUE)) return -1.0;
    return e / d + u * big / d + u * reach + 2 * eta;
}

/* Scales tried for the limbs (ipk_conv_tc_limbs), from the largest weight at 126 down to 63. */
#define IPK_CONV_TC_SCALES 256

/* The sum of |w_t - n_t / per| over the weights, n_t = rint(w_t per): the limbs' rounding at
 * per units a weight; its first partial sum of at least limit once there is one. */
static inline double ipk_conv_tc_rounding(const float *w, int taps, double per, double limit)
{
    /* A search's estimate (ipk_conv_tc_limbs rounds and divides): w per is below 2^31, where adding
     * and taking off 1.5 2^52 rounds to the nearest integer without a call. */
    const double unit = 1.0 / per, magic = 0x1.8p52;
    double sum = 0.0;
    for (int t = 0; t < taps && sum < limit; t++) {
        const double n = ((double)w[t] * per + magic) - magic;
        sum += fabs((double)w[t] - n * unit);
    }
    return sum;
}

/* The scale S of the limbs whose rounding is least: the power of two that puts the largest |w|
 * (top) in (63, 126] (dyadic weights round exactly there), then IPK_CONV_TC_SCALES scales that put
 * it on 63 m units of the last digit times 256^(L-2), m = 512 down to 257, the search ending at a
 * rounding of at most enough. When the weights are multiples of one step (decimal weights over a
 * divisor nearly are) and top is at most 256 steps, one m is a multiple of top's steps and rounds
 * every weight almost exactly: the bound shrinks, and with it the pixels left open. 0 when there
 * is no scale. */
static inline double ipk_conv_tc_scale(const float *w, int taps, int limbs, double enough)
{
    double top = 0.0;
    for (int t = 0; t < taps; t++) top = fabs((double)w[t]) > top ? fabs((double)w[t]) : top;
    if (!(top > 0x1p-60) || !(top < 0x1p60)) return 0.0;   /* 1 / S a normal float */
    int s = 0;
    while (top * ldexp(1.0, s) > 126.0) s--;
    while (top * ldexp(1.0, s + 1) <= 126.0) s++;
    const double digits = ldexp(1.0, 8 * (limbs - 1));
    double best = ldexp(1.0, s), least = ipk_conv_tc_rounding(w, taps, best * digits, INFINITY);
    for (int i = 0; i < IPK_CONV_TC_SCALES && least > enough; i++) {
        const double scale = 126.0 / top * (1.0 - 0.5 * i / IPK_CONV_TC_SCALES);
        const double rounding = ipk_conv_tc_rounding(w, taps, scale * digits, least);
        if (rounding < least) {
            least = rounding;
            best = scale;
        }
    }
    return best;
}

/* The limbs of float weights w (k x k): the scale 1 / S (ipk_conv_tc_scale, searched until the
 * rounding's half-width is at most enough) and digits. With
 * d_t = w_t - n_t / (S 2^8(L-1)) the rounding of weight t, the rounded weights' sum over inputs x_t
 * in 0..255 misses the exact one by sum x_t d_t, which lies in [255 sum min(d_t, 0), 255 sum
 * max(d_t, 0)]: *center gets the middle of that, 127.5 sum d_t; returns its half-width,
 * 127.5 sum |d_t|; *hi_max and *lo_max get bounds of |H| and |S2|; -1 when there is no scale. */
static inline double ipk_conv_tc_limbs(const float *w, int taps, int limbs, double enough, ipk_conv_tc_plan *p,
                                       double *hi_max, double *lo_max, double *center)
{
    const double scale = ipk_conv_tc_scale(w, taps, limbs, enough / 127.5);
    if (!(scale > 0.0)) return -1.0;
    const double per = scale * ldexp(1.0, 8 * (limbs - 1));
    double quant = 0.0, sum = 0.0;
    *hi_max = *lo_max = 0.0;
    for (int t = 0; t < taps; t++) {
        const double n = rint((double)w[t] * per), d = (double)w[t] - n / per;
        quant += fabs(d);
        sum += d;
        int64_t rest = (int64_t)n;
        for (int l = limbs - 1; l > 0; l--) {
            const int64_t digit = ((rest + 128) & 255) - 128;
            p->q[l][t] = (int8_t)digit;
            rest = (rest - digit) / 256;
        }
        p->q[0][t] = (int8_t)rest;
        *hi_max += 255.0 * fabs(256.0 * p->q[0][t] + p->q[1][t]);
        *lo_max += limbs == 3 ? 255.0 * fabs((double)p->q[2][t]) : 0.0;
    }
    p->scale = 1.0 / scale;
    *center = 127.5 * sum;
    return 127.5 * quant;
}

/* The plan with a given number of limbs (2 or 3); 1 when it has a certificate whose bound is at
 * most IPK_CONV_CERT_MAX_BOUND, 0 otherwise.
 * The value of the rounded weights, recentred, V_q = (X_q + center) / d + off, lies within
 * q / d of the exact one (q, center: ipk_conv_tc_limbs), and the CPU's v within b of V_q (b adds the
 * CPU's own error). With kq = 1 / (256 S d) the value of one unit of H, P = 2^(16-j) units a pixel
 * value (j the least shift that keeps mhi = rint(kq 2^(48-j)) in an int32), mlo = rint(kq 2^(40-j))
 * and c = floor((off + 1/2) P 2^32) + floor(center / d P 2^32) + m 2^32 (within 3 of the real
 * value), T = H mhi + S2 mlo + c lies within |H| |mhi - kq 2^(48-j)| + |S2| |mlo - kq 2^(40-j)| + 3
 * of ((V_q + 1/2) P + m) 2^32, so x / 2^j = floor(T / 2^32) within E = that / 2^32 + 1 units of
 * (V_q + 1/2) P + m. With B = b P + E < m: when x / 2^j mod P >= 2m, (v + 1/2) P lies strictly
 * inside (N P, N P + P) for N = floor(x / 2^16), so rint(v) = N with no tie. */
static inline int ipk_conv_tc_plan_limbs(const float *w, int k, float divisor, float offset, int limbs,
                                         ipk_conv_tc_plan *p)
{
    const int taps = k * k;
    memset(p, 0, sizeof *p);
    p->k = k;
    p->limbs = limbs;
    p->bound = -1.0;
    if ((k != 5 && k != 7) || (limbs != 2 && limbs != 3)) return 0;
    double g_fma = 0.0, a = 0.0, hi_max, lo_max, center = 0.0;
    const double e = ipk_conv_cert_sum_errors(w, taps, &g_fma, &a);
    const double quant = e < 0 ? -1.0 : ipk_conv_tc_limbs(w, taps, limbs, e / 100, p, &hi_max, &lo_max, &center);
    const double cpu = quant < 0 ? -1.0 : ipk_conv_tc_cpu_error(e, 2.0 * quant, a, divisor, offset);
    if (cpu < 0) return 0;
    const double d = (double)divisor, kq = p->scale * 0x1p-8 / d;
    int j = 0;
    while (fabs(kq) * ldexp(1.0, 48 - j) >= 0x1p31 - 2.0) j++;
    if (j > IPK_CONV_TC_MAX_SHIFT || !(fabs(kq) * ldexp(1.0, 48 - j) >= 0x1p20)) return 0;
    const double units = ldexp(1.0, 16 - j), mhi = rint(kq * ldexp(1.0, 48 - j));
    const double mlo = limbs == 3 ? rint(kq * ldexp(1.0, 40 - j)) : 0.0;
    const double fix = (hi_max * fabs(mhi - kq * ldexp(1.0, 48 - j)) + lo_max * fabs(mlo - kq * ldexp(1.0, 40 - j)) + 3.0) *
                           0x1p-32 + 1.0;
    const double b_units = ((cpu + quant / fabs(d)) * units + fix) * 1.01;
    const double margin = floor(b_units) + 1.0;
    p->bound = b_units / units;
    if (!(p->bound <= IPK_CONV_CERT_MAX_BOUND) || 2.0 * margin * ldexp(1.0, j) > 32768.0) return 0;
    p->mhi = (int32_t)mhi;
    p->mlo = (int32_t)mlo;
    p->c = (int64_t)floor(((double)offset + 0.5) * units * 0x1p32) + (int64_t)floor(center / d * units * 0x1p32) +
           (int64_t)margin * ((int64_t)1 << 32);
    p->shift = j;
    p->open = (uint32_t)(2.0 * margin) << j;
    return 1;
}

/* The plan of float weights w (k x k, k 5 or 7) for the finish divisor and offset: two limbs
 * where their bound is at most IPK_CONV_TC_TWO_LIMB_BOUND, else three; 1 when it has a
 * certificate, 0 otherwise. */
static inline int ipk_conv_tc_plan_make(const float *w, int k, float divisor, float offset, ipk_conv_tc_plan *p)
{
    if (ipk_conv_tc_plan_limbs(w, k, divisor, offset, 2, p) && p->bound <= IPK_CONV_TC_TWO_LIMB_BOUND) return 1;
    return ipk_conv_tc_plan_limbs(w, k, divisor, offset, 3, p);
}
#endif
