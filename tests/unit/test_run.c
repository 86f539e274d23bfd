/* The run layer: stream or whole, the device auto takes without a GPU, one open of the input,
 * images in memory, and what a failure names. The opens are counted by wrapping fopen and open
 * at link time (tests/CMakeLists.txt). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu/gpu.h"
#include "base/image.h"
#include "plan_testutil.h"
#include "run/run.h"
#include "testutil.h"

static registry reg;
static const char *watched;   /* the path whose opens are counted */
static int opens;

FILE *__real_fopen(const char *path, const char *mode);
FILE *__wrap_fopen(const char *path, const char *mode)
{
    if (watched && strcmp(path, watched) == 0) opens++;
    return __real_fopen(path, mode);
}

int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (watched && strcmp(path, watched) == 0) opens++;
    return __real_open(path, flags, mode);
}

static char in_png[512], out_dir[512];

/* A random RGB PNG of 1031 x 517 (a prime width), written once. */
static ip_image write_input(void)
{
    tu_rng r;
    tu_seed(&r, 28);
    ip_image img = { 0 };
    char err[256];
    ip_shape shape = { 1031, 517, 3, IP_U8 };
    CHECK(img_alloc(&img, &shape, UINT64_MAX, err, sizeof err) == IP_OK, "alloc: %s", err);
    for (int y = 0; y < shape.height; y++)
        for (int x = 0; x < shape.width * 3; x++) ((unsigned char *)img.data)[(size_t)y * (size_t)img.stride + (size_t)x] = (unsigned char)tu_next(&r);
    io_options io;
    io_default_options(&io);
    snprintf(in_png, sizeof in_png, "%s/run_in.png", tu_tmpdir());
    snprintf(out_dir, sizeof out_dir, "%s", tu_tmpdir());
    CHECK(io_write(in_png, &img, &io, err, sizeof err) == IP_OK, "write input: %s", err);
    return img;
}

/* BT.601 as DESIGN.md words it, for 8-bit RGB. */
static unsigned char gray_of(const unsigned char *px)
{
    return (unsigned char)((px[0] * 9798 + px[1] * 19235 + px[2] * 3735 + 16384) >> 15);
}

static int run(const char *text, const run_source *in, const run_sink *out, const run_options *o, run_result *res,
               char *err, size_t errlen)
{
    plan p;
    ip_shape any = { 16, 16, 3, IP_U8 };
    if (!tu_build_plan(&reg, text, &any, &p)) return IP_EINVAL;
    int rc = run_image(NULL, &p, in, out, o, res, err, errlen);
    plan_free(&p);
    return rc;
}

static int read_back(const char *path, ip_image *img)
{
    char err[256];
    io_options io;
    io_default_options(&io);
    int rc = io_read(path, &io, img, err, sizeof err);
    CHECK(rc == IP_OK, "%s: %s", path, err);
    return rc == IP_OK;
}

static int same_pixels(const ip_image *a, const ip_image *b)
{
    if (memcmp(&a->shape, &b->shape, sizeof a->shape) != 0) return 0;
    size_t row = img_row_bytes(&a->shape);
    for (int y = 0; y < a->shape.height; y++)
        if (memcmp((const char *)a->data + (size_t)y * (size_t)a->stride, (const char *)b->data + (size_t)y * (size_t)b->stride, row))
            return 0;
    return 1;
}

static void test_whole_by_default(const ip_image *src)
{
    run_options o;
    run_default_options(&o);
    char out[600], err[1024];
    snprintf(out, sizeof out, "%s/run_gray.png", out_dir);
    run_source in = { in_png, NULL, NULL, 0, NULL, NULL };
    run_sink sink = { out, NULL, 0, NULL, NULL };
    run_result res;
    int rc = run("grayscale", &in, &sink, &o, &res, err, sizeof err);
    CHECK(rc == IP_OK, "grayscale: %s", err);
    CHECK(!res.streamed, "a 1.6 MB image streamed under auto");
    CHECK(strncmp(res.stream_why, "run whole: ", 11) == 0, "why whole: '%s'", res.stream_why);
    CHECK(res.device == EXEC_CPU, "a small image left the CPU");
    ip_image got = { 0 };
    if (rc != IP_OK || !read_back(out, &got)) return;
    int bad = 0;
    for (int y = 0; y < src->shape.height; y++)
        for (int x = 0; x < src->shape.width; x++)
            bad += ((unsigned char *)got.data)[(size_t)y * (size_t)got.stride + (size_t)x] !=
                   gray_of((unsigned char *)src->data + (size_t)y * (size_t)src->stride + 3 * (size_t)x);
    CHECK(got.shape.channels == 1 && bad == 0, "gray: %d channels, %d pixels differ from BT.601", got.shape.channels, bad);
    img_free(&got);
}

