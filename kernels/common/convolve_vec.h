/* Exact 3x3 and 5x5 integer window sums of 1-channel u8 rows for the GPU vec kernel
 * (kernels/gpu/convolve_vec_block.cuh), vertical pass first, in 16-bit lanes, two pixels per word. In C
 * that the host compiles too, so that tests/unit/test_conv_vec.c runs it, lane by lane of a
 * modelled warp, against the CPU convolve and mean without a GPU.
 *
 * A thread owns 16 pixels x .. x+15 of a row. A split row is 9 words: a[m] = bytes (4m, 4m+2),
 * a[4+m] = bytes (4m+1, 4m+3) for m = 0..3 (as convolve_swar.h's accumulators), and a[8], the edge
 * word: byte x+16 in the low lane, byte x-1 in the high lane (only the warp's first and last
 * lanes load it; the others take their neighbours' column sums by shuffles). The vertical pass
 * weighs three split rows into column sums (9 words), the horizontal pass adds the shifted column
 * sums into convolve_swar.h's accumulator (8 words), whose finish rounds exactly as the CPU.
 * Lanes that are moved between words (the shifts) must hold their true value in 0..65535:
 * separable weights are non-negative (the planner's split), and each column sum of a direct
 * kernel starts at an offset that covers its negative taps.
 * 5x5 (ipk_vec5_*): the edge word holds two columns, five rows add into the column sums one at a
 * time, and the horizontal pass adds them at shifts -2 .. 2; a direct kernel adds each split row
 * at the five shifts instead (only raw bytes move between words; the start covers the negative
 * taps, so no lane of the accumulator ever leaves 0..65535). */
#ifndef IPK_CONV_VEC_H
#define IPK_CONV_VEC_H
#include "convolve_swar.h"

#define IPK_VEC_PX 16
#define IPK_VEC_WORDS 9          /* a split row or a column sum: 4 even, 4 odd, the edge word */
#define IPK_VEC_EDGE 8

/* 1: plain GPU convolve calls take the vec kernel for the 5x5 kernels it takes, and fusion
 * leaves them apart (core/src/exec/fuse_window.c), as for 3x3 (CONV_VEC_AUTO in convolve.cu); 0: the
 * tile kernels and fusion as before. 1: gaussian5 0.077 against 0.136 ms at 8192x8192 on the
 * H100, and grayscale then gaussian5 0.09 + 0.077 apart against 0.243 fused. Here, so that both
 * read one switch. */
#define CONV_VEC5_AUTO 1

/* UNIT: all nine weights 1 (box mean and box3; additions only); SEP: a separable kernel with
 * non-negative factors; DIRECT: any other 3x3 the lanes hold. */
enum { IPK_VEC_UNIT = 0, IPK_VEC_SEP, IPK_VEC_DIRECT };

typedef struct {
    ipk_swar_plan p;             /* weights, lanes' start, finish */
    int mode;                    /* IPK_VEC_* */
    uint32_t col_start[3];       /* 3x3 DIRECT: start of the column sums of kx = 0, 1, 2 (one lane) */
} ipk_vec_plan;

/* Bytes of a loaded 16-byte piece (q0..q3) and its edge word into a split row. */
IPK_HD void ipk_vec_split(uint32_t q0, uint32_t q1, uint32_t q2, uint32_t q3, uint32_t edge, uint32_t *a)
{
    const uint32_t q[4] = { q0, q1, q2, q3 };
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        a[m] = q[m] & 0x00ff00ffu;
        a[4 + m] = ipk_swar_perm(q[m], 0, 0x4341);
    }
    a[IPK_VEC_EDGE] = edge;
}

/* The edge word from the byte a warp-edge lane loaded: x-1 (first lane) to the high lane. */
IPK_HD uint32_t ipk_vec_edge(uint32_t byte, int first_lane) { return first_lane ? byte << 16 : byte; }

/* v[i] = start + c0 * a0[i] + c1 * a1[i] + c2 * a2[i], a0 the top row. */
IPK_HD void ipk_vec_vsum(const uint32_t *a0, const uint32_t *a1, const uint32_t *a2, uint32_t c0, uint32_t c1,
                         uint32_t c2, uint32_t start, uint32_t *v)
{
    IPK_UNROLL
    for (int i = 0; i < IPK_VEC_WORDS; i++) v[i] = start + c0 * a0[i] + c1 * a1[i] + c2 * a2[i];
}

