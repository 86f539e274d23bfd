/* A folder worker's runs: its contexts (the device's, and a CPU one made on the first fallback)
 * and its nvJPEG kept from image to image, images decoded straight into the context's pinned
 * input memory, or by nvJPEG into device memory. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/image.h"
#include "io/jpeg_route.h"
#include "base/mono_clock.h"
#include "run/run_internal.h"
#include "run/run_jpeg.h"
#include "run/run_output.h"
#include "run/write_behind.h"

struct run_worker {
    run_worker_options wo;
    exec_options eo;
    exec_ctx *ctx, *cpu_ctx;
    int ctx_rc;                  /* the context could not be made: every image fails with it */
    char ctx_err[512];
    jpeg_gpu *jpeg;              /* on the pool's handle and this worker's stream: encodes */
    int jpeg_tried;              /* opened (or found missing) on first need */
    io_gpu_codecs *codecs;       /* nvCOMP on this worker's stream, or NULL: the CPU codecs */
    int codecs_tried;
    char codecs_why[256];        /* why there are none, when --codecs gpu asked for them */
    write_behind *behind;        /* the thread writing the last image's file, made on first need */
    int behind_tried;
    double waited_ms;            /* the image's waits for the last one's write (run_whole_worker) */
};

typedef struct {
    plan *p;
    const char *out_path;
    ip_shape final;              /* the result's shape, once planned */
} worker_image;

int run_worker_create(run_worker **out, const run_options *o, const run_worker_options *wo, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    run_worker *w = calloc(1, sizeof *w);
    if (!w) return IP_ENOMEM;
    w->wo = *wo;
    w->eo = (exec_options){ wo->device, wo->gpu, o->threads, o->transfer, 0, wo->pin_host };
    exec_fusion_options fo = { o->no_fuse, 0, o->profile };
    w->ctx_rc = exec_create(&w->ctx, &w->eo, w->ctx_err, sizeof w->ctx_err);
    if (w->ctx_rc == IP_OK) exec_set_fusion(w->ctx, &fo);
    else w->jpeg_tried = 1;
    *out = w;
    return IP_OK;
}

void run_worker_destroy(run_worker *w)
{
    if (!w) return;
    write_behind_destroy(w->behind);   /* its last write uses the objects below */
    jpeg_gpu_close(w->jpeg);
    io_gpu_codecs_close(w->codecs);
    exec_destroy(w->ctx);
    exec_destroy(w->cpu_ctx);
    free(w);
}

void *run_worker_stream(run_worker *w) { return w->ctx ? exec_stream(w->ctx) : NULL; }
const char *run_worker_notes(run_worker *w) { return w && w->ctx ? exec_take_notes(w->ctx) : ""; }
int run_worker_ready(const run_worker *w, char *err, size_t errlen)
{
    if (w->ctx_rc != IP_OK) snprintf(err, errlen, "%s", w->ctx_err);
    return w->ctx_rc;
}

exec_device run_worker_device(const run_worker *w) { return w->wo.device; }
void run_worker_settle(run_worker *w) { w->waited_ms += write_behind_wait(w->behind); }
int run_worker_gpu(const run_worker *w) { return w->wo.gpu; }

/* Plans the image as soon as its header is read. */
static int plan_image(void *user, const ip_shape *shape, char *err, size_t errlen)
{
    worker_image *wi = user;
    ip_shape final;
    int rc = plan_shapes(wi->p, shape, &final, err, errlen);
    wi->final = final;
    return rc == IP_OK && wi->out_path ? io_check_writable(io_format_from_ext(wi->out_path), &final, err, errlen) : rc;
}

/* nvJPEG on the pool's handle, opened the first time a JPEG comes in or goes out (waiting for the
 * handle, which opens on its own thread from the start of the run). */
static jpeg_gpu *worker_jpeg(run_worker *w, io_format fmt)
{
    if (w->jpeg_tried || !w->wo.jpeg || fmt != IO_FMT_JPEG) return w->jpeg;
    w->jpeg_tried = 1;
    char why[256];
    jpeg_gpu *shared = jpeg_pool_handle(w->wo.jpeg, w->wo.gpu, NULL);
    if (shared && jpeg_gpu_open_shared(&w->jpeg, shared, exec_stream(w->ctx), 0, why, sizeof why) != IP_OK)
        w->jpeg = NULL;   /* no nvJPEG: JPEG goes through libjpeg-turbo, as it always can */
    return w->jpeg;
}