/* Streamed (over the memory limit, or asked for) and whole give the same bytes. */
static void test_stream_or_whole(void)
{
    const char *text = "grayscale | median radius=1 | convolve kernel=gaussian3";
    const struct { run_stream_mode mode; uint64_t memory; int streams; const char *name; } cases[] = {
        { RUN_STREAM_OFF, 0, 0, "off" },
        { RUN_STREAM_ON, 0, 1, "on" },
        { RUN_STREAM_AUTO, 2 << 20, 1, "auto over --memory" },
        { RUN_STREAM_AUTO, 0, 0, "auto, small" },
    };
    ip_image first = { 0 };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_options o;
        run_default_options(&o);
        o.stream = cases[i].mode;
        o.memory = cases[i].memory;
        o.threads = o.io.threads = 2;   /* the least a band needs grows with the threads */
        o.io.tiff_compression = IO_TIFF_NONE;   /* TIFF is written in strips: the bands stay small */
        char out[600], err[1024];
        snprintf(out, sizeof out, "%s/run_chain_%zu.tif", out_dir, i);
        run_source in = { in_png, NULL, NULL, 0, NULL, NULL };
        run_sink sink = { out, NULL, 0, NULL, NULL };
        run_result res;
        int rc = run(text, &in, &sink, &o, &res, err, sizeof err);
        CHECK(rc == IP_OK, "%s: %s", cases[i].name, err);
        CHECK(res.streamed == cases[i].streams, "%s: streamed %d, want %d", cases[i].name, res.streamed, cases[i].streams);
        CHECK(res.streamed || res.stream_why[0], "%s: ran whole without saying why", cases[i].name);
        ip_image got = { 0 };
        if (rc != IP_OK || !read_back(out, &got)) continue;
        if (!first.data) first = got;
        else {
            CHECK(same_pixels(&first, &got), "%s: differs from the first run", cases[i].name);
            img_free(&got);
        }
    }
    img_free(&first);
}

/* The probe's open is the only one, whole or streamed. */
static void test_one_open(void)
{
    for (int streamed = 0; streamed < 2; streamed++) {
        run_options o;
        run_default_options(&o);
        o.stream = streamed ? RUN_STREAM_ON : RUN_STREAM_OFF;
        char out[600], err[1024];
        snprintf(out, sizeof out, "%s/run_open_%d.png", out_dir, streamed);
        run_source in = { in_png, NULL, NULL, 0, NULL, NULL };
        run_sink sink = { out, NULL, 0, NULL, NULL };
        run_result res;
        plan p;
        ip_shape any = { 16, 16, 3, IP_U8 };
        if (!tu_build_plan(&reg, "grayscale | mean radius=2", &any, &p)) return;
        opens = 0;
        watched = in_png;
        int rc = run_image(NULL, &p, &in, &sink, &o, &res, err, sizeof err);
        watched = NULL;
        plan_free(&p);
        CHECK(rc == IP_OK && res.streamed == streamed, "%s: %s", streamed ? "streamed" : "whole", err);
        CHECK(opens == 1, "%s: the input was opened %d times", streamed ? "streamed" : "whole", opens);
    }
}