/* Column sums at (4m-1, 4m+1): left holds column x-1 in its high lane (the left neighbour's
 * v[7], or the edge word). */
IPK_HD uint32_t ipk_vec_odd_left(const uint32_t *v, uint32_t left, int m)
{
    return ipk_swar_perm(m == 0 ? left : v[4 + m - 1], v[4 + m], 0x5432);
}

/* Column sums at (4m+2, 4m+4): right holds column x+16 in its low lane (the right neighbour's
 * v[0], or the edge word). */
IPK_HD uint32_t ipk_vec_even_right(const uint32_t *v, uint32_t right, int m)
{
    return ipk_swar_perm(v[m], m == 3 ? right : v[m + 1], 0x5432);
}

/* Separable or unit: acc = start + r0 * v(x-1) + r1 * v(x) + r2 * v(x+1), lanes as convolve_swar.h. */
IPK_HD void ipk_vec_hsum(const uint32_t *v, uint32_t left, uint32_t right, uint32_t r0, uint32_t r1, uint32_t r2,
                         uint32_t start, uint32_t *acc)
{
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        acc[m] = start + r0 * ipk_vec_odd_left(v, left, m) + r1 * v[m] + r2 * v[4 + m];
        acc[4 + m] = start + r0 * v[m] + r1 * v[4 + m] + r2 * ipk_vec_even_right(v, right, m);
    }
}

/* Direct: acc = c0(x-1) + c1(x) + c2(x+1), the column sums of the kernel's three columns (their
 * starts already in them); left from c0, right from c2. */
IPK_HD void ipk_vec_hsum_direct(const uint32_t *c0, const uint32_t *c1, const uint32_t *c2, uint32_t left,
                                uint32_t right, uint32_t *acc)
{
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        acc[m] = ipk_vec_odd_left(c0, left, m) + c1[m] + c2[4 + m];
        acc[4 + m] = c0[m] + c1[4 + m] + ipk_vec_even_right(c2, right, m);
    }
}

/* Radius 2 (5x5). The edge word of a split row or a column sum holds the two columns beyond the
 * warp's side, as a side word: x-2 (low lane) and x-1 (high lane) on the warp's first lane, x+16
 * and x+17 on its last. The other lanes take their side words from their neighbours. */
IPK_HD uint32_t ipk_vec5_edge(uint32_t low_byte, uint32_t high_byte) { return low_byte | high_byte << 16; }

/* The side word a thread gives its right neighbour: its columns 14 and 15. */
IPK_HD uint32_t ipk_vec5_to_right(const uint32_t *v) { return ipk_swar_perm(v[3], v[7], 0x7632); }

/* The side word a thread gives its left neighbour: its columns 0 and 1. */
IPK_HD uint32_t ipk_vec5_to_left(const uint32_t *v) { return ipk_swar_perm(v[0], v[4], 0x5410); }

/* v[i] += c * word i of one input row split (its bytes q0..q3 and edge word): the vertical pass,
 * a row at a time, so that no split row is kept. */
IPK_HD void ipk_vec5_vadd(uint32_t q0, uint32_t q1, uint32_t q2, uint32_t q3, uint32_t edge, uint32_t c, uint32_t *v)
{
    const uint32_t q[4] = { q0, q1, q2, q3 };
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        v[m] += c * (q[m] & 0x00ff00ffu);
        v[4 + m] += c * ipk_swar_perm(q[m], 0, 0x4341);
    }
    v[IPK_VEC_EDGE] += c * edge;
}

/* The word of column sums at (p, p+2), p = -2 .. 15; left and right are the side words. */
IPK_HD uint32_t ipk_vec5_cols(const uint32_t *v, uint32_t left, uint32_t right, int p)
{
    if (p == -2) return ipk_swar_perm(left, v[0], 0x5410);
    if (p == -1) return ipk_swar_perm(left, v[4], 0x5432);
    if (p == 14) return ipk_swar_perm(v[3], right, 0x5432);
    if (p == 15) return ipk_swar_perm(v[7], right, 0x7632);
    const int m = p >> 2, q = p & 3;
    return q == 0 ? v[m] : q == 1 ? v[4 + m] : q == 2 ? ipk_swar_perm(v[m], v[m + 1], 0x5432)
                                                      : ipk_swar_perm(v[4 + m], v[5 + m], 0x5432);
}

