/* The GPU float vec kernel's arithmetic (kernels/common/convolve_vecf.h) run on the host as the kernel
 * runs it: warps of 32 threads x 8 pixels, ROWS output rows a thread streamed down from its ROWS + 2
 * input rows, edge bytes on the warps' first and last lanes, the neighbours' words where the kernel
 * shuffles; against the CPU convolve, bit for bit (f32 outputs compared as bits, so that the sign
 * of a zero counts), for separable and direct kernels, every finish kind, negative weights and
 * divisors, offsets (-0.0 among them), every border, u8 and f32 output, widths around the 8-pixel
 * groups and 256-pixel warps, and images with runs of 0 and 255. Also which kernels the planner
 * takes and which mode and finish it picks. The radius 2 and 3 kernel (ipk_vecfr_*: 5x5 and 7x7,
 * warps of 32 threads x 4 pixels, 8 to 16 rows a thread, 2r + 1 open sums) the same way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "convolve_vecf.h"

#define WARP 32
#define MAX_ROWS 8

typedef struct { const char *name; double w[9]; double divisor, offset; int mode, fin; } vecf_case;

/* mode: the one the planner must pick, or -1 when it must refuse the kernel. */
static const vecf_case CASES[] = {
    { "bench FLOAT3", { 0 }, 1, 0, IPK_VECF_DIRECT, IPK_VECF_FIN_ONE },   /* filled in main */
    { "fractional gaussian", { 0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625 }, 1, 0,
      IPK_VECF_SEP, IPK_VECF_FIN_ONE },
    { "half box /2 +0.5", { 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5 }, 2, 0.5, IPK_VECF_SEP, IPK_VECF_FIN_MUL },
    { "negative separable /-4", { -0.3, 0.6, -0.9, 0.1, -0.2, 0.3, -0.5, 1.0, -1.5 }, -4, 7.25, IPK_VECF_SEP,
      IPK_VECF_FIN_MUL },
    { "sharpen-ish /3", { 0, -0.7, 0, -0.7, 3.9, -0.7, 0, -0.7, 0 }, 3, 0, IPK_VECF_DIRECT, IPK_VECF_FIN_DIV },
    { "all negative, offset -0.0", { -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9 }, 1, -0.0,
      IPK_VECF_DIRECT, IPK_VECF_FIN_ONE },
    { "all negative /-2 offset -0.0", { -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9 }, -2, -0.0,
      IPK_VECF_DIRECT, IPK_VECF_FIN_MUL },
    { "negative separable, offset -0.0", { -0.5, -1, -0.5, -1, -2, -1, -0.5, -1, -0.5 }, 0.3, -0.0, IPK_VECF_SEP,
      IPK_VECF_FIN_DIV },
    { "tiny divisor", { 0.11, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.91 }, 1e-3, -100, IPK_VECF_DIRECT,
      IPK_VECF_FIN_DIV },
    { "large weights", { 1e30, -2.5e30, 1e30, 0.5, 1, 0.5, -1e30, 2.5e30, -1e30 }, 1e28, 100, IPK_VECF_SEP,
      IPK_VECF_FIN_DIV },
    { "subnormal weights", { 1e-40, -3e-41, 2e-40, 5e-41, 1e-40, -2e-40, 3e-40, 0, 1e-41 }, 1e-39, 0.5,
      IPK_VECF_DIRECT, IPK_VECF_FIN_DIV },
    { "integer weights", { 1, 2, 1, 2, 4, 2, 1, 2, 1 }, 16, 0, -1, 0 },
};

static uint32_t px_u8(const ipk_img *src, int x, int y, int border)
{
    int sx = ipk_border_index(x, src->width, border), sy = ipk_border_index(y, src->height, border);
    return sx < 0 || sy < 0 ? 0u : (uint32_t)*(const uint8_t *)tu_px(src, sx, sy, 0);
}

/* Bytes x .. x+7 of row y through the border: the two words a thread loads. */
static void load_words(const ipk_img *src, int x, int y, int border, uint32_t *lo, uint32_t *hi)
{
    *lo = *hi = 0;
    for (int b = 0; b < 4; b++) {
        *lo |= px_u8(src, x + b, y, border) << (8 * b);
        *hi |= px_u8(src, x + 4 + b, y, border) << (8 * b);
    }
}

/* A thread's outputs of one row, u8 packed into two words as the kernel stores them; narrow: by the
 * narrow finish (a narrow plan's NARROW kernel). */
