/* The GPU separable vec kernel's arithmetic (kernels/common/convolve_vecsep.h) run on the host as the
 * kernel runs it: warps of 32 threads x 8 pixels, ROWS output rows a thread streamed down from its
 * ROWS + 2R input rows through a rolling window of row sums, side words on the warps' first and last
 * lanes, the neighbours' words where the kernel shuffles; against the CPU convolve, bit for bit, for
 * radius 1 to 3, every finish (SHIFT, ODD, DOUBLE, f32 output), negated kernels, offsets, every
 * border, widths around the 8-pixel groups and 256-pixel warps, images with runs of 0 and 255. Also
 * which kernels the planner takes and which finish it picks. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "convolve_vecsep.h"

#define WARP 32
#define MAX_ROWS 8
#define MAX_IN (MAX_ROWS + 2 * IPK_VECSEP_MAXR)
#define K_MAX (2 * IPK_VECSEP_MAXR + 1)

static uint32_t px_u8(const ipk_img *src, int x, int y, int border)
{
    int sx = ipk_border_index(x, src->width, border), sy = ipk_border_index(y, src->height, border);
    return sx < 0 || sy < 0 ? 0u : (uint32_t)*(const uint8_t *)tu_px(src, sx, sy, 0);
}

/* Bytes x .. x+3 of row y through the border, the first in the low byte. */
static uint32_t word_at(const ipk_img *src, int x, int y, int border)
{
    uint32_t w = 0;
    for (int b = 0; b < 4; b++) w |= px_u8(src, x + b, y, border) << (8 * b);
    return w;
}

/* One output row of a thread, as the kernel stores it. */
static void store(const ipk_img *dst, const ipk_vecsep_plan *p, int x, int y, const uint32_t *win)
{
    uint32_t q[IPK_VECSEP_PX], w[2];
    for (int k = 0; k < IPK_VECSEP_PX; k++) q[k] = ipk_vecsep_u8(p, p->fin, ipk_vecsep_vsum(win, p->col, p->r, k));
    w[0] = ipk_vecf_pack4(q);
    w[1] = ipk_vecf_pack4(q + 4);
    for (int k = 0; k < IPK_VECSEP_PX && x + k < dst->width; k++) {
        if (dst->dtype == IPK_F32) {
            const float v = (float)ipk_vecsep_value(p, ipk_vecsep_vsum(win, p->col, p->r, k));
            memcpy(tu_px(dst, x + k, y, 0), &v, sizeof v);
        } else {
            *(uint8_t *)tu_px(dst, x + k, y, 0) = (uint8_t)(w[k / 4] >> (8 * (k % 4)));
        }
    }
}

/* One warp's ROWS output rows from y0, as the kernel computes them. */
static void model_warp(const ipk_img *src, const ipk_img *dst, const ipk_vecsep_plan *p, int border, int rows,
                       int x0, int y0)
{
    static uint32_t lo[MAX_IN][WARP], hi[MAX_IN][WARP], edge[MAX_IN][WARP];
    static uint32_t win[WARP][K_MAX * IPK_VECSEP_WORDS];
    const int r = p->r, k = 2 * r + 1, in_rows = rows + 2 * r;
    for (int rr = 0; rr < in_rows; rr++)
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + IPK_VECSEP_PX * lane, y = y0 - r + rr;
            lo[rr][lane] = word_at(src, x, y, border);
            hi[rr][lane] = word_at(src, x + 4, y, border);
            edge[rr][lane] = lane == 0 ? word_at(src, x - 4, y, border)
                             : lane == WARP - 1 ? word_at(src, x + IPK_VECSEP_PX, y, border) : 0;
        }
    memset(win, 0, sizeof win);
    for (int rr = 0; rr < in_rows; rr++)
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + IPK_VECSEP_PX * lane;
            const uint32_t left = lane == 0 ? edge[rr][lane] : hi[rr][lane - 1];
            const uint32_t right = lane == WARP - 1 ? edge[rr][lane] : lo[rr][lane + 1];
            uint32_t *w = win[lane];
            memmove(w, w + IPK_VECSEP_WORDS, (size_t)(k - 1) * IPK_VECSEP_WORDS * sizeof *w);
            ipk_vecsep_hpass(left, lo[rr][lane], hi[rr][lane], right, p->row, r, w + (k - 1) * IPK_VECSEP_WORDS);
            if (rr >= 2 * r && x < src->width && y0 + rr - 2 * r < src->height) store(dst, p, x, y0 + rr - 2 * r, w);
        }
}

