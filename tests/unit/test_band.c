/* The band executor against the whole-image path: every stage, border, depth and channel count,
 * at band heights of 1, 2, 7 and 64 rows (halos taller than a band among them), through chains
 * with global stages between segments, with the source and sink on the calling thread and on
 * threads of their own (queues of 2 and 3 bands, sink bands of 1 row to a band); histogram counts
 * against the whole image's. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "image.h"
#include "pipeline.h"
#include "plan.h"
#include "registry.h"
#include "stream.h"
#include "testutil.h"

static registry reg;
/* band rows, bands queued on each side (0: no threads), rows of a queued sink band (0: band rows) */
static const int band_configs[][3] = { { 1, 0, 0 }, { 1, 2, 3 }, { 2, 2, 1 }, { 7, 0, 0 }, { 7, 3, 0 }, { 64, 2, 0 } };
#define N_CONFIGS (int)(sizeof band_configs / sizeof *band_configs)

static int build_plan(const char *text, const ip_shape *shape, plan *p)
{
    pl_pipeline pl;
    char err[1024];
    ip_shape final;
    if (pl_parse(text, "-e", &pl, err, sizeof err) != IP_OK) {
        CHECK(0, "%s: %s", text, err);
        return 0;
    }
    int rc = plan_build(&reg, &pl, p, err, sizeof err);
    pl_free(&pl);
    if (rc == IP_OK && (rc = plan_shapes(p, shape, &final, err, sizeof err)) != IP_OK) plan_free(p);
    CHECK(rc == IP_OK, "%s: %s", text, err);
    return rc == IP_OK;
}

static ip_image random_image(const ip_shape *s, uint64_t seed, int max_value)
{
    tu_rng r;
    tu_seed(&r, seed);
    ipk_img k = tu_img_random(s->width, s->height, s->channels, (ipk_dtype)s->dtype, 0, &r);
    if (max_value > 0) {
        size_t n = (size_t)s->width * s->height * s->channels;
        for (size_t i = 0; i < n; i++) {
            if (s->dtype == IP_U8) ((uint8_t *)k.data)[i] %= (uint8_t)(max_value + 1 > 255 ? 255 : max_value + 1);
            else if (s->dtype == IP_U16) ((uint16_t *)k.data)[i] %= (uint16_t)(max_value + 1);
        }
    }
    ip_image im = { k.data, k.stride, *s, 0 };
    return im;
}

/* Whole-image result of text on in, copied (the context owns its result). */
static int run_whole(const char *text, const ip_image *in, ip_image *out)
{
    plan p;
    if (!build_plan(text, &in->shape, &p)) return 0;
    exec_options eo = { EXEC_CPU, 0, 2, EXEC_COPY, 0, 0 };
    exec_ctx *ctx;
    char err[1024];
    ip_image res;
    int rc = exec_create(&ctx, &eo, err, sizeof err);
    if (rc == IP_OK) rc = exec_run(ctx, &p, in, "whole.png", &res, NULL, err, sizeof err);
    if (rc == IP_OK) rc = img_alloc(out, &res.shape, UINT64_MAX, err, sizeof err);
    if (rc == IP_OK)
        for (int y = 0; y < res.shape.height; y++)
            memcpy((char *)out->data + y * out->stride, (char *)res.data + y * res.stride, img_row_bytes(&res.shape));
    CHECK(rc == IP_OK, "%s: whole: %s", text, err);
    exec_destroy(ctx);
    plan_free(&p);
    return rc == IP_OK;
}

static int run_streamed(const char *text, const ip_image *in, const int config[3], ip_image *out)
{
    int band_rows = config[0];
    plan p;
    if (!build_plan(text, &in->shape, &p)) return 0;
    stream_image_source src_state;
    stream_source src = stream_source_of_image(&src_state, in, band_rows);
    stream_image_sink sink_state;
    char err[1024];
    int rc = stream_image_sink_init(&sink_state, &p.steps[p.n - 1].out, err, sizeof err);
    band_sink sink = stream_sink_of_image(&sink_state);
    stream_options so = { band_rows, 2, "streamed.png", config[1], config[2] };
    if (rc == IP_OK) rc = stream_run(&p, &src, &sink, &so, NULL, err, sizeof err);
    if (rc == IP_OK && sink_state.rows_in != sink_state.img.shape.height) rc = IP_EINVAL;
    CHECK(rc == IP_OK, "%s: streamed (bands of %d, %d queued): %s", text, band_rows, config[1], err);
    if (rc == IP_OK) *out = sink_state.img;
    else img_free(&sink_state.img);
    plan_free(&p);
    return rc == IP_OK;
}

