/* The running-sum mean kernel's lane arithmetic (kernels/common/mean_runsum.h) run on the host as
 * kernels/gpu/mean_runsum.cuh runs it: warps of 32 lanes x 8 or 16 columns walking bands of rows,
 * vertical sums in 16-bit pairs, the warp's prefix in a modelled shared buffer (filled with noise
 * first, and every word an output reads must have been written for that row), lane k finishing
 * columns k + 32 i, byte buffers, the storing lanes' C bytes. Against the CPU mean, bit for bit:
 * radius 3 to 100, every border, widths around the warps' 224 / 480 output columns, 1x1, 1xN, Nx1,
 * images smaller than the window, pitches that are not the width, bands shorter than the window;
 * runs of 0 and 255 drive the sums to their extremes. Also the divisor plan at every radius. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "mean_runsum.h"

#define WARP IPK_RSUM_WARP

/* The lane's C bytes of input row y through the border (the kernel's load and gather alike). */
static void load_row(const ipk_img *src, int border, int x, int y, int c, uint32_t *w)
{
    memset(w, 0, (size_t)c / 4 * sizeof *w);
    const int yi = ipk_border_index(y, src->height, border);
    if (yi < 0) return;
    const uint8_t *row = (const uint8_t *)src->data + (ptrdiff_t)yi * src->stride;
    for (int b = 0; b < c; b++) {
        const int xi = ipk_border_index(x + b, src->width, border);
        if (xi >= 0) w[b / 4] |= (uint32_t)row[xi] << (8 * (b % 4));
    }
}

typedef struct {
    const ipk_rsum_geom *g;
    const ipk_img *src, *dst;
    int border, x_out, y0, band;
    uint32_t v[WARP][8];       /* each lane's c / 2 pairs */
    uint32_t *pbuf;
    unsigned char *written;    /* which words of pbuf this row wrote */
    uint8_t bbuf[WARP * 16];
    tu_rng *rng;
} warp_model;

/* Word `a` of the prefix buffer for an output column: inside, and written for this row. */
static uint32_t read_word(const warp_model *m, int a, int j)
{
    if (a < 0 || a >= m->g->pbuf_words) {
        CHECK(0, "read %d outside %d words (r=%d c=%d j=%d)", a, m->g->pbuf_words, m->g->radius, m->g->c, j);
        return 0;
    }
    CHECK(m->written[a], "column %d reads unwritten word %d (r=%d c=%d)", j, a, m->g->radius, m->g->c);
    return m->pbuf[a];
}

static uint32_t finish(const warp_model *m, uint32_t s, int xc, uint32_t span_y)
{
    const ipk_rsum_geom *g = m->g;
    if (m->border == IPK_SHRINK) {
        const int inside = xc >= 0 && xc < m->src->width;
        return ipk_rsum_finish(g, s, inside ? ipk_rsum_span(xc, m->src->width, g->radius) * span_y : g->n);
    }
    return g->shift ? ipk_rsum_full(g, s) : ipk_swar_umulhi(s + g->n / 2, g->mul);
}

/* own: each storing lane reads its columns' words at base + i (one further from the split on). */
static void finish_own(warp_model *m, int y)
{
    const ipk_rsum_geom *g = m->g;
    const int c = g->c, r = g->radius;
    const uint32_t span_y = ipk_rsum_span(y, m->src->height, r);
    for (int lane = 0; lane < WARP; lane++) {
        const int x = ipk_rsum_lane_x(g, m->x_out, lane);
        if (!ipk_rsum_is_out(g, lane * c) || x >= m->src->width) continue;
        int hs, ls;
        const int hb = ipk_rsum_own_base(g, lane, r, &hs), lb = ipk_rsum_own_base(g, lane, -r - 1, &ls);
        uint8_t *d = (uint8_t *)m->dst->data + (ptrdiff_t)y * m->dst->stride + x;
        for (int i = 0; i < c && x + i < m->src->width; i++) {
            const uint32_t hi = read_word(m, hb + i + (i >= hs), lane * c + i);
            const uint32_t lo = read_word(m, lb + i + (i >= ls), lane * c + i);
            d[i] = (uint8_t)finish(m, hi - lo, x + i, span_y);
        }
    }
}