static void model(const ipk_img *src, const ipk_img *dst, const ipk_vecsep_plan *p, int border, int rows)
{
    for (int y0 = 0; y0 < src->height; y0 += rows)
        for (int x0 = 0; x0 < src->width; x0 += WARP * IPK_VECSEP_PX) model_warp(src, dst, p, border, rows, x0, y0);
}

static int same_bits(const ipk_img *a, const ipk_img *b)
{
    const size_t row = (size_t)a->width * (a->dtype == IPK_F32 ? 4 : 1);
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), row)) return 0;
    return 1;
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 3, 4 }, { 8, 3 }, { 17, 10 }, { 31, 2 },
                                { 97, 13 }, { 255, 4 }, { 256, 7 }, { 257, 5 }, { 263, 17 }, { 2053, 3 } };
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static void check_against_cpu(const char *name, const double *w, int kw, double divisor, double offset, int want_fin,
                              tu_rng *rng)
{
    static const int ROWS[] = { 2, 4, 6, 8 };
    for (int s = 0; s < N_SIZES; s++)
        for (int border = 0; border < 4; border++) {
            const int f32 = (s + border) % 3 == 1;
            ipk_vecsep_plan p;
            const int ok = ipk_vecsep_plan_conv(w, kw, kw, divisor, offset, f32, &p);
            CHECK(ok, "%s: planner refused it", name);
            if (!ok) return;
            CHECK(f32 ? p.fin == IPK_VECSEP_FIN_DOUBLE : want_fin < 0 || p.fin == want_fin,
                  "%s: fin %d, expected %d", name, p.fin, f32 ? IPK_VECSEP_FIN_DOUBLE : want_fin);
            const int rows = ROWS[(s + 3 * border) % 4];
            ipk_img src = tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng);
            const ipk_dtype out = f32 ? IPK_F32 : IPK_U8;
            ipk_img want = tu_img_zeros(src.width, src.height, 1, out, 0);
            ipk_img got = tu_img_zeros(src.width, src.height, 1, out, 4);
            ipk_conv_params cp = { w, kw, kw, divisor, offset, (ipk_border)border };
            CHECK(ipk_convolve_cpu(&src, &want, &cp, 1) == IPK_OK, "%s: cpu", name);
            model(&src, &got, &p, border, rows);
            CHECK(same_bits(&got, &want), "%s %dx%d fin %d %dx%d border %d out %d rows %d: differs from the CPU by %g",
                  name, kw, kw, p.fin, src.width, src.height, border, (int)out, rows, tu_max_diff(&got, &want));
            tu_img_free(&src);
            tu_img_free(&want);
            tu_img_free(&got);
        }
}

/* w = sign * col x row. */
static void outer(const int *col, const int *row, int k, int sign, double *w)
{
    for (int i = 0; i < k * k; i++) w[i] = (double)sign * col[i / k] * row[i % k];
}

static void check_named(tu_rng *rng)
{
    static const int b3[3] = { 1, 2, 1 }, b5[5] = { 1, 4, 6, 4, 1 }, b7[7] = { 1, 6, 15, 20, 15, 6, 1 };
    static const int wide3[3] = { 40, 100, 40 }, box7[7] = { 1, 1, 1, 1, 1, 1, 1 };
    static const int skew7[7] = { 0, 3, 0, 9, 1, 0, 2 }, big7[7] = { 1000, 0, 20000, 0, 1000, 7, 3 };
    double w[49];
    outer(b7, b7, 7, 1, w);
    check_against_cpu("gaussian7 /4096", w, 7, 4096, 0, IPK_VECSEP_FIN_SHIFT, rng);
    check_against_cpu("gaussian7 /-4096 +200", w, 7, -4096, 200, IPK_VECSEP_FIN_SHIFT, rng);
    check_against_cpu("gaussian7 /4095", w, 7, 4095, 0, IPK_VECSEP_FIN_ODD, rng);
    check_against_cpu("gaussian7 /1000 +3", w, 7, 1000, 3, IPK_VECSEP_FIN_DOUBLE, rng);
    check_against_cpu("gaussian7 /4096.5", w, 7, 4096.5, 0, IPK_VECSEP_FIN_DOUBLE, rng);
    check_against_cpu("gaussian7 /1 (saturates)", w, 7, 1, 0, IPK_VECSEP_FIN_SHIFT, rng);
    outer(b7, b7, 7, -1, w);
    check_against_cpu("negated gaussian7 /-4096", w, 7, -4096, 0, IPK_VECSEP_FIN_SHIFT, rng);
    check_against_cpu("negated gaussian7 /4096 +255", w, 7, 4096, 255, IPK_VECSEP_FIN_SHIFT, rng);
    check_against_cpu("negated gaussian7 /-63", w, 7, -63, 0, IPK_VECSEP_FIN_ODD, rng);
    outer(box7, box7, 7, 1, w);
    check_against_cpu("box7 /49", w, 7, 49, 0, IPK_VECSEP_FIN_ODD, rng);
    outer(skew7, b7, 7, 1, w);
    check_against_cpu("skew x binomial /1024 -1", w, 7, 1024, -1, IPK_VECSEP_FIN_SHIFT, rng);
    outer(big7, box7, 7, 1, w);
    check_against_cpu("large column factors /22010", w, 7, 22010, 0, -1, rng);
    outer(b5, b5, 5, 1, w);
    check_against_cpu("gaussian5 /256", w, 5, 256, 0, IPK_VECSEP_FIN_SHIFT, rng);
    check_against_cpu("gaussian5 /255 +7", w, 5, 255, 7, IPK_VECSEP_FIN_ODD, rng);
    outer(wide3, wide3, 3, 1, w);
    check_against_cpu("wide 3x3 /32400", w, 3, 32400, 0, -1, rng);
    outer(b3, b3, 3, 1, w);
    check_against_cpu("gaussian3 /16", w, 3, 16, 0, IPK_VECSEP_FIN_SHIFT, rng);
}