/* An image in memory to memory equals the same image file to file. */
static void test_memory(const ip_image *src)
{
    const char *text = "grayscale | median radius=2";
    run_options o;
    run_default_options(&o);
    char out[600], err[1024];
    snprintf(out, sizeof out, "%s/run_mem.png", out_dir);
    run_source file_in = { in_png, NULL, NULL, 0, NULL, NULL }, mem_in = { NULL, src, NULL, 0, NULL, NULL };
    run_sink file_out = { out, NULL, 0, NULL, NULL };
    ip_image mem = { 0 }, got = { 0 };
    run_sink mem_out = { NULL, &mem, 0, NULL, NULL };
    run_result res;
    CHECK(run(text, &file_in, &file_out, &o, &res, err, sizeof err) == IP_OK, "file: %s", err);
    CHECK(run(text, &mem_in, &mem_out, &o, &res, err, sizeof err) == IP_OK, "memory: %s", err);
    if (mem.data && read_back(out, &got)) CHECK(same_pixels(&mem, &got), "memory and file results differ");
    run_sink both = { out, &mem, 0, NULL, NULL };
    CHECK(run(text, &mem_in, &both, &o, &res, err, sizeof err) == IP_EINVAL && res.usage_error,
          "a file and memory both as output was taken");
    img_free(&mem);
    img_free(&got);
}

static void test_failures(void)
{
    run_options o;
    run_default_options(&o);
    char out[600], missing[600], err[1024];
    snprintf(out, sizeof out, "%s/run_fail.png", out_dir);
    snprintf(missing, sizeof missing, "%s/no_such_file.png", out_dir);
    run_source in = { missing, NULL, NULL, 0, NULL, NULL };
    run_sink sink = { out, NULL, 0, NULL, NULL };
    run_result res;
    CHECK(run("grayscale", &in, &sink, &o, &res, err, sizeof err) == IP_EIO, "missing input");
    CHECK(res.failed_path == missing && !res.usage_error && strstr(err, "cannot open"), "missing input: '%s'", err);
    /* entropy's float output cannot be a PNG: the pipeline's fault, named by the output */
    run_source good = { in_png, NULL, NULL, 0, NULL, NULL };
    int rc = run("grayscale | entropy", &good, &sink, &o, &res, err, sizeof err);
    CHECK(rc != IP_OK && res.usage_error && strstr(err, out) == err, "f32 to PNG: rc %d usage %d '%s'", rc,
          res.usage_error, err);
    CHECK(access(out, F_OK) != 0, "a failed run left %s", out);
}

/* Without a GPU, auto says so in plain words; --device gpu is a usage error. */
static void test_no_gpu(void)
{
    char why[256];
    if (gpu_driver_present(why, sizeof why)) {
        printf("a GPU driver is here: the no-GPU checks are left to machines without one\n");
        return;
    }
    run_options o;
    run_default_options(&o);
    char out[600], err[1024];
    snprintf(out, sizeof out, "%s/run_dev.png", out_dir);
    run_source in = { in_png, NULL, NULL, 0, NULL, NULL };
    run_sink sink = { out, NULL, 0, NULL, NULL };
    run_result res;
    CHECK(run("grayscale", &in, &sink, &o, &res, err, sizeof err) == IP_OK, "auto: %s", err);
    CHECK(res.device == EXEC_CPU && (strstr(res.why, "no GPU") || strstr(res.why, "without CUDA")),
          "auto without a GPU says: '%s'", res.why);
    o.device = RUN_DEVICE_GPU;
    o.stream = RUN_STREAM_OFF;
    CHECK(run("grayscale", &in, &sink, &o, &res, err, sizeof err) != IP_OK && res.usage_error,
          "--device gpu without a GPU: '%s'", err);
}

static void copy_head(const char *from, const char *to, size_t bytes)
{
    unsigned char buf[4096];
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    size_t got = in ? fread(buf, 1, bytes < sizeof buf ? bytes : sizeof buf, in) : 0;
    CHECK(in && out && got > 0 && fwrite(buf, 1, got, out) == got, "cannot copy %s's head to %s", from, to);
    if (in) fclose(in);
    if (out) fclose(out);
}

typedef struct {
    int calls, ok, output_existed;
    double ms;
    const char *out;
} decoded_note;

static void note_decoded(void *user, int ok, double ms)
{
    decoded_note *d = user;
    d->calls++;
    d->ok = ok;
    d->ms = ms;
    d->output_existed = access(d->out, F_OK) == 0;
}

/* A worker tells on_decoded once, when the image is decoded and before its output is written (the
 * read-ahead frees a CPU decoder's place then); a failed decoding is told as failed. */