/* acc += r * the column sums d columns right of each output (d = -2 .. 2), lanes as convolve_swar.h. */
IPK_HD void ipk_vec5_hadd(const uint32_t *v, uint32_t left, uint32_t right, int d, uint32_t r, uint32_t *acc)
{
    IPK_UNROLL
    for (int m = 0; m < 4; m++) {
        acc[m] += r * ipk_vec5_cols(v, left, right, 4 * m + d);
        acc[4 + m] += r * ipk_vec5_cols(v, left, right, 4 * m + 1 + d);
    }
}

/* Mean with the shrink border: the sums run as with the zero border (only in-image pixels add),
 * and each output divides by its count of in-image pixels, floor((S + n/2) / n). Output word m
 * of the thread at column x of row y, radius r; the thread's pixels right of the image (not
 * stored) count 1. */
IPK_HD int ipk_vec_span(int i, int n, int r)
{
    const int span = (i + r < n - 1 ? i + r : n - 1) - (i > r ? i - r : 0) + 1;
    return span > 0 ? span : 1;
}

/* Whether a thread's outputs touch the image's edge, where shrink's counts are not (2r + 1)^2. */
IPK_HD int ipk_vec_at_edge(int x, int y, int width, int height, int r)
{
    return x == 0 || x + IPK_VEC_PX + r - 1 >= width || y < r || y >= height - r;
}

IPK_HD uint32_t ipk_vec_shrink_word(const uint32_t *acc, int m, int x, int y, int width, int height, int r)
{
    const uint32_t sums[4] = { acc[m] & 0xffffu, acc[4 + m] & 0xffffu, acc[m] >> 16, acc[4 + m] >> 16 };
    const uint32_t wy = (uint32_t)ipk_vec_span(y, height, r);
    uint32_t word = 0;
    IPK_UNROLL
    for (int k = 0; k < 4; k++) {
        const uint32_t n = wy * (uint32_t)ipk_vec_span(x + 4 * m + k, width, r);
        word |= ((sums[k] + n / 2) / n & 0xffu) << (8 * k);
    }
    return word;
}

/* Column starts of a direct 3x3 kernel: each covers its column's negative taps, the last takes the
 * rest of the plan's start (>= the sum of all negative taps, and start + positive taps fits). */
static inline void ipk_vec_direct_starts(ipk_vec_plan *v)
{
    uint32_t used = 0;
    for (int kx = 0; kx < 2; kx++) {
        uint32_t neg = 0;
        for (int ky = 0; ky < 3; ky++)
            if (v->p.w[ky * 3 + kx] < 0) neg += (uint32_t)(-v->p.w[ky * 3 + kx]) * 255u;
        v->col_start[kx] = neg;
        used += neg;
    }
    v->col_start[2] = v->p.start - used;
}

/* A 3x3 or 5x5 integer kernel with u8 output the 16-bit lanes hold (convolve_swar.h's planner); 0
 * otherwise. */
static inline int ipk_vec_plan_conv(const double *w, int kw, int kh, double divisor, double offset, ipk_vec_plan *v)
{
    memset(v, 0, sizeof *v);
    if (kw != kh || (kw != 3 && kw != 5) || !ipk_swar_plan_conv(w, kw, kh, divisor, offset, &v->p)) return 0;
    int unit = v->p.separable;
    for (int i = 0; i < kw; i++) unit &= v->p.row[i] == 1 && v->p.col[i] == 1;
    v->mode = unit ? IPK_VEC_UNIT : v->p.separable ? IPK_VEC_SEP : IPK_VEC_DIRECT;
    if (v->mode == IPK_VEC_DIRECT && kw == 3) ipk_vec_direct_starts(v);
    return 1;
}

/* Box mean of radius 1 or 2, floor((S + n/2) / n), n = 9 or 25. */
static inline void ipk_vec_plan_mean(int radius, ipk_vec_plan *v)
{
    memset(v, 0, sizeof *v);
    ipk_swar_plan_mean(2 * radius + 1, &v->p);
    v->mode = IPK_VEC_UNIT;
}
#endif
