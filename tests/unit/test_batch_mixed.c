/* A folder run by GPU and CPU workers from one queue (batch.c with batch/sched.c), on a mock of
 * gpu.h (its own, not tests/gpu_mock_basics.c: start-up is watched) whose device memory is host memory and whose copies happen at once; the stages are
 * stripped of run_gpu, so a GPU worker's image goes up, down, through run_cpu and up again, as a
 * stage without a GPU path does. Checked: every image exactly once and each output byte for byte
 * the CPU-only run's, whichever worker ran it; a broken file failing alone; the stop flag leaving
 * no partial output and no worker stuck; a GPU that cannot start (the CPU workers take every
 * image, or under --device gpu every image fails as before); one image, none, more workers than
 * images; and auto's measuring through to its device line. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "base/image.h"
#include "batch/batch.h"
#include "gpu/gpu.h"
#include "plan_testutil.h"
#include "testutil.h"

/* The mock device: tests/gpu_mock_basics.c's, with its start-up watched (watch_start). */
static pthread_mutex_t mock_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mock_started_cv = PTHREAD_COND_INITIALIZER, mock_uploaded_cv = PTHREAD_COND_INITIALIZER;
static int mock_no_streams;    /* the GPU cannot be used: no stream can be made */
static int mock_started;       /* gpu_start was called */
static long mock_uploads;
static int mock_refused;       /* a stream was refused */

extern void (*gpu_mock_on_start)(int device);   /* tests/gpu_mock_basics.c */

static void watch_start(int device)
{
    (void)device;
    pthread_mutex_lock(&mock_mu);
    mock_started = 1;
    pthread_cond_broadcast(&mock_started_cv);
    pthread_mutex_unlock(&mock_mu);
}

int gpu_driver_present(char *why, size_t whylen) { (void)why; (void)whylen; return 1; }
int gpu_stream_create(void **stream, char *err, size_t errlen)
{
    *stream = NULL;
    if (mock_no_streams) {
        pthread_mutex_lock(&mock_mu);
        mock_refused = 1;
        pthread_cond_broadcast(&mock_uploaded_cv);
        pthread_mutex_unlock(&mock_mu);
        snprintf(err, errlen, "mock: no device");
        return IP_ECUDA;
    }
    *stream = malloc(1);
    return *stream ? IP_OK : IP_ENOMEM;
}
int gpu_stream_create_urgent(void **stream, char *err, size_t errlen) { return gpu_stream_create(stream, err, errlen); }
void gpu_stream_destroy(void *stream) { free(stream); }
int gpu_stream_sync(void *stream, char *err, size_t errlen) { (void)stream; (void)err; (void)errlen; return IP_OK; }
int gpu_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes, size_t rows,
               gpu_copy_kind kind, void *stream, char *err, size_t errlen)
{
    (void)stream; (void)err; (void)errlen;
    if (kind == GPU_H2D) {
        pthread_mutex_lock(&mock_mu);
        mock_uploads++;
        pthread_cond_broadcast(&mock_uploaded_cv);
        pthread_mutex_unlock(&mock_mu);
    }
    for (size_t y = 0; y < rows; y++) memcpy((char *)dst + y * dst_pitch, (const char *)src + y * src_pitch, row_bytes);
    return IP_OK;
}

static registry reg;
static ip_stage stripped[64];

/* For the mixed run: the first stage's CPU path waits (up to 10 s) for the GPU's start-up, and
 * then each image up to 50 ms for the GPU worker's first upload or refused stream (a timed wait:
 * the GPU worker's own first image may be a CPU one), so that the GPU worker has images left
 * to take however the threads are scheduled. */
static int gate_on_start;
static int (*grayscale_cpu)(const void *, const ip_image *, ip_image *, const ip_exec *);

static int gated_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    pthread_mutex_lock(&mock_mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (gate_on_start && !mock_started)
        if (pthread_cond_timedwait(&mock_started_cv, &mock_mu, &until) != 0) break;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 50000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    while (gate_on_start && mock_uploads == 0 && !mock_refused)
        if (pthread_cond_timedwait(&mock_uploaded_cv, &mock_mu, &until) != 0) break;
    pthread_mutex_unlock(&mock_mu);
    return grayscale_cpu(state, in, out, ex);
}
static plan pipeline;
#define PIPELINE "grayscale | median radius=1 | mean radius=2"

/* What a run told its callbacks. */
typedef struct {
    int progress_calls, failures, device_lines, gpu_unusable;
    char failed_path[512], device_line[1024];
    int stop_after;                /* set the stop flag once this many are done (0: never) */
    volatile sig_atomic_t *stop;
} heard;

