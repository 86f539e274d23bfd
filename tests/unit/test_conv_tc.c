/* The tensor-core convolve's arithmetic (kernels/common/convolve_tc.h) on the host, against the CPU:
 * - the limbs: two or three digits in -128..127 whose value is the weight rounded to a multiple of
 *   1 / (S 256^(L-1)), the largest scaled weight in (63, 126]; the scale search rounds decimal
 *   weights over their sum (bench_gpu's) almost exactly;
 * - the fixed point's bits: the byte (rint, saturated) and the fraction of negative, large and
 *   half-way values;
 * - the bound: over random and extreme windows the CPU's value is never farther than the bound
 *   from the fixed-point one formed from exact integer limb sums (as the tensor cores give them),
 *   and every pixel called certain has the CPU's byte, with both limb counts;
 * - the kernel modelled pixel by pixel against ipk_convolve_cpu on odd sizes and every border;
 * - dyadic weights, whose sums land on half-integers, have every tie called uncertain, and take
 *   two limbs, as bench_gpu's weights do;
 * - which plans are refused. */
#include <math.h>
#include <string.h>
#include "conv_model.h"
#include "convolve_tc.h"

#define MAX_K 7

typedef struct {
    const char *name;
    float w[MAX_K * MAX_K];
    int k;
    float div, off;
    ipk_conv_tc_plan tc;
} plan;

/* limbs 0: the plan's choice (ipk_conv_tc_plan_make). */
static int make_plan(plan *p, const char *name, const double *w, int k, double divisor, double offset, int limbs)
{
    memset(p, 0, sizeof *p);
    p->name = name;
    p->k = k;
    if (k > MAX_K) return 0;
    for (int i = 0; i < k * k; i++) p->w[i] = (float)w[i];
    p->div = (float)divisor;
    p->off = (float)offset;
    return limbs ? ipk_conv_tc_plan_limbs(p->w, k, p->div, p->off, limbs, &p->tc)
                 : ipk_conv_tc_plan_make(p->w, k, p->div, p->off, &p->tc);
}

/* Weight t's value as the limbs give it, in units of 2^-(s+8(L-1)). */
static int64_t limb_value(const plan *p, int t)
{
    int64_t n = 0;
    for (int l = 0; l < p->tc.limbs; l++) n = n * 256 + p->tc.q[l][t];
    return n;
}

static double limb_unit(const plan *p)
{
    return (double)p->tc.scale * ldexp(1.0, -8 * (p->tc.limbs - 1));
}

/* The limbs: digits in range, unused limbs zero, and their value the weight rounded to a multiple
 * of 2^-(s+8(L-1)). */
static void check_limbs(const plan *p)
{
    int bad = 0;
    double top = 0;
    for (int t = 0; t < p->k * p->k; t++) top = fmax(top, fabs((double)p->w[t]));
    const double ulp = limb_unit(p);
    for (int t = 0; t < p->k * p->k; t++) {
        bad += fabs((double)p->w[t] - (double)limb_value(p, t) * ulp) > ulp / 2;
        bad += p->tc.q[0][t] < -127;
        for (int l = p->tc.limbs; l < IPK_CONV_TC_LIMBS; l++) bad += p->tc.q[l][t] != 0;
    }
    CHECK(bad == 0, "%s: limbs of every weight within half a unit", p->name);
    CHECK(top / p->tc.scale <= 126.0 && top / p->tc.scale > 63.0, "%s: largest scaled weight %g in (63, 126]", p->name,
          top / p->tc.scale);
}

/* The kernel's fixed-point value for a window: exact limb sums, then ipk_conv_tc_fixed. */
static int32_t tc_fixed(const plan *p, const float *x)
{
    int32_t s[3] = { 0, 0, 0 };
    for (int l = 0; l < p->tc.limbs; l++)
        for (int t = 0; t < p->k * p->k; t++) s[l] += (int32_t)x[t] * p->tc.q[l][t];
    return ipk_conv_tc_fixed(s[0], s[1], s[2], p->tc.limbs, p->tc.mhi, p->tc.mlo, p->tc.c, p->tc.shift);
}

