/* Exact separable integer convolve of radius 1 to 3 (3x3, 5x5, 7x7: the 7x7 binomial above all) of
 * 1-channel u8 rows for the GPU vecsep kernel (kernels/gpu/convolve_vecsep_block.cuh), in C that the host
 * compiles too, so that tests/unit/test_conv_vecsep.c runs it, lane by lane of a modelled warp,
 * against the CPU convolve without a GPU.
 *
 * Row pass first, in 16-bit lanes (two pixels a word), then the column pass in 32 bits: the row
 * sums fit 16 bits (sum of the row factors x 255 <= 65535), the window sums only 32. The sums are
 * exact, so they equal the CPU's S whatever the order; the finish is the CPU integer path's
 * (conv_round.h's SHIFT or ODD where its planner picks them, else the double reference).
 *
 * A thread owns 8 pixels x .. x+7 of a row, loaded as two words (lo, hi); `left` holds bytes
 * x-4 .. x-1 (the left neighbour's hi, or the word a warp's first lane loads through the border),
 * `right` bytes x+8 .. x+11 (the right neighbour's lo, or the last lane's own load). A row sum is 4
 * words: h[j] = pixels (4j, 4j+2), h[2+j] = pixels (4j+1, 4j+3), j = 0, 1, low lane first. */
#ifndef IPK_CONV_VECSEP_H
#define IPK_CONV_VECSEP_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "conv_round.h"
#include "convolve_separable.h"
#include "convolve_vecf.h"   /* ipk_vecf_pack4 */
#include "swar_ops.h"

#define IPK_VECSEP_PX 8
#define IPK_VECSEP_MAXR 3
#define IPK_VECSEP_WORDS 4

/* How a window sum S becomes u8: SHIFT and ODD as conv_round.h, DOUBLE the reference in double
 * (also every f32 output: (float)(S / divisor + offset)). */
enum { IPK_VECSEP_FIN_SHIFT = 0, IPK_VECSEP_FIN_ODD, IPK_VECSEP_FIN_DOUBLE };

typedef struct {
    int r;                                   /* radius: 1, 2 or 3 */
    uint32_t row[2 * IPK_VECSEP_MAXR + 1];   /* the factors, non-negative (negated when neg) */
    uint32_t col[2 * IPK_VECSEP_MAXR + 1];
    int neg;                                 /* the kernel is -(col x row): the true sum is -S */
    int fin;                                 /* IPK_VECSEP_FIN_* (u8 output) */
    ipk_conv_rounding rnd;                   /* SHIFT, ODD: T = rnd.sign * S + rnd.bias (neg folded in) */
    double divisor, offset;
} ipk_vecsep_plan;

/* X(o): bytes (x+o, x+o+2) in the low and high lane, o = -4 .. 8, from the even and odd bytes of
 * the four words left, lo, hi, right. */
IPK_HD uint32_t ipk_vecsep_x(const uint32_t *ev, const uint32_t *od, int o)
{
    const int m = (o + 4) >> 2, q = (o + 4) & 3;
    return q == 0 ? ev[m] : q == 1 ? od[m] : q == 2 ? ipk_swar_perm(ev[m], ev[m + 1], 0x5432)
                                                    : ipk_swar_perm(od[m], od[m + 1], 0x5432);
}

/* The row pass of one input row: h = sum over kx of row[kx] * pixel(x + kx - r), in 16-bit lanes
 * (no lane leaves 0..65535: the factors are non-negative and the planner bounds their sum). */
IPK_HD void ipk_vecsep_hpass(uint32_t left, uint32_t lo, uint32_t hi, uint32_t right, const uint32_t *row, int r,
                             uint32_t *h)
{
    const uint32_t w[4] = { left, lo, hi, right };
    uint32_t ev[4], od[4];
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        ev[m] = w[m] & 0x00ff00ffu;
        od[m] = ipk_swar_perm(w[m], 0, 0x4341);
    }
    IPK_UNROLL
    for (int j = 0; j < 2; j++) {
        h[j] = 0;
        h[2 + j] = 0;
    }
    IPK_UNROLL
    for (int kx = 0; kx <= 2 * r; kx++) {
        IPK_UNROLL
        for (int j = 0; j < 2; j++) {
            h[j] += row[kx] * ipk_vecsep_x(ev, od, 4 * j + kx - r);
            h[2 + j] += row[kx] * ipk_vecsep_x(ev, od, 4 * j + 1 + kx - r);
        }
    }
}

/* Pixel k (0..7) of a row sum. */
IPK_HD uint32_t ipk_vecsep_lane(const uint32_t *h, int k)
{
    const uint32_t w = h[(k & 1) * 2 + (k >> 2)];
    return k & 2 ? w >> 16 : w & 0xffffu;
}

