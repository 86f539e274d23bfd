/* The GPU vec kernel's lane arithmetic (kernels/common/convolve_vec.h) run on the host as the kernel
 * runs it: warps of 32 threads x 16 pixels, edge words on the warps' first and last lanes,
 * neighbours' column sums where the kernel shuffles; against the CPU convolve and mean for every
 * mode (unit, separable, direct), every finish kind, signed weights, every border (mean's shrink
 * with its own counts at the edges), widths around the 16-pixel groups and 512-pixel warps, and
 * images with runs of 0 and 255; 3x3 and 5x5 (two side columns, a column pass per kernel column
 * for direct 5x5 kernels). Also which kernels the planner takes and which mode it picks. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "convolve_vec.h"

#define WARP 32

typedef struct { const char *name; double w[9]; double divisor, offset; int mode; } vec_case;
typedef struct { const char *name; double w[25]; double divisor, offset; int mode; } vec5_case;

/* mode: the one the planner must pick, or -1 when it must refuse the kernel. */
static const vec_case CASES[] = {
    { "box3", { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 9, 0, IPK_VEC_UNIT },
    { "box3 /8 +3", { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 8, 3, IPK_VEC_UNIT },
    { "gaussian3", { 1, 2, 1, 2, 4, 2, 1, 2, 1 }, 16, 0, IPK_VEC_SEP },
    { "negated gaussian3 /-16 (split with one negative factor)", { -1, -2, -1, -2, -4, -2, -1, -2, -1 }, -16, 0,
      IPK_VEC_DIRECT },
    { "separable (3 0 1)(1 2 5) /7", { 3, 6, 15, 0, 0, 0, 1, 2, 5 }, 7, 0, IPK_VEC_SEP },
    { "sharpen", { 0, -1, 0, -1, 5, -1, 0, -1, 0 }, 1, 0, IPK_VEC_DIRECT },
    { "laplacian+128", { 0, 1, 0, 1, -4, 1, 0, 1, 0 }, 1, 128, IPK_VEC_DIRECT },
    { "sobel-x", { -1, 0, 1, -2, 0, 2, -1, 0, 1 }, 1, 0, IPK_VEC_DIRECT },
    { "sobel-y/2+0.5", { -1, -2, -1, 0, 0, 0, 1, 2, 1 }, 2, 0.5, IPK_VEC_DIRECT },
    { "emboss+128", { -2, -1, 0, -1, 1, 1, 0, 1, 2 }, 1, 128, IPK_VEC_DIRECT },
    { "ties /-8 +300", { 3, 5, 1, 0, 2, 0, 1, 0, 4 }, -8, 300, IPK_VEC_DIRECT },
    { "/4 -300", { 1, 1, 1, 1, 80, 1, 1, 1, 1 }, 4, -300, IPK_VEC_DIRECT },
    { "/4 +70000", { 1, 1, 1, 1, 8, 1, 1, 1, 1 }, 4, 70000, IPK_VEC_DIRECT },
    { "odd /7 -20", { -1, 4, 2, 0, 1, 0, 2, 2, 2 }, 7, -20, IPK_VEC_DIRECT },
    { "fractional divisor", { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 2.5, 0, IPK_VEC_DIRECT },
    { "at the lane limit", { 28, 28, 28, 28, 32, 28, 28, 28, 28 }, 256, 0, IPK_VEC_DIRECT },
    { "signed at the lane limit", { 14, -14, 14, -14, 16, -14, 14, -14, 14 }, 64, 128, IPK_VEC_DIRECT },
    { "over the lane limit", { 29, 29, 29, 29, 29, 29, 29, 29, 29 }, 256, 0, -1 },
    { "fractional weights", { 0.5, 1, 0.5, 1, 2, 1, 0.5, 1, 0.5 }, 8, 0, -1 },
};

static uint32_t px_u8(const ipk_img *src, int x, int y, int border)
{
    int sx = ipk_border_index(x, src->width, border), sy = ipk_border_index(y, src->height, border);
    return sx < 0 || sy < 0 ? 0u : (uint32_t)*(const uint8_t *)tu_px(src, sx, sy, 0);
}

/* Split row y for the thread at column x (lane `lane` of its warp). */
static void split_row(const ipk_img *src, int x, int y, int border, int lane, uint32_t *a)
{
    uint32_t q[4] = { 0, 0, 0, 0 };
    for (int b = 0; b < 16; b++) q[b / 4] |= px_u8(src, x + b, y, border) << (8 * (b % 4));
    uint32_t edge = 0;
    if (lane == 0) edge = ipk_vec_edge(px_u8(src, x - 1, y, border), 1);
    if (lane == WARP - 1) edge = ipk_vec_edge(px_u8(src, x + IPK_VEC_PX, y, border), 0);
    ipk_vec_split(q[0], q[1], q[2], q[3], edge, a);
}

/* Column sums of kernel column kx (DIRECT) or of the separable column factor, for one lane. */
static void column_sums(const ipk_vec_plan *v, uint32_t a[3][IPK_VEC_WORDS], int kx, uint32_t *out)
{
    const ipk_swar_plan *p = &v->p;
    if (v->mode == IPK_VEC_UNIT) ipk_vec_vsum(a[0], a[1], a[2], 1, 1, 1, 0, out);
    else if (v->mode == IPK_VEC_SEP)
        ipk_vec_vsum(a[0], a[1], a[2], (uint32_t)p->col[0], (uint32_t)p->col[1], (uint32_t)p->col[2], 0, out);
    else
        ipk_vec_vsum(a[0], a[1], a[2], (uint32_t)p->w[kx], (uint32_t)p->w[3 + kx], (uint32_t)p->w[6 + kx],
                     v->col_start[kx] * IPK_SWAR_LANES, out);
}

/* The thread's 16 output bytes at (x, y) from its accumulator, as the kernel finishes them. */
static void store_outputs(const ipk_img *dst, const ipk_vec_plan *v, const uint32_t *acc, int border, int x, int y)
{
    const ipk_swar_plan *p = &v->p;
    const int r = p->k / 2, shrink = p->fin == IPK_SWAR_FIN_MEAN && border == IPK_SHRINK;
    uint8_t out[16];
    for (int j = 0; j < 4; j++) {
        uint32_t word = shrink && ipk_vec_at_edge(x, y, dst->width, dst->height, r)
                            ? ipk_vec_shrink_word(acc, j, x, y, dst->width, dst->height, r)
                            : ipk_swar_out_word(p, p->fin, acc, j);
        memcpy(out + 4 * j, &word, 4);   /* little-endian: pixel 4j in the low byte */
    }
    for (int i = 0; i < 16 && x + i < dst->width; i++) *(uint8_t *)tu_px(dst, x + i, y, 0) = out[i];
}

/* One output row of one warp, as the kernel computes it. */
static void model_warp_row(const ipk_img *src, const ipk_img *dst, const ipk_vec_plan *v, int border, int x0, int y)
{
    static uint32_t cs[3][WARP][IPK_VEC_WORDS];
    const int ncols = v->mode == IPK_VEC_DIRECT ? 3 : 1;
    for (int lane = 0; lane < WARP; lane++) {
        uint32_t a[3][IPK_VEC_WORDS];
        for (int ky = 0; ky < 3; ky++) split_row(src, x0 + IPK_VEC_PX * lane, y + ky - 1, border, lane, a[ky]);
        for (int kx = 0; kx < ncols; kx++) column_sums(v, a, kx, cs[kx][lane]);
    }
    const ipk_swar_plan *p = &v->p;
    for (int lane = 0; lane < WARP; lane++) {
        const int x = x0 + IPK_VEC_PX * lane, lc = 0, rc = ncols - 1;
        if (x >= src->width) break;
        const uint32_t left = lane == 0 ? cs[lc][0][IPK_VEC_EDGE] : cs[lc][lane - 1][7];
        const uint32_t right = lane == WARP - 1 ? cs[rc][lane][IPK_VEC_EDGE] : cs[rc][lane + 1][0];
        uint32_t acc[8];
        if (v->mode == IPK_VEC_UNIT)
            ipk_vec_hsum(cs[0][lane], left, right, 1, 1, 1, p->start * IPK_SWAR_LANES, acc);
        else if (v->mode == IPK_VEC_SEP)
            ipk_vec_hsum(cs[0][lane], left, right, (uint32_t)p->row[0], (uint32_t)p->row[1], (uint32_t)p->row[2],
                         p->start * IPK_SWAR_LANES, acc);
        else
            ipk_vec_hsum_direct(cs[0][lane], cs[1][lane], cs[2][lane], left, right, acc);
        store_outputs(dst, v, acc, border, x, y);
    }
}

/* 5x5: split row y+ky-2 (DIRECT) or the column sums of rows y-2 .. y+2 added one at a time (UNIT,
 * SEP) for the thread at column x. */
static void words5(const ipk_img *src, const ipk_vec_plan *v, int border, int lane, int x, int y, int ky, uint32_t *out)
{
    memset(out, 0, IPK_VEC_WORDS * sizeof *out);
    for (int r = 0; r < 5; r++) {
        if (v->mode == IPK_VEC_DIRECT && r != ky) continue;
        const int yy = y + r - 2;
        uint32_t q[4] = { 0, 0, 0, 0 }, edge = 0;
        for (int b = 0; b < 16; b++) q[b / 4] |= px_u8(src, x + b, yy, border) << (8 * (b % 4));
        if (lane == 0) edge = ipk_vec5_edge(px_u8(src, x - 2, yy, border), px_u8(src, x - 1, yy, border));
        if (lane == WARP - 1)
            edge = ipk_vec5_edge(px_u8(src, x + IPK_VEC_PX, yy, border), px_u8(src, x + IPK_VEC_PX + 1, yy, border));
        if (v->mode == IPK_VEC_DIRECT) ipk_vec_split(q[0], q[1], q[2], q[3], edge, out);
        else ipk_vec5_vadd(q[0], q[1], q[2], q[3], edge, v->mode == IPK_VEC_UNIT ? 1u : (uint32_t)v->p.col[r], out);
    }
}

/* One 5x5 output row of one warp, as the kernel computes it: side words from the neighbours'
 * words (the shuffles) or the edge word. */
static void model5_warp_row(const ipk_img *src, const ipk_img *dst, const ipk_vec_plan *v, int border, int x0, int y)
{
    static uint32_t ws[5][WARP][IPK_VEC_WORDS];
    const int passes = v->mode == IPK_VEC_DIRECT ? 5 : 1;
    for (int lane = 0; lane < WARP; lane++)
        for (int ky = 0; ky < passes; ky++) words5(src, v, border, lane, x0 + IPK_VEC_PX * lane, y, ky, ws[ky][lane]);
    const ipk_swar_plan *p = &v->p;
    for (int lane = 0; lane < WARP; lane++) {
        const int x = x0 + IPK_VEC_PX * lane;
        if (x >= src->width) break;
        uint32_t acc[8];
        for (int i = 0; i < 8; i++) acc[i] = p->start * IPK_SWAR_LANES;
        for (int ky = 0; ky < passes; ky++) {
            const uint32_t left = lane == 0 ? ws[ky][0][IPK_VEC_EDGE] : ipk_vec5_to_right(ws[ky][lane - 1]);
            const uint32_t right = lane == WARP - 1 ? ws[ky][lane][IPK_VEC_EDGE] : ipk_vec5_to_left(ws[ky][lane + 1]);
            for (int d = 0; d < 5; d++) {
                const int32_t r = v->mode == IPK_VEC_DIRECT ? p->w[ky * 5 + d] : v->mode == IPK_VEC_SEP ? p->row[d] : 1;
                ipk_vec5_hadd(ws[ky][lane], left, right, d - 2, (uint32_t)r, acc);
            }
        }
        store_outputs(dst, v, acc, border, x, y);
    }
}

static void model(const ipk_img *src, const ipk_img *dst, const ipk_vec_plan *v, int border)
{
    for (int y = 0; y < src->height; y++)
        for (int x0 = 0; x0 < src->width; x0 += WARP * IPK_VEC_PX)
            if (v->p.k == 5) model5_warp_row(src, dst, v, border, x0, y);
            else model_warp_row(src, dst, v, border, x0, y);
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 2, 2 }, { 3, 5 }, { 16, 3 }, { 17, 6 }, { 18, 4 },
                                { 31, 2 }, { 97, 13 }, { 511, 4 }, { 512, 3 }, { 513, 5 }, { 514, 2 }, { 1031, 3 } };
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static void check_against_cpu(const char *name, const ipk_vec_plan *v, const double *w, double divisor, double offset,
                              int mean, tu_rng *rng)
{
    for (int s = 0; s < N_SIZES; s++)
        for (int border = 0; border < 4; border++) {
            ipk_img src = tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng);
            ipk_img want = tu_img_zeros(src.width, src.height, 1, IPK_U8, 0);
            ipk_img got = tu_img_zeros(src.width, src.height, 1, IPK_U8, 5);
            const int k = v->p.k;
            ipk_conv_params cp = { w, k, k, divisor, offset, (ipk_border)border };
            int rc = mean ? ipk_mean_cpu(&src, &want, k / 2, (ipk_border)border, 1)
                          : ipk_convolve_cpu(&src, &want, &cp, 1);
            CHECK(rc == IPK_OK, "%s: cpu", name);
            model(&src, &got, v, border);
            CHECK(tu_max_diff(&got, &want) == 0, "%s mode %d fin %d %dx%d border %d: lanes differ from the CPU by %g",
                  name, v->mode, v->p.fin, src.width, src.height, border, tu_max_diff(&got, &want));
            tu_img_free(&src);
            tu_img_free(&want);
            tu_img_free(&got);
        }
}

/* A k x k kernel the planner must take in `mode` (or refuse, mode -1); what it takes must match. */
static void check_kernel(const char *name, const double *w, int k, double divisor, double offset, int mode, tu_rng *rng,
                         int *fins_seen)
{
    ipk_vec_plan v;
    int ok = ipk_vec_plan_conv(w, k, k, divisor, offset, &v);
    CHECK(ok == (mode >= 0), "%s: planner %s", name, ok ? "took it" : "refused it");
    if (!ok || mode < 0) return;
    CHECK(v.mode == mode, "%s: mode %d, expected %d", name, v.mode, mode);
    fins_seen[v.p.fin] = 1;
    check_against_cpu(name, &v, w, divisor, offset, 0, rng);
}

static void check_case(const vec_case *c, tu_rng *rng, int *fins_seen)
{
    check_kernel(c->name, c->w, 3, c->divisor, c->offset, c->mode, rng, fins_seen);
}

/* Random integer 3x3 kernels, half of them separable: whatever the planner takes must match. */
static void check_random(tu_rng *rng, int *fins_seen)
{
    int taken = 0;
    for (int t = 0; t < 80; t++) {
        vec_case c = { "random", { 0 }, 1, 0, 0 };
        const int span = 1 + (int)(tu_next(rng) % 12);
        if (t % 2) {
            double col[3], row[3];
            for (int i = 0; i < 3; i++) {
                col[i] = (double)(tu_next(rng) % (uint64_t)(span + 1));
                row[i] = (double)(tu_next(rng) % (uint64_t)(span + 1));
            }
            for (int i = 0; i < 9; i++) c.w[i] = col[i / 3] * row[i % 3];
        } else {
            for (int i = 0; i < 9; i++) c.w[i] = (double)((int)(tu_next(rng) % (uint64_t)(2 * span + 1)) - span);
        }
        static const double divisors[] = { 1, 2, 8, 3, -4, 6, 0.75, 16 }, offsets[] = { 0, 128, -3, 2.5 };
        c.divisor = divisors[tu_next(rng) % 8];
        c.offset = offsets[tu_next(rng) % 4];
        ipk_vec_plan v;
        if (!ipk_vec_plan_conv(c.w, 3, 3, c.divisor, c.offset, &v)) continue;
        taken++;
        c.mode = v.mode;
        check_case(&c, rng, fins_seen);
    }
    CHECK(taken >= 30, "the planner took only %d of 80 random kernels", taken);
}

static void outer5(const double *col, const double *row, double *w)
{
    for (int i = 0; i < 25; i++) w[i] = col[i / 5] * row[i % 5];
}

/* Named 5x5 kernels: gaussian5, box5, separable ones with zeros, signed direct ones, every finish,
 * sums at and past the lanes' limit. */
static void check_named5(tu_rng *rng, int *fins_seen)
{
    static vec5_case cases[] = {
        { "gaussian5", { 0 }, 256, 0, IPK_VEC_SEP },
        { "box5 /25", { 0 }, 25, 0, IPK_VEC_UNIT },
        { "box5 /16 +3", { 0 }, 16, 3, IPK_VEC_UNIT },
        { "separable (3 1 0 1 2)(1 2 0 2 1) /7 -5", { 0 }, 7, -5, IPK_VEC_SEP },
        { "negated gaussian5 /-256", { 0 }, -256, 0, IPK_VEC_DIRECT },
        { "laplacian of gaussian5 +128",
          { 0, 0, -1, 0, 0, 0, -1, -2, -1, 0, -1, -2, 16, -2, -1, 0, -1, -2, -1, 0, 0, 0, -1, 0, 0 }, 1, 128,
          IPK_VEC_DIRECT },
        { "sharpen5 /8",
          { -1, -1, -1, -1, -1, -1, 2, 2, 2, -1, -1, 2, 8, 2, -1, -1, 2, 2, 2, -1, -1, -1, -1, -1, -1 }, 8, 0,
          IPK_VEC_DIRECT },
        { "ties /-8 +300", { 3, 5, 1, 0, 2, 0, 1, 0, 4, 0, 1, 2, 3, 0, 0, 1, 0, 0, 2, 0, 5, 0, 1, 0, 1 }, -8, 300,
          IPK_VEC_DIRECT },
        { "odd /9 -20", { -1, 4, 2, 0, 1, 0, 2, 2, 2, -3, 1, 1, 9, 1, 1, -2, 0, 3, 0, 0, 1, 2, -1, 2, 1 }, 9, -20,
          IPK_VEC_DIRECT },
        { "fractional divisor", { 0 }, 2.5, 0.5, IPK_VEC_DIRECT },
        { "at the lane limit", { 0 }, 256, 0, IPK_VEC_DIRECT },
        { "signed at the lane limit", { 0 }, 64, 128, IPK_VEC_DIRECT },
        { "over the lane limit", { 0 }, 256, 0, -1 },
    };
    static const double b5[5] = { 1, 4, 6, 4, 1 }, nb5[5] = { -1, -4, -6, -4, -1 }, ones[5] = { 1, 1, 1, 1, 1 };
    static const double ca[5] = { 3, 1, 0, 1, 2 }, ra[5] = { 1, 2, 0, 2, 1 };
    outer5(b5, b5, cases[0].w);
    outer5(ones, ones, cases[1].w);
    outer5(ones, ones, cases[2].w);
    outer5(ca, ra, cases[3].w);
    outer5(nb5, b5, cases[4].w);
    for (int i = 0; i < 25; i++) {
        cases[9].w[i] = (double)(i % 7) - 1;
        cases[10].w[i] = i == 12 ? 17 : 10;   /* sum 257: 257 * 255 = 65535 */
        cases[11].w[i] = i == 12 ? 17 : i % 2 ? -10 : 10;
        cases[12].w[i] = 11;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_kernel(cases[i].name, cases[i].w, 5, cases[i].divisor, cases[i].offset, cases[i].mode, rng, fins_seen);
}

/* Random integer 5x5 kernels, half of them separable with non-negative factors. */
static void check_random5(tu_rng *rng, int *fins_seen)
{
    int taken = 0;
    for (int t = 0; t < 60; t++) {
        double w[25], col[5], row[5];
        const int span = 1 + (int)(tu_next(rng) % 6);
        for (int i = 0; i < 5; i++) {
            col[i] = (double)(tu_next(rng) % (uint64_t)(span + 1));
            row[i] = (double)(tu_next(rng) % (uint64_t)(span + 1));
        }
        if (t % 2) outer5(col, row, w);
        else
            for (int i = 0; i < 25; i++) w[i] = (double)((int)(tu_next(rng) % (uint64_t)(2 * span + 1)) - span);
        static const double divisors[] = { 1, 2, 64, 3, -4, 25, 0.75, 256 }, offsets[] = { 0, 128, -3, 2.5 };
        const double divisor = divisors[tu_next(rng) % 8], offset = offsets[tu_next(rng) % 4];
        ipk_vec_plan v;
        if (!ipk_vec_plan_conv(w, 5, 5, divisor, offset, &v)) continue;
        taken++;
        check_kernel("random 5x5", w, 5, divisor, offset, v.mode, rng, fins_seen);
    }
    CHECK(taken >= 30, "the planner took only %d of 60 random 5x5 kernels", taken);
}

static void check_refusals(void)
{
    static const double g7[49] = { 1 }, one[25] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    ipk_vec_plan v;
    CHECK(!ipk_vec_plan_conv(g7, 7, 7, 1, 0, &v), "7x7 refused");
    CHECK(!ipk_vec_plan_conv(one, 3, 1, 1, 0, &v), "3x1 refused");
    CHECK(!ipk_vec_plan_conv(one, 1, 3, 1, 0, &v), "1x3 refused");
    CHECK(!ipk_vec_plan_conv(one, 5, 3, 1, 0, &v), "5x3 refused");
    CHECK(!ipk_vec_plan_conv(one, 3, 5, 1, 0, &v), "3x5 refused");
    CHECK(ipk_vec_plan_conv(one, 5, 5, 1, 0, &v) && v.mode == IPK_VEC_SEP, "5x5 of three rows of ones: separable");
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 2611);
    int fins_seen[IPK_SWAR_FIN_MEAN + 1] = { 0 };
    const int n = (int)(sizeof CASES / sizeof CASES[0]);
    for (int i = 0; i < n; i++) check_case(&CASES[i], &rng, fins_seen);
    check_random(&rng, fins_seen);
    for (int f = IPK_SWAR_FIN_SHIFT; f < IPK_SWAR_FIN_MEAN; f++) CHECK(fins_seen[f], "finish kind %d never tested", f);
    int fins5_seen[IPK_SWAR_FIN_MEAN + 1] = { 0 };
    check_named5(&rng, fins5_seen);
    check_random5(&rng, fins5_seen);
    for (int f = IPK_SWAR_FIN_SHIFT; f < IPK_SWAR_FIN_MEAN; f++)
        CHECK(fins5_seen[f], "5x5: finish kind %d never tested", f);
    for (int radius = 1; radius <= 2; radius++) {
        ipk_vec_plan mean;
        ipk_vec_plan_mean(radius, &mean);
        CHECK(mean.mode == IPK_VEC_UNIT && mean.p.fin == IPK_SWAR_FIN_MEAN && mean.p.k == 2 * radius + 1, "mean plan");
        check_against_cpu(radius == 1 ? "mean 3x3" : "mean 5x5", &mean, NULL, 1, 0, 1, &rng);
    }
    check_refusals();
    return tu_finish();
}