static void store(const ipk_img *dst, const ipk_vecf_plan *p, int fin, int narrow, int x, int y, const float *acc)
{
    uint32_t q[IPK_VECF_PX], w[2];
    float v[IPK_VECF_PX];
    for (int j = 0; j < IPK_VECF_PX; j++) v[j] = ipk_vecf_value(p, fin, 0, acc[j]);
    for (int j = 0; j < IPK_VECF_PX; j++) q[j] = ipk_vecf_rint_u8(v[j]);
    w[0] = narrow ? ipk_vecf_narrow_pack4(v) : ipk_vecf_pack4(q);
    w[1] = narrow ? ipk_vecf_narrow_pack4(v + 4) : ipk_vecf_pack4(q + 4);
    for (int j = 0; j < IPK_VECF_PX && x + j < dst->width; j++) {
        if (dst->dtype == IPK_F32) {
            const float v = ipk_vecf_value(p, fin, 1, acc[j]);
            memcpy(tu_px(dst, x + j, y, 0), &v, sizeof v);
        } else {
            *(uint8_t *)tu_px(dst, x + j, y, 0) = (uint8_t)(w[j / 4] >> (8 * (j % 4)));
        }
    }
}

/* One warp's ROWS output rows from y0, as the kernel computes them. */
static void model_warp(const ipk_img *src, const ipk_img *dst, const ipk_vecf_plan *p, int border, int rows,
                       int narrow, int cvt, int x0, int y0)
{
    static uint32_t lo[MAX_ROWS + 2][WARP], hi[MAX_ROWS + 2][WARP], edge[MAX_ROWS + 2][WARP];
    static float open[3][WARP][IPK_VECF_PX];   /* older, newer, fresh */
    for (int rr = 0; rr < rows + 2; rr++)
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + IPK_VECF_PX * lane;
            load_words(src, x, y0 - 1 + rr, border, &lo[rr][lane], &hi[rr][lane]);
            edge[rr][lane] = lane == 0 ? px_u8(src, x - 1, y0 - 1 + rr, border)
                             : lane == WARP - 1 ? px_u8(src, x + IPK_VECF_PX, y0 - 1 + rr, border) : 0;
        }
    static float v[WARP][IPK_VECF_PX + 2];
    for (int rr = 0; rr < rows + 2; rr++) {
        for (int lane = 0; lane < WARP; lane++) ipk_vecf_values(lo[rr][lane], hi[rr][lane], cvt, v[lane]);
        for (int lane = 0; lane < WARP; lane++) {   /* the shuffles of the neighbours' values */
            const float e = cvt == IPK_VECF_CVT_HALF ? ipk_vecf_half(edge[rr][lane], 0)
                                                     : ipk_vecf_byte_cvt(edge[rr][lane], 0, cvt);
            v[lane][0] = lane == 0 ? e : v[lane - 1][IPK_VECF_PX];
            v[lane][IPK_VECF_PX + 1] = lane == WARP - 1 ? e : v[lane + 1][1];
        }
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + IPK_VECF_PX * lane;
            ipk_vecf_step(p, p->mode, cvt == IPK_VECF_CVT_HALF, v[lane], rr, rows, open[0][lane], open[1][lane],
                          open[2][lane]);
            if (rr >= 2 && x < src->width && y0 + rr - 2 < src->height)
                store(dst, p, p->fin, narrow, x, y0 + rr - 2, open[0][lane]);
            memcpy(open[0][lane], open[1][lane], sizeof open[0][lane]);
            memcpy(open[1][lane], open[2][lane], sizeof open[1][lane]);
        }
    }
}

static void model(const ipk_img *src, const ipk_img *dst, const ipk_vecf_plan *p, int border, int rows, int narrow,
                  int cvt)
{
    for (int y0 = 0; y0 < src->height; y0 += rows)
        for (int x0 = 0; x0 < src->width; x0 += WARP * IPK_VECF_PX)
            model_warp(src, dst, p, border, rows, narrow, cvt, x0, y0);
}

