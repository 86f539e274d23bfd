/* The band mean kernel's thread arithmetic (kernels/gpu/mean_band.cuh) for 1-channel u8 at radius
 * 1 to IPK_MBAND_MAXR, host and device alike, so that test_mean_band runs it thread by thread
 * against the CPU mean.
 *
 * A thread owns the 32 output columns x0 .. x0+31 and walks a band of rows down them, keeping the
 * vertical window sums of its input columns x0-h .. x0+31+h (h, the halo: 16 up to radius 15, 32
 * beyond) as 16-bit pairs ((2r+1) * 255 fits): each row adds the entering input row and subtracts
 * the leaving one, two columns a word. Output i's horizontal sum is H[i] = H[i-1] + V[i+h+r] -
 * V[i+h-1-r]; the differences come two at a time from one word, a bias keeping each 16-bit lane
 * positive, and the bias accumulated by output i is taken back in the rounding's constant. The
 * rounding is the tile kernel's: floor((H + n/2) / n) = umulhi(H + n/2, ceil(2^32 / n)), exact
 * while (H + n/2) * (the ceiling's excess, < n) < 2^32, which holds for H <= 63^2 * 255
 * (test_mean_band checks every sum). The thread's columns never cross the image's sides
 * (ipk_mband_span): the tile kernels take the columns near them. The loops run to the largest
 * halo's counts and skip what the radius's halo does not use, so that each kernel instantiation
 * folds them to its own. */
#ifndef IPK_MEAN_BAND_H
#define IPK_MEAN_BAND_H
#include <stdint.h>
#include "swar_ops.h"

#define IPK_MBAND_OUT 32       /* output columns a thread */
#define IPK_MBAND_MAXR 31
#define IPK_MBAND_WORDS_MAX 24 /* input words a row at the largest halo: (32 + 2 * 32) / 4 */
#define IPK_MBAND_PAIRS_MAX 48 /* words of vertical sums, two columns each */
#define IPK_MBAND_BIAS 16384u  /* over (2 * 31 + 1) * 255: a difference plus it is never negative */
#define IPK_MBAND_EDGE 128     /* the side columns' width: a whole number of both tile kernels' tiles */

/* Input columns each side of a thread's outputs at radius r (r <= IPK_MBAND_MAXR). */
IPK_HD int ipk_mband_halo(int r) { return r <= 15 ? 16 : 32; }

/* Input words a row at halo h. */
IPK_HD int ipk_mband_words(int h) { return (IPK_MBAND_OUT + 2 * h) / 4; }

/* The columns the band kernel makes at halo h, [*x_begin, *x_end): every thread's input columns
 * inside the image, both ends on a multiple of IPK_MBAND_EDGE. 0 when the image is too narrow. */
IPK_HD int ipk_mband_span(int width, int h, int *x_begin, int *x_end)
{
    *x_begin = IPK_MBAND_EDGE;
    *x_end = (width - h) / IPK_MBAND_EDGE * IPK_MBAND_EDGE;
    return *x_end > *x_begin;
}

/* ceil(2^32 / n) for the rounding above. */
IPK_HD uint32_t ipk_mband_mul(int radius)
{
    const uint64_t n = (uint64_t)(2 * radius + 1) * (uint64_t)(2 * radius + 1);
    return (uint32_t)(((1ull << 32) + n - 1) / n);
}

/* Vertical sums of columns c and c + 1 (0: x0 - 16) as one word of two 16-bit lanes. */
IPK_HD uint32_t ipk_mband_pair(const uint32_t *vp, int c)
{
    return (c & 1) ? ipk_swar_perm(vp[c >> 1], vp[(c >> 1) + 1], 0x5432) : vp[c >> 1];
}

/* vp += entering row e - leaving row l (the halo's words each), lane by lane: every lane's result
 * is a window's sum, never negative, so no borrow crosses lanes. */
IPK_HD void ipk_mband_vstep(uint32_t *vp, const uint32_t *e, const uint32_t *l, int words)
{
    IPK_UNROLL
    for (int k = 0; k < IPK_MBAND_WORDS_MAX; k++) {
        if (k >= words) continue;
        vp[2 * k] += ipk_swar_perm(e[k], 0, 0x4140) - ipk_swar_perm(l[k], 0, 0x4140);
        vp[2 * k + 1] += ipk_swar_perm(e[k], 0, 0x4342) - ipk_swar_perm(l[k], 0, 0x4342);
    }
}

/* Output 0's horizontal sum: vertical sums h - r .. h + r, whole words in runs that fit a lane
 * (8 of 31 * 255, 4 of 63 * 255), the odd ends by lane. */
IPK_HD uint32_t ipk_mband_first(const uint32_t *vp, int r, int h)
{
    const int lo = h - r, hi = h + r, run_max = 65535 / ((2 * r + 1) * 255);
    uint32_t sum = 0, run = 0;
    int in_run = 0;
    IPK_UNROLL
    for (int k = 0; k < IPK_MBAND_PAIRS_MAX; k++) {
        const int c = 2 * k;
        if (c + 1 < lo || c > hi) continue;
        if (c >= lo && c + 1 <= hi) {
            run += vp[k];
            if (++in_run == run_max) {
                sum += (run & 0xffffu) + (run >> 16);
                run = 0;
                in_run = 0;
            }
        } else {
            sum += c >= lo ? (vp[k] & 0xffffu) : (vp[k] >> 16);
        }
    }
    return sum + (run & 0xffffu) + (run >> 16);
}

/* Four rounded outputs as the bytes of one word. */
IPK_HD uint32_t ipk_mband_pack4(const uint32_t *m)
{
    return ipk_swar_perm(ipk_swar_perm(m[0], m[1], 0x0040), ipk_swar_perm(m[2], m[3], 0x0040), 0x5410);
}

/* The 32 outputs of a row from the vertical sums vp at halo h, four bytes a word into out[8]. */
IPK_HD void ipk_mband_row(const uint32_t *vp, int r, int h, uint32_t mul, uint32_t *out)
{
    const uint32_t half = (uint32_t)((2 * r + 1) * (2 * r + 1)) / 2;
    uint32_t m[IPK_MBAND_OUT];
    uint32_t hb = ipk_mband_first(vp, r, h);
    m[0] = ipk_swar_umulhi(hb + half, mul);
    IPK_UNROLL
    for (int i = 1; i < IPK_MBAND_OUT; i += 2) {
        const uint32_t enter = ipk_mband_pair(vp, i + h + r), leave = ipk_mband_pair(vp, i + h - 1 - r);
        const uint32_t d = enter + IPK_MBAND_BIAS * 0x10001u - leave;
        hb += d & 0xffffu;
        m[i] = ipk_swar_umulhi(hb + half - IPK_MBAND_BIAS * (uint32_t)i, mul);
        if (i + 1 < IPK_MBAND_OUT) {
            hb += d >> 16;
            m[i + 1] = ipk_swar_umulhi(hb + half - IPK_MBAND_BIAS * (uint32_t)(i + 1), mul);
        }
    }
    IPK_UNROLL
    for (int w = 0; w < IPK_MBAND_OUT / 4; w++) out[w] = ipk_mband_pack4(m + 4 * w);
}
#endif
