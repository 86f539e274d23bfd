/* entropy kernel against a per-pixel recount, and the stage's plan and messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "../../kernels/common/border.h"
/* The stage itself, built into this test without its GPU half. */
#undef IMGPIPE_HAVE_CUDA
#include "../../plugins/entropy/entropy.c"

/* Random values below `levels`, so every pixel is valid input. */
static ipk_img random_levels(int w, int h, ipk_dtype t, int levels, int pad, tu_rng *r)
{
    ipk_img img = tu_img_random(w, h, 1, t, pad, r);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            void *p = tu_px(&img, x, y, 0);
            if (t == IPK_U8) *(uint8_t *)p = (uint8_t)(*(uint8_t *)p % levels);
            else *(uint16_t *)p = (uint16_t)(*(uint16_t *)p % levels);
        }
    return img;
}

/* Natural-log entropy of the window at (x, y), recounted from scratch. */
static double ref_entropy(const ipk_img *src, int x, int y, int r, int levels, int bins, int *n_out)
{
    int *count = calloc((size_t)bins, sizeof *count);
    int n = 0;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            int yy = ipk_border_index(y + dy, src->height, IPK_SHRINK);
            int xx = ipk_border_index(x + dx, src->width, IPK_SHRINK);
            if (yy < 0 || xx < 0) continue;
            int64_t v = (int64_t)tu_get(src, xx, yy, 0);
            count[v * bins / levels]++;
            n++;
        }
    double h = 0;
    for (int b = 0; b < bins; b++)
        if (count[b]) h -= (double)count[b] / n * log((double)count[b] / n);
    free(count);
    *n_out = n;
    return h;
}

static int ref_to_u8(double h_nat, int bins, int r, int *near_half)
{
    int side = 2 * r + 1, m = bins < side * side ? bins : side * side;
    double v = m > 1 ? h_nat / log((double)m) * 255.0 : 0.0;
    *near_half = fabs(v - floor(v) - 0.5) < 1e-6;
    return v >= 255 ? 255 : (int)floor(v + 0.5);
}

/* Counts mismatches against the reference; returns the worst f32 error. */
static double compare(const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p, int *bad_u8)
{
    double worst = 0;
    *bad_u8 = 0;
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x++) {
            int n, near_half;
            double h = ref_entropy(src, x, y, p->radius, p->levels, p->bins, &n);
            if (dst->dtype == IPK_F32) {
                double d = fabs(tu_get(dst, x, y, 0) - h * p->log_scale);
                worst = d > worst || isnan(d) ? (isnan(d) ? INFINITY : d) : worst;
            } else {
                int want = ref_to_u8(h, p->bins, p->radius, &near_half);
                int got = (int)tu_get(dst, x, y, 0);
                if (got != want && !(near_half && abs(got - want) == 1)) (*bad_u8)++;
            }
        }
    return worst;
}

static int same_pixels(const ipk_img *a, const ipk_img *b)
{
    size_t row = (size_t)a->width * (a->dtype == IPK_U8 ? 1 : 4);
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), row)) return 0;
    return 1;
}

static void check_case(int w, int h, ipk_dtype t, int levels, int bins, int r, double scale,
                       ipk_dtype out_t, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = random_levels(w, h, t, levels, 3 + (int)(seed % 5), &rng);
    ipk_img dst = tu_img_zeros(w, h, 1, out_t, 5);
    ipk_img dst3 = tu_img_zeros(w, h, 1, out_t, 0);
    ipk_entropy_params p = { r, levels, bins, scale };
    int64_t bad = -1;
    int rc = ipk_entropy_cpu(&src, &dst, &p, 1, &bad);
    CHECK(rc == IPK_OK, "rc %d for %dx%d levels=%d bins=%d r=%d", rc, w, h, levels, bins, r);
    int bad_u8;
    double worst = compare(&src, &dst, &p, &bad_u8);
    CHECK(worst < 1e-5, "%dx%d dtype %d levels=%d bins=%d r=%d scale %g: max error %g", w, h, t, levels,
          bins, r, scale, worst);
    CHECK(bad_u8 == 0, "%dx%d levels=%d bins=%d r=%d: %d u8 pixels differ", w, h, levels, bins, r, bad_u8);
    for (int threads = 2; threads <= 3; threads++) {
        rc = ipk_entropy_cpu(&src, &dst3, &p, threads, &bad);
        CHECK(rc == IPK_OK && same_pixels(&dst, &dst3), "%dx%d r=%d: %d threads differ from 1", w, h, r, threads);
    }
    tu_img_free(&src);
    tu_img_free(&dst);
    tu_img_free(&dst3);
}

