/* The running-sum mean kernel's lane arithmetic (kernels/gpu/mean_runsum.cuh), host and device
 * alike, so that test_mean_runsum runs it lane by lane against the CPU mean.
 *
 * A warp owns 32 * C adjacent input columns (C = 8 or 16 a lane, one 8- or 16-byte load a row)
 * and walks a band of rows down them. Each lane keeps the vertical window sums of its C columns
 * as 16-bit pairs ((2r+1) * 255 fits for r <= 100): add the entering row, subtract the leaving
 * one. Per output row the lanes scan their sums into a prefix P over the warp's columns, write it
 * to shared memory, and lane k finishes the columns j = k + 32 i from P[j + r] - P[j - r - 1]
 * (consecutive lanes read consecutive words, immediate offsets; chunks padded for 16-byte writes,
 * which leaves a 2-way bank conflict on some reads), then bytes go through a byte buffer to each
 * lane's own C columns. The `own` layout instead has each lane finish its own C columns from
 * chunks c + 1 words apart (scalar writes and reads, free of conflicts, no byte buffer). A warp
 * keeps the outputs that see their whole window: halo columns each side, r + 1 rounded up to C. */
#ifndef IPK_MEAN_RUNSUM_H
#define IPK_MEAN_RUNSUM_H
#include <stdint.h>
#include "swar_ops.h"

#define IPK_RSUM_WARP 32
#define IPK_RSUM_PAD 4          /* words after each lane's C prefixes: 16-byte stores free of conflicts */
#define IPK_RSUM_MAX_RADIUS 100

typedef struct {
    int c;             /* columns a lane: 8 or 16 */
    int radius;
    int halo;          /* radius + 1 rounded up to c */
    int out_w;         /* output columns a warp: 32 c - 2 halo */
    int own;           /* 1: each lane finishes its own c columns (below), 0: columns k + 32 i */
    int stride;        /* words a chunk of c columns takes in a prefix buffer */
    int pbuf_words;    /* one prefix buffer in shared memory */
    uint32_t n;        /* the full window, (2r + 1)^2 */
    uint32_t mul;      /* floor((s + n/2) / n) == umulhi(s + n/2, mul) >> shift for every sum s */
    int shift;
} ipk_rsum_geom;

/* floor(a / n) == umulhi(a, m) >> t for a <= a_max when a_max * e < 2^(32+t), e = m n - 2^(32+t)
 * (the error a e / (n 2^(32+t)) stays under 1/n). The smallest t with m < 2^32 that passes. */
IPK_HD int ipk_rsum_set_div(ipk_rsum_geom *g)
{
    const uint64_t a_max = 255ull * g->n + g->n / 2;
    for (int t = 0; t < 32; t++) {
        const uint64_t p = 1ull << (32 + t), m = (p + g->n - 1) / g->n, e = m * g->n - p;
        if (m > 0xffffffffull) return 0;
        if (a_max * e < p) {
            g->mul = (uint32_t)m;
            g->shift = t;
            return 1;
        }
    }
    return 0;
}

/* 0 when c or the radius is not one the kernel takes. own: the layout where each lane finishes its
 * own columns, chunks c + 1 words apart (an odd stride: the lanes' scalar writes and reads fall on
 * 32 banks), no byte buffer; else chunks c + IPK_RSUM_PAD apart (16-byte writes). */
IPK_HD int ipk_rsum_geom_init(ipk_rsum_geom *g, int c, int radius, int own)
{
    if ((c != 8 && c != 16) || radius < 1 || radius > IPK_RSUM_MAX_RADIUS) return 0;
    g->c = c;
    g->radius = radius;
    g->halo = (radius + 1 + c - 1) / c * c;
    g->out_w = IPK_RSUM_WARP * c - 2 * g->halo;
    g->own = own != 0;
    g->stride = c + (own ? 1 : IPK_RSUM_PAD);
    g->pbuf_words = ((IPK_RSUM_WARP + 2 * g->halo / c) * g->stride + 3) / 4 * 4;
    g->n = (uint32_t)(2 * radius + 1) * (uint32_t)(2 * radius + 1);
    return g->out_w > 0 && ipk_rsum_set_div(g);
}

/* Words of shared memory a warp uses: two prefix buffers and (not own) two byte buffers of 32 c
 * bytes. */
IPK_HD int ipk_rsum_warp_words(const ipk_rsum_geom *g) { return 2 * g->pbuf_words + (g->own ? 0 : 2 * 8 * g->c); }

/* Word of column a (-halo <= a < 32 c + halo, warp-relative) in a prefix buffer: chunks of c
 * columns, `stride` words apart, halo / c chunks before column 0 for the reads left of it. */
