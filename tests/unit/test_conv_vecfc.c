/* The certified float kernel's arithmetic (kernels/common/conv_vecfc.h) on the host, against the CPU
 * convolve, bit for bit:
 * - the kernel modelled warp by warp (32 threads x 8 pixels, ROWS rows a thread, the neighbours'
 *   words where it shuffles, fused sums, the certified finish, the pixels of flagged rows recomputed
 *   in the CPU's order) over odd sizes, every border and every finish kind;
 * - the bound itself: over millions of random and extreme windows, |cpu - fused| never exceeds it,
 *   and every pixel called certain has the CPU's byte;
 * - kernels built to land on half-integers (dyadic weights: exact ties) must be called uncertain;
 * - for bench_gpu's FLOAT5 and FLOAT7 on noise, the share of uncertain pixels stays under 1% (the
 *   kernel's speed rests on it);
 * - which plans get a certificate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "border.h"
#include "conv_vecfc.h"

#define WARP 32
#define PX IPK_VECFC_PX
#define MAX_ROWS 24
#define MAX_K 7

static uint32_t px_u8(const ipk_img *src, int x, int y, int border)
{
    const int sx = ipk_border_index(x, src->width, border), sy = ipk_border_index(y, src->height, border);
    return sx < 0 || sy < 0 ? 0u : (uint32_t)*(const uint8_t *)tu_px(src, sx, sy, 0);
}

static uint32_t word4(const ipk_img *src, int x, int y, int border)
{
    uint32_t w = 0;
    for (int b = 0; b < 4; b++) w |= px_u8(src, x + b, y, border) << (8 * b);
    return w;
}

/* The CPU's order, written out here: acc = 0.0f, then acc + w*x for ky, kx ascending, each
 * rounded (C11 mode: no contraction); then acc / divisor + offset, rintf, saturated. */
static uint8_t reference_px(const float *w, int k, const float *x, float div, float off)
{
    float acc = 0.0f;
    for (int t = 0; t < k * k; t++) acc = acc + w[t] * x[t];
    const float v = acc / div + off;
    const float r = rintf(v);
    return (uint8_t)(r > 255.0f ? 255.0f : r > 0.0f ? r : 0.0f);
}

static float reference_acc(const float *w, int k, const float *x)
{
    float acc = 0.0f;
    for (int t = 0; t < k * k; t++) acc = acc + w[t] * x[t];
    return acc;
}

static uint8_t exact_px(const ipk_img *src, const ipk_vecf_plan *p, int border, int x, int y)
{
    const int r = p->r, k = 2 * r + 1;
    float win[MAX_K * MAX_K];
    for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++) win[ky * k + kx] = (float)px_u8(src, x - r + kx, y - r + ky, border);
    return reference_px(p->w, k, win, p->div, p->off);
}