/* One output row: prefix, shared buffer, lanes finishing k + 32 i, storing lanes' bytes. */
static void emit_row(warp_model *m, int y)
{
    const ipk_rsum_geom *g = m->g;
    const int c = g->c, r = g->radius;
    for (int i = 0; i < g->pbuf_words; i++) m->pbuf[i] = tu_next(m->rng);
    memset(m->written, 0, (size_t)g->pbuf_words);
    uint32_t before = 0;
    for (int lane = 0; lane < WARP; lane++) {
        uint32_t p[16];
        const uint32_t total = ipk_rsum_total(m->v[lane], c);
        ipk_rsum_prefix(m->v[lane], c, before, p);
        CHECK(p[c - 1] - before == total, "lane total %u against prefix %u", total, p[c - 1] - before);
        const int wb = ipk_rsum_addr(g, lane * c);
        CHECK((g->own || wb % 4 == 0) && wb + c <= g->pbuf_words, "write base %d of %d words", wb, g->pbuf_words);
        for (int i = 0; i < c; i++) {
            m->pbuf[wb + i] = p[i];
            m->written[wb + i] = 1;
        }
        before += total;
    }
    if (g->own) {
        finish_own(m, y);
        return;
    }
    const int step = ipk_rsum_read_step(c);
    const uint32_t span_y = ipk_rsum_span(y, m->src->height, r);
    for (int lane = 0; lane < WARP; lane++) {
        const int hi = ipk_rsum_addr(g, lane + r), lo = ipk_rsum_addr(g, lane - r - 1);
        for (int i = 0; i < c; i++) {
            const int j = lane + WARP * i, xc = m->x_out - g->halo + j;
            const int ha = hi + i * step, la = lo + i * step;
            if (ha < 0 || la < 0 || ha >= g->pbuf_words || la >= g->pbuf_words) {
                CHECK(0, "read %d or %d outside %d words (r=%d c=%d j=%d)", ha, la, g->pbuf_words, r, c, j);
                continue;
            }
            if (ipk_rsum_is_out(g, j) && xc < m->src->width)
                CHECK(m->written[ha] && m->written[la], "output column %d reads an unwritten word (r=%d c=%d)", j, r,
                      c);
            const uint32_t q = finish(m, m->pbuf[ha] - m->pbuf[la], xc, span_y);
            m->bbuf[j] = (uint8_t)q;
        }
    }
    for (int lane = 0; lane < WARP; lane++) {
        const int x = ipk_rsum_lane_x(g, m->x_out, lane);
        if (!ipk_rsum_is_out(g, lane * c) || x >= m->src->width) continue;
        uint8_t *d = (uint8_t *)m->dst->data + (ptrdiff_t)y * m->dst->stride + x;
        for (int b = 0; b < c && x + b < m->src->width; b++) d[b] = m->bbuf[lane * c + b];
    }
}

/* One warp's walk down its band: input row r enters at step r, leaves at step r + 2 radius + 1. */
static void run_warp(warp_model *m)
{
    const ipk_rsum_geom *g = m->g;
    const int c = g->c, k = 2 * g->radius + 1, j_first = m->y0 - g->radius;
    const int rows = m->band < m->src->height - m->y0 ? m->band : m->src->height - m->y0, n_in = rows + k - 1;
    memset(m->v, 0, sizeof m->v);
    for (int r = 0; r < n_in; r++) {
        for (int lane = 0; lane < WARP; lane++) {
            uint32_t enter[4], leave[4] = { 0, 0, 0, 0 };
            const int x = ipk_rsum_lane_x(g, m->x_out, lane);
            load_row(m->src, m->border, x, j_first + r, c, enter);
            if (r >= k) load_row(m->src, m->border, x, j_first + r - k, c, leave);
            ipk_rsum_vstep(m->v[lane], enter, leave, c / 4);
        }
        if (r >= k - 1) emit_row(m, m->y0 + r - (k - 1));
    }
}