/* The column pass of pixel k: S = sum over ky of col[ky] * pixel k of row sum ky of win (2r + 1
 * row sums of IPK_VECSEP_WORDS words, the top one first); exact in 32 bits (the planner bounds it
 * below 2^31). */
IPK_HD uint32_t ipk_vecsep_vsum(const uint32_t *win, const uint32_t *col, int r, int k)
{
    uint32_t s = 0;
    IPK_UNROLL
    for (int ky = 0; ky <= 2 * r; ky++) s += col[ky] * ipk_vecsep_lane(win + ky * IPK_VECSEP_WORDS, k);
    return s;
}

/* The reference value S / divisor + offset in double (the sum's true sign restored). */
IPK_HD double ipk_vecsep_value(const ipk_vecsep_plan *p, uint32_t s)
{
    const double v = p->neg ? -(double)s : (double)s;
#ifdef __CUDA_ARCH__
    return __dadd_rn(__ddiv_rn(v, p->divisor), p->offset);
#else
    return v / p->divisor + p->offset;
#endif
}

/* The u8 output of a window sum, in the low byte. */
IPK_HD uint32_t ipk_vecsep_u8(const ipk_vecsep_plan *p, int fin, uint32_t s)
{
    const int32_t t = p->rnd.sign * (int32_t)s + p->rnd.bias;
    if (fin == IPK_VECSEP_FIN_SHIFT) return (uint32_t)ipk_conv_clamp(ipk_conv_round_shift(p->rnd, t), 255);
    if (fin == IPK_VECSEP_FIN_ODD) return (uint32_t)ipk_conv_clamp(ipk_conv_round_odd(p->rnd, t), 255);
    return (uint32_t)ipk_conv_saturate(ipk_vecsep_value(p, s), 255.0);
}

/* The kernels the vecsep kernel takes, for u8 input: square, side 3, 5 or 7, whole weights that
 * convolve_separable.h's integer split factors into a column and a row of one sign each (the kernel
 * is then +-|col| x |row|), |row| whose sum x 255 fits 16 bits, and sum |w| x 255 below 2^31 (which
 * whole weights of at most 2^16 always keep). f32_out: the output is f32 (the CPU's finish is then
 * the double reference). 1 with the plan, 0 when it does not apply. */
static inline int ipk_vecsep_plan_conv(const double *w, int kw, int kh, double divisor, double offset, int f32_out,
                                       ipk_vecsep_plan *p)
{
    memset(p, 0, sizeof *p);
    if (kw != kh || kw < 3 || kw > 2 * IPK_VECSEP_MAXR + 1 || !(kw & 1) || !ipk_conv_weights_integral(w, kw * kh))
        return 0;
    if (!(divisor != 0) || !isfinite(divisor) || !isfinite(offset)) return 0;
    int64_t col[2 * IPK_VECSEP_MAXR + 1], row[2 * IPK_VECSEP_MAXR + 1];
    if (!ipk_conv_split_int(w, kw, kh, col, row)) return 0;
    /* each factor of one sign (the integer split gives col a positive entry, row the kernel's sign) */
    int col_pos = 1, col_neg = 1, row_pos = 1, row_neg = 1;
    int64_t row_sum = 0, abs_sum = 0;
    for (int i = 0; i < kw; i++) {
        col_pos &= col[i] >= 0;
        col_neg &= col[i] <= 0;
        row_pos &= row[i] >= 0;
        row_neg &= row[i] <= 0;
        row_sum += row[i] < 0 ? -row[i] : row[i];
    }
    for (int i = 0; i < kw * kh; i++) abs_sum += (int64_t)fabs(w[i]);
    if (!(col_pos || col_neg) || !(row_pos || row_neg) || row_sum * 255 > 65535 || abs_sum * 255 > INT32_MAX)
        return 0;
    p->r = kw / 2;
    p->neg = !col_pos != !row_pos;
    for (int i = 0; i < kw; i++) {
        p->row[i] = (uint32_t)(row[i] < 0 ? -row[i] : row[i]);
        p->col[i] = (uint32_t)(col[i] < 0 ? -col[i] : col[i]);
    }
    p->divisor = divisor;
    p->offset = offset;
    const int kind = f32_out ? IPK_CONV_FINISH_GENERAL : ipk_conv_round_plan(divisor, offset, abs_sum * 255, &p->rnd);
    if (p->neg) p->rnd.sign = -p->rnd.sign;
    p->fin = kind == IPK_CONV_FINISH_SHIFT ? IPK_VECSEP_FIN_SHIFT
             : kind == IPK_CONV_FINISH_ODD ? IPK_VECSEP_FIN_ODD : IPK_VECSEP_FIN_DOUBLE;
    return 1;
}
#endif