/* One warp's rows output rows from y0, as vecfc_kernel computes them; returns the queued pixels. */
static int model_warp(const ipk_img *src, const ipk_img *dst, const ipk_vecf_plan *p, int border, int rows, int x0,
                      int y0)
{
    static uint32_t lo[MAX_ROWS + 2 * MAX_K][WARP], hi[MAX_ROWS + 2 * MAX_K][WARP], edge[MAX_ROWS + 2 * MAX_K][WARP];
    static float open[WARP][MAX_K * PX];
    static uint32_t flagged[WARP];
    const int r = p->r, k = 2 * r + 1;
    int queued = 0;
    for (int rr = 0; rr < rows + 2 * r; rr++)
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + PX * lane, y = y0 - r + rr;
            lo[rr][lane] = word4(src, x, y, border);
            hi[rr][lane] = word4(src, x + 4, y, border);
            edge[rr][lane] = lane == 0 ? word4(src, x - 4, y, border) : lane == WARP - 1 ? word4(src, x + PX, y, border) : 0;
        }
    memset(flagged, 0, sizeof flagged);
    for (int rr = 0; rr < rows + 2 * r; rr++)
        for (int lane = 0; lane < WARP; lane++) {
            const int x = x0 + PX * lane, y = y0 + rr - 2 * r, n = src->width - x < PX ? src->width - x : PX;
            const uint32_t left = lane == 0 ? edge[rr][lane] : hi[rr][lane - 1];
            const uint32_t right = lane == WARP - 1 ? edge[rr][lane] : lo[rr][lane + 1];
            float v[PX + 2 * IPK_VECF_MAXR];
            ipk_vecfc_values(left, lo[rr][lane], hi[rr][lane], right, r, v);
            ipk_vecfc_step(p, r, v, rr, rows, open[lane]);
            if (rr >= 2 * r && n > 0 && y < src->height) {
                int lo_uncertain, hi_uncertain;
                const uint32_t w[2] = { ipk_vecfc_finish4(p, p->fin, open[lane] + 2 * r * PX, &lo_uncertain),
                                        ipk_vecfc_finish4(p, p->fin, open[lane] + 2 * r * PX + 4, &hi_uncertain) };
                for (int j = 0; j < n; j++) *(uint8_t *)tu_px(dst, x + j, y, 0) = (uint8_t)(w[j / 4] >> (8 * (j % 4)));
                flagged[lane] |= (uint32_t)(lo_uncertain | hi_uncertain) << (rr - 2 * r);
            }
            memmove(open[lane] + PX, open[lane], (size_t)(k - 1) * PX * sizeof(float));
        }
    for (int lane = 0; lane < WARP; lane++) {
        const int x = x0 + PX * lane, n = src->width - x < PX ? src->width - x : PX;
        for (int row = 0; row < rows; row++)
            if (flagged[lane] >> row & 1u)
                for (int j = 0; j < n; j++, queued++)
                    *(uint8_t *)tu_px(dst, x + j, y0 + row, 0) = exact_px(src, p, border, x + j, y0 + row);
    }
    return queued;
}

static int same_bytes(const ipk_img *a, const ipk_img *b)
{
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), (size_t)a->width)) return 0;
    return 1;
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 3, 3 }, { 4, 5 }, { 37, 35 }, { 127, 7 },
                                { 128, 3 }, { 129, 17 }, { 131, 24 }, { 257, 33 }, { 1031, 3 } };

/* The modelled kernel against the CPU; returns the share of queued pixels. */
static double check_model(const char *name, const double *w, int k, double divisor, double offset, tu_rng *rng)
{
    ipk_vecf_plan p;
    if (!ipk_vecf_plan_conv_k(w, k, divisor, offset, &p) || !ipk_vecfc_certify(&p)) {
        CHECK(0, "%s: no certificate", name);
        return 1.0;
    }
    static const int ROWS[] = { 4, 8, 12, 16, 20 };
    long queued = 0, pixels = 0;
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
        for (int border = 0; border < 4; border++) {
            const int rows = ROWS[(s + border) % 5];
            ipk_img src = s % 2 ? tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng)
                                : tu_img_random(SIZES[s][0], SIZES[s][1], 1, IPK_U8, 3, rng);
            ipk_img want = tu_img_zeros(src.width, src.height, 1, IPK_U8, 0);
            ipk_img got = tu_img_zeros(src.width, src.height, 1, IPK_U8, 4);
            ipk_conv_params cp = { w, k, k, divisor, offset, (ipk_border)border };
            CHECK(ipk_convolve_cpu(&src, &want, &cp, 1) == IPK_OK, "%s: cpu", name);
            for (int y0 = 0; y0 < src.height; y0 += rows)
                for (int x0 = 0; x0 < src.width; x0 += WARP * PX) queued += model_warp(&src, &got, &p, border, rows, x0, y0);
            pixels += (long)src.width * src.height;
            CHECK(same_bytes(&got, &want), "%s %dx%d fin %d %dx%d border %d rows %d: differs by %g", name, k, k, p.fin,
                  src.width, src.height, border, rows, tu_max_diff(&got, &want));
            tu_img_free(&src);
            tu_img_free(&want);
            tu_img_free(&got);
        }
    return (double)queued / (double)pixels;
}

/* Random windows (noise, and runs of 0 and 255) through the fused sums and the finish: the
 * CPU's sum never further than the bound from the fused one, and certain pixels right. Returns
 * the share of uncertain pixels. */