static void on_progress(void *user, const batch_progress *p)
{
    heard *h = user;
    h->progress_calls++;
    if (h->stop_after && p->done >= h->stop_after) *h->stop = 1;
}
static void on_failure(void *user, const char *path, const char *message)
{
    heard *h = user;
    (void)message;
    h->failures++;
    snprintf(h->failed_path, sizeof h->failed_path, "%s", path);
}
static void on_note(void *user, const char *message)
{
    heard *h = user;
    if (strncmp(message, "device: ", 8) == 0) {
        h->device_lines++;
        snprintf(h->device_line, sizeof h->device_line, "%s", message);
    }
    if (strstr(message, "the GPU cannot be used")) h->gpu_unusable++;
}

/* A random RGB PNG of w x h. */
static void write_png(const char *path, int w, int h, uint64_t seed)
{
    tu_rng r;
    tu_seed(&r, seed);
    ip_image img = { 0 };
    char err[256];
    ip_shape shape = { w, h, 3, IP_U8 };
    CHECK(img_alloc(&img, &shape, UINT64_MAX, err, sizeof err) == IP_OK, "alloc: %s", err);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w * 3; x++) ((unsigned char *)img.data)[(size_t)y * (size_t)img.stride + (size_t)x] = (unsigned char)tu_next(&r);
    io_options io;
    io_default_options(&io);
    CHECK(io_write(path, &img, &io, err, sizeof err) == IP_OK, "write %s: %s", path, err);
    img_free(&img);
}

/* A folder of n PNGs of odd sizes (1xN, Nx1, prime widths), named img000.png ...; the first
 * images are large, so that the GPU's start-up (a thread of its own) ends while the workers
 * still run them on the CPU, and GPU workers then have images left to take. */
static void make_folder(const char *dir, int n)
{
    mkdir(dir, 0777);
    for (int i = 0; i < n; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/img%03d.png", dir, i);
        int w = i % 7 == 1 ? 1 : 13 + 6 * (i % 5), h = i % 11 == 3 ? 1 : 7 + (i * 3) % 17;
        if (i < 3) {
            w = 401 + 2 * i;
            h = 263;
        }
        write_png(path, w, h, 1000 + (uint64_t)i);
    }
}

static void options_for(batch_options *o, const char *in, const char *out, exec_device dev, int jobs, int gpu_workers)
{
    memset(o, 0, sizeof *o);
    o->input = in;
    o->output_dir = out;
    o->format = IO_FMT_UNKNOWN;
    o->jobs = jobs;
    o->device = dev;
    o->gpu_workers = gpu_workers;
    o->threads = 1;
    o->no_fuse = 1;
    o->stream = RUN_STREAM_OFF;
    io_default_options(&o->io);
    o->io.threads = 1;
}

static int run_folder(const batch_options *o, heard *h, batch_progress *r)
{
    batch_callbacks cb = { on_progress, on_failure, on_note, NULL, h };
    char err[512] = "";
    int rc = batch_run(o, &pipeline, &cb, r, err, sizeof err);
    CHECK(rc == IP_OK, "batch_run: %s", err);
    return rc;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    *n = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    return buf;
}

/* Files in dir that are outputs (.png) and temporaries (.imgpipe-tmp-*). */
static void count_files(const char *dir, int *outputs, int *temporaries)
{
    *outputs = *temporaries = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, ".imgpipe-tmp-", 13) == 0) (*temporaries)++;
        else if (strstr(e->d_name, ".png")) (*outputs)++;
    }
    closedir(d);
}

/* Every output in dir equals the reference run's file of the same name, byte for byte. */
static int same_as_reference(const char *dir, const char *ref, int n)
{
    int same = 0;
    for (int i = 0; i < n; i++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/img%03d.png", dir, i);
        snprintf(b, sizeof b, "%s/img%03d.png", ref, i);
        size_t na = 0, nb = 0;
        char *x = slurp(a, &na), *y = slurp(b, &nb);
        if (x && y && na == nb && memcmp(x, y, na) == 0) same++;
        free(x);
        free(y);
    }
    return same;
}

static char in_dir[512], ref_dir[512];
#define N_IMAGES 23

/* The CPU-only run whose outputs every arrangement must reproduce. */
static void reference_run(void)
{
    batch_options o;
    heard h = { 0 };
    batch_progress r;
    options_for(&o, in_dir, ref_dir, EXEC_CPU, 2, 0);
    run_folder(&o, &h, &r);
    CHECK(r.done == N_IMAGES && r.on_cpu == N_IMAGES && r.on_gpu == 0, "cpu only: %d done, %d on the CPU", r.done,
          r.on_cpu);
    /* the reference itself: grayscale, median and mean as their own tests define them */
    CHECK(r.failed == 0 && h.failures == 0, "reference failures %d", r.failed);
}