static void check_case(int w, int h, int pad, int radius, int border, int c, int own, int band, tu_rng *rng)
{
    ipk_rsum_geom g;
    CHECK(ipk_rsum_geom_init(&g, c, radius, own), "geometry c=%d r=%d own=%d", c, radius, own);
    CHECK(g.halo >= radius + 1 && g.halo % c == 0 && g.out_w > 0 && g.out_w % c == 0, "halo %d out_w %d", g.halo,
          g.out_w);
    ipk_img src = tu_img_random(w, h, 1, IPK_U8, pad, rng);
    for (int y = 0; y < h; y++)   /* runs of 0 and 255 */
        for (int x = 0; x < w; x += 1 + (int)(tu_next(rng) % 23))
            for (int n = (int)(tu_next(rng) % 40), v = (tu_next(rng) & 1) ? 255 : 0; n > 0 && x < w; n--, x++)
                *(uint8_t *)tu_px(&src, x, y, 0) = (uint8_t)v;
    ipk_img cpu = tu_img_zeros(w, h, 1, IPK_U8, 3), got = tu_img_zeros(w, h, 1, IPK_U8, 5);
    CHECK(ipk_mean_cpu(&src, &cpu, radius, (ipk_border)border, 1) == IPK_OK, "cpu mean");
    memset(got.data, 0xa5, (size_t)got.stride * (size_t)h);
    warp_model m;
    memset(&m, 0, sizeof m);
    m.g = &g;
    m.src = &src;
    m.dst = &got;
    m.border = border;
    m.band = band;
    m.rng = rng;
    m.pbuf = malloc((size_t)g.pbuf_words * sizeof *m.pbuf);
    m.written = malloc((size_t)g.pbuf_words);
    for (m.y0 = 0; m.y0 < h; m.y0 += band)
        for (m.x_out = 0; m.x_out < w; m.x_out += g.out_w) run_warp(&m);
    CHECK(tu_max_diff(&got, &cpu) == 0, "%dx%d pad %d r=%d border=%d c=%d own=%d band=%d: max diff %g", w, h, pad,
          radius, border, c, own, band, tu_max_diff(&got, &cpu));
    free(m.pbuf);
    free(m.written);
    tu_img_free(&src);
    tu_img_free(&cpu);
    tu_img_free(&got);
}

/* floor((s + n/2) / n) for every window sum s at radii up to 40; beyond, at every s where the
 * quotient steps (the multiply's error is largest just below a step) and at the top. */
static void check_divisor(void)
{
    for (int r = 1; r <= IPK_RSUM_MAX_RADIUS; r++) {
        ipk_rsum_geom g;
        if (!ipk_rsum_geom_init(&g, 16, r, 0) && !ipk_rsum_geom_init(&g, 8, r, 0)) {
            CHECK(0, "no geometry at radius %d", r);
            continue;
        }
        const uint32_t n = g.n, top = 255 * n;
        int bad = 0;
        if (r <= 40) {
            for (uint32_t s = 0; s <= top && !bad; s++) bad = ipk_rsum_full(&g, s) != (s + n / 2) / n;
        } else {
            for (uint32_t q = 0; q <= 256 && !bad; q++)
                for (int d = -2; d <= 1 && !bad; d++) {
                    const long long a = (long long)q * n + d - n / 2;
                    if (a < 0 || a > top) continue;
                    bad = ipk_rsum_full(&g, (uint32_t)a) != ((uint32_t)a + n / 2) / n;
                }
            bad = bad || ipk_rsum_full(&g, top) != 255;
        }
        CHECK(!bad, "divisor plan at radius %d (mul %u shift %d)", r, g.mul, g.shift);
    }
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 1431);
    check_divisor();
    ipk_rsum_geom g;
    CHECK(!ipk_rsum_geom_init(&g, 4, 15, 0) && !ipk_rsum_geom_init(&g, 16, 0, 0) &&
              !ipk_rsum_geom_init(&g, 16, 101, 1),
          "geometry refuses c=4, radius 0 and 101");
    const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 29, 1 }, { 2, 3 }, { 31, 40 }, { 97, 23 }, { 223, 9 },
                             { 224, 7 }, { 225, 35 }, { 479, 6 }, { 480, 11 }, { 481, 5 }, { 961, 4 },
                             { 1031, 3 } };
    const int radii[] = { 3, 4, 7, 15, 16, 25, 31, 32, 50, 100 };
    const int bands[] = { 3, 64, 256, 17 };
    int k = 0;
    for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
            for (int border = IPK_REPLICATE; border <= IPK_SHRINK; border++, k++) {
                const int c = k % 3 ? 16 : 8, band = bands[k % 4];
                if (radii[ri] > 40 && k % 2) continue;
                check_case(sizes[si][0], sizes[si][1], 1 + k % 13, radii[ri], border, c, 0, band, &rng);
                check_case(sizes[si][0], sizes[si][1], 2 + k % 11, radii[ri], border, 24 - c, 1, bands[(k + 1) % 4],
                           &rng);
            }
    for (int border = IPK_REPLICATE; border <= IPK_SHRINK; border++) {
        for (int own = 0; own <= 1; own++) {
            check_case(1000, 70, 0, 15, border, 16, own, 32, &rng);
            check_case(1000, 70, 0, 15, border, 8, own, 64, &rng);
            check_case(700, 90, 24, 25, border, 16, own, 40, &rng);
            check_case(523, 61, 7, 7, border, 8, own, 20, &rng);
        }
    }
    return tu_finish();
}