static double check_windows(const char *name, const double *w, int k, double divisor, double offset, long windows,
                            tu_rng *rng)
{
    ipk_vecf_plan p;
    if (!ipk_vecf_plan_conv_k(w, k, divisor, offset, &p) || !ipk_vecfc_certify(&p)) {
        CHECK(0, "%s: no certificate", name);
        return 1.0;
    }
    const double bound = ipk_vecfc_bound(&p);
    const int r = k / 2;
    long uncertain_px = 0, wrong = 0, over = 0;
    double worst = 0.0;
    for (long n = 0; n < windows; n += 4) {
        float vals[MAX_K][4 + 2 * IPK_VECF_MAXR], acc[4];
        const int style = (int)(n / 4 % 4);
        for (int ky = 0; ky < k; ky++)
            for (int c = 0; c < 4 + 2 * r; c++) {
                const uint32_t rnd = tu_next(rng);
                vals[ky][c] = style == 0 ? (float)(rnd & 255u) : style == 1 ? (rnd & 1u ? 255.0f : 0.0f)
                            : style == 2 ? (float)(rnd % 3u == 0 ? 255u : rnd & 255u) : (float)(120u + rnd % 16u);
            }
        for (int j = 0; j < 4; j++) {   /* the fused sum of one pixel, tap by tap as ipk_vecfc_taps */
            acc[j] = 0.0f;
            for (int ky = 0, t = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++, t++)
                    acc[j] = t ? ipk_vecfc_fma(p.w[t], vals[ky][j + kx], acc[j]) : p.w[0] * vals[0][j];
        }
        for (int j = 0; j < 4; j++) {
            float win[MAX_K * MAX_K];
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++) win[ky * k + kx] = vals[ky][j + kx];
            const float ref_acc = reference_acc(p.w, k, win);
            double diff = fabs((double)ref_acc - (double)acc[j]);
            if (p.fin != IPK_VECF_FIN_ONE) {
                const double cpu_v = (double)(ref_acc / p.div + p.off);
                const double fused_v = (double)fmaf(acc[j], p.cert_inv, p.off);
                diff = fabs(cpu_v - fused_v);
            }
            if (diff > worst) worst = diff;
            if (diff > bound) over++;
            const uint8_t want = reference_px(p.w, k, win, p.div, p.off);
            uint32_t shifted;
            if (!ipk_vecfc_certain(&p, p.fin, acc[j], &shifted)) uncertain_px++;
            else if ((uint8_t)(ipk_vecf_narrow_pack_bits4((const uint32_t[4]){ shifted, shifted, shifted, shifted }) & 0xffu) != want) wrong++;
        }
    }
    CHECK(over == 0, "%s: %ld windows past the bound %g (worst %g)", name, over, bound, worst);
    CHECK(wrong == 0, "%s: %ld certain pixels not the CPU's byte", name, wrong);
    CHECK(worst < bound, "%s: worst difference %g within the bound %g", name, worst, bound);
    return (double)uncertain_px / (double)windows;
}

static void bench_kernel(int k, double *w)
{
    double sum = 0;
    for (int i = 0; i < k * k; i++) sum += w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
    for (int i = 0; i < k * k; i++) w[i] /= sum;
}

/* Dyadic weights whose sums are exact: many pixels land on x.5 exactly, where rintf rounds to
 * even; the certificate must call each of them uncertain, and the model stays exact. */
static void check_ties(tu_rng *rng)
{
    double w[49];
    for (int k = 5; k <= 7; k += 2) {
        for (int i = 0; i < k * k; i++) w[i] = (i % 2 ? 0.03125 : 0.0625) * (i % 3 ? 1 : -0.5);
        ipk_vecf_plan p;
        CHECK(ipk_vecf_plan_conv_k(w, k, 1, 0, &p) && ipk_vecfc_certify(&p), "dyadic %dx%d certified", k, k);
        long ties = 0, flagged = 0;
        for (int n = 0; n < 200000; n++) {
            float win[MAX_K * MAX_K], acc = 0.0f;
            for (int t = 0; t < k * k; t++) {
                win[t] = (float)(tu_next(rng) & 255u);
                acc = t ? ipk_vecfc_fma(p.w[t], win[t], acc) : p.w[0] * win[0];
            }
            const float a = reference_acc(p.w, k, win);
            uint32_t shifted;
            if (a - floorf(a) == 0.5f) {
                ties++;
                flagged += !ipk_vecfc_certain(&p, p.fin, acc, &shifted);
            }
        }
        CHECK(ties > 1000 && flagged == ties, "dyadic %dx%d: %ld of %ld ties uncertain", k, k, flagged, ties);
        check_model(k == 5 ? "dyadic 5x5" : "dyadic 7x7", w, k, 1, 0, rng);
    }
}