/* Whether two images hold the same bytes in every row (f32: the same bits, -0 apart from +0). */
static int same_bits(const ipk_img *a, const ipk_img *b)
{
    const size_t row = (size_t)a->width * (a->dtype == IPK_F32 ? 4 : 1);
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), row)) return 0;
    return 1;
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 8, 3 }, { 17, 10 }, { 31, 2 }, { 97, 13 },
                                { 255, 4 }, { 256, 7 }, { 257, 5 }, { 2053, 3 } };
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static void check_against_cpu(const char *name, const ipk_vecf_plan *p, const double *w, double divisor,
                              double offset, tu_rng *rng)
{
    for (int s = 0; s < N_SIZES; s++)
        for (int border = 0; border < 4; border++) {
            const ipk_dtype out = (s + border) % 2 ? IPK_F32 : IPK_U8;
            const int rows = (s + border) % 3 ? 8 : 6;
            ipk_img src = tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng);
            ipk_img want = tu_img_zeros(src.width, src.height, 1, out, 0);
            ipk_img got = tu_img_zeros(src.width, src.height, 1, out, 4);
            ipk_conv_params cp = { w, 3, 3, divisor, offset, (ipk_border)border };
            CHECK(ipk_convolve_cpu(&src, &want, &cp, 1) == IPK_OK, "%s: cpu", name);
            for (int narrow = 0; narrow <= p->narrow; narrow++)
                for (int cvt = IPK_VECF_CVT_MAGIC; cvt <= (p->scaled ? IPK_VECF_CVT_HALF : IPK_VECF_CVT_I2F); cvt++) {
                    model(&src, &got, p, border, rows, narrow, cvt);
                    CHECK(same_bits(&got, &want),
                          "%s mode %d fin %d narrow %d cvt %d %dx%d border %d out %d rows %d: differs from the CPU by %g",
                          name, p->mode, p->fin, narrow, cvt, src.width, src.height, border, (int)out, rows,
                          tu_max_diff(&got, &want));
                }
            tu_img_free(&src);
            tu_img_free(&want);
            tu_img_free(&got);
        }
}

static void check_case(const vecf_case *c, tu_rng *rng)
{
    ipk_vecf_plan p;
    const int ok = ipk_vecf_plan_conv(c->w, 3, 3, c->divisor, c->offset, &p);
    CHECK(ok == (c->mode >= 0), "%s: planner %s", c->name, ok ? "took it" : "refused it");
    if (!ok || c->mode < 0) return;
    CHECK(p.mode == c->mode && p.fin == c->fin, "%s: mode %d fin %d, expected %d %d", c->name, p.mode, p.fin,
          c->mode, c->fin);
    check_against_cpu(c->name, &p, c->w, c->divisor, c->offset, rng);
}

/* Random float kernels, signed, a third of them separable, random divisors and offsets. */
static void check_random(tu_rng *rng)
{
    int modes[2] = { 0, 0 };
    for (int t = 0; t < 24; t++) {
        vecf_case c = { "random", { 0 }, 1, 0, 0, 0 };
        if (t % 3 == 0) {
            double col[3], row[3];
            for (int i = 0; i < 3; i++) {
                col[i] = (double)(tu_next(rng) % 2001) / 1000.0 - 1.0;
                row[i] = (double)(tu_next(rng) % 2001) / 997.0 - 1.0;
            }
            for (int i = 0; i < 9; i++) c.w[i] = col[i / 3] * row[i % 3];
        } else {
            for (int i = 0; i < 9; i++) c.w[i] = (double)(tu_next(rng) % 2001) / 613.0 - 1.6;
        }
        static const double divisors[] = { 1, 2, -0.5, 3, 0.7, -9 }, offsets[] = { 0, 128, -3.5, 0.25 };
        c.divisor = divisors[tu_next(rng) % 6];
        c.offset = offsets[tu_next(rng) % 4];
        ipk_vecf_plan p;
        if (!ipk_vecf_plan_conv(c.w, 3, 3, c.divisor, c.offset, &p)) continue;
        modes[p.mode]++;
        c.mode = p.mode;
        c.fin = p.fin;
        check_case(&c, rng);
    }
    CHECK(modes[IPK_VECF_SEP] >= 4 && modes[IPK_VECF_DIRECT] >= 8, "random kernels: %d separable, %d direct",
          modes[IPK_VECF_SEP], modes[IPK_VECF_DIRECT]);
}

/* The CPU's u8 finish (kernels/cpu/convolve.c, conv_finish_f32), written out apart. */
static uint32_t cpu_u8(float v)
{
    float r = rintf(v);
    r = r > 0.0f ? r : 0.0f;
    r = r < 255.0f ? r : 255.0f;
    return (uint32_t)(uint8_t)(int32_t)r;
}