/* Random separable kernels: non-negative factors within the lanes' bounds, a quarter negated,
 * random divisors and offsets. */
static void check_random(tu_rng *rng)
{
    static const double divisors[] = { 1, 2, 64, 4096, -256, 3, 255, -999, 0.5, 7.25, 100000 };
    static const double offsets[] = { 0, 128, -3, 0.5, -255 };
    for (int t = 0; t < 18; t++) {
        const int k = 3 + 2 * (t % 3);
        int col[7], row[7], row_sum = 0;
        for (int i = 0; i < k; i++) {
            col[i] = (int)(tu_next(rng) % 300);
            row[i] = (int)(tu_next(rng) % (257 / k));
            row_sum += row[i];
        }
        if (row_sum == 0) row[k / 2] = 1;
        col[t % k] += 1;
        double w[49];
        outer(col, row, k, t % 4 == 3 ? -1 : 1, w);
        const double d = divisors[tu_next(rng) % (sizeof divisors / sizeof divisors[0])];
        const double o = offsets[tu_next(rng) % (sizeof offsets / sizeof offsets[0])];
        check_against_cpu("random", w, k, d, o, -1, rng);
    }
}

static void check_refusals(void)
{
    static const double direct3[9] = { 1, 2, 1, 2, 5, 2, 1, 2, 1 }, mixed3[9] = { 1, -2, 1, 2, -4, 2, 1, -2, 1 };
    static const double frac3[9] = { 0.5, 1, 0.5, 1, 2, 1, 0.5, 1, 0.5 };
    static const double wide_row[9] = { 1, 256, 1, 1, 256, 1, 1, 256, 1 };
    double w9[81], w7[49];
    for (int i = 0; i < 81; i++) w9[i] = 1;
    for (int i = 0; i < 49; i++) w7[i] = i == 24 ? 70000 : 0;
    ipk_vecsep_plan p;
    CHECK(!ipk_vecsep_plan_conv(direct3, 3, 3, 16, 0, 0, &p), "non-separable refused");
    CHECK(!ipk_vecsep_plan_conv(mixed3, 3, 3, 1, 0, 0, &p), "mixed-sign factors refused");
    CHECK(!ipk_vecsep_plan_conv(frac3, 3, 3, 1, 0, 0, &p), "float weights refused");
    CHECK(!ipk_vecsep_plan_conv(wide_row, 3, 3, 1, 0, 0, &p), "row sum 258 x 255 refused");
    CHECK(!ipk_vecsep_plan_conv(w9, 9, 9, 81, 0, 0, &p), "9x9 refused");
    CHECK(!ipk_vecsep_plan_conv(w9, 3, 1, 3, 0, 0, &p), "3x1 refused");
    CHECK(!ipk_vecsep_plan_conv(w9, 1, 1, 1, 0, 0, &p), "1x1 refused");
    CHECK(!ipk_vecsep_plan_conv(w7, 7, 7, 1, 0, 0, &p), "a weight beyond 2^16 (the CPU's float path) refused");
    CHECK(!ipk_vecsep_plan_conv(direct3, 3, 3, 0, 0, 0, &p), "divisor 0 refused");
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 1409);
    check_named(&rng);
    check_random(&rng);
    check_refusals();
    return tu_finish();
}
