/* The band executor on the GPU, by one executor and by two workers (on GPUs 0 and 1 where the
 * machine has two, else both on GPU 0), against the CPU's
 * whole-image result: every stage class (a point stage without a GPU path making round trips
 * among them), borders, depths, 1/3/4 channels, bands of 1, 2, 7 and 64 rows (halos taller than a
 * band), odd widths; integer outputs identical, float outputs within 1e-5 (as tests/e2e/gpu_vs_cpu.sh
 * holds the whole-image paths); histogram counts equal; the peak device bytes within the
 * --gpu-memory budget the band height was chosen for. Skips (77) without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "band_testutil.h"
#include "gpu/gpu.h"
#include "gpu_testutil.h"
#include "base/image.h"
#include "stream/stream_budget.h"

static registry reg;
static const int band_heights[] = { 1, 2, 7, 64 };
static int second_gpu;   /* worker 1's device: 1 when there are two GPUs, else 0 */

static stream_options gpu_options(int band_rows, int workers)
{
    stream_options so = { band_rows, 1, "gpu.png", BAND_ON_GPU, workers, { 0, second_gpu }, 2, 0, 0 };   /* source and sink on threads, as in a run */
    return so;
}

static void check_pipeline(const char *text, const ip_shape *shape, uint64_t seed, int max_value)
{
    ip_image in = bt_random_image(shape, seed, max_value), whole;
    if (!bt_run_whole(&reg, text, &in, EXEC_CPU, &whole)) {
        free(in.data);
        return;
    }
    double tol = whole.shape.dtype == IP_F32 ? 1e-5 : 0;
    for (size_t i = 0; i < sizeof band_heights / sizeof *band_heights; i++)
        for (int workers = 1; workers <= 2; workers++) {
            stream_options so = gpu_options(band_heights[i], workers);
            ip_image got;
            if (!bt_run_streamed(&reg, text, &in, &so, &got, NULL)) continue;
            double d = bt_max_diff(&whole, &got);
            CHECK(d <= tol, "%s on %dx%dx%d %s: GPU bands of %d rows, %d workers: max difference %g from the CPU's "
                  "whole image", text, shape->width, shape->height, shape->channels, img_dtype_name(shape->dtype),
                  band_heights[i], workers, d);
            img_free(&got);
        }
    img_free(&whole);
    free(in.data);
}

static void test_stages(void)
{
    static const char *const borders[] = { "replicate", "reflect101", "zero", "shrink" };
    static const ip_dtype dtypes[] = { IP_U8, IP_U16, IP_F32 };
    static const int channels[] = { 1, 3, 4 };
    char text[256];
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 3; d++)
            for (int c = 0; c < 3; c++) {
                ip_shape s = { 37, 29, channels[c], dtypes[d] };
                uint64_t seed = (uint64_t)(b * 100 + d * 10 + c);
                snprintf(text, sizeof text, "median radius=%d border=%s", c + 1, borders[b]);
                check_pipeline(text, &s, seed, 0);
                snprintf(text, sizeof text, "mean radius=%d border=%s", 3 * c + 1, borders[b]);
                check_pipeline(text, &s, seed + 1, 0);
                snprintf(text, sizeof text, "convolve kernel=gaussian5 border=%s output=f32", borders[b]);
                check_pipeline(text, &s, seed + 2, 0);
            }
    ip_shape gray8 = { 41, 19, 1, IP_U8 }, rgb = { 53, 47, 3, IP_U8 }, one_row = { 17, 1, 3, IP_U8 };
    check_pipeline("entropy radius=2", &gray8, 71, 0);
    check_pipeline("entropy radius=5 bins=256 output=u8", &gray8, 72, 0);
    check_pipeline("grayscale | median radius=1 | convolve kernel=gaussian3", &rgb, 80, 0);
    check_pipeline("median radius=2 | transpose | mean radius=3 border=shrink", &rgb, 81, 0);
    check_pipeline("mean radius=4 | median radius=5 border=reflect101 | convolve kernel=sharpen border=zero", &rgb, 82, 0);
    check_pipeline("median radius=1 | cpuxor | mean radius=2 | cpuxor", &rgb, 83, 0);
    check_pipeline("median radius=3 | mean radius=2", &one_row, 84, 0);
}

