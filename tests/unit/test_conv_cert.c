/* The certified tile kernel's arithmetic (kernels/common/convolve_cert.h) on the host, against the CPU:
 * - the bound: over random and extreme windows the CPU's value (every product and sum rounded)
 *   is never farther than the bound from the fused one (a fused multiply-add a tap), through the
 *   same finish; and every pixel called certain has the CPU's byte;
 * - the kernel modelled pixel by pixel (fused sum, certificate, uncertain pixels in the CPU's
 *   order) against ipk_convolve_cpu on odd sizes and every border, byte for byte;
 * - dyadic weights, whose sums land on half-integers exactly, must call every tie uncertain;
 * - for bench_gpu's FLOAT5 and FLOAT7 few pixels are uncertain (the kernel's speed rests on it), yet
 *   the fused bytes alone differ from the CPU's in some windows (what the certificate is for);
 * - which plans get a threshold. */
#include <math.h>
#include <string.h>
#include "conv_model.h"
#include "convolve_cert.h"

#define MAX_K 9

typedef struct {
    const char *name;
    float w[MAX_K * MAX_K];
    int k;
    float div, inv, off;
    int pow2;
    float thr;
    double bound;
} plan;

static float fused_sum(const float *w, const float *x, int taps)
{
    float acc = 0.0f;
    for (int t = 0; t < taps; t++) acc = fmaf(w[t], x[t], acc);
    return acc;
}

/* The CPU's finish: acc / divisor + offset in float, rintf, saturated. */
static float cpu_value(const plan *p, float acc) { return acc / p->div + p->off; }

static int make_plan(plan *p, const char *name, const double *w, int k, double divisor, double offset)
{
    memset(p, 0, sizeof *p);
    p->name = name;
    p->k = k;
    for (int i = 0; i < k * k; i++) p->w[i] = (float)w[i];
    p->div = (float)divisor;
    p->off = (float)offset;
    int e = 0;
    p->pow2 = frexpf(fabsf(p->div), &e) == 0.5f;
    p->inv = 1.0f / p->div;
    p->bound = ipk_conv_cert_bound(p->w, k * k, p->div, p->off);
    if (!ipk_conv_cert_threshold(p->w, k * k, p->div, p->off, &p->thr)) return 0;
    CHECK((double)p->thr <= 0.5 - p->bound && (double)p->thr > 0.5 - p->bound - 0x1p-24, "%s: threshold %.9g is 0.5 - %.9g rounded down",
          name, (double)p->thr, p->bound);
    return 1;
}

/* The kernel's byte for one window, as rbc_kernel: fused, certified, else the CPU's order. *open
 * counts the uncertain ones. */
static uint8_t model_byte(const void *model_plan, const float *x, long *open)
{
    const plan *p = model_plan;
    const int taps = p->k * p->k;
    uint32_t uncertain;
    const float v = ipk_conv_cert_value(fused_sum(p->w, x, taps), p->div, p->inv, p->pow2, p->off);
    const uint32_t byte = ipk_conv_cert_u8(v, p->thr, &uncertain) & 0xffu;
    if (!uncertain) return (uint8_t)byte;
    ++*open;
    const float v_cpu = ipk_conv_cert_value(tu_conv_cpu_sum(p->w, x, taps), p->div, p->inv, p->pow2, p->off);
    return (uint8_t)(ipk_vecf_rint_u8(v_cpu) & 0xffu);
}

/* The modelled kernel against ipk_convolve_cpu; returns the share of uncertain pixels. */
static double check_model(const plan *p, const double *w, double divisor, double offset, tu_rng *rng)
{
    return tu_conv_check_model(p->name, model_byte, p, w, p->k, divisor, offset, rng);
}

/* Random windows (noise, runs of 0 and 255, mid-grey): |v_cpu - v_fused| within the bound and every
 * certain byte the CPU's. Returns the share of uncertain windows; *worst gets the largest distance. */
static double check_windows(const plan *p, long windows, double *worst, long *straddles_out, tu_rng *rng)
{
    const int taps = p->k * p->k;
    long open = 0, wrong = 0, over = 0, straddles = 0;
    *worst = 0.0;
    for (long n = 0; n < windows; n++) {
        float x[MAX_K * MAX_K];
        tu_conv_random_window(x, taps, (int)(n % 4), rng);
        const float v_cpu = cpu_value(p, tu_conv_cpu_sum(p->w, x, taps));
        const float v_fused = ipk_conv_cert_value(fused_sum(p->w, x, taps), p->div, p->inv, p->pow2, p->off);
        const double d = fabs((double)v_cpu - (double)v_fused);
        if (d > *worst) *worst = d;
        over += d > p->bound;
        straddles += tu_conv_cpu_byte(v_cpu) != tu_conv_cpu_byte(v_fused);
        uint32_t uncertain;
        const uint32_t byte = ipk_conv_cert_u8(v_fused, p->thr, &uncertain) & 0xffu;
        if (uncertain) open++;
        else wrong += byte != tu_conv_cpu_byte(v_cpu);
    }
    CHECK(over == 0, "%s: %ld windows past the bound %g (worst %g)", p->name, over, p->bound, *worst);
    CHECK(wrong == 0, "%s: %ld certain pixels not the CPU's byte", p->name, wrong);
    if (straddles_out) *straddles_out = straddles;
    return (double)open / (double)windows;
}

static void bench_weights(int k, double *w)
{
    double sum = 0;
    for (int i = 0; i < k * k; i++) sum += w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
    for (int i = 0; i < k * k; i++) w[i] /= sum;
}