/* The seed definition: 5x5 window, values 0..15, levels=bins=16, natural log. */
static void check_seed_definition(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 7, 5 }, { 37, 23 }, { 101, 61 }, { 2, 3 } };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_case(sizes[i][0], sizes[i][1], IPK_U8, 16, 16, 2, 1.0, IPK_F32, 100 + i);
}

static void check_parameters(void)
{
    const double ln2 = 1.4426950408889634, ln10 = 0.43429448190325176;
    check_case(37, 23, IPK_U8, 256, 16, 1, 1.0, IPK_F32, 1);
    check_case(37, 23, IPK_U8, 256, 256, 3, ln2, IPK_F32, 2);
    check_case(23, 37, IPK_U8, 200, 7, 2, ln10, IPK_F32, 3);
    check_case(41, 29, IPK_U8, 256, 256, 7, ln2, IPK_F32, 4);
    check_case(13, 11, IPK_U8, 256, 16, 30, 1.0, IPK_F32, 5);
    check_case(1, 40, IPK_U8, 256, 16, 4, 1.0, IPK_F32, 6);
    check_case(40, 1, IPK_U8, 256, 16, 4, 1.0, IPK_F32, 7);
    check_case(101, 61, IPK_U16, 65536, 16, 2, 1.0, IPK_F32, 8);
    check_case(37, 23, IPK_U16, 65536, 65536, 2, ln2, IPK_F32, 9);
    check_case(37, 23, IPK_U16, 1000, 1000, 3, ln2, IPK_F32, 10);
    check_case(29, 31, IPK_U16, 4096, 1, 2, 1.0, IPK_F32, 11);
    check_case(37, 23, IPK_U8, 16, 16, 2, 1.0, IPK_U8, 12);
    check_case(37, 23, IPK_U8, 256, 256, 1, ln2, IPK_U8, 13);
    check_case(61, 7, IPK_U16, 65536, 64, 5, ln10, IPK_U8, 14);
    check_case(1, 1, IPK_U16, 65536, 16, 3, 1.0, IPK_U8, 15);
    /* Tall enough for several row strips with 2 and 3 threads; bins <= 16 with the pair table
     * (r <= 3) and with single lookups (r 4 to 7). */
    check_case(19, 203, IPK_U8, 16, 16, 2, ln2, IPK_F32, 16);
    check_case(23, 250, IPK_U8, 256, 16, 7, 1.0, IPK_U8, 17);
    check_case(31, 150, IPK_U16, 300, 5, 3, ln10, IPK_F32, 18);
    check_case(29, 140, IPK_U8, 256, 13, 5, 1.0, IPK_F32, 19);
    check_case(17, 180, IPK_U8, 256, 256, 2, 1.0, IPK_F32, 20);   /* more than 16 bins, several strips */
}

/* A constant window has entropy 0; all-distinct values in a full window give log n. */
static void check_known_values(void)
{
    ipk_img src = tu_img_zeros(9, 9, 1, IPK_U8, 2);
    ipk_img dst = tu_img_zeros(9, 9, 1, IPK_F32, 0);
    ipk_img dst8 = tu_img_zeros(9, 9, 1, IPK_U8, 0);
    ipk_entropy_params p = { 1, 256, 256, 1.0 };
    int64_t bad;
    CHECK(ipk_entropy_cpu(&src, &dst, &p, 2, &bad) == IPK_OK && tu_get(&dst, 4, 4, 0) == 0.0f,
          "constant image: %g", tu_get(&dst, 4, 4, 0));
    for (int y = 0; y < 9; y++)
        for (int x = 0; x < 9; x++) *(uint8_t *)tu_px(&src, x, y, 0) = (uint8_t)(y * 9 + x);
    CHECK(ipk_entropy_cpu(&src, &dst, &p, 2, &bad) == IPK_OK && fabs(tu_get(&dst, 4, 4, 0) - log(9.0)) < 1e-6,
          "distinct 3x3: %g, want %g", tu_get(&dst, 4, 4, 0), log(9.0));
    CHECK(fabs(tu_get(&dst, 0, 0, 0) - log(4.0)) < 1e-6, "corner 2x2: %g", tu_get(&dst, 0, 0, 0));
    CHECK(ipk_entropy_cpu(&src, &dst8, &p, 2, &bad) == IPK_OK && tu_get(&dst8, 4, 4, 0) == 255,
          "u8 full scale: %g", tu_get(&dst8, 4, 4, 0));
    tu_img_free(&src);
    tu_img_free(&dst);
    tu_img_free(&dst8);
}