/* One value through both u8 finishes, in each of the four places of a word. */
static void check_finish_value(float v, int narrow_too)
{
    const uint32_t want = cpu_u8(v);
    CHECK((ipk_vecf_rint_u8(v) & 0xffu) == want, "rint_u8(%.9g) = %u, CPU %u", v, ipk_vecf_rint_u8(v) & 0xffu, want);
    if (!narrow_too) return;
    for (int j = 0; j < 4; j++) {
        float four[4] = { 3.0f, -7.5f, 300.0f, 254.5f };
        four[j] = v;
        const uint32_t got = ipk_vecf_narrow_pack4(four);
        uint32_t all = 0;
        for (int i = 0; i < 4; i++) all |= cpu_u8(four[i]) << (8 * i);
        CHECK(got == all, "narrow_pack4 with %.9g in place %d: %08x, CPU %08x", v, j, got, all);
    }
}

/* Both u8 finishes against the CPU's: every whole number and half of the narrow range with its
 * neighbouring floats, quarters, zeros of both signs, subnormals, and 2^20 random bit patterns
 * in range; the plain finish also beyond it (huge, infinite, NaN). */
static void check_finishes(tu_rng *rng)
{
    const float lim = (float)IPK_VECF_NARROW_MAX;
    for (int n = -32000; n <= 32000; n++) {
        const float c[] = { (float)n, n + 0.5f, n - 0.5f, n + 0.25f, n - 0.25f };
        for (int i = 0; i < 5; i++) {
            check_finish_value(c[i], fabsf(c[i]) <= lim);
            check_finish_value(nextafterf(c[i], INFINITY), fabsf(c[i]) < lim);
            check_finish_value(nextafterf(c[i], -INFINITY), fabsf(c[i]) < lim);
        }
    }
    static const float odd[] = { 0.0f, -0.0f, 1e-45f, -1e-45f, 1.17549435e-38f, -1.17549435e-38f, 0.49999997f,
                                 -0.49999997f, 255.49998f, 255.5f, 256.5f };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) check_finish_value(odd[i], 1);
    static const float wide[] = { 32768.0f, -32768.0f, 65535.5f, 4194303.5f, 4194304.5f, 8388607.5f, -8388609.0f,
                                  12582912.0f, -12582913.0f, -16777216.0f, 3.4e38f, -3.4e38f, INFINITY, -INFINITY,
                                  NAN, -NAN };
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) check_finish_value(wide[i], 0);
    for (int i = 0; i < (1 << 20); i++) {
        const uint32_t bits = (uint32_t)tu_next(rng);
        float v;
        memcpy(&v, &bits, sizeof v);
        check_finish_value(v, fabsf(v) <= lim);
    }
}

/* The largest |v| of a 3x3 plan's own arithmetic over the inputs that drive each sum to its ends
 * (255 where a weight is positive, 0 elsewhere, and the other way round). */
static float worst_value(const ipk_vecf_plan *p)
{
    float worst = 0.0f;
    for (int sign = 0; sign < 2; sign++) {
        float v[IPK_VECF_PX + 2] = { 0 }, acc = 0.0f;
        if (p->mode == IPK_VECF_SEP) {
            float h[IPK_VECF_PX];
            for (int ky = 0; ky < 3; ky++) {
                const int up = (p->w[3 + ky] > 0) != sign;
                for (int kx = 0; kx < 3; kx++) v[kx] = (p->w[kx] > 0) == up ? 255.0f : 0.0f;
                ipk_vecf_taps(h, v, p->w[0], p->w[1], p->w[2], 1);
                acc = ky ? ipk_vecf_add(acc, ipk_vecf_mul(p->w[3 + ky], h[0])) : ipk_vecf_mul(p->w[3], h[0]);
            }
        } else {
            float a[IPK_VECF_PX];
            for (int ky = 0; ky < 3; ky++) {
                for (int kx = 0; kx < 3; kx++) v[kx] = (p->w[3 * ky + kx] > 0) != sign ? 255.0f : 0.0f;
                ipk_vecf_taps(a, v, p->w[3 * ky], p->w[3 * ky + 1], p->w[3 * ky + 2], ky == 0);
            }
            acc = a[0];
        }
        const float val = fabsf(ipk_vecf_value(p, p->fin, 0, acc));
        worst = val > worst ? val : worst;
    }
    return worst;
}