static int same_image(const ip_image *a, const ip_image *b)
{
    if (memcmp(&a->shape, &b->shape, sizeof a->shape) != 0) return 0;
    size_t row = img_row_bytes(&a->shape);
    for (int y = 0; y < a->shape.height; y++)
        if (memcmp((char *)a->data + y * a->stride, (char *)b->data + y * b->stride, row) != 0) return 0;
    return 1;
}

/* The streamed run of text equals the whole-image run at every band height. */
static void check_pipeline(const char *text, const ip_shape *shape, uint64_t seed, int max_value)
{
    ip_image in = random_image(shape, seed, max_value), whole;
    if (!run_whole(text, &in, &whole)) {
        free(in.data);
        return;
    }
    for (int i = 0; i < N_CONFIGS; i++) {
        ip_image streamed;
        if (!run_streamed(text, &in, band_configs[i], &streamed)) continue;
        CHECK(same_image(&whole, &streamed), "%s on %dx%dx%d %s: bands of %d rows (%d queued) differ from the whole image",
              text, shape->width, shape->height, shape->channels, img_dtype_name(shape->dtype), band_configs[i][0],
              band_configs[i][1]);
        img_free(&streamed);
    }
    img_free(&whole);
    free(in.data);
}

static void test_window_stages(void)
{
    static const char *const borders[] = { "replicate", "reflect101", "zero", "shrink" };
    static const ip_dtype dtypes[] = { IP_U8, IP_U16, IP_F32 };
    static const int radii[] = { 1, 3, 9 };
    static const int channels[] = { 1, 4 };
    char text[256];
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 3; d++)
            for (int c = 0; c < 2; c++)
                for (int r = 0; r < 3; r++) {
                    ip_shape s = { 37, 29, channels[c], dtypes[d] };
                    uint64_t seed = (uint64_t)(b * 100 + d * 10 + c) * 7 + (uint64_t)r;
                    snprintf(text, sizeof text, "median radius=%d border=%s", radii[r], borders[b]);
                    check_pipeline(text, &s, seed, 0);
                    snprintf(text, sizeof text, "mean radius=%d border=%s", radii[r], borders[b]);
                    check_pipeline(text, &s, seed + 1, 0);
                }
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 3; d++) {
            static const char *const kernels[] = { "gaussian5", "sobel-y", "\"1 2 3 4 5 6 7; 1 1 1 1 1 1 1; 0 0 0 0 0 0 0\"" };
            for (int k = 0; k < 3; k++) {
                ip_shape s = { 31, 23, 3, dtypes[d] };
                snprintf(text, sizeof text, "convolve kernel=%s border=%s", kernels[k], borders[b]);
                check_pipeline(text, &s, (uint64_t)(b * 3 + d + 500 + k), 0);
                snprintf(text, sizeof text, "convolve kernel=%s border=%s output=f32", kernels[k], borders[b]);
                check_pipeline(text, &s, (uint64_t)(b * 3 + d + 600 + k), 0);
            }
        }
}

static void test_entropy_and_point(void)
{
    ip_shape gray8 = { 41, 19, 1, IP_U8 }, gray16 = { 23, 31, 1, IP_U16 };
    check_pipeline("entropy radius=2", &gray8, 71, 0);
    check_pipeline("entropy radius=5 bins=256 output=u8", &gray8, 72, 0);
    check_pipeline("entropy radius=3 levels=4096 bins=64", &gray16, 73, 4095);
    ip_shape rgb = { 29, 17, 3, IP_U8 }, rgba16 = { 13, 11, 4, IP_U16 }, rgbf = { 19, 13, 3, IP_F32 };
    check_pipeline("grayscale", &rgb, 74, 0);
    check_pipeline("grayscale weights=bt709", &rgba16, 75, 0);
    check_pipeline("grayscale", &rgbf, 76, 0);
}

/* Chains: halos adding up over stages, global stages splitting segments, an image of one row, an
 * image shorter than the halo, and a plugin built before stage classes (it marks its output's
 * first value with the height it was given: the whole image's, if it ran as global). */
