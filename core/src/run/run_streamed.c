/* The streamed path: an image read, run and written in bands of rows within the memory limits,
 * on the CPU or dealt to GPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu.h"
#include "io/tiff_gpu.h"
#include "io/tiff_gpu_bands.h"
#include "run/run_internal.h"
#include "stream/stream_budget.h"

/* Under auto an image streams past this many bytes held whole, or past the memory limit. On the
 * H100 machine (16 cores) an 8192x8192 RGB denoise (384 MiB whole) ran faster whole (TIFF 0.28 s
 * against 0.44 streamed, PNG 1.2 against 2.6), a 16384x16384 one (1.3 GiB) faster streamed
 * (2.2 s against 3.3 on the GPU; 2.19 against 2.82 on 2 cores): bench/RESULTS.md. */
#define RUN_STREAM_FROM_BYTES ((uint64_t)1 << 30)

/* IMGPIPE_STREAM_CPU_WORKERS=N (a test hook, not an option): a streamed CPU run deals each
 * image's rows to N threads, as --gpus does to GPUs. */
static int cpu_workers(void)
{
    const char *v = getenv("IMGPIPE_STREAM_CPU_WORKERS");
    long n = v && *v ? strtol(v, NULL, 10) : 1;
    return n < 1 ? 1 : n > BAND_MAX_WORKERS ? BAND_MAX_WORKERS : (int)n;
}

/* Where the bands go: the GPU under --device gpu, and under auto when the estimate for the whole
 * image favours it; one worker per listed GPU (a GPU listed twice gets two). A folder's worker
 * streams on its own device. */
static int choose_place(run_worker *w, const plan *p, const ip_shape *shape, const run_probe *pr,
                        const run_sink *out, const run_options *o, run_stream_options *so, run_result *res,
                        char *err, size_t errlen)
{
    so->place = BAND_ON_HOST;
    so->n_workers = cpu_workers();
    if (w) {
        if (run_worker_device(w) != EXEC_GPU) return IP_OK;
        so->place = BAND_ON_GPU;
        so->n_workers = 1;
        so->gpu_ids[0] = run_worker_gpu(w);
        return IP_OK;
    }
    char none[256] = "";
    int count = o->device == RUN_DEVICE_CPU ? 0 : gpu_device_count(none, sizeof none);
    if (o->device == RUN_DEVICE_GPU && count == 0) {
        snprintf(err, errlen, "--device gpu: %s", none);
        res->usage_error = 1;
        return IP_EUNSUPPORTED;
    }
    if (count == 0) {
        if (o->device == RUN_DEVICE_AUTO) snprintf(res->why, sizeof res->why, "%s", none);
        return IP_OK;
    }
    if (o->device == RUN_DEVICE_AUTO &&
        !run_auto_prefers_gpu(p, shape, pr->format, out->path, o, 0, res))
        return IP_OK;
    so->place = BAND_ON_GPU;
    so->n_workers = o->n_gpus ? (o->n_gpus < BAND_MAX_WORKERS ? o->n_gpus : BAND_MAX_WORKERS) : 1;
    for (int i = 0; i < so->n_workers; i++) so->gpu_ids[i] = o->n_gpus ? o->gpu_ids[i] : 0;
    return IP_OK;
}

/* --gpu-memory, or half of what is free on the first worker's GPU now. */
static int gpu_limit(const run_options *o, run_stream_options *so, char *err, size_t errlen)
{
    if (o->gpu_memory) {
        so->gpu_memory_limit = o->gpu_memory;
        return IP_OK;
    }
    size_t free_bytes = 0, total = 0;
    int rc = gpu_start(so->gpu_ids[0], err, errlen);
    if (rc == IP_OK) rc = gpu_memory_info(&free_bytes, &total, err, errlen);
    so->gpu_memory_limit = free_bytes / 2;
    return rc;
}

/* Under auto: streamed past the limits, and wherever streaming is as fast, unless nvJPEG is to
 * decode the file on the GPU (whole images only). */