/* Which plans are narrow: the bench kernel and the moderate random ones are, huge weights and a
 * tiny divisor are not, and a narrow plan's worst value lies within its bound. */
static void check_narrow_plans(const vecf_case *cases, int n_cases, tu_rng *rng)
{
    int narrow = 0;
    for (int i = 0; i < n_cases; i++) {
        ipk_vecf_plan p;
        if (!ipk_vecf_plan_conv(cases[i].w, 3, 3, cases[i].divisor, cases[i].offset, &p)) continue;
        const int want = strcmp(cases[i].name, "large weights") && strcmp(cases[i].name, "tiny divisor");
        CHECK(p.narrow == want, "%s: narrow %d", cases[i].name, p.narrow);
        CHECK(p.scaled, "%s: not scaled", cases[i].name);
        CHECK(worst_value(&p) <= ipk_vecf_value_bound(&p), "%s: worst %g beyond the bound %g", cases[i].name,
              worst_value(&p), ipk_vecf_value_bound(&p));
    }
    for (int t = 0; t < 200; t++) {
        double w[9];
        for (int i = 0; i < 9; i++) w[i] = ((double)(tu_next(rng) % 20001) / 1000.0 - 10.0) * (t % 2 ? 30 : 0.01);
        ipk_vecf_plan p;
        if (!ipk_vecf_plan_conv(w, 3, 3, t % 3 ? 1.0 : 0.5, (double)(t % 7) - 3.0, &p)) continue;
        const float worst = worst_value(&p);
        CHECK(worst <= ipk_vecf_value_bound(&p), "random %d: worst %g beyond the bound %g", t, worst,
              ipk_vecf_value_bound(&p));
        CHECK(p.narrow == (ipk_vecf_value_bound(&p) <= IPK_VECF_NARROW_MAX), "random %d: narrow %d", t, p.narrow);
        narrow += p.narrow;
    }
    CHECK(narrow >= 50 && narrow <= 150, "random plans: %d of 200 narrow", narrow);
    static const double huge[9] = { 0.5, 2e31, 0.5, 1, 1, 1, 0.5, 1, 0.5 }, sep[9] = { 2e31, 4e31, 2e31, 2, 4, 2,
                                                                                       1e-31, 2e-31, 1e-31 };
    ipk_vecf_plan p;
    CHECK(ipk_vecf_plan_conv(huge, 3, 3, 1, 0, &p) && !p.scaled && !p.narrow, "|w| >= 2^103: not scaled");
    CHECK(ipk_vecf_plan_conv(sep, 3, 3, 1, 0, &p) && p.mode == IPK_VECF_SEP, "separable huge x tiny: SEP");
    CHECK(p.scaled == (fabsf(p.w[0]) < 0x1p103f && fabsf(p.w[1]) < 0x1p103f && fabsf(p.w[2]) < 0x1p103f),
          "separable: scaled %d with row factors %g %g %g", p.scaled, p.w[0], p.w[1], p.w[2]);
    for (int i = 0; i < 9; i++)
        CHECK(p.ws[i] == (p.scaled && i < 3 ? p.w[i] * 0x1p24f : p.scaled ? p.w[i] : p.ws[i]),
              "separable: ws[%d] %g against w %g", i, p.ws[i], p.w[i]);
}

static void check_refusals(void)
{
    static const double w5[25] = { 0.5 }, frac[9] = { 0.5, 1, 0.5, 1, 2, 1, 0.5, 1, 0.5 };
    ipk_vecf_plan p;
    CHECK(!ipk_vecf_plan_conv(w5, 5, 5, 1, 0, &p), "5x5 refused");
    CHECK(!ipk_vecf_plan_conv(frac, 3, 1, 1, 0, &p), "3x1 refused");
    CHECK(!ipk_vecf_plan_conv(frac, 1, 3, 1, 0, &p), "1x3 refused");
}

/* Radius 2 and 3: bytes x-4 .. x+7 of row y through the border, as the words a thread and its
 * neighbours (or its own side loads) hold. */
static uint32_t word4(const ipk_img *src, int x, int y, int border)
{
    uint32_t w = 0;
    for (int b = 0; b < 4; b++) w |= px_u8(src, x + b, y, border) << (8 * b);
    return w;
}