/* The value the fixed point stands for (the rounded weights' value, recentred): x / 2^16 less 1/2
 * and the plan's margin, half of open (both in 2^-16). */
static double tc_value(const plan *p, int32_t x)
{
    return (double)x / 65536.0 - 0.5 - (double)p->tc.open / 131072.0;
}

static uint8_t model_byte(const void *model_plan, const float *x, long *open)
{
    const plan *p = model_plan;
    uint32_t uncertain;
    const uint32_t byte = ipk_conv_tc_byte(tc_fixed(p, x), p->tc.open, &uncertain);
    if (!uncertain) return (uint8_t)byte;
    ++*open;
    return tu_conv_cpu_byte(tu_conv_cpu_sum(p->w, x, p->k * p->k) / p->div + p->off);
}

static double check_model(const plan *p, const double *w, double divisor, double offset, tu_rng *rng)
{
    return tu_conv_check_model(p->name, model_byte, p, w, p->k, divisor, offset, rng);
}

/* Random windows: |v_cpu - v_tc| within the bound, certain bytes the CPU's. Returns the share of
 * uncertain windows. */
static double check_windows(const plan *p, long windows, double *worst, tu_rng *rng)
{
    const int taps = p->k * p->k;
    long open = 0, wrong = 0, over = 0;
    *worst = 0.0;
    for (long n = 0; n < windows; n++) {
        float x[MAX_K * MAX_K];
        tu_conv_random_window(x, taps, (int)(n % 4), rng);
        const float v_cpu = tu_conv_cpu_sum(p->w, x, taps) / p->div + p->off;
        const int32_t fixed = tc_fixed(p, x);
        const double d = fabs((double)v_cpu - tc_value(p, fixed));
        if (d > *worst) *worst = d;
        over += d > p->tc.bound;
        uint32_t uncertain;
        const uint32_t byte = ipk_conv_tc_byte(fixed, p->tc.open, &uncertain);
        if (uncertain) open++;
        else wrong += byte != tu_conv_cpu_byte(v_cpu);
    }
    CHECK(over == 0, "%s: %ld windows past the bound %g (worst %g)", p->name, over, p->tc.bound, *worst);
    CHECK(wrong == 0, "%s: %ld certain pixels not the CPU's byte", p->name, wrong);
    return (double)open / (double)windows;
}

/* The plan's margin: open pixels those whose fraction is within the bound (plus the fixed point's
 * last unit) of a half-integer, a little more at most. */
static void check_margin(const plan *p)
{
    const double units = ldexp(1.0, 16 - p->tc.shift), open = (double)p->tc.open / 65536.0;
    CHECK(open > 2 * p->tc.bound && open <= 2 * p->tc.bound + 2 / units + 1e-12,
          "%s: open fraction %g for the bound %g", p->name, open, p->tc.bound);
}

static void check_limbs_kernel(const char *name, const double *w, int k, double divisor, double offset, int limbs,
                               long windows, tu_rng *rng)
{
    plan p;
    if (!make_plan(&p, name, w, k, divisor, offset, limbs)) {
        CHECK(0, "%s %dx%d /%g %+g, %d limbs: no certificate (bound %g)", name, k, k, divisor, offset, limbs, p.tc.bound);
        return;
    }
    check_limbs(&p);
    check_margin(&p);
    double quant = 0.0, g, a;
    for (int t = 0; t < k * k; t++) quant += fabs((double)p.w[t] - (double)limb_value(&p, t) * limb_unit(&p));
    const double e = ipk_conv_cert_sum_errors(p.w, k * k, &g, &a);
    CHECK(p.tc.bound >= (e + 127.5 * quant) / fabs((double)p.div), "%s: the bound %g holds the CPU's error and the "
          "limbs' rounding about its centre (%g)", name, p.tc.bound, (e + 127.5 * quant) / fabs((double)p.div));
    double worst;
    const double windows_open = check_windows(&p, windows, &worst, rng), model_open = check_model(&p, w, divisor, offset, rng);
    if (!strcmp(name, "bench")) {
        CHECK(127.5 * quant / fabs((double)p.div) < p.tc.bound / 20, "bench %dx%d, %d limbs: the searched scale rounds "
              "the decimal weights almost exactly (%g of the bound %g)", k, k, limbs, 127.5 * quant, p.tc.bound);
        printf("bench %dx%d, %d limbs: bound %.3g, worst %.3g, %.3f%% of random windows and %.3f%% of image pixels "
               "uncertain\n", k, k, limbs, p.tc.bound, worst, 100 * windows_open, 100 * model_open);
        CHECK(windows_open < 0.02 && model_open < 0.02, "bench %dx%d: under 2%% uncertain", k, k);
        CHECK(worst > p.tc.bound / 64, "bench %dx%d: worst %g within 64x of the bound %g", k, k, worst, p.tc.bound);
    }
}