static int auto_streams(uint64_t whole, const run_stream_options *so, const run_options *o, const run_probe *pr,
                        run_result *res)
{
    if (whole > so->memory_limit || (o->gpu_memory && whole > o->gpu_memory)) return 1;
    if (o->jpeg_gpu_required && pr->format == IO_FMT_JPEG) {
        snprintf(res->stream_why, sizeof res->stream_why, "run whole: nvJPEG decodes whole images");
        return 0;
    }
    if (whole < RUN_STREAM_FROM_BYTES) {
        snprintf(res->stream_why, sizeof res->stream_why, "run whole: %.0f MiB held whole, under the %.0f GiB past "
                 "which streaming is faster", (double)whole / 1048576.0, (double)RUN_STREAM_FROM_BYTES / 1073741824.0);
        return 0;
    }
    return 1;
}

static int open_stream(plan *p, const run_source *in, const run_sink *out, const run_options *o, run_probe *pr,
                       run_stream **rs, run_stream_options *so, ip_shape *shape, run_result *res, char *err,
                       size_t errlen)
{
    *so = (run_stream_options){ o->io, o->threads, o->memory ? o->memory : run_default_memory(), BAND_ON_HOST, 0, 1,
                                { 0 } };
    so->io.meta = o->strip ? NULL : &pr->meta;
    so->io.warnings = &res->warnings;
    int rc = run_stream_open(rs, p, &pr->input, in->path, out->path, so, shape, err, errlen);
    if (rc == IP_EUNSUPPORTED) {
        if (o->stream == RUN_STREAM_ON) run_note(res, "%s: not streamed: %s", in->path, err);
        snprintf(res->stream_why, sizeof res->stream_why, "run whole: %s", err);
        return RUN_DECLINED;
    }
    /* as the whole-image path: the plan's and the output's errors are usage errors, said as they
     * are; the file's fail the image */
    if (rc == IP_EINVAL) res->usage_error = 1;
    else if (rc != IP_OK) res->failed_path = in->path;
    return rc;
}

static int stream_on(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
                     run_probe *pr, run_result *res, char *err, size_t errlen);

/* A deflate or zstd TIFF streamed out of a GPU run: its strips compressed by the cards as well as
 * the cores, unless --codecs cpu. The cores alone bind such a run at level 6 (bench/RESULTS.md).
 * Not in a folder (w): its other workers keep the cores busy, and each worker's nvCOMP scratch
 * (about 1.25 GiB a state on the H100) would add up on the card. */
static int gpu_strips_for(run_worker *w, const plan *p, const run_sink *out, const run_options *o,
                          const run_stream_options *so, tiff_gpu_strips **strips, run_result *res, char *err,
                          size_t errlen)
{
    *strips = NULL;
    if (w || so->place != BAND_ON_GPU || o->codecs == RUN_CODECS_CPU || o->transfer != EXEC_COPY ||
        io_format_from_ext(out->path) != IO_FMT_TIFF || !tiff_gpu_encodable(&p->steps[p->n - 1].out, &o->io))
        return IP_OK;
    char why[512];
    int rc = tiff_gpu_strips_create(strips, so->gpu_ids, so->n_workers, why, sizeof why);
    if (rc == IP_OK) return IP_OK;
    if (o->codecs == RUN_CODECS_GPU) {
        snprintf(err, errlen, "--codecs gpu: %s", why);
        res->usage_error = 1;
        return rc;
    }
    run_note(res, "TIFF strips compressed by the CPU alone: %s", why);
    return IP_OK;
}

/* A TIFF streamed into a GPU run with IMGPIPE_TIFF_GPU_READ_BANDS=1: its bands inflated on the
 * first card, unless --codecs cpu, so that the cores are left to the writer, within a quarter of
 * the run's GPU memory. Off by default: faster on one H200 with 16 cores, slower beside heavy
 * stages on two with 32 (RESULTS.md). Not in a folder, as gpu_strips_for. A file the card does
 * not take reads as before. */
static tiff_gpu_bands *gpu_bands_for(run_worker *w, run_stream *rs, const run_source *in, const run_probe *pr,
                                     const run_options *o, const run_stream_options *so, run_result *res)
{
    if (w || so->place != BAND_ON_GPU || o->codecs == RUN_CODECS_CPU || pr->input.format != IO_FMT_TIFF) return NULL;
    tiff_gpu_bands *g = NULL;
    char why[512];
    uint64_t quarter = so->gpu_memory_limit / 4;
    if (tiff_gpu_bands_create(&g, so->gpu_ids[0], so->gpu_memory_limit ? (quarter ? quarter : 1) : 0, why,
                              sizeof why) != IP_OK) {
        if (why[0]) run_note(res, "%s: inflated by the CPU: %s", in->path, why);
        return NULL;
    }
    if (run_stream_set_band_decoder(rs, tiff_gpu_bands_decoder(g), why, sizeof why) == IP_OK) return g;
    run_note(res, "%s: inflated by the CPU: %s", in->path, why);
    tiff_gpu_bands_destroy(g);
    return NULL;
}