static void store_r(const ipk_img *dst, const ipk_vecf_plan *p, int x, int y, const float *acc)
{
    uint32_t q[IPK_VECFR_PX];
    for (int j = 0; j < IPK_VECFR_PX; j++) q[j] = ipk_vecf_rint_u8(ipk_vecf_value(p, p->fin, 0, acc[j]));
    const uint32_t w = ipk_vecf_pack4(q);
    for (int j = 0; j < IPK_VECFR_PX && x + j < dst->width; j++) {
        if (dst->dtype == IPK_F32) {
            const float v = ipk_vecf_value(p, p->fin, 1, acc[j]);
            memcpy(tu_px(dst, x + j, y, 0), &v, sizeof v);
        } else {
            *(uint8_t *)tu_px(dst, x + j, y, 0) = (uint8_t)(w >> (8 * j));
        }
    }
}

#define MAX_ROWS_R 16
#define MAX_IN_R (MAX_ROWS_R + 2 * IPK_VECF_MAXR)
#define MAX_K (2 * IPK_VECF_MAXR + 1)

/* One warp's rows output rows from y0 at radius 2 or 3, as vecfr_kernel computes them. */
static void model_warp_r(const ipk_img *src, const ipk_img *dst, const ipk_vecf_plan *p, int border, int rows, int x0,
                         int y0)
{
    static uint32_t mid[MAX_IN_R][WARP], edge[MAX_IN_R][WARP];
    static float open[WARP][MAX_K * IPK_VECFR_PX];
    const int r = p->r, k = 2 * r + 1;
    for (int rr = 0; rr < rows + 2 * r; rr++)
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + IPK_VECFR_PX * lane, y = y0 - r + rr;
            mid[rr][lane] = word4(src, x, y, border);
            edge[rr][lane] = lane == 0 ? word4(src, x - 4, y, border)
                             : lane == WARP - 1 ? word4(src, x + IPK_VECFR_PX, y, border) : 0;
        }
    for (int rr = 0; rr < rows + 2 * r; rr++)
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + IPK_VECFR_PX * lane;
            const uint32_t left = lane == 0 ? edge[rr][lane] : mid[rr][lane - 1];
            const uint32_t right = lane == WARP - 1 ? edge[rr][lane] : mid[rr][lane + 1];
            float v[IPK_VECFR_PX + 2 * IPK_VECF_MAXR];
            ipk_vecfr_values(left, mid[rr][lane], right, r, v);
            ipk_vecfr_step(p, p->mode, r, v, rr, rows, open[lane]);
            if (rr >= 2 * r && x < src->width && y0 + rr - 2 * r < src->height)
                store_r(dst, p, x, y0 + rr - 2 * r, open[lane] + 2 * r * IPK_VECFR_PX);
            memmove(open[lane] + IPK_VECFR_PX, open[lane], (size_t)(k - 1) * IPK_VECFR_PX * sizeof(float));
        }
}

static const int SIZES_R[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 3, 3 }, { 4, 5 }, { 5, 2 }, { 37, 35 },
                                  { 127, 7 }, { 128, 3 }, { 129, 17 }, { 131, 4 }, { 1031, 3 } };

static void check_r_against_cpu(const char *name, const double *w, int k, double divisor, double offset, int mode,
                                tu_rng *rng)
{
    ipk_vecf_plan p;
    const int ok = ipk_vecf_plan_conv_k(w, k, divisor, offset, &p);
    CHECK(ok == (mode >= 0), "%s: planner %s", name, ok ? "took it" : "refused it");
    if (!ok || mode < 0) return;
    CHECK(p.mode == mode && p.r == k / 2, "%s: mode %d r %d, expected %d %d", name, p.mode, p.r, mode, k / 2);
    static const int ROWS[] = { 8, 12, 16 };
    for (size_t s = 0; s < sizeof SIZES_R / sizeof SIZES_R[0]; s++)
        for (int border = 0; border < 4; border++) {
            const ipk_dtype out = (s + border) % 2 ? IPK_F32 : IPK_U8;
            const int rows = ROWS[(s + border) % 3];
            ipk_img src = tu_img_u8_extremes(SIZES_R[s][0], SIZES_R[s][1], rng);
            ipk_img want = tu_img_zeros(src.width, src.height, 1, out, 0);
            ipk_img got = tu_img_zeros(src.width, src.height, 1, out, 4);
            ipk_conv_params cp = { w, k, k, divisor, offset, (ipk_border)border };
            CHECK(ipk_convolve_cpu(&src, &want, &cp, 1) == IPK_OK, "%s: cpu", name);
            for (int y0 = 0; y0 < src.height; y0 += rows)
                for (int x0 = 0; x0 < src.width; x0 += WARP * IPK_VECFR_PX)
                    model_warp_r(&src, &got, &p, border, rows, x0, y0);
            CHECK(same_bits(&got, &want), "%s %dx%d mode %d fin %d %dx%d border %d out %d rows %d: differs by %g",
                  name, k, k, p.mode, p.fin, src.width, src.height, border, (int)out, rows, tu_max_diff(&got, &want));
            tu_img_free(&src);
            tu_img_free(&want);
            tu_img_free(&got);
        }
}

