/* Exact integer window sums of 1-channel u8 rows, two pixels per 32-bit word in 16-bit lanes
 * (SWAR): the plan and the finishes of the GPU vec kernel (kernels/gpu/convolve_vec_block.cuh). The
 * arithmetic lives here, in C that the host compiles too, so that tests/unit/test_conv_swar.c
 * checks it against the CPU convolve without a GPU, through the lane sums below (ipk_swar_lanes,
 * _hadd, _vadd), which the deleted strip kernel ran and the test still models.
 *
 * A group is 16 output pixels x .. x+15 of one row. Its input row is six words W[0..5]
 * holding bytes x-4 .. x+19 (border applied, 0 where the border drops a pixel). Lane words:
 * X(o) = bytes (x+o, x+o+2) in the low and high 16-bit lanes, for o in [-R, 13+R]. An
 * accumulator is 8 words: a[j] holds outputs (4j, 4j+2), a[4+j] outputs (4j+1, 4j+3).
 * Each lane starts at `start` and adds w * pixel for every tap: products with negative weights
 * subtract, which stays lane-exact because `start` is at least the sum of |negative w| * 255,
 * so no lane ever goes below 0, and the planner checks that none goes above 65535. */
#ifndef IPK_CONV_SWAR_H
#define IPK_CONV_SWAR_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "border.h"
#include "conv_round.h"
#include "swar_ops.h"
#include "convolve_separable.h"

#define IPK_SWAR_MAXK 7
#define IPK_SWAR_LANES 0x00010001u
#define IPK_SWAR_X(o) ((o) + 4)   /* index of X(o) in a lane-word array */
#define IPK_SWAR_NX 21

/* How lanes become output bytes: SHIFT rounds both lanes at once (divisor 2^k > 0, integer
 * offset); the LANE kinds take one lane at a time through conv_round.h's methods; MEAN is the
 * box mean's floor((sum + n/2) / n). */
enum { IPK_SWAR_FIN_SHIFT = 0, IPK_SWAR_FIN_LANE_SHIFT, IPK_SWAR_FIN_LANE_ODD, IPK_SWAR_FIN_LANE_DOUBLE,
       IPK_SWAR_FIN_MEAN };

typedef struct {
    int k, separable;
    int32_t w[IPK_SWAR_MAXK * IPK_SWAR_MAXK];   /* direct taps, row-major */
    int32_t row[IPK_SWAR_MAXK], col[IPK_SWAR_MAXK];
    uint32_t start;                 /* every lane's start value */
    int fin;                        /* IPK_SWAR_FIN_* */
    /* SHIFT: q = rint(lane / 2^shift); out = min(max(q, lo), lo + 255) - lo (see the planner) */
    int shift;
    uint32_t round_add, round_mask, lo2, hi2;   /* both lanes: 2^(shift-1) - 1, 0xffff >> shift, lo, lo + 255 */
    /* LANE kinds: S = lane - start; T = r.sign * S + r.bias */
    ipk_conv_rounding r;
    int32_t start_s;
    double divisor, offset;
    /* MEAN: floor((S + n/2) / n) = umulhi(S + n/2, mean_mul) */
    uint32_t mean_n, mean_mul;
} ipk_swar_plan;

/* X(o) for o in [-r, 13+r] from the six words: even pixels of each word (b0, b2), odd ones
 * (b1, b3), and the offsets 2 and 3 of a word as a byte permutation of two neighbours. */
IPK_HD void ipk_swar_lanes(const uint32_t *words, int r, uint32_t *x)
{
    uint32_t ev[6], od[6];
    IPK_UNROLL
    for (int m = 0; m < 6; m++) {
        ev[m] = words[m] & 0x00ff00ffu;
        od[m] = (words[m] >> 8) & 0x00ff00ffu;
    }
    IPK_UNROLL
    for (int o = -IPK_SWAR_MAXK / 2; o <= 13 + IPK_SWAR_MAXK / 2; o++) {
        if (o < -r || o > 13 + r) continue;
        const int m = (o + 4) >> 2, q = (o + 4) & 3;
        x[IPK_SWAR_X(o)] = q == 0 ? ev[m] : q == 1 ? od[m] : q == 2 ? ipk_swar_perm(ev[m], ev[m + 1], 0x5432)
                                                                     : ipk_swar_perm(od[m], od[m + 1], 0x5432);
    }
}