/* nvCOMP on the worker's stream, opened the first time a TIFF comes in or a TIFF or PNG goes out
 * on the GPU; --codecs cpu, zero-copy runs and the CPU never open it. */
static io_gpu_codecs *worker_codecs(run_worker *w, const run_options *o)
{
    if (w->codecs_tried) return w->codecs;
    w->codecs_tried = 1;
    if (w->wo.device != EXEC_GPU || o->codecs == RUN_CODECS_CPU || w->eo.transfer != EXEC_COPY || !w->ctx)
        return NULL;
    char why[256];
    if (io_gpu_codecs_open(&w->codecs, w->wo.gpu, exec_stream(w->ctx), why, sizeof why) != IP_OK) {
        w->codecs = NULL;
        snprintf(w->codecs_why, sizeof w->codecs_why, "%s", why);
    }
    return w->codecs;
}

static int codecs_required(run_worker *w, const run_options *o, char *err, size_t errlen)
{
    if (o->codecs != RUN_CODECS_GPU || w->codecs) return IP_OK;
    snprintf(err, errlen, "--codecs gpu: %s", w->codecs_why[0] ? w->codecs_why : "the image is not on the GPU");
    return IP_EUNSUPPORTED;
}

static int decode_image(run_worker *w, plan *p, const run_source *in, run_probe *pr, const run_options *o,
                        const io_options *io, ip_image *img, char *err, size_t errlen)
{
    if (in->image || (in->decoded && w->wo.device == EXEC_GPU)) {
        *img = in->image ? *in->image : *in->decoded;
        return io->on_shape(io->on_shape_user, &img->shape, err, errlen);
    }
    io_format fmt = pr->format;
    if (!in->jpeg_on_cpu && run_jpeg_wanted(worker_jpeg(w, fmt), fmt, w->eo.transfer)) {
        run_worker_settle(w);   /* nvJPEG's state and the stream are the last write's until it ends */
        run_jpeg_target target;
        run_jpeg_target_init(&target, w->ctx, p);
        int rc = jpeg_route_decode_pooled(w->wo.jpeg, w->wo.gpu, w->jpeg, &target.target, &pr->input, io, img, err,
                                          errlen);
        if (rc != IP_EUNSUPPORTED) return rc;
    }
    if (fmt == IO_FMT_TIFF) {
        run_worker_settle(w);   /* nvCOMP's scratch, likewise */
        int rc = run_tiff_gpu_decode(worker_codecs(w, o), w->ctx, p, &pr->input, io, img, err, errlen);
        if (rc != IP_EUNSUPPORTED) return rc;
    }
    return io_read_input(&pr->input, io, img, err, errlen);
}

/* A GPU failure under auto: the image again on the CPU, read again when it was on the device. */
static int retry_on_cpu(run_worker *w, plan *p, const run_source *in, const io_options *io, ip_image *img,
                        ip_image *result, char *err, size_t errlen)
{
    io_options host_io = *io;
    host_io.memory = (io_pixel_memory){ NULL, NULL, NULL };
    ip_image host = { 0 };
    int rc = img->on_device ? io_read(in->path, &host_io, &host, err, errlen) : IP_OK;
    exec_options cpu = w->eo;
    cpu.device = EXEC_CPU;
    if (rc == IP_OK && !w->cpu_ctx) rc = exec_create(&w->cpu_ctx, &cpu, err, errlen);
    if (rc == IP_OK) rc = exec_run(w->cpu_ctx, p, img->on_device ? &host : img, in->path, result, NULL, err, errlen);
    img_free(&host);
    return rc;
}

/* The writer's thread, where the sink takes a write behind and the result stays on the GPU. */
static write_behind *behind_for(run_worker *w, const run_sink *out, const ip_image *result)
{
    if (!out->on_written || !out->path || !result->on_device || w->wo.device != EXEC_GPU) return NULL;
    if (!w->behind_tried) {
        w->behind_tried = 1;
        char why[256];
        if (write_behind_wanted() && write_behind_create(&w->behind, w->wo.gpu, why, sizeof why) != IP_OK)
            w->behind = NULL;   /* written in line, as without it */
    }
    return w->behind;
}