/* bench_gpu's FLOAT5 and FLOAT7, direct and separable random kernels, every finish, -0.0 offsets,
 * large weights; and what the radius planner refuses. */
static void check_radius(tu_rng *rng)
{
    static const double divisors[] = { 1, 2, -0.5, 3, 0.7, -9, 1e-3 }, offsets[] = { 0, 128, -3.5, 0.25, -0.0 };
    double w[49];
    for (int k = 5; k <= 7; k += 2) {
        double sum = 0;
        for (int i = 0; i < k * k; i++) sum += w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
        for (int i = 0; i < k * k; i++) w[i] /= sum;
        check_r_against_cpu(k == 5 ? "bench FLOAT5" : "bench FLOAT7", w, k, 1, 0, IPK_VECF_DIRECT, rng);
        for (int i = 0; i < k * k; i++) w[i] = -0.01 * (i + 1);
        check_r_against_cpu("all negative, offset -0.0", w, k, -2, -0.0, IPK_VECF_DIRECT, rng);
        for (int i = 0; i < k * k; i++) w[i] = i % 3 ? 1e30 * (i % 5 - 2) : 0.5;
        check_r_against_cpu("large weights", w, k, 1e28, 100, IPK_VECF_DIRECT, rng);
        for (int t = 0; t < 8; t++) {
            double col[7], row[7];
            for (int i = 0; i < k; i++) {
                col[i] = (double)(tu_next(rng) % 2001) / 1000.0 - 1.0;
                row[i] = (double)(tu_next(rng) % 2001) / 997.0 - 1.0;
            }
            for (int i = 0; i < k * k; i++)
                w[i] = t % 2 ? col[i / k] * row[i % k] : (double)(tu_next(rng) % 2001) / 613.0 - 1.6;
            const double d = divisors[tu_next(rng) % 7], o = offsets[tu_next(rng) % 5];
            ipk_vecf_plan p;
            const int mode = ipk_vecf_plan_conv_k(w, k, d, o, &p) ? p.mode : -1;
            CHECK(mode == (t % 2 ? IPK_VECF_SEP : IPK_VECF_DIRECT), "random %dx%d %d: mode %d", k, k, t, mode);
            check_r_against_cpu(t % 2 ? "random separable" : "random direct", w, k, d, o, mode, rng);
        }
    }
    for (int i = 0; i < 49; i++) w[i] = i % 4;
    ipk_vecf_plan p;
    CHECK(!ipk_vecf_plan_conv_k(w, 5, 1, 0, &p), "integer 5x5 refused (the integer path)");
    CHECK(!ipk_vecf_plan_conv_k(w, 9, 1, 0.5, &p), "9x9 refused");
    w[3] = 0.5;
    CHECK(!ipk_vecf_plan_conv(w, 5, 5, 1, 0, &p), "the 3x3 planner refuses 5x5");
    CHECK(ipk_vecf_plan_conv_k(w, 7, 1, 0, &p) && p.r == 3, "fractional 7x7 taken at radius 3");
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 3307);
    static vecf_case cases[sizeof CASES / sizeof CASES[0]];
    memcpy(cases, CASES, sizeof CASES);
    double sum = 0;   /* bench_gpu's FLOAT3 */
    for (int i = 0; i < 9; i++) sum += cases[0].w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
    for (int i = 0; i < 9; i++) cases[0].w[i] /= sum;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], &rng);
    check_random(&rng);
    check_finishes(&rng);
    check_narrow_plans(cases, (int)(sizeof cases / sizeof cases[0]), &rng);
    check_refusals();
    check_radius(&rng);
    return tu_finish();
}