IPK_HD int ipk_rsum_addr(const ipk_rsum_geom *g, int a)
{
    const int s = a + g->halo;
    return s / g->c * g->stride + s % g->c;
}

/* own: the word of column lane * c + off + i (i < c) is base + i, plus 1 from i = *split on (the
 * columns cross into the next chunk there); off is r or -r - 1. */
IPK_HD int ipk_rsum_own_base(const ipk_rsum_geom *g, int lane, int off, int *split)
{
    const int u = off + g->halo;
    *split = g->c - u % g->c;
    return lane * g->stride + u + u / g->c;
}

/* Words from column a to a + 32 (32 / c whole chunks); a kernel passes c as a constant, so that
 * every read is its base plus an immediate. */
IPK_HD int ipk_rsum_read_step(int c) { return IPK_RSUM_WARP + IPK_RSUM_WARP / c * IPK_RSUM_PAD; }

/* First input column of lane `lane` of the warp whose outputs start at x_out. */
IPK_HD int ipk_rsum_lane_x(const ipk_rsum_geom *g, int x_out, int lane) { return x_out - g->halo + lane * g->c; }

/* Whether warp column j (0 .. 32c - 1) is one of the warp's outputs. */
IPK_HD int ipk_rsum_is_out(const ipk_rsum_geom *g, int j) { return j >= g->halo && j < g->halo + g->out_w; }

/* Bytes 0,1 and 2,3 of w as 16-bit pairs. */
IPK_HD uint32_t ipk_rsum_lo(uint32_t w) { return ipk_swar_perm(w, 0, 0x4140); }
IPK_HD uint32_t ipk_rsum_hi(uint32_t w) { return ipk_swar_perm(w, 0, 0x4342); }

/* The vertical sums (c / 2 pairs) take the entering row and drop the leaving one (c / 4 words
 * each). No pair leaves 0 .. 65535 on the way: the sum plus a row is at most 2r + 2 rows of 255. */
IPK_HD void ipk_rsum_vstep(uint32_t *v, const uint32_t *enter, const uint32_t *leave, int words)
{
    IPK_UNROLL
    for (int w = 0; w < words; w++) {
        v[2 * w] = v[2 * w] + ipk_rsum_lo(enter[w]) - ipk_rsum_lo(leave[w]);
        v[2 * w + 1] = v[2 * w + 1] + ipk_rsum_hi(enter[w]) - ipk_rsum_hi(leave[w]);
    }
}

/* c + the low pair of v weighed by the bytes 0 and 1 of b (__dp2a_lo). */
IPK_HD uint32_t ipk_rsum_dp2(uint32_t v, uint32_t b, uint32_t c)
{
#ifdef __CUDA_ARCH__
    return __dp2a_lo(v, b, c);
#else
    return c + (v & 0xffffu) * (b & 0xffu) + (v >> 16) * ((b >> 8) & 0xffu);
#endif
}

/* Sum of the lane's c column sums (c / 2 pairs). */
IPK_HD uint32_t ipk_rsum_total(const uint32_t *v, int c)
{
    uint32_t total = 0;
    IPK_UNROLL
    for (int m = 0; m < c / 2; m++) total = ipk_rsum_dp2(v[m], 0x0101u, total);
    return total;
}

/* Inclusive prefix of the lane's c column sums (c / 2 pairs) on top of `before` (the lanes to its
 * left), two columns a step. */
IPK_HD void ipk_rsum_prefix(const uint32_t *v, int c, uint32_t before, uint32_t *p)
{
    IPK_UNROLL
    for (int m = 0; m < c / 2; m++) {
        p[2 * m] = ipk_rsum_dp2(v[m], 0x0001u, before);
        p[2 * m + 1] = ipk_rsum_dp2(v[m], 0x0101u, before);
        before = p[2 * m + 1];
    }
}

/* floor((s + n/2) / n) for a full window (shift is 0 up to radius 34: a kernel may leave it out). */
IPK_HD uint32_t ipk_rsum_full(const ipk_rsum_geom *g, uint32_t s)
{
    return ipk_swar_umulhi(s + g->n / 2, g->mul) >> g->shift;
}

/* The shrink border's count of in-image positions among i - r .. i + r. */
IPK_HD uint32_t ipk_rsum_span(int i, int n, int r)
{
    const int lo = i - r < 0 ? 0 : i - r, hi = i + r > n - 1 ? n - 1 : i + r;
    return (uint32_t)(hi - lo + 1);
}

/* floor((s + count/2) / count): the full window's multiply, or a division where the shrink
 * border cuts the window. */
IPK_HD uint32_t ipk_rsum_finish(const ipk_rsum_geom *g, uint32_t s, uint32_t count)
{
    return count == g->n ? ipk_rsum_full(g, s) : (s + count / 2) / count;
}

#endif