static void test_mixed(void)
{
    char out[600];
    snprintf(out, sizeof out, "%s/mixed", tu_tmpdir());
    batch_options o;
    heard h = { 0 };
    batch_progress r;
    options_for(&o, in_dir, out, EXEC_GPU, 3, 1);
    mock_uploads = 0;
    mock_started = 0;
    gate_on_start = 1;
    run_folder(&o, &h, &r);
    gate_on_start = 0;
    long uploads = 0;
    int outputs, temps;
    count_files(out, &outputs, &temps);
    CHECK(r.total == N_IMAGES && r.done == N_IMAGES && r.failed == 0, "mixed: %d of %d done", r.done, r.total);
    CHECK(r.on_gpu + r.on_cpu == N_IMAGES && h.progress_calls == N_IMAGES, "each image once: %d + %d, %d reports",
          r.on_gpu, r.on_cpu, h.progress_calls);
    CHECK(r.on_gpu > 0 && mock_uploads - uploads >= r.on_gpu, "the GPU worker ran %d (%ld uploads)", r.on_gpu,
          mock_uploads - uploads);
    CHECK(outputs == N_IMAGES && temps == 0, "%d outputs, %d temporaries", outputs, temps);
    CHECK(same_as_reference(out, ref_dir, N_IMAGES) == N_IMAGES, "outputs equal the CPU run's");
    CHECK(h.device_lines == 0, "gpu+cpu asked: no measured line");
}

static void test_broken_file(void)
{
    char in[600], out[600], bad[700], good[700];
    snprintf(in, sizeof in, "%s/with_broken", tu_tmpdir());
    snprintf(out, sizeof out, "%s/with_broken_out", tu_tmpdir());
    make_folder(in, 6);
    snprintf(bad, sizeof bad, "%s/img003.png", in);
    snprintf(good, sizeof good, "%s/img002.png", in);
    size_t n;
    char *bytes = slurp(good, &n);
    FILE *f = fopen(bad, "wb");
    CHECK(bytes && f && fwrite(bytes, 1, n / 2, f) == n / 2, "truncating %s", bad);   /* cut mid-IDAT */
    if (f) fclose(f);
    free(bytes);
    batch_options o;
    heard h = { 0 };
    batch_progress r;
    options_for(&o, in, out, EXEC_GPU, 3, 1);
    run_folder(&o, &h, &r);
    int outputs, temps;
    count_files(out, &outputs, &temps);
    CHECK(r.done == 5 && r.failed == 1 && h.failures == 1 && strcmp(h.failed_path, bad) == 0,
          "%d done, %d failed (%s)", r.done, r.failed, h.failed_path);
    CHECK(outputs == 5 && temps == 0, "no output for the broken file: %d outputs, %d temporaries", outputs, temps);
}

static void test_stop(void)
{
    static volatile sig_atomic_t stop;
    char out[600];
    snprintf(out, sizeof out, "%s/stopped", tu_tmpdir());
    batch_options o;
    heard h = { 0 };
    batch_progress r;
    stop = 0;
    h.stop_after = 5;
    h.stop = &stop;
    options_for(&o, in_dir, out, EXEC_GPU, 3, 1);
    o.stop = &stop;
    run_folder(&o, &h, &r);
    int outputs, temps;
    count_files(out, &outputs, &temps);
    CHECK(r.stopped && r.done >= 5 && r.done + r.failed < N_IMAGES, "stopped after %d", r.done);
    CHECK(outputs == r.done && temps == 0, "%d whole outputs for %d done, %d temporaries", outputs, r.done, temps);
    /* what was written is complete: each output there equals the reference */
    int same = same_as_reference(out, ref_dir, N_IMAGES);
    CHECK(same == outputs, "%d of %d outputs whole", same, outputs);
}