/* Which plans get a certificate: direct 5x5 and 7x7 with narrow values and a small bound only. */
static void check_certify(void)
{
    double w[49];
    ipk_vecf_plan p;
    bench_kernel(3, w);
    CHECK(ipk_vecf_plan_conv_k(w, 3, 1, 0, &p) && !ipk_vecfc_certify(&p), "3x3 not certified");
    for (int i = 0; i < 25; i++) w[i] = (1.0 + i % 5) * (1.0 + i / 5) / 225.5;   /* separable */
    CHECK(ipk_vecf_plan_conv_k(w, 5, 1, 0, &p) && p.mode == IPK_VECF_SEP && !ipk_vecfc_certify(&p),
          "separable 5x5 not certified");
    for (int i = 0; i < 25; i++) w[i] = i % 3 ? 1e30 * (i % 5 - 2) : 0.5;
    CHECK(ipk_vecf_plan_conv_k(w, 5, 1, 0, &p) && !ipk_vecfc_certify(&p), "huge weights not certified");
    for (int i = 0; i < 49; i++) w[i] = 2.51 + 0.01 * (i % 3);   /* values up to 31487, narrow: the bound is past 0.05 */
    CHECK(ipk_vecf_plan_conv_k(w, 7, 1, 0, &p) && p.narrow && ipk_vecfc_bound(&p) > IPK_VECFC_MAX_BOUND &&
              !ipk_vecfc_certify(&p), "a 7x7 of large sums not certified (bound %g)", ipk_vecfc_bound(&p));
    bench_kernel(7, w);
    CHECK(ipk_vecf_plan_conv_k(w, 7, 1, 0, &p) && ipk_vecfc_certify(&p) && p.cert_thr > 0.49f && p.cert_thr < 0.5f,
          "bench FLOAT7 certified, threshold %g", (double)p.cert_thr);
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 4409);
    double w[49];
    for (int k = 5; k <= 7; k += 2) {
        bench_kernel(k, w);
        const char *name = k == 5 ? "bench FLOAT5" : "bench FLOAT7";
        const double share = check_model(name, w, k, 1, 0, &rng);
        const double windows = check_windows(name, w, k, 1, 0, 2000000, &rng);
        printf("%s: %.3f%% of pixels queued in the model, %.3f%% of random windows uncertain\n", name, 100 * share,
               100 * windows);
        /* the model queues the 8 pixels of a flagged row */
        CHECK(share < 0.03 && windows < 0.01, "%s: queued %g (under 3%%), uncertain %g (under 1%%)", name, share, windows);
        static const double divisors[] = { 2, -0.5, 3, 0.7, -9 }, offsets[] = { 0, 128, -3.5, 0.25, -0.0 };
        for (int t = 0; t < 5; t++) {
            for (int i = 0; i < k * k; i++) w[i] = (double)(tu_next(&rng) % 2001) / 4000.0 - 0.2;
            check_model("random direct", w, k, divisors[t], offsets[t], &rng);
            check_windows("random direct", w, k, divisors[t], offsets[t], 200000, &rng);
        }
        for (int i = 0; i < k * k; i++) w[i] = -0.01 * (i + 1);
        check_model("all negative /-2", w, k, -2, -0.0, &rng);
        check_windows("all negative /-2", w, k, -2, -0.0, 200000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = (i % 2 ? 1.7 : -1.3) + 0.001 * i;
        check_model("cancelling", w, k, 7, 3.5, &rng);
        check_windows("cancelling", w, k, 7, 3.5, 400000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = 1e-36 * (i + 1);
        check_model("tiny weights", w, k, 1e-33, 1, &rng);
        check_windows("tiny weights", w, k, 1e-33, 1, 200000, &rng);
    }
    check_ties(&rng);
    check_certify();
    return tu_finish();
}
