/* The band mean kernel's thread arithmetic (kernels/gpu/mean_band.cuh) for 1-channel u8 at radius
 * 1 to IPK_MBAND_MAXR, host and device alike, so that test_mean_band runs it thread by thread
 * against the CPU mean.
 *
 * A thread owns the 32 output columns x0 .. x0+31 and walks a band of rows down them, keeping the
 * vertical window sums of the 64 input columns x0-16 .. x0+47 as 16-bit pairs ((2r+1) * 255 fits):
 * each row adds the entering input row and subtracts the leaving one, two columns a word. Output
 * i's horizontal sum is H[i] = H[i-1] + V[i+16+r] - V[i+15-r]; the differences come two at a time
 * from one word, a bias keeping each 16-bit lane positive, and the bias accumulated by output i
 * is taken back in the rounding's constant. The rounding is the tile kernel's:
 * floor((H + n/2) / n) = umulhi(H + n/2, ceil(2^32 / n)), exact while (H + n/2) * (the ceiling's
 * excess, < n) < 2^32, which holds for H <= 961 * 255. The thread's columns never cross the image's
 * sides (ipk_mband_span): the tile kernel takes the columns near them. */
#ifndef IPK_MEAN_BAND_H
#define IPK_MEAN_BAND_H
#include <stdint.h>
#include "swar_ops.h"

#define IPK_MBAND_OUT 32      /* output columns a thread */
#define IPK_MBAND_HALO 16     /* input columns each side of them */
#define IPK_MBAND_WORDS 16    /* input words a row: (32 + 2 * 16) / 4 */
#define IPK_MBAND_PAIRS 32    /* words of vertical sums, two columns each */
#define IPK_MBAND_MAXR 15
#define IPK_MBAND_BIAS 8192u  /* over (2 * 15 + 1) * 255: a difference plus it is never negative */
#define IPK_MBAND_EDGE 128    /* the tile kernel's tile width: the band columns start and end on it */

/* The columns the band kernel makes, [*x_begin, *x_end): every thread's 64 input columns inside
 * the image, both ends on an edge tile's boundary. 0 when the image is too narrow for any. */
IPK_HD int ipk_mband_span(int width, int *x_begin, int *x_end)
{
    *x_begin = IPK_MBAND_EDGE;
    *x_end = (width - IPK_MBAND_HALO) / IPK_MBAND_EDGE * IPK_MBAND_EDGE;
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

/* vp += entering row e - leaving row l (64 bytes each), lane by lane: every lane's result is a
 * window's sum, never negative, so no borrow crosses lanes. */
IPK_HD void ipk_mband_vstep(uint32_t *vp, const uint32_t *e, const uint32_t *l)
{
    IPK_UNROLL
    for (int k = 0; k < IPK_MBAND_WORDS; k++) {
        vp[2 * k] += ipk_swar_perm(e[k], 0, 0x4140) - ipk_swar_perm(l[k], 0, 0x4140);
        vp[2 * k + 1] += ipk_swar_perm(e[k], 0, 0x4342) - ipk_swar_perm(l[k], 0, 0x4342);
    }
}

/* Output 0's horizontal sum: vertical sums 16 - r .. 16 + r, whole words in runs of at most 8
 * (8 * 31 * 255 fits a lane), the odd ends by lane. */
IPK_HD uint32_t ipk_mband_first(const uint32_t *vp, int r)
{
    const int lo = IPK_MBAND_HALO - r, hi = IPK_MBAND_HALO + r;
    uint32_t h = 0, run = 0;
    int in_run = 0;
    IPK_UNROLL
    for (int k = 0; k < IPK_MBAND_PAIRS; k++) {
        const int c = 2 * k;
        if (c + 1 < lo || c > hi) continue;
        if (c >= lo && c + 1 <= hi) {
            run += vp[k];
            if (++in_run == 8) {
                h += (run & 0xffffu) + (run >> 16);
                run = 0;
                in_run = 0;
            }
        } else {
            h += c >= lo ? (vp[k] & 0xffffu) : (vp[k] >> 16);
        }
    }
    return h + (run & 0xffffu) + (run >> 16);
}

/* Four rounded outputs as the bytes of one word. */
IPK_HD uint32_t ipk_mband_pack4(const uint32_t *m)
{
    return ipk_swar_perm(ipk_swar_perm(m[0], m[1], 0x0040), ipk_swar_perm(m[2], m[3], 0x0040), 0x5410);
}

/* The 32 outputs of a row from the vertical sums vp, four bytes a word into out[8]. */
IPK_HD void ipk_mband_row(const uint32_t *vp, int r, uint32_t mul, uint32_t *out)
{
    const uint32_t half = (uint32_t)((2 * r + 1) * (2 * r + 1)) / 2;
    uint32_t m[IPK_MBAND_OUT];
    uint32_t hb = ipk_mband_first(vp, r);
    m[0] = ipk_swar_umulhi(hb + half, mul);
    IPK_UNROLL
    for (int i = 1; i < IPK_MBAND_OUT; i += 2) {
        const uint32_t d = ipk_mband_pair(vp, i + IPK_MBAND_HALO + r) + IPK_MBAND_BIAS * 0x10001u -
                           ipk_mband_pair(vp, i + IPK_MBAND_HALO - 1 - r);
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