int run_streamed(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
                 run_probe *pr, run_result *res, char *err, size_t errlen)
{
    if (o->stream == RUN_STREAM_OFF || !in->path || !out->path || in->decoded) {
        snprintf(res->stream_why, sizeof res->stream_why, "run whole: %s",
                 o->stream == RUN_STREAM_OFF ? "--stream off" : in->decoded ? "decoded ahead" : "an image in memory");
        return RUN_DECLINED;
    }
    if (pr->turned) {
        if (o->stream == RUN_STREAM_ON) run_note(res, "%s: not streamed: its EXIF orientation turns it", in->path);
        snprintf(res->stream_why, sizeof res->stream_why, "run whole: its EXIF orientation turns it");
        return RUN_DECLINED;
    }
    return stream_on(w, p, in, out, o, pr, res, err, errlen);
}

static int stream_on(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
                     run_probe *pr, run_result *res, char *err, size_t errlen)
{
    run_stream *rs;
    run_stream_options so;
    ip_shape shape;
    int rc = open_stream(p, in, out, o, pr, &rs, &so, &shape, res, err, errlen);
    if (rc != IP_OK) return rc;
    if (o->stream == RUN_STREAM_AUTO && !auto_streams(run_stream_whole_bytes(rs), &so, o, pr, res)) {
        run_stream_cancel(rs);
        return RUN_DECLINED;
    }
    if (w) run_worker_settle(w);   /* a streamed image's device memory comes after the last write's */
    if ((rc = choose_place(w, p, &shape, pr, out, o, &so, res, err, errlen)) != IP_OK) {
        run_stream_cancel(rs);
        return rc;
    }
    if (so.place == BAND_ON_GPU && (rc = gpu_limit(o, &so, err, errlen)) != IP_OK) {
        run_stream_cancel(rs);
        char why[768];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "--device gpu: %s", why);
        res->usage_error = 1;
        return rc;
    }
    if (so.place == BAND_ON_HOST && so.n_workers > 1) so.threads = (run_cpu_threads(o) + so.n_workers - 1) / so.n_workers;
    tiff_gpu_strips *strips = NULL;
    if ((rc = gpu_strips_for(w, p, out, o, &so, &strips, res, err, errlen)) != IP_OK) {
        run_stream_cancel(rs);
        return rc;
    }
    so.io.tiff_strip_batch = tiff_gpu_strips_codec(strips);
    run_stream_set_placement(rs, &so);
    tiff_gpu_bands *bands = gpu_bands_for(w, rs, in, pr, o, &so, res);
    if ((rc = run_stream_budget(rs, err, errlen)) != IP_OK) {
        run_stream_cancel(rs);
        tiff_gpu_bands_destroy(bands);
        tiff_gpu_strips_destroy(strips);
        res->failed_path = in->path;
        res->usage_error = 1;
        return rc;
    }
    res->streamed = 1;
    res->device = so.place == BAND_ON_GPU ? EXEC_GPU : EXEC_CPU;
    res->gpu = so.gpu_ids[0];
    res->stream_options = so;
    rc = run_stream_finish(rs, &res->stream_report, err, errlen);
    tiff_gpu_bands_destroy(bands);   /* after the reader, which closed its state */
    if (strips) tiff_gpu_strips_stats(strips, &res->stream_report.gpu_strips);
    tiff_gpu_strips_destroy(strips);
    res->stream_options.io.tiff_strip_batch = NULL;   /* destroyed with strips */
    if (rc != IP_OK && so.place == BAND_ON_GPU && !w && o->device == RUN_DEVICE_AUTO &&
        (rc == IP_ECUDA || rc == IP_ENOMEM)) {
        snprintf(res->fallback, sizeof res->fallback, "%s", err);
        run_options on_cpu = *o;
        on_cpu.device = RUN_DEVICE_CPU;
        memset(&res->warnings, 0, sizeof res->warnings);
        return stream_on(w, p, in, out, &on_cpu, pr, res, err, errlen);
    }
    if (rc != IP_OK) res->failed_path = res->stream_report.output_failed ? out->path : in->path;
    return rc;
}