static void test_chains(void)
{
    ip_shape rgb = { 53, 47, 3, IP_U8 }, one_row = { 17, 1, 3, IP_U8 }, short_img = { 11, 3, 1, IP_U16 };
    const char *chains[] = {
        "grayscale | median radius=1 | convolve kernel=gaussian3",
        "median radius=2 | transpose | mean radius=3 border=shrink",
        "mean radius=4 | median radius=5 border=reflect101 | convolve kernel=sharpen border=zero",
        "transpose | grayscale | transpose",
        "grayscale | median radius=6 | entropy radius=4",
        "convolve kernel=box3 | transpose",
    };
    for (size_t i = 0; i < sizeof chains / sizeof *chains; i++) check_pipeline(chains[i], &rgb, 80 + i, 0);
    check_pipeline("median radius=3 | mean radius=2", &one_row, 90, 0);
    check_pipeline("median radius=4 border=reflect101 | mean radius=7 border=reflect101", &short_img, 91, 0);
    if (registry_find(&reg, "oldinvert")) {
        ip_shape tall = { 9, 300, 1, IP_U8 };
        check_pipeline("median radius=1 | oldinvert | mean radius=1", &tall, 92, 0);
        ip_image in = random_image(&tall, 93, 0), out;
        if (run_streamed("grayscale | oldinvert", &in, band_configs[4], &out)) {
            CHECK(*(uint8_t *)out.data == (uint8_t)300, "oldinvert saw %d rows, not the whole image",
                  *(uint8_t *)out.data);
            img_free(&out);
        }
        free(in.data);
    } else {
        CHECK(0, "the oldinvert test plugin was not found");
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    if (buf) buf[fread(buf, 1, (1 << 20) - 1, f)] = '\0';
    fclose(f);
    return buf;
}

/* The streamed histogram's CSV equals the whole image's, and its counts add up to the pixels. */
static void test_histogram(void)
{
    const char *dir = tu_tmpdir();
    static const ip_shape shapes[] = { { 61, 43, 3, IP_U8 }, { 17, 29, 1, IP_U16 }, { 13, 7, 4, IP_F32 } };
    for (int k = 0; k < 3; k++) {
        const ip_shape *s = &shapes[k];
        ip_image in = random_image(s, 200 + (uint64_t)k, 0), out;
        char whole_text[512], text[512], path[400], whole_path[400];
        snprintf(whole_path, sizeof whole_path, "%s/whole%d.csv", dir, k);
        snprintf(whole_text, sizeof whole_text, "histogram bins=64 out=%s | median radius=2", whole_path);
        if (run_whole(whole_text, &in, &out)) img_free(&out);
        char *want = slurp(whole_path);
        CHECK(want != NULL, "no whole-image CSV");
        for (int i = 0; want && i < N_CONFIGS; i++) {
            snprintf(path, sizeof path, "%s/band%d_%d.csv", dir, k, i);
            snprintf(text, sizeof text, "histogram bins=64 out=%s | median radius=2", path);
            if (run_streamed(text, &in, band_configs[i], &out)) img_free(&out);
            char *got = slurp(path);
            CHECK(got && strcmp(got, want) == 0, "histogram of %s in bands of %d (%d queued) differs from the whole image's",
                  img_dtype_name(s->dtype), band_configs[i][0], band_configs[i][1]);
            free(got);
        }
        /* independent: every channel's counts sum to the pixel count */
        unsigned long long sum[4] = { 0 };
        for (char *line = want ? strchr(want, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
            char *p = strchr(line + 1, ',');
            for (int c = 0; c < s->channels && p; c++, p = strchr(p + 1, ',')) sum[c] += strtoull(p + 1, NULL, 10);
        }
        for (int c = 0; c < s->channels; c++)
            CHECK(sum[c] == (unsigned long long)s->width * s->height, "channel %d counts %llu", c, sum[c]);
        free(want);
        free(in.data);
    }
}

int main(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR"), *tp = getenv("IMGPIPE_TEST_PLUGINS");
    if (!build || !tp) tu_skip("IMGPIPE_BUILD_DIR or IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    char dirs[1200], err[256];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins:%s/oldsize", build, tp);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    test_window_stages();
    test_entropy_and_point();
    test_chains();
    test_histogram();
    registry_free(&reg);
    return tu_finish();
}