/* Hands the result's write to the worker's writer; the probe's metadata goes with it. */
static int hand_write(write_behind *wb, jpeg_gpu *jpeg, const io_gpu_codecs *codecs,
                      const ip_image *result, const run_sink *out, const run_options *o, run_probe *pr,
                      run_result *res)
{
    write_behind_job job = { *result, strdup(out->path), *o, pr->meta, jpeg, codecs, out->on_written,
                             out->on_written_user };
    if (!job.path) return 0;
    meta_init(&pr->meta);
    write_behind_submit(wb, &job);
    res->write_behind = 1;
    return 1;
}

static int run_and_write(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
                         run_probe *pr, io_options *io, const ip_shape *final, ip_image *img, run_result *res,
                         char *err, size_t errlen)
{
    run_worker_settle(w);   /* the last result's buffers and the stream are free again */
    ip_image result;
    io_format out_fmt = out->path ? io_format_from_ext(out->path) : IO_FMT_UNKNOWN;
    int into_device = out->into && out->image->on_device;
    jpeg_gpu *jpeg = out_fmt == IO_FMT_JPEG ? worker_jpeg(w, out_fmt) : NULL;
    io_gpu_codecs *codecs = run_gpu_codecs_wanted(o, IO_FMT_UNKNOWN, out_fmt) ? worker_codecs(w, o) : NULL;
    exec_keep_result_on_device(w->ctx, w->wo.device == EXEC_GPU &&
                                           (into_device || run_output_on_device(jpeg, codecs, final, out->path, o)));
    exec_set_result_target(w->ctx, out->into ? out->image : NULL);
    double t_stages = now_ms();
    int rc = exec_run(w->ctx, p, img, in->path, &result, NULL, err, errlen);
    res->times.stages_ms = now_ms() - t_stages;
    if (rc != IP_OK && w->wo.device == EXEC_GPU && w->wo.cpu_fallback) {
        snprintf(res->fallback, sizeof res->fallback, "%s", err);
        res->device = EXEC_CPU;
        rc = retry_on_cpu(w, p, in, io, img, &result, err, errlen);
    }
    if (rc != IP_OK) {
        res->failed_path = in->path;
        return rc;
    }
    write_behind *wb = behind_for(w, out, &result);
    if (wb && hand_write(wb, w->jpeg, codecs, &result, out, o, pr, res)) return IP_OK;
    double t0 = now_ms();
    rc = run_output_write(w->jpeg, codecs, &result, out, o, &pr->meta, err, errlen);
    res->times.encode_ms = now_ms() - t0;
    if (rc != IP_OK) res->failed_path = out->path;
    return rc;
}

int run_whole_worker(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
                     run_probe *pr, run_result *res, char *err, size_t errlen)
{
    res->device = w->wo.device;
    res->gpu = w->wo.gpu;
    if (w->ctx_rc != IP_OK) {
        snprintf(err, errlen, "%s", w->ctx_err);
        return w->ctx_rc;
    }
    if (o->codecs == RUN_CODECS_GPU && w->wo.device == EXEC_GPU) {
        worker_codecs(w, o);
        int rc = codecs_required(w, o, err, errlen);
        if (rc != IP_OK) {
            res->usage_error = 1;
            return rc;
        }
    }
    worker_image wi = { .p = p, .out_path = out->path };
    io_options io = o->io;
    io.memory = exec_input_memory(w->ctx);   /* on the GPU: decoded straight into pinned memory */
    io.on_shape = plan_image;
    io.on_shape_user = &wi;
    io.warnings = &res->warnings;
    io.meta = &pr->meta;
    io.meta_known = 1;
    ip_image img = { 0 };
    w->waited_ms = 0.0;
    double t0 = now_ms();
    int rc = decode_image(w, p, in, pr, o, &io, &img, err, errlen);
    res->times.decode_ms = now_ms() - t0 - w->waited_ms;   /* nvJPEG's and nvCOMP's decodes settle first */
    if (in->on_decoded) in->on_decoded(in->on_decoded_user, rc == IP_OK, res->times.decode_ms);
    if (rc != IP_OK) {
        res->failed_path = in->path;
        return rc;
    }
    res->decoded = 1;
    rc = run_and_write(w, p, in, out, o, pr, &io, &wi.final, &img, res, err, errlen);
    res->times.write_wait_ms = w->waited_ms;
    if (!in->image && !img.on_device) io_image_free(&io, &img);
    return rc;
}