/* a[j] += sum over kx of wt[kx] * X(4j + kx - r) and a[4+j] the same at 4j+1: one kernel row. */
IPK_HD void ipk_swar_hadd(const uint32_t *x, const int32_t *wt, int k, uint32_t *a)
{
    const int r = k / 2;
    IPK_UNROLL
    for (int kx = 0; kx < k; kx++) {
        const uint32_t w = (uint32_t)wt[kx];
        if (w == 0) continue;
        IPK_UNROLL
        for (int j = 0; j < 4; j++) {
            a[j] += w * x[IPK_SWAR_X(4 * j + kx - r)];
            a[4 + j] += w * x[IPK_SWAR_X(4 * j + 1 + kx - r)];
        }
    }
}

/* acc[i] += c * h[i] for the 8 words: one row of a separable kernel's column pass. */
IPK_HD void ipk_swar_vadd(uint32_t *acc, int32_t c, const uint32_t *h)
{
    IPK_UNROLL
    for (int i = 0; i < 8; i++) acc[i] += (uint32_t)c * h[i];
}

IPK_HD uint32_t ipk_swar_lane_out(const ipk_swar_plan *p, int kind, uint32_t lane)
{
    const int32_t s = (int32_t)lane - p->start_s;
    if (kind == IPK_SWAR_FIN_MEAN) return ipk_swar_umulhi((uint32_t)s + p->mean_n / 2, p->mean_mul);
    if (kind == IPK_SWAR_FIN_LANE_SHIFT)
        return (uint32_t)ipk_conv_clamp(ipk_conv_round_shift(p->r, p->r.sign * s + p->r.bias), 255);
    if (kind == IPK_SWAR_FIN_LANE_ODD)
        return (uint32_t)ipk_conv_clamp(ipk_conv_round_odd(p->r, p->r.sign * s + p->r.bias), 255);
    return (uint32_t)ipk_conv_saturate((double)s / p->divisor + p->offset, 255.0);
}

/* Both lanes of a word to bytes 0..255 in the low byte of each lane. */
IPK_HD uint32_t ipk_swar_lanes_out(const ipk_swar_plan *p, int kind, uint32_t v)
{
    if (kind == IPK_SWAR_FIN_SHIFT) {
        uint32_t q = v;
        if (p->shift > 0) {
            const uint32_t odd = (v >> p->shift) & IPK_SWAR_LANES;
            q = ((v + p->round_add + odd) >> p->shift) & p->round_mask;
        }
        return ipk_swar_min2(ipk_swar_max2(q, p->lo2), p->hi2) - p->lo2;
    }
    return ipk_swar_lane_out(p, kind, v & 0xffffu) | ipk_swar_lane_out(p, kind, v >> 16) << 16;
}

/* Output word j (pixels 4j .. 4j+3, the first in the low byte) of an accumulator. */
IPK_HD uint32_t ipk_swar_out_word(const ipk_swar_plan *p, int kind, const uint32_t *acc, int j)
{
    return ipk_swar_perm(ipk_swar_lanes_out(p, kind, acc[j]), ipk_swar_lanes_out(p, kind, acc[4 + j]), 0x6240);
}

/* Separable with non-negative factors, from convolve_separable.h's exact split (both factors
 * negated when both are <= 0). */
static inline int ipk_swar_split(const double *w, int k, ipk_swar_plan *p)
{
    int64_t col[31], row[31];
    if (!ipk_conv_split_int(w, k, k, col, row)) return 0;
    int neg = 1, pos = 1;
    for (int i = 0; i < k; i++) {
        neg &= col[i] <= 0 && row[i] <= 0;
        pos &= col[i] >= 0 && row[i] >= 0;
    }
    if (!neg && !pos) return 0;
    for (int i = 0; i < k; i++) {
        p->col[i] = (int32_t)(neg ? -col[i] : col[i]);
        p->row[i] = (int32_t)(neg ? -row[i] : row[i]);
    }
    return 1;
}

/* The finish for a convolution whose sums lie in [-neg_reach, pos_reach] (sums of |w| * 255 over
 * the negative and the positive weights): the lanes' start and rounding. Returns 0 when they
 * cannot hold the sums. */
