/* The GPU strip kernel's lane arithmetic (kernels/common/convolve_swar.h) run on the host, group by
 * group and row by row as the kernel walks them, against the CPU convolve and mean: every
 * finish kind, signed and separable weights, sums at the lanes' limit, every border, widths
 * around the 16-pixel groups. Also which kernels the planner takes. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "convolve_swar.h"

typedef struct { const char *name; int k; double w[49]; double divisor, offset; int fin; } swar_case;

/* fin: the finish the planner must pick, or -1 when it must refuse the kernel. */
static const swar_case CASES[] = {
    { "box3", 3, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 9, 0, IPK_SWAR_FIN_LANE_ODD },
    { "gaussian3", 3, { 1, 2, 1, 2, 4, 2, 1, 2, 1 }, 16, 0, IPK_SWAR_FIN_SHIFT },
    { "gaussian5", 5, { 1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6, 4, 16, 24, 16, 4, 1, 4, 6, 4, 1 }, 256, 0,
      IPK_SWAR_FIN_SHIFT },
    { "sharpen", 3, { 0, -1, 0, -1, 5, -1, 0, -1, 0 }, 1, 0, IPK_SWAR_FIN_SHIFT },
    { "laplacian+128", 3, { 0, 1, 0, 1, -4, 1, 0, 1, 0 }, 1, 128, IPK_SWAR_FIN_SHIFT },
    { "sobel-x", 3, { -1, 0, 1, -2, 0, 2, -1, 0, 1 }, 1, 0, IPK_SWAR_FIN_SHIFT },
    { "sobel-y/2+0.5", 3, { -1, -2, -1, 0, 0, 0, 1, 2, 1 }, 2, 0.5, IPK_SWAR_FIN_LANE_DOUBLE },
    { "emboss+128", 3, { -2, -1, 0, -1, 1, 1, 0, 1, 2 }, 1, 128, IPK_SWAR_FIN_SHIFT },
    { "ties /4 -1", 3, { 1, 2, -1, 0, 3, 0, 1, 1, 1 }, 4, -1, IPK_SWAR_FIN_SHIFT },
    { "ties /-8 +300", 3, { 3, 5, 1, 0, 2, 0, 1, 0, 4 }, -8, 300, IPK_SWAR_FIN_LANE_SHIFT },
    { "/4 +400", 3, { 1, 1, 1, 1, 8, 1, 1, 1, 1 }, 4, 400, IPK_SWAR_FIN_SHIFT },
    { "/4 -300", 3, { 1, 1, 1, 1, 80, 1, 1, 1, 1 }, 4, -300, IPK_SWAR_FIN_SHIFT },
    { "/4 +70000 (start beyond the lanes)", 3, { 1, 1, 1, 1, 8, 1, 1, 1, 1 }, 4, 70000, IPK_SWAR_FIN_LANE_SHIFT },
    { "odd /7 -20", 3, { -1, 4, 2, 0, 1, 0, 2, 2, 2 }, 7, -20, IPK_SWAR_FIN_LANE_ODD },
    { "odd /-5 +100", 5, { 1, 0, 0, 0, 1, 0, 2, 0, 2, 0, 0, 0, -3, 0, 0, 0, 2, 0, 2, 0, 1, 0, 0, 0, 1 }, -5, 100,
      IPK_SWAR_FIN_LANE_ODD },
    { "fractional divisor", 3, { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 2.5, 0, IPK_SWAR_FIN_LANE_DOUBLE },
    { "5x5 at the lane limit", 5, { 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 16, 10, 10, 10, 10, 10, 10, 10,
      10, 10, 10, 10, 10 }, 256, 0, IPK_SWAR_FIN_SHIFT },
    { "5x5 signed, wide", 5, { 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9,
      9 }, 64, 128, IPK_SWAR_FIN_SHIFT },
    { "5x5 signed, rounding shift", 5, { 11, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9,
      -9, 9, -9, 9 }, 1024, 0, IPK_SWAR_FIN_SHIFT },
    { "7x7 separable", 7, { 0 }, 64, 0, IPK_SWAR_FIN_SHIFT },   /* filled in: (1 2 3 4 3 2 1) outer itself */
    { "gaussian7 (lanes too narrow)", 7, { 0 }, 4096, 0, -1 },
    { "7x7 not separable", 7, { 0 }, 49, 0, -1 },
    { "5x5 over the lane limit", 5, { 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11,
      11, 11, 11, 11, 11 }, 256, 0, -1 },
    { "fractional weights", 3, { 0.5, 1, 0.5, 1, 2, 1, 0.5, 1, 0.5 }, 8, 0, -1 },
};

static void fill_7x7(swar_case *c, int which)
{
    static const double t[7] = { 1, 2, 3, 4, 3, 2, 1 }, g[7] = { 1, 6, 15, 20, 15, 6, 1 };
    for (int i = 0; i < 49; i++)
        c->w[i] = which == 0 ? t[i / 7] * t[i % 7] : which == 1 ? g[i / 7] * g[i % 7] : (double)(i % 3);
}

/* Byte x of source row y through the border, 0 where the border drops it. */
static uint32_t px_u8(const ipk_img *src, int x, int y, int border)
{
    int sx = ipk_border_index(x, src->width, border), sy = ipk_border_index(y, src->height, border);
    return sx < 0 || sy < 0 ? 0u : (uint32_t)*(const uint8_t *)tu_px(src, sx, sy, 0);
}

static void row_lanes(const ipk_img *src, int x, int y, int border, int r, uint32_t *lanes)
{
    uint32_t words[6] = { 0 };
    for (int b = 0; b < 24; b++) words[b / 4] |= px_u8(src, x - 4 + b, y, border) << (8 * (b % 4));
    ipk_swar_lanes(words, r, lanes);
}

/* The kernel's arithmetic for every 16-pixel group of every row. */
static void model(const ipk_img *src, const ipk_img *dst, const ipk_swar_plan *p, int border)
{
    const int k = p->k, r = k / 2;
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x += 16) {
            uint32_t acc[8];
            for (int i = 0; i < 8; i++) acc[i] = p->start * IPK_SWAR_LANES;
            for (int ky = 0; ky < k; ky++) {
                uint32_t lanes[IPK_SWAR_NX], h[8] = { 0 };
                row_lanes(src, x, y + ky - r, border, r, lanes);
                if (p->separable) {
                    ipk_swar_hadd(lanes, p->row, k, h);
                    ipk_swar_vadd(acc, p->col[ky], h);
                } else {
                    ipk_swar_hadd(lanes, p->w + ky * k, k, acc);
                }
            }
            uint8_t out[16];
            for (int j = 0; j < 4; j++) {
                uint32_t word = ipk_swar_out_word(p, p->fin, acc, j);
                memcpy(out + 4 * j, &word, 4);   /* little-endian: pixel 4j in the low byte */
            }
            for (int i = 0; i < 16 && x + i < src->width; i++) *(uint8_t *)tu_px(dst, x + i, y, 0) = out[i];
        }
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 16, 3 }, { 17, 6 }, { 31, 2 }, { 33, 17 }, { 64, 5 },
                                { 97, 13 } };
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static void check_conv_case(const swar_case *c, tu_rng *rng, int *seen)
{
    ipk_swar_plan p;
    int ok = ipk_swar_plan_conv(c->w, c->k, c->k, c->divisor, c->offset, &p);
    CHECK(ok == (c->fin >= 0), "%s: planner %s", c->name, ok ? "took it" : "refused it");
    if (!ok || c->fin < 0) return;
    CHECK(p.fin == c->fin, "%s: finish %d, expected %d", c->name, p.fin, c->fin);
    seen[p.fin] = 1;
    for (int s = 0; s < N_SIZES; s++)
        for (int border = 0; border < 4; border++) {
            ipk_img src = tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng);
            ipk_img want = tu_img_zeros(src.width, src.height, 1, IPK_U8, 0);
            ipk_img got = tu_img_zeros(src.width, src.height, 1, IPK_U8, 5);
            ipk_conv_params cp = { c->w, c->k, c->k, c->divisor, c->offset, (ipk_border)border };
            CHECK(ipk_convolve_cpu(&src, &want, &cp, 1) == IPK_OK, "%s: cpu", c->name);
            model(&src, &got, &p, border);
            CHECK(tu_max_diff(&got, &want) == 0, "%s /%g %+g fin %d %dx%d border %d: lanes differ from the CPU by %g", c->name, c->divisor, c->offset, p.fin,
                  src.width, src.height, border, tu_max_diff(&got, &want));
            tu_img_free(&src);
            tu_img_free(&want);
            tu_img_free(&got);
        }
}

