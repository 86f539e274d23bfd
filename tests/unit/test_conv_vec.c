/* The GPU vec kernel's lane arithmetic (kernels/common/conv_vec.h) run on the host as the kernel
 * runs it: warps of 32 threads x 16 pixels, edge words on the warps' first and last lanes,
 * neighbours' column sums where the kernel shuffles; against the CPU convolve and mean for every
 * mode (unit, separable, direct), every finish kind, signed weights, every border (mean's shrink
 * with its own counts at the edges), widths around the 16-pixel groups and 512-pixel warps, and
 * images with runs of 0 and 255. Also which 3x3 kernels the planner takes and which mode it picks. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "conv_vec.h"

#define WARP 32

typedef struct { const char *name; double w[9]; double divisor, offset; int mode; } vec_case;

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
        uint8_t out[16];
        const int shrink = p->fin == IPK_SWAR_FIN_MEAN && border == IPK_SHRINK;
        for (int j = 0; j < 4; j++) {
            uint32_t word = shrink && ipk_vec_at_edge(x, y, src->width, src->height)
                                ? ipk_vec_shrink_word(acc, j, x, y, src->width, src->height)
                                : ipk_swar_out_word(p, p->fin, acc, j);
            memcpy(out + 4 * j, &word, 4);   /* little-endian: pixel 4j in the low byte */
        }
        for (int i = 0; i < 16 && x + i < src->width; i++) *(uint8_t *)tu_px(dst, x + i, y, 0) = out[i];
    }
}

static void model(const ipk_img *src, const ipk_img *dst, const ipk_vec_plan *v, int border)
{
    for (int y = 0; y < src->height; y++)
        for (int x0 = 0; x0 < src->width; x0 += WARP * IPK_VEC_PX) model_warp_row(src, dst, v, border, x0, y);
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 16, 3 }, { 17, 6 }, { 31, 2 }, { 97, 13 },
                                { 511, 4 }, { 512, 3 }, { 513, 5 }, { 1031, 3 } };
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static void check_against_cpu(const char *name, const ipk_vec_plan *v, const double *w, double divisor, double offset,
                              int mean, tu_rng *rng)
{
    for (int s = 0; s < N_SIZES; s++)
        for (int border = 0; border < 4; border++) {
            ipk_img src = tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng);
            ipk_img want = tu_img_zeros(src.width, src.height, 1, IPK_U8, 0);
            ipk_img got = tu_img_zeros(src.width, src.height, 1, IPK_U8, 5);
            ipk_conv_params cp = { w, 3, 3, divisor, offset, (ipk_border)border };
            int rc = mean ? ipk_mean_cpu(&src, &want, 1, (ipk_border)border, 1) : ipk_convolve_cpu(&src, &want, &cp, 1);
            CHECK(rc == IPK_OK, "%s: cpu", name);
            model(&src, &got, v, border);
            CHECK(tu_max_diff(&got, &want) == 0, "%s mode %d fin %d %dx%d border %d: lanes differ from the CPU by %g",
                  name, v->mode, v->p.fin, src.width, src.height, border, tu_max_diff(&got, &want));
            tu_img_free(&src);
            tu_img_free(&want);
            tu_img_free(&got);
        }
}

static void check_case(const vec_case *c, tu_rng *rng, int *fins_seen)
{
    ipk_vec_plan v;
    int ok = ipk_vec_plan_conv(c->w, 3, 3, c->divisor, c->offset, &v);
    CHECK(ok == (c->mode >= 0), "%s: planner %s", c->name, ok ? "took it" : "refused it");
    if (!ok || c->mode < 0) return;
    CHECK(v.mode == c->mode, "%s: mode %d, expected %d", c->name, v.mode, c->mode);
    fins_seen[v.p.fin] = 1;
    check_against_cpu(c->name, &v, c->w, c->divisor, c->offset, 0, rng);
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

static void check_refusals(void)
{
    static const double g5[25] = { 1 }, one[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    ipk_vec_plan v;
    CHECK(!ipk_vec_plan_conv(g5, 5, 5, 1, 0, &v), "5x5 refused");
    CHECK(!ipk_vec_plan_conv(one, 3, 1, 1, 0, &v), "3x1 refused");
    CHECK(!ipk_vec_plan_conv(one, 1, 3, 1, 0, &v), "1x3 refused");
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
    ipk_vec_plan mean;
    ipk_vec_plan_mean(&mean);
    CHECK(mean.mode == IPK_VEC_UNIT && mean.p.fin == IPK_SWAR_FIN_MEAN, "mean plan");
    check_against_cpu("mean 3x3", &mean, NULL, 1, 0, 1, &rng);
    check_refusals();
    return tu_finish();
}