/* The plan's choice, and each limb count that has a certificate, against the CPU. */
static void check_kernel(const char *name, const double *w, int k, double divisor, double offset, long windows,
                         tu_rng *rng)
{
    plan p;
    if (!make_plan(&p, name, w, k, divisor, offset, 0)) {
        CHECK(0, "%s %dx%d /%g %+g: no certificate (bound %g)", name, k, k, divisor, offset, p.tc.bound);
        return;
    }
    CHECK(p.tc.limbs == 3 || p.tc.bound <= IPK_CONV_TC_TWO_LIMB_BOUND, "%s: two limbs only under their bound", name);
    for (int limbs = 2; limbs <= 3; limbs++) {
        plan q;
        if (limbs == 3 || make_plan(&q, name, w, k, divisor, offset, limbs))
            check_limbs_kernel(name, w, k, divisor, offset, limbs, windows / 2, rng);
    }
}

static void check_ties(tu_rng *rng)
{
    double w[MAX_K * MAX_K];
    for (int k = 5; k <= 7; k += 2) {
        for (int i = 0; i < k * k; i++) w[i] = (i % 2 ? 0.03125 : 0.0625) * (i % 3 ? 1 : -0.5);
        plan p;
        CHECK(make_plan(&p, "dyadic", w, k, 1, 0, 0) && p.tc.limbs == 2, "dyadic %dx%d has a two-limb plan", k, k);
        long ties = 0, flagged = 0;
        for (int n = 0; n < 200000; n++) {
            float x[MAX_K * MAX_K];
            for (int t = 0; t < k * k; t++) x[t] = (float)(tu_next(rng) & 255u);
            const float v = tu_conv_cpu_sum(p.w, x, k * k);
            if (v - floorf(v) != 0.5f) continue;
            uint32_t uncertain;
            (void)ipk_conv_tc_byte(tc_fixed(&p, x), p.tc.open, &uncertain);
            ties++;
            flagged += uncertain;
        }
        CHECK(ties > 1000 && flagged == ties, "dyadic %dx%d: %ld of %ld ties uncertain", k, k, flagged, ties);
        check_model(&p, w, 1, 0, rng);
    }
}

/* The byte and the fraction off the fixed point's bits, against values written out. */
static void check_bits(void)
{
    static const struct { int32_t x; uint32_t byte, uncertain; } cases[] = {
        { 0, 0, 1 }, { 0x8000, 0, 0 }, { 0x10000, 1, 1 }, { 0xff8000, 255, 0 }, { 0x1008000, 255, 0 },
        { 0x7d008000, 255, 0 }, { -1, 0, 0 }, { -0x10000, 0, 1 }, { -0x7d000000, 0, 1 }, { 0x7f00ff, 127, 0 },
        { 0x7f00fe, 127, 0 }, { 0x7f00fd, 127, 1 },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t uncertain;
        const uint32_t byte = ipk_conv_tc_byte(cases[i].x, 0xfe, &uncertain);
        bad += byte != cases[i].byte || uncertain != cases[i].uncertain;
    }
    CHECK(bad == 0, "fixed-point bits: byte saturated, fraction below open uncertain");
    CHECK(ipk_conv_tc_fixed(-3, 0, 0, 2, 1 << 24, 0, 0, 0) == -3 && ipk_conv_tc_fixed(-1, 0, 0, 2, 1, 0, 0, 0) == -1 &&
              ipk_conv_tc_fixed(1, 2, 3, 3, 1 << 30, 1 << 28, 5, 0) == 64 &&
              ipk_conv_tc_fixed(1, 2, 3, 2, 1 << 30, 1 << 28, 5, 0) == 64 &&
              ipk_conv_tc_fixed(1, 2, 3, 3, 1 << 30, 1 << 28, 5, 8) == 16560 &&
              ipk_conv_tc_fixed(0x7fff, 0xff, 0, 2, 0x7fffffff, 0, (int64_t)1 << 62, 0) == 0x403fffff,
          "64-bit sums, their high word and the shift");
}