static void check_convolve(tu_rng *rng)
{
    int seen[IPK_SWAR_FIN_MEAN + 1] = { 0 };
    const int n = (int)(sizeof CASES / sizeof CASES[0]);
    for (int i = 0; i < n; i++) {
        swar_case c = CASES[i];
        if (c.k == 7) fill_7x7(&c, c.fin >= 0 ? 0 : strstr(c.name, "gaussian") ? 1 : 2);
        check_conv_case(&c, rng, seen);
    }
    for (int f = IPK_SWAR_FIN_SHIFT; f < IPK_SWAR_FIN_MEAN; f++) CHECK(seen[f], "finish kind %d never tested", f);
}

/* Random integer kernels: whatever the planner takes must match the CPU. */
static void check_random(tu_rng *rng)
{
    int taken = 0;
    for (int t = 0; t < 60; t++) {
        swar_case c = { "random", t % 2 ? 5 : 3, { 0 }, 1, 0, 0 };
        const int span = 1 + (int)(tu_next(rng) % 12), n = c.k * c.k;
        for (int i = 0; i < n; i++) c.w[i] = (double)((int)(tu_next(rng) % (2 * span + 1)) - span);
        static const double divisors[] = { 1, 2, 8, 3, -4, 6, 0.75 }, offsets[] = { 0, 128, -3, 2.5 };
        c.divisor = divisors[tu_next(rng) % 7];
        c.offset = offsets[tu_next(rng) % 4];
        ipk_swar_plan p;
        if (!ipk_swar_plan_conv(c.w, c.k, c.k, c.divisor, c.offset, &p)) continue;
        taken++;
        c.fin = p.fin;
        int seen[IPK_SWAR_FIN_MEAN + 1] = { 0 };
        check_conv_case(&c, rng, seen);
    }
    CHECK(taken >= 20, "the planner took only %d of 60 random kernels", taken);
}

static void check_mean(tu_rng *rng)
{
    for (int k = 3; k <= 7; k += 2)
        for (int s = 0; s < N_SIZES; s++)
            for (int border = 0; border < 3; border++) {   /* shrink stays on the other paths */
                ipk_swar_plan p;
                ipk_swar_plan_mean(k, &p);
                ipk_img src = tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng);
                ipk_img want = tu_img_zeros(src.width, src.height, 1, IPK_U8, 0);
                ipk_img got = tu_img_zeros(src.width, src.height, 1, IPK_U8, 1);
                CHECK(ipk_mean_cpu(&src, &want, k / 2, (ipk_border)border, 1) == IPK_OK, "cpu mean");
                model(&src, &got, &p, border);
                CHECK(tu_max_diff(&got, &want) == 0, "mean %d %dx%d border %d: lanes differ from the CPU by %g", k,
                      src.width, src.height, border, tu_max_diff(&got, &want));
                tu_img_free(&src);
                tu_img_free(&want);
                tu_img_free(&got);
            }
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 2021);
    check_convolve(&rng);
    check_random(&rng);
    check_mean(&rng);
    return tu_finish();
}