static void check_errors(void)
{
    ipk_img src = tu_img_zeros(9, 8, 1, IPK_U16, 4);
    ipk_img dst = tu_img_zeros(9, 8, 1, IPK_F32, 0);
    *(uint16_t *)tu_px(&src, 5, 3, 0) = 300;
    *(uint16_t *)tu_px(&src, 2, 6, 0) = 400;
    *(uint16_t *)tu_px(&src, 7, 3, 0) = 500;
    ipk_entropy_params p = { 2, 256, 16, 1.0 };
    for (int threads = 1; threads <= 3; threads++) {
        int64_t bad = -1;
        int rc = ipk_entropy_cpu(&src, &dst, &p, threads, &bad);
        CHECK(rc == IPK_ERANGE && bad == 300, "threads %d: rc %d bad %lld, want ERANGE 300", threads, rc,
              (long long)bad);
    }
    ipk_entropy_params too_many_bins = { 2, 16, 17, 1.0 };
    int64_t bad;
    CHECK(ipk_entropy_cpu(&src, &dst, &too_many_bins, 1, &bad) == IPK_EINVAL, "bins > levels accepted");
    ipk_img rgb = tu_img_zeros(9, 8, 3, IPK_U8, 0);
    CHECK(ipk_entropy_cpu(&rgb, &dst, &p, 1, &bad) == IPK_EINVAL, "3 channels accepted");
    tu_img_free(&rgb);

    /* The stage turns the kernel's value into a message that says what to do. */
    entropy_state s = { p, 0 };
    ip_image in = { src.data, src.stride, { 9, 8, 1, IP_U16 }, 0 };
    ip_image out = { dst.data, dst.stride, { 9, 8, 1, IP_F32 }, 0 };
    char msg[200] = "";
    ip_exec ex = { NULL, 2, NULL, NULL, 0, msg, sizeof msg };
    CHECK(entropy_run_cpu(&s, &in, &out, &ex) == IP_EINVAL, "run accepted 300 >= 256");
    CHECK(!strcmp(msg, "entropy: pixel value 300 is >= levels=256 (set levels=65536 for 16-bit images)"),
          "message: %s", msg);
    tu_img_free(&src);
    tu_img_free(&dst);
}

static ip_value *default_args(void)
{
    static ip_value v[5];
    memset(v, 0, sizeof v);
    v[0].i = 2;
    v[1].i = 256;
    v[2].i = 16;
    return v;
}

static void check_stage(void)
{
    const ip_stage *st = imgpipe_stage();
    CHECK(st->abi_version == IP_ABI_VERSION && st->n_params == 5 && !strcmp(st->name, "entropy"), "descriptor");
    char err[200] = "";
    void *state = NULL;
    ip_value *args = default_args();
    args[2].i = 300;
    CHECK(st->create(args, &state, err, sizeof err) == IP_EINVAL && strstr(err, "bins=300"), "bins > levels: %s", err);
    args[2].i = 16;
    args[3].i = 1;
    args[4].i = 1;
    CHECK(st->create(args, &state, err, sizeof err) == IP_OK, "create: %s", err);
    const entropy_state *s = state;
    CHECK(s->p.radius == 2 && s->p.levels == 256 && s->p.bins == 16 && fabs(s->p.log_scale - 1 / log(2.0)) < 1e-15,
          "state from args");

    ip_shape rgb = { 31, 17, 3, IP_U8 }, out;
    ip_needs needs = { 0, 0, 0 };
    CHECK(st->plan(state, &rgb, &out, &needs, err, sizeof err) != IP_OK &&
          !strcmp(err, "entropy needs one channel, got 3: add 'grayscale' before it"), "rgb: %s", err);
    ip_shape f32 = { 31, 17, 1, IP_F32 };
    CHECK(st->plan(state, &f32, &out, &needs, err, sizeof err) != IP_OK && strstr(err, "float"), "f32: %s", err);
    ip_shape gray = { 31, 17, 1, IP_U16 };
    CHECK(st->plan(state, &gray, &out, &needs, err, sizeof err) == IP_OK && out.dtype == IP_U8 &&
          out.width == 31 && out.height == 17 && out.channels == 1 && needs.halo == 2, "u8 output plan");
    st->destroy(state);
}

int main(void)
{
    check_seed_definition();
    check_parameters();
    check_known_values();
    check_errors();
    check_stage();
    return tu_finish();
}