static void test_on_decoded(void)
{
    run_options o;
    run_default_options(&o);
    o.stream = RUN_STREAM_OFF;
    run_worker_options wo = { EXEC_CPU, 0, NULL, 0, 0 };
    run_worker *w = NULL;
    char out[600], cut[600], err[1024];
    snprintf(out, sizeof out, "%s/run_decoded.png", out_dir);
    snprintf(cut, sizeof cut, "%s/run_cut.png", out_dir);
    unlink(out);
    copy_head(in_png, cut, 100);   /* its header read, its pixels not */
    CHECK(run_worker_create(&w, &o, &wo, err, sizeof err) == IP_OK, "worker: %s", err);
    plan p;
    ip_shape any = { 16, 16, 3, IP_U8 };
    if (!w || !tu_build_plan(&reg, "grayscale", &any, &p)) {
        run_worker_destroy(w);
        return;
    }
    decoded_note note = { 0, 0, 0, -1.0, out };
    run_source in = { in_png, NULL, NULL, 0, note_decoded, &note };
    run_sink sink = { out, NULL, 0, NULL, NULL };
    run_result res;
    CHECK(run_image(w, &p, &in, &sink, &o, &res, err, sizeof err) == IP_OK, "run: %s", err);
    CHECK(note.calls == 1 && note.ok && note.ms >= 0 && !note.output_existed,
          "told %d times, ok %d, %.3f ms, output there %d", note.calls, note.ok, note.ms, note.output_existed);
    CHECK(access(out, F_OK) == 0, "no output");
    decoded_note failed = { 0, 1, 0, -1.0, out };
    run_source bad = { cut, NULL, NULL, 0, note_decoded, &failed };
    CHECK(run_image(w, &p, &bad, &sink, &o, &res, err, sizeof err) != IP_OK, "a cut file ran");
    CHECK(failed.calls == 1 && !failed.ok, "a failed decoding: told %d times, ok %d", failed.calls, failed.ok);
    plan_free(&p);
    run_worker_destroy(w);
}

/* On a GPU: a folder worker whose GPU run fails runs the image again on the CPU and says why. */
static void test_gpu_fallback(const ip_image *src)
{
    char why[256];
    if (!gpu_built() || !gpu_driver_present(why, sizeof why) || gpu_device_count(why, sizeof why) == 0) {
        printf("no GPU here: the CPU fallback is checked on the GPU machine\n");
        return;
    }
    run_options o;
    run_default_options(&o);
    run_worker_options wo = { EXEC_GPU, 0, NULL, 1, 1 };
    run_worker *w = NULL;
    char out[600], err[1024];
    snprintf(out, sizeof out, "%s/run_fallback.png", out_dir);
    CHECK(run_worker_create(&w, &o, &wo, err, sizeof err) == IP_OK, "worker: %s", err);
    plan p;
    ip_shape any = { 16, 16, 3, IP_U8 };
    if (!w || !tu_build_plan(&reg, "failing mode=gpu", &any, &p)) {
        run_worker_destroy(w);
        return;
    }
    run_source in = { in_png, NULL, NULL, 0, NULL, NULL };
    run_sink sink = { out, NULL, 0, NULL, NULL };
    run_result res;
    int rc = run_image(w, &p, &in, &sink, &o, &res, err, sizeof err);
    CHECK(rc == IP_OK, "fallback run: %s", err);
    CHECK(res.device == EXEC_CPU && strstr(res.fallback, "deliberate failure on the GPU"),
          "fallback: device %d, said '%s'", (int)res.device, res.fallback);
    ip_image got = { 0 };
    if (rc == IP_OK && read_back(out, &got)) CHECK(same_pixels(src, &got), "the fallback's output is not the input");
    img_free(&got);
    plan_free(&p);
    run_worker_destroy(w);
}

int main(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR"), *tp = getenv("IMGPIPE_TEST_PLUGINS");
    if (!build || !tp) tu_skip("IMGPIPE_BUILD_DIR or IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    char dirs[1200], err[256];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins:%s/failing", build, tp);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    ip_image src = write_input();
    test_whole_by_default(&src);
    test_stream_or_whole();
    test_one_open();
    test_memory(&src);
    test_failures();
    test_on_decoded();
    test_no_gpu();
    test_gpu_fallback(&src);
    img_free(&src);
    registry_free(&reg);
    return tu_finish();
}