static inline int ipk_swar_plan_finish(ipk_swar_plan *p, double divisor, double offset, int64_t neg_reach,
                                       int64_t pos_reach)
{
    p->divisor = divisor;
    p->offset = offset;
    const int64_t reach = pos_reach > neg_reach ? pos_reach : neg_reach;
    int shift = -1;
    for (int k = 0; k <= 14; k++)
        if (divisor == (double)(1 << k)) shift = k;
    if (shift >= 0 && ipk_conv_is_int(offset, 1 << 20)) {
        /* lanes start at c + offset * 2^k, c a multiple of 2^(k+1) (so that it keeps ties and
         * parity), the least that keeps every lane >= 0; then q = c / 2^k + rint(S / 2^k + offset) */
        const int64_t step = (int64_t)2 << shift, off = (int64_t)offset * (1 << shift);
        int64_t c = neg_reach - off > 0 ? (neg_reach - off + step - 1) / step * step : 0;
        const int64_t start = c + off, lo = c >> shift;
        const int64_t top = start + pos_reach + (shift > 0 ? (1 << (shift - 1)) : 0);
        if (start >= neg_reach && lo <= 65535 - 255 && top <= 65535) {
            p->fin = IPK_SWAR_FIN_SHIFT;
            p->shift = shift;
            p->start = (uint32_t)start;
            p->round_add = shift > 0 ? ((1u << (shift - 1)) - 1) * IPK_SWAR_LANES : 0;
            p->round_mask = (0xffffu >> shift) * IPK_SWAR_LANES;
            p->lo2 = (uint32_t)lo * IPK_SWAR_LANES;
            p->hi2 = (uint32_t)(lo + 255) * IPK_SWAR_LANES;
            p->start_s = (int32_t)start;
            return 1;
        }
    }
    if (neg_reach + pos_reach > 65535) return 0;
    p->start = (uint32_t)neg_reach;
    p->start_s = (int32_t)neg_reach;
    const int kind = ipk_conv_round_plan(divisor, offset, reach, &p->r);
    p->fin = kind == IPK_CONV_FINISH_SHIFT ? IPK_SWAR_FIN_LANE_SHIFT
             : kind == IPK_CONV_FINISH_ODD ? IPK_SWAR_FIN_LANE_ODD : IPK_SWAR_FIN_LANE_DOUBLE;
    return 1;
}

/* Fills *p for a k x k integer kernel on u8 with u8 output, k = 3 or 5 (any weights) or 7
 * (separable with non-negative factors). Returns 0 when the lanes cannot hold the sums. */
static inline int ipk_swar_plan_conv(const double *w, int kw, int kh, double divisor, double offset,
                                     ipk_swar_plan *p)
{
    memset(p, 0, sizeof *p);
    if (kw != kh || (kw != 3 && kw != 5 && kw != 7) || !ipk_conv_weights_integral(w, kw * kh)) return 0;
    if (!(divisor != 0) || !isfinite(divisor) || !isfinite(offset)) return 0;
    p->k = kw;
    int64_t neg = 0, pos = 0;
    for (int i = 0; i < kw * kh; i++) {
        if (fabs(w[i]) > 65535) return 0;
        p->w[i] = (int32_t)w[i];
        if (p->w[i] < 0) neg -= (int64_t)p->w[i] * 255;
        else pos += (int64_t)p->w[i] * 255;
    }
    if (neg + pos > 65535) return 0;
    p->separable = ipk_swar_split(w, kw, p);
    if (kw == 7 && !p->separable) return 0;
    return ipk_swar_plan_finish(p, divisor, offset, neg, pos);
}

/* Box mean of side k (3, 5 or 7): separable ones, floor((S + n/2) / n) with the magic
 * multiplier of mean.cu (exact for S + n/2 < 2^18, n <= 961). */
static inline void ipk_swar_plan_mean(int k, ipk_swar_plan *p)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    p->separable = 1;
    for (int i = 0; i < k; i++) p->row[i] = p->col[i] = 1;
    for (int i = 0; i < k * k; i++) p->w[i] = 1;
    p->fin = IPK_SWAR_FIN_MEAN;
    p->mean_n = (uint32_t)(k * k);
    p->mean_mul = (uint32_t)(((1ull << 32) + p->mean_n - 1) / p->mean_n);
}
#endif
