/* 3x3 median of 1-channel u8 rows for the GPU vec median (kernels/gpu/median_vec_block.cuh), two
 * pixels a word in 16-bit lanes (__vminu2/__vmaxu2 are native on sm_90). In C that the host
 * compiles too, so that tests/unit/test_median_vec.c runs it, lane by lane of a modelled warp,
 * against the CPU median without a GPU.
 *
 * A thread owns 16 pixels x .. x+15 of a row, split as convolve_vec.h splits them: word m holds pixels
 * (4m, 4m+2), word 4+m pixels (4m+1, 4m+3), m = 0..3, and word 8, the edge word, pixel x+16 in
 * its low lane and x-1 in its high lane (from the neighbouring lanes' words 0 and 7, or the byte
 * the warp's first and last lanes load). Each column word is sorted once per output row (lo, mid,
 * hi); two output rows sort the two input rows they share once. An output pixel's median is
 * med3(max of its three columns' lo, med3 of their mid, min of their hi) (Paeth); output words
 * m and 4+m have two of their three columns in common (words m and 4+m), so the max, min and
 * the order of the mids of those two are taken once for both. Min/max per output word (2 pixels):
 * columns 9 x 5 / 8 = 5.6 with the pair's sort shared (ipk_mvec_pair), 9 x 6 / 8 = 6.75 a row
 * alone (ipk_mvec_row, fewer registers); outputs 10: 15.6 or 16.75.
 * No system header under NVRTC: the fused median (kernels/fused/fused_median3.cu) includes it. */
#ifndef IPK_MEDIAN_VEC_H
#define IPK_MEDIAN_VEC_H
#ifdef __CUDACC_RTC__
typedef unsigned int uint32_t;
#else
#include <stdint.h>
#endif
#include "swar_ops.h"

/* A row as the thread holds it: its 16 bytes as loaded (4 words, little-endian) and the edge word. */
#define IPK_MVEC_ROW 5
#define IPK_MVEC_EDGE 4
#define IPK_MVEC_EDGE_COL 8   /* ipk_mvec_word's index of the edge word (convolve_vec.h's IPK_VEC_EDGE) */

/* Split word i of a row (convolve_vec.h's ipk_vec_split, one word at a time, so that a row's words
 * are made where they are used and the loaded bytes are all a thread keeps). */
IPK_HD uint32_t ipk_mvec_word(const uint32_t *row, int i)
{
    return i < 4 ? row[i] & 0x00ff00ffu : i < 8 ? ipk_swar_perm(row[i - 4], 0, 0x4341) : row[IPK_MVEC_EDGE];
}

/* The edge word from the word holding x-1 in its high lane (left) and the one holding x+16 in
 * its low lane (right): the neighbours' split words 7 and 0, or ipk_vec_edge of a loaded byte. */
IPK_HD uint32_t ipk_mvec_edge(uint32_t left, uint32_t right) { return ipk_swar_perm(right, left, 0x7610); }

/* One column word sorted per lane: lo <= mid <= hi. */
typedef struct {
    uint32_t lo, mid, hi;
} ipk_mvec_col;

/* Column word i of both output rows of a pair: the two rows they share sorted once (r1, r2),
 * then each one's own row inserted (r0 above, r3 below). */
typedef struct {
    ipk_mvec_col top, bottom;
} ipk_mvec_col2;

IPK_HD ipk_mvec_col ipk_mvec_insert(uint32_t lo, uint32_t hi, uint32_t c)
{
    const uint32_t above = ipk_swar_max2(lo, c);
    ipk_mvec_col s;
    s.lo = ipk_swar_min2(lo, c);
    s.mid = ipk_swar_min2(hi, above);
    s.hi = ipk_swar_max2(hi, above);
    return s;
}

IPK_HD ipk_mvec_col2 ipk_mvec_columns(const uint32_t *r0, const uint32_t *r1, const uint32_t *r2, const uint32_t *r3,
                                      int i)
{
    const uint32_t a = ipk_mvec_word(r1, i), b = ipk_mvec_word(r2, i);
    const uint32_t lo = ipk_swar_min2(a, b), hi = ipk_swar_max2(a, b);
    ipk_mvec_col2 c;
    c.top = ipk_mvec_insert(lo, hi, ipk_mvec_word(r0, i));
    c.bottom = ipk_mvec_insert(lo, hi, ipk_mvec_word(r3, i));
    return c;
}

/* The column word whose low lane is a's high lane and whose high lane is b's low lane. */
IPK_HD ipk_mvec_col ipk_mvec_between(ipk_mvec_col a, ipk_mvec_col b)
{
    ipk_mvec_col s;
    s.lo = ipk_swar_perm(a.lo, b.lo, 0x5432);
    s.mid = ipk_swar_perm(a.mid, b.mid, 0x5432);
    s.hi = ipk_swar_perm(a.hi, b.hi, 0x5432);
    return s;
}