static void check_kernel(const char *name, const double *w, int k, double divisor, double offset, long windows,
                         tu_rng *rng)
{
    plan p;
    if (!make_plan(&p, name, w, k, divisor, offset)) {
        CHECK(0, "%s %dx%d /%g %+g: no threshold (bound %g)", name, k, k, divisor, offset, p.bound);
        return;
    }
    double worst;
    check_windows(&p, windows, &worst, NULL, rng);
    check_model(&p, w, divisor, offset, rng);
}

/* bench_gpu's kernels: few uncertain pixels, and a bound that real sums come near (a bound much
 * too large would flag pixels for nothing). */
static void check_bench(tu_rng *rng)
{
    double w[MAX_K * MAX_K];
    long all_straddles = 0;
    for (int k = 5; k <= 9; k += 2) {
        bench_weights(k, w);
        plan p;
        CHECK(make_plan(&p, "bench", w, k, 1, 0) && p.thr > 0.49f && p.thr < 0.5f, "bench %dx%d: threshold %g", k, k,
              (double)p.thr);
        double worst;
        long straddles;
        const double windows = check_windows(&p, 1000000, &worst, &straddles, rng), model = check_model(&p, w, 1, 0, rng);
        printf("bench %dx%d: bound %.3g, worst %.3g, %ld windows where the fused byte is not the CPU's; %.3f%% of "
               "random windows and %.3f%% of image pixels uncertain\n",
               k, k, p.bound, worst, straddles, 100 * windows, 100 * model);
        all_straddles += straddles;
        CHECK(windows < 0.01 && model < 0.01, "bench %dx%d: uncertain %g, %g: under 1%%", k, k, windows, model);
        CHECK(worst > p.bound / 64, "bench %dx%d: worst %g within 64x of the bound %g", k, k, worst, p.bound);
    }
    CHECK(all_straddles > 0, "the fused bytes alone differ from the CPU's somewhere (else the test shows nothing)");
}

/* Dyadic weights whose sums are exact: many land on x.5, where rintf rounds to even; each must be
 * called uncertain, and the model stays exact. */
static void check_ties(tu_rng *rng)
{
    double w[MAX_K * MAX_K];
    for (int k = 5; k <= 9; k += 2) {
        for (int i = 0; i < k * k; i++) w[i] = (i % 2 ? 0.03125 : 0.0625) * (i % 3 ? 1 : -0.5);
        plan p;
        CHECK(make_plan(&p, "dyadic", w, k, 1, 0), "dyadic %dx%d has a threshold", k, k);
        long ties = 0, flagged = 0;
        for (int n = 0; n < 200000; n++) {
            float x[MAX_K * MAX_K];
            for (int t = 0; t < k * k; t++) x[t] = (float)(tu_next(rng) & 255u);
            const float v = cpu_value(&p, tu_conv_cpu_sum(p.w, x, k * k));
            if (v - floorf(v) != 0.5f) continue;
            uint32_t uncertain;
            (void)ipk_conv_cert_u8(ipk_conv_cert_value(fused_sum(p.w, x, k * k), p.div, p.inv, p.pow2, p.off), p.thr,
                                   &uncertain);
            ties++;
            flagged += uncertain;
        }
        CHECK(ties > 1000 && flagged == ties, "dyadic %dx%d: %ld of %ld ties uncertain", k, k, flagged, ties);
        check_model(&p, w, 1, 0, rng);
    }
}

/* Which plans get a threshold: finite weights, values in range and a small bound only. */
static void check_threshold(void)
{
    double w[MAX_K * MAX_K];
    plan p;
    for (int i = 0; i < 25; i++) w[i] = i % 3 ? 1e30 * (i % 5 - 2) : 0.5;
    CHECK(!make_plan(&p, "huge", w, 5, 1, 0), "huge weights: no threshold");
    for (int i = 0; i < 25; i++) w[i] = i == 7 ? INFINITY : 0.1;
    CHECK(!make_plan(&p, "infinite", w, 5, 1, 0), "an infinite weight: no threshold");
    for (int i = 0; i < 49; i++) w[i] = 2.51 + 0.01 * (i % 3);
    CHECK(!make_plan(&p, "large sums", w, 7, 1, 0) && p.bound > IPK_CONV_CERT_MAX_BOUND,
          "a 7x7 of large sums: no threshold (bound %g)", p.bound);
    bench_weights(5, w);
    CHECK(!make_plan(&p, "tiny divisor", w, 5, 1e-5, 0) && p.bound < 0, "values past 2^21: no plan");
    CHECK(!make_plan(&p, "offset", w, 5, 1, 3e6) && p.bound < 0, "an offset past 2^21: no plan");
    CHECK(make_plan(&p, "offset in range", w, 5, 1, -1e5), "an offset in range has a threshold");
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 5113);
    check_bench(&rng);
    double w[MAX_K * MAX_K];
    static const double divisors[] = { 2, -0.5, 3, 0.7, -9 }, offsets[] = { 0, 128, -3.5, 0.25, -0.0 };
    for (int k = 5; k <= 9; k += 2)
        for (int t = 0; t < 5; t++) {
            for (int i = 0; i < k * k; i++) w[i] = (double)(tu_next(&rng) % 2001) / 4000.0 - 0.2;
            check_kernel("random", w, k, divisors[t], offsets[t], 200000, &rng);
        }
    for (int k = 5; k <= 7; k += 2) {
        for (int i = 0; i < k * k; i++) w[i] = -0.01 * (i + 1);
        check_kernel("all negative /-2", w, k, -2, -0.0, 200000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = (i % 2 ? 1.7 : -1.3) + 0.001 * i;
        check_kernel("cancelling /7 +3.5", w, k, 7, 3.5, 400000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = 1e-36 * (i + 1);
        check_kernel("tiny weights", w, k, 1e-33, 1, 200000, &rng);
    }
    check_ties(&rng);
    check_threshold();
    return tu_finish();
}