/* Reductions on device bands: a worker's counts merged with the other's equal the whole image's. */
static void test_histogram(void)
{
    const char *dir = tu_tmpdir();
    static const ip_shape shapes[] = { { 61, 43, 3, IP_U8 }, { 17, 29, 1, IP_U16 }, { 13, 7, 4, IP_F32 } };
    for (int k = 0; k < 3; k++) {
        ip_image in = bt_random_image(&shapes[k], 300 + (uint64_t)k, 0), out;
        char text[512], path[400], whole_path[400];
        snprintf(whole_path, sizeof whole_path, "%s/gwhole%d.csv", dir, k);
        snprintf(text, sizeof text, "median radius=2 | histogram bins=64 out=%s | mean radius=3", whole_path);
        if (bt_run_whole(&reg, text, &in, EXEC_CPU, &out)) img_free(&out);
        char *want = bt_slurp(whole_path);
        CHECK(want != NULL, "no whole-image CSV");
        for (size_t i = 0; want && i < sizeof band_heights / sizeof *band_heights; i++)
            for (int workers = 1; workers <= 2; workers++) {
                snprintf(path, sizeof path, "%s/gband%d_%d_%d.csv", dir, k, band_heights[i], workers);
                snprintf(text, sizeof text, "median radius=2 | histogram bins=64 out=%s | mean radius=3", path);
                stream_options so = gpu_options(band_heights[i], workers);
                if (bt_run_streamed(&reg, text, &in, &so, &out, NULL)) img_free(&out);
                char *got = bt_slurp(path);
                CHECK(got && strcmp(got, want) == 0, "GPU histogram of %s, bands of %d, %d workers: counts differ",
                      img_dtype_name(shapes[k].dtype), band_heights[i], workers);
                free(got);
            }
        free(want);
        free(in.data);
    }
}

/* The band height chosen for a --gpu-memory limit keeps the executors' measured peak under it. */
static void check_peak(const char *text, const ip_shape *shape, uint64_t limit, int workers)
{
    plan p;
    if (!tu_build_plan(&reg, text, shape, &p)) return;
    band_layout l;
    char err[512];
    int rows = 0;
    stream_budget b = { (uint64_t)1 << 34, 0, 0, BAND_ON_GPU, limit, workers };
    int rc = band_layout_make(&p, &l, err, sizeof err);
    if (rc == IP_OK) {
        rc = stream_band_rows_for(&p, &l, &b, &rows, err, sizeof err);
        band_layout_free(&l);
    }
    CHECK(rc == IP_OK, "%s: no band height within %llu bytes: %s", text, (unsigned long long)limit, err);
    plan_free(&p);
    if (rc != IP_OK) return;
    ip_image in = bt_random_image(shape, 400, 0), out;
    stream_options so = gpu_options(rows, workers);
    stream_profile prof;
    if (bt_run_streamed(&reg, text, &in, &so, &out, &prof)) {
        CHECK(prof.gpu_peak_bytes > 0 && prof.gpu_peak_bytes <= limit,
              "%s, %d workers, bands of %d: peak %zu device bytes, limit %llu", text, workers, rows,
              prof.gpu_peak_bytes, (unsigned long long)limit);
        img_free(&out);
    }
    free(in.data);
}

static void test_peak(void)
{
    ip_shape rgb = { 1999, 700, 3, IP_U8 }, gray16 = { 3001, 500, 1, IP_U16 };
    check_peak("median radius=3 | mean radius=2 | convolve kernel=gaussian5", &rgb, 3u << 20, 1);
    check_peak("median radius=3 | mean radius=2 | convolve kernel=gaussian5", &rgb, 6u << 20, 2);
    char text[512];
    snprintf(text, sizeof text, "grayscale | median radius=7 | histogram bins=32 out=%s/peak.csv", tu_tmpdir());
    check_peak(text, &rgb, 2u << 20, 1);
    check_peak("mean radius=15 | entropy levels=65536 bins=16", &gray16, 8u << 20, 2);
    /* a limit below one row's worth is refused before any pixel is touched */
    plan p;
    if (tu_build_plan(&reg, "median radius=3", &rgb, &p)) {
        band_layout l;
        char err[512] = "";
        int rows = 0;
        stream_budget b = { (uint64_t)1 << 34, 0, 0, BAND_ON_GPU, 1024, 1 };
        if (band_layout_make(&p, &l, err, sizeof err) == IP_OK) {
            CHECK(stream_band_rows_for(&p, &l, &b, &rows, err, sizeof err) == IP_ELIMIT && strstr(err, "--gpu-memory"),
                  "a 1 KiB GPU limit was not refused: %s", err);
            band_layout_free(&l);
        }
        plan_free(&p);
    }
}

int main(void)
{
    need_gpu();
    const char *build = getenv("IMGPIPE_BUILD_DIR"), *tp = getenv("IMGPIPE_TEST_PLUGINS");
    if (!build || !tp) tu_skip("IMGPIPE_BUILD_DIR or IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    char dirs[1200], err[256];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins:%s/cpuonly", build, tp);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    second_gpu = gpu_device_count(err, sizeof err) >= 2 ? 1 : 0;
    printf("two workers on GPUs 0 and %d\n", second_gpu);
    test_stages();
    test_histogram();
    test_peak();
    registry_free(&reg);
    return tu_finish();
}