static void test_gpu_cannot_start(void)
{
    char out[600];
    batch_options o;
    heard h = { 0 };
    batch_progress r;
    mock_no_streams = 1;
    snprintf(out, sizeof out, "%s/no_gpu_mixed", tu_tmpdir());
    options_for(&o, in_dir, out, EXEC_GPU, 3, 1);
    mock_started = mock_refused = 0;
    gate_on_start = 1;
    run_folder(&o, &h, &r);
    gate_on_start = 0;
    CHECK(r.done == N_IMAGES && r.on_cpu == N_IMAGES && r.on_gpu == 0 && h.gpu_unusable == 1,
          "the CPU workers take every image: %d done, %d on the CPU, %d notes", r.done, r.on_cpu, h.gpu_unusable);
    CHECK(same_as_reference(out, ref_dir, N_IMAGES) == N_IMAGES, "and write what the CPU run does");
    /* --device gpu keeps its meaning: every image fails with why */
    heard g = { 0 };
    snprintf(out, sizeof out, "%s/no_gpu_only", tu_tmpdir());
    options_for(&o, in_dir, out, EXEC_GPU, 3, 0);
    run_folder(&o, &g, &r);
    CHECK(r.failed == N_IMAGES && r.done == 0 && g.gpu_unusable == 0, "gpu only: %d failed", r.failed);
    mock_no_streams = 0;
}

static void test_odd_counts(void)
{
    static const int counts[] = { 0, 1, 3 };
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
        char in[600], out[600];
        snprintf(in, sizeof in, "%s/count%d", tu_tmpdir(), counts[k]);
        snprintf(out, sizeof out, "%s/count%d_out", tu_tmpdir(), counts[k]);
        make_folder(in, counts[k]);
        batch_options o;
        heard h = { 0 };
        batch_progress r;
        options_for(&o, in, out, EXEC_GPU, 8, 3);   /* more workers than images */
        run_folder(&o, &h, &r);
        int outputs, temps;
        count_files(out, &outputs, &temps);
        CHECK(r.total == counts[k] && r.done == counts[k] && r.on_gpu + r.on_cpu == counts[k] &&
              outputs == counts[k] && temps == 0, "%d images: %d done, %d outputs", counts[k], r.done, outputs);
    }
}

static void test_measured(void)
{
    char in[600], out[600];
    snprintf(in, sizeof in, "%s/many", tu_tmpdir());
    snprintf(out, sizeof out, "%s/many_out", tu_tmpdir());
    int n = 40;   /* 2 workers: warm-up of 2, windows of 8 (the second after 2 untimed), 8 more */
    make_folder(in, n);
    batch_options o;
    heard h = { 0 };
    batch_progress r;
    options_for(&o, in, out, EXEC_GPU, 2, 1);
    o.arrange_by_rates = 1;
    o.arrangement_why = "estimate";
    run_folder(&o, &h, &r);
    CHECK(r.done == n && r.on_gpu + r.on_cpu == n, "measured run: %d done", r.done);
    CHECK(h.device_lines == 1 && strstr(h.device_line, ": measured ") && strstr(h.device_line, "(estimate)"),
          "one device line: %s", h.device_line);
    /* a folder too small to measure says so once, at the start */
    heard s = { 0 };
    snprintf(out, sizeof out, "%s/few_out", tu_tmpdir());
    options_for(&o, in_dir, out, EXEC_GPU, 2, 1);
    o.arrange_by_rates = 1;
    run_folder(&o, &s, &r);
    CHECK(s.device_lines == 1 && strstr(s.device_line, "too few to measure"), "small: %s", s.device_line);
}

int main(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR");
    if (!build) tu_skip("IMGPIPE_BUILD_DIR is not set (run through ctest)");
    gpu_mock_on_start = watch_start;
    /* the mock device's memory is host memory: nvCOMP, where there is one, must not be handed it */
    setenv("IMGPIPE_NVCOMP_LIB", "/nonexistent/the-mock-gpu-has-no-nvcomp.so", 1);
    char dirs[1200], err[256];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins", build);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    for (int i = 0; i < reg.n && i < 64; i++) {   /* the mock device runs no kernels */
        stripped[i] = *reg.plugins[i].stage;
        stripped[i].run_gpu = NULL;
        if (strcmp(stripped[i].name, "grayscale") == 0) {
            grayscale_cpu = stripped[i].run_cpu;
            stripped[i].run_cpu = gated_cpu;
        }
        reg.plugins[i].stage = &stripped[i];
    }
    ip_shape any = { 16, 16, 3, IP_U8 };
    if (!tu_build_plan(&reg, PIPELINE, &any, &pipeline)) return tu_finish();
    alarm(300);   /* a worker stuck is a failure, not a hang */
    snprintf(in_dir, sizeof in_dir, "%s/in", tu_tmpdir());
    snprintf(ref_dir, sizeof ref_dir, "%s/reference", tu_tmpdir());
    make_folder(in_dir, N_IMAGES);
    reference_run();
    test_mixed();
    test_broken_file();
    test_stop();
    test_gpu_cannot_start();
    test_odd_counts();
    test_measured();
    plan_free(&pipeline);
    registry_free(&reg);
    return tu_finish();
}