static void check_refusals(void)
{
    double w[MAX_K * MAX_K];
    plan p;
    for (int i = 0; i < 25; i++) w[i] = i == 7 ? INFINITY : 0.1;
    CHECK(!make_plan(&p, "infinite", w, 5, 1, 0, 0), "an infinite weight: no plan");
    for (int i = 0; i < 25; i++) w[i] = 0.0;
    CHECK(!make_plan(&p, "zeros", w, 5, 1, 0, 0), "all-zero weights: no plan");
    for (int i = 0; i < 49; i++) w[i] = 2.51 + 0.01 * (i % 3);
    CHECK(!make_plan(&p, "large sums", w, 7, 1, 0, 0), "a 7x7 of large sums: no threshold (bound %g)", p.tc.bound);
    float w9[81];
    for (int i = 0; i < 81; i++) w9[i] = 0.01f + 0.001f * (float)i;
    ipk_conv_tc_plan tc;
    CHECK(!ipk_conv_tc_plan_make(w9, 3, 1, 0, &tc) && !ipk_conv_tc_plan_make(w9, 9, 1, 0, &tc), "3x3 and 9x9: no plan");
    for (int i = 0; i < 25; i++) w[i] = 0.04;
    CHECK(!make_plan(&p, "tiny divisor", w, 5, 1e-5, 0, 0), "values past 32000: no plan");
    for (int i = 0; i < 25; i++) w[i] = 1e-36 * (i + 1);
    CHECK(!make_plan(&p, "weights below 2^-60", w, 5, 1e-33, 1, 0), "weights below 2^-60: no plan (the FMA kernel's)");
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 5117);
    check_bits();
    double w[MAX_K * MAX_K];
    static const double divisors[] = { 1, 2, -0.5, 3, 0.7, -9 }, offsets[] = { 0, 128, -3.5, 0.25, -0.0 };
    for (int k = 5; k <= 7; k += 2) {
        double sum = 0;
        for (int i = 0; i < k * k; i++) sum += w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
        for (int i = 0; i < k * k; i++) w[i] /= sum;
        check_kernel("bench", w, k, 1, 0, 1000000, &rng);
        for (int t = 0; t < 6; t++) {
            for (int i = 0; i < k * k; i++) w[i] = (double)(tu_next(&rng) % 2001) / 4000.0 - 0.2;
            check_kernel("random", w, k, divisors[t], offsets[t % 5], 200000, &rng);
        }
        for (int i = 0; i < k * k; i++) w[i] = (double)(float)((double)(tu_next(&rng) >> 8) / 16777216.0 - 0.3);
        check_kernel("random of full precision", w, k, 0.2 * k * k, 0, 200000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = -0.01 * (i + 1);
        check_kernel("all negative /-2", w, k, -2, -0.0, 200000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = (i % 2 ? 1.7 : -1.3) + 0.001 * i;
        check_kernel("cancelling /7 +3.5", w, k, 7, 3.5, 200000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = i == k * k / 2 ? 3.0 : 1e-4 * (i % 5 - 2);
        check_kernel("wide range", w, k, 3, 0, 200000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = 1e-15 * (i + 1);
        check_kernel("tiny weights", w, k, 1e-12, 1, 200000, &rng);
        for (int i = 0; i < k * k; i++) w[i] = 300.0 + i;
        check_kernel("large weights /40000", w, k, 40000, 0, 200000, &rng);
    }
    check_ties(&rng);
    check_refusals();
    return tu_finish();
}