/* What two outputs with columns a, b in common keep of them: the larger lo, the smaller hi and
 * the two mids in order. */
typedef struct {
    uint32_t lo, hi, mid_lo, mid_hi;
} ipk_mvec_common;

IPK_HD ipk_mvec_common ipk_mvec_common_of(ipk_mvec_col a, ipk_mvec_col b)
{
    ipk_mvec_common k;
    k.lo = ipk_swar_max2(a.lo, b.lo);
    k.hi = ipk_swar_min2(a.hi, b.hi);
    k.mid_lo = ipk_swar_min2(a.mid, b.mid);
    k.mid_hi = ipk_swar_max2(a.mid, b.mid);
    return k;
}

/* The median of the window of the common columns and column c: 8 min/max. */
IPK_HD uint32_t ipk_mvec_median(ipk_mvec_common k, ipk_mvec_col c)
{
    const uint32_t lo = ipk_swar_max2(k.lo, c.lo), hi = ipk_swar_min2(k.hi, c.hi);
    const uint32_t mid = ipk_swar_max2(k.mid_lo, ipk_swar_min2(k.mid_hi, c.mid));
    return ipk_swar_max2(ipk_swar_min2(lo, mid), ipk_swar_min2(ipk_swar_max2(lo, mid), hi));
}

/* Output bytes 4m .. 4m+3 (one little-endian word) from the sorted column words m (even) and
 * 4+m (odd) and their neighbours: prev holds column 4m-1 in its high lane (word 4+m-1, or the
 * edge word), next column 4m+4 in its low lane (word m+1, or the edge word). */
IPK_HD uint32_t ipk_mvec_out_word(ipk_mvec_col prev, ipk_mvec_col even, ipk_mvec_col odd, ipk_mvec_col next)
{
    const ipk_mvec_common k = ipk_mvec_common_of(even, odd);
    const uint32_t e = ipk_mvec_median(k, ipk_mvec_between(prev, odd));
    const uint32_t o = ipk_mvec_median(k, ipk_mvec_between(even, next));
    return ipk_swar_perm(e, o, 0x6240);
}

/* Column word i of one output row from its rows above (r0), at (r1) and below (r2): r1 and r2
 * sorted, r0 inserted. 6 min/max: nothing shared with the next output row, which keeps fewer
 * values live than ipk_mvec_columns. */
IPK_HD ipk_mvec_col ipk_mvec_column(const uint32_t *r0, const uint32_t *r1, const uint32_t *r2, int i)
{
    const uint32_t a = ipk_mvec_word(r1, i), b = ipk_mvec_word(r2, i);
    return ipk_mvec_insert(ipk_swar_min2(a, b), ipk_swar_max2(a, b), ipk_mvec_word(r0, i));
}

/* Output row y (4 words) from rows y-1, y, y+1 (r0, r1, r2) alone. */
IPK_HD void ipk_mvec_row(const uint32_t *r0, const uint32_t *r1, const uint32_t *r2, uint32_t *out)
{
    const ipk_mvec_col edge = ipk_mvec_column(r0, r1, r2, IPK_MVEC_EDGE_COL);
    ipk_mvec_col prev = edge, even = ipk_mvec_column(r0, r1, r2, 0);
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        const ipk_mvec_col odd = ipk_mvec_column(r0, r1, r2, 4 + m);
        const ipk_mvec_col next = m == 3 ? edge : ipk_mvec_column(r0, r1, r2, m + 1);
        out[m] = ipk_mvec_out_word(prev, even, odd, next);
        prev = odd;
        even = next;
    }
}

/* Output rows y (top) and y+1 (bottom), 4 words each, from rows y-1 .. y+2 (r0 .. r3). Column
 * words are made in the order the outputs use them, so that few are live at once. */
IPK_HD void ipk_mvec_pair(const uint32_t *r0, const uint32_t *r1, const uint32_t *r2, const uint32_t *r3,
                          uint32_t *top, uint32_t *bottom)
{
    const ipk_mvec_col2 edge = ipk_mvec_columns(r0, r1, r2, r3, IPK_MVEC_EDGE_COL);
    ipk_mvec_col2 prev = edge, even = ipk_mvec_columns(r0, r1, r2, r3, 0);
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        const ipk_mvec_col2 odd = ipk_mvec_columns(r0, r1, r2, r3, 4 + m);
        const ipk_mvec_col2 next = m == 3 ? edge : ipk_mvec_columns(r0, r1, r2, r3, m + 1);
        top[m] = ipk_mvec_out_word(prev.top, even.top, odd.top, next.top);
        bottom[m] = ipk_mvec_out_word(prev.bottom, even.bottom, odd.bottom, next.bottom);
        prev = odd;
        even = next;
    }
}
#endif
