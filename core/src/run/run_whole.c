/* The whole-image path for a run of its own: the GPU (when chosen) starts on a thread while the
 * image is read, the pipeline is planned as soon as the decoder knows the shape, and a GPU failure
 * under auto sends the image to the CPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/fuse.h"
#include "gpu/gpu.h"
#include "base/image.h"
#include "io/jpeg_layout.h"
#include "io/jpeg_route.h"
#include "base/mono_clock.h"
#include "run/run_internal.h"
#include "run/run_jpeg.h"
#include "run/run_output.h"
#include "exec/startup.h"

typedef struct {
    const run_options *o;
    plan *p;
    const char *out_path;        /* NULL: into memory */
    io_format in_format;
    ip_shape final;
    int failed;                  /* the pipeline cannot take this image (a usage error) */
    exec_device dev;
    startup *gpu_startup;        /* running while the image decodes */
    int decided;                 /* auto has chosen (the shape may be seen twice) */
    int gpu_jpeg;                /* on the GPU, JPEG goes through nvJPEG */
    int gpu_codecs;              /* on the GPU, TIFF (and PNG output) go through nvCOMP */
    io_gpu_codecs *codecs;       /* opened with the GPU (NULL: the CPU codecs) */
    fuse_warm *warm;             /* fused kernels compiling beside decoding */
    run_result *res;
} one_run;

static io_format out_format(const one_run *r) { return r->out_path ? io_format_from_ext(r->out_path) : IO_FMT_UNKNOWN; }

static int begin_gpu(one_run *r, char *err, size_t errlen)
{
    exec_options eo = { EXEC_GPU, 0, r->o->threads, r->o->transfer, r->o->profile, 0 };
    r->dev = EXEC_GPU;
    unsigned uses = 0;
    if (r->gpu_jpeg && r->in_format == IO_FMT_JPEG) uses |= JPEG_GPU_DECODE;
    if (r->gpu_jpeg && out_format(r) == IO_FMT_JPEG) uses |= JPEG_GPU_ENCODE;
    return startup_begin(&r->gpu_startup, &eo, uses, r->gpu_codecs, err, errlen);
}

/* auto: the GPU's start-up begins only when the estimate says it pays, so a small image never
 * waits for it. */
static int choose_for_image(one_run *r, const ip_shape *shape, char *err, size_t errlen)
{
    if (r->o->device != RUN_DEVICE_AUTO || r->decided) return IP_OK;
    r->decided = 1;
    if (!run_auto_prefers_gpu(r->p, shape, r->in_format, r->out_path, r->o, r->gpu_jpeg, r->res)) return IP_OK;
    return begin_gpu(r, err, errlen);
}

/* Plans the pipeline as soon as the decoder knows the shape, before any pixel is decoded. */
static int plan_on_shape(void *user, const ip_shape *shape, char *err, size_t errlen)
{
    one_run *r = user;
    int rc = plan_shapes(r->p, shape, &r->final, err, errlen);
    if (rc == IP_OK && r->out_path &&
        (rc = io_check_writable(out_format(r), &r->final, err, errlen)) != IP_OK) {
        char why[768];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: %s", r->out_path, why);
    }
    r->failed = rc != IP_OK;
    if (rc == IP_OK) rc = choose_for_image(r, shape, err, errlen);
    if (rc == IP_OK && r->dev == EXEC_GPU && !r->o->no_fuse && !r->warm) r->warm = fuse_warm_begin(r->p, 0);
    return rc;
}

/* Collects the started GPU context; under auto, a GPU that is not there sends the image to the
 * CPU, under --device gpu it is a usage error. */
static int finish_start(one_run *r, exec_ctx **ctx, jpeg_gpu **jpeg, char *err, size_t errlen)
{
    if (!r->gpu_startup) return IP_OK;
    run_times *t = &r->res->times;
    int rc = startup_finish(r->gpu_startup, ctx, &t->startup_ms, &t->startup_wait_ms, err, errlen);
    const char *jpeg_why = "";
    *jpeg = startup_take_jpeg(r->gpu_startup, &jpeg_why);
    const char *codecs_why = "";
    r->codecs = startup_take_codecs(r->gpu_startup, &codecs_why);
    startup_free(r->gpu_startup);
    r->gpu_startup = NULL;
    if (rc == IP_OK && r->gpu_jpeg && !*jpeg && r->o->jpeg_gpu_required) {
        snprintf(err, errlen, "--jpeg-decoder gpu: %s", jpeg_why);
        return IP_EUNSUPPORTED;
    }
    if (rc == IP_OK && r->gpu_codecs && !r->codecs) {
        if (r->o->codecs == RUN_CODECS_GPU) {
            snprintf(err, errlen, "--codecs gpu: %s", codecs_why);
            return IP_EUNSUPPORTED;
        }
        run_note(r->res, "the CPU codecs: %s", codecs_why);
    }
    if (rc == IP_OK || r->o->device == RUN_DEVICE_GPU) return rc;
    snprintf(r->res->why, sizeof r->res->why, "%s", err);
    r->dev = EXEC_CPU;
    return IP_OK;
}

/* A JPEG that nvJPEG may take: its header is read first (from the file's bytes, without decoding)
 * so that auto can weigh decoding on the GPU and start it before any pixel is decoded. */
static void plan_jpeg_early(one_run *r, io_input *in)
{
    unsigned char *data = NULL;
    size_t len = 0;
    jpeg_layout L;
    char err[256];
    if (io_input_bytes(in, &data, &len, err, sizeof err) == IP_OK &&
        jpeg_layout_read(data, len, &L, err, sizeof err) == IP_OK) {
        ip_shape shape = { L.width, L.height, L.components == 1 ? 1 : 3, IP_U8 };
        if (plan_on_shape(r, &shape, err, sizeof err) != IP_OK) r->decided = 1;   /* io_read says why */
    }
    free(data);
}

/* The input's options: the probe's metadata is handed on, not read again. */
static io_options input_options(one_run *r, run_probe *pr)
{
    io_options io = r->o->io;
    io.on_shape = plan_on_shape;
    io.on_shape_user = r;
    io.meta = r->o->strip ? NULL : &pr->meta;
    io.meta_known = !r->o->strip;
    io.warnings = &r->res->warnings;
    return io;
}

/* Decodes the input: through nvJPEG into device memory where it takes the file, else on the CPU
 * (which also gives the message for a file that cannot be read); an image in memory is planned. */
static int decode_input(one_run *r, run_probe *pr, jpeg_gpu *jpeg, exec_ctx *ctx, const run_source *in,
                        ip_image *img, char *err, size_t errlen)
{
    if (in->image) {
        *img = *in->image;
        return plan_on_shape(r, &in->image->shape, err, errlen);
    }
    io_options io = input_options(r, pr);
    if (r->dev == EXEC_GPU && run_jpeg_wanted(jpeg, r->in_format, r->o->transfer)) {
        run_jpeg_target target;
        run_jpeg_target_init(&target, ctx, r->p);
        int rc = jpeg_route_decode(jpeg, &target.target, &pr->input, &io, img, err, errlen);
        /* Declined (an oriented file, say) before the shape was planned: the CPU reader plans it. */
        if (rc == IP_OK || (r->failed && rc != IP_EUNSUPPORTED)) return rc;
    }
    if (r->dev == EXEC_GPU && r->in_format == IO_FMT_TIFF) {
        int rc = run_tiff_gpu_decode(r->codecs, ctx, r->p, &pr->input, &io, img, err, errlen);
        if (rc != IP_EUNSUPPORTED) return rc;
    }
    return io_read_input(&pr->input, &io, img, err, errlen);
}

/* Runs the plan on r->dev; a GPU failure under --device auto is retried on the CPU. */
static int run_stages(one_run *r, exec_ctx **ctx, const ip_image *in, const char *in_path, ip_image *out,
                      char *err, size_t errlen)
{
    const run_options *o = r->o;
    exec_options eo = { r->dev, 0, o->threads, o->transfer, o->profile, 0 };
    exec_fusion_options fo = { o->no_fuse, 0, o->profile };
    int rc = *ctx ? IP_OK : exec_create(ctx, &eo, err, errlen);
    if (rc == IP_OK) exec_set_fusion(*ctx, &fo);
    if (rc == IP_OK) rc = exec_run(*ctx, r->p, in, in_path, out, &r->res->prof, err, errlen);
    if (rc == IP_OK && exec_take_notes(*ctx)[0]) run_note(r->res, "%s", exec_take_notes(*ctx));
    if (rc != IP_OK && r->dev == EXEC_GPU && o->device == RUN_DEVICE_AUTO && !in->on_device) {
        snprintf(r->res->fallback, sizeof r->res->fallback, "%s", err);
        exec_destroy(*ctx);
        *ctx = NULL;
        eo.device = r->dev = EXEC_CPU;
        rc = exec_create(ctx, &eo, err, errlen);
        if (rc == IP_OK) rc = exec_run(*ctx, r->p, in, in_path, out, &r->res->prof, err, errlen);
    }
    return rc;
}

static void keep_jpeg_times(run_result *res, const jpeg_gpu *jpeg)
{
    if (!jpeg) return;
    res->has_jpeg_times = 1;
    res->jpeg_times = jpeg_gpu_times(jpeg);
    snprintf(res->jpeg_description, sizeof res->jpeg_description, "%s", jpeg_gpu_description(jpeg));
}

/* Decoding, with the GPU's start-up collected beside it (first, when nvJPEG decodes). */
static int decode_beside_start(one_run *r, run_probe *pr, const run_source *in, exec_ctx **ctx, jpeg_gpu **jpeg,
                               ip_image *img, char *err, size_t errlen)
{
    char start_err[512];
    double t0 = now_ms();
    int start_rc = IP_OK, rc = IP_OK;
    /* nvJPEG or nvCOMP decodes on the GPU: it must be up first */
    if ((r->gpu_jpeg && r->in_format == IO_FMT_JPEG) || (r->gpu_codecs && r->in_format == IO_FMT_TIFF && r->gpu_startup))
        start_rc = finish_start(r, ctx, jpeg, start_err, sizeof start_err);
    if (start_rc == IP_OK) rc = decode_input(r, pr, *jpeg, *ctx, in, img, err, errlen);
    r->res->times.decode_ms = now_ms() - t0;
    if (start_rc == IP_OK) start_rc = finish_start(r, ctx, jpeg, start_err, sizeof start_err);
    r->res->times.fuse_compiled = fuse_warm_end(r->warm, &r->res->times.fuse_ms);
    r->warm = NULL;
    if (rc != IP_OK) {
        r->res->usage_error = r->failed;
        r->res->failed_path = r->failed ? NULL : in->path;
        return rc;
    }
    if (start_rc != IP_OK) {
        snprintf(err, errlen, "--device gpu: %s", start_err);
        r->res->usage_error = 1;
    }
    return start_rc;
}

int run_whole(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
              run_probe *pr, run_result *res, char *err, size_t errlen)
{
    if (w) return run_whole_worker(w, p, in, out, o, pr, res, err, errlen);
    ip_image img = { 0 }, result;
    one_run r = { .o = o, .p = p, .out_path = out->path, .in_format = pr->format, .dev = EXEC_CPU, .res = res };
    r.gpu_jpeg = o->jpeg_gpu_required && jpeg_gpu_built() && o->transfer == EXEC_COPY &&
                 (r.in_format == IO_FMT_JPEG || out_format(&r) == IO_FMT_JPEG);
    io_format outf = out_format(&r);
    r.gpu_codecs = run_gpu_codecs_wanted(o, r.in_format, outf);
    if (o->device == RUN_DEVICE_GPU && begin_gpu(&r, err, errlen) != IP_OK) return IP_ECUDA;
    if (r.gpu_jpeg && r.in_format == IO_FMT_JPEG && o->device == RUN_DEVICE_AUTO && in->path)
        plan_jpeg_early(&r, &pr->input);
    exec_ctx *ctx = NULL;
    jpeg_gpu *jpeg = NULL;
    int rc = decode_beside_start(&r, pr, in, &ctx, &jpeg, &img, err, errlen);
    if (rc == IP_OK) {
        res->decoded = 1;
        res->device = r.dev;
        if (ctx) exec_keep_result_on_device(ctx, run_output_on_device(jpeg, r.codecs, &r.final, out->path, o));
        rc = run_stages(&r, &ctx, &img, in->path, &result, err, errlen);
        res->device = r.dev;
        if (rc != IP_OK) res->failed_path = in->path ? in->path : NULL;
    }
    if (rc == IP_OK) {
        double t0 = now_ms();
        rc = run_output_write(jpeg, r.codecs, &result, out, o, &pr->meta, err, errlen);
        res->times.encode_ms = now_ms() - t0;
        if (rc != IP_OK) res->failed_path = out->path;
    }
    keep_jpeg_times(res, jpeg);
    jpeg_gpu_close(jpeg);
    io_gpu_codecs_close(r.codecs);
    exec_destroy(ctx);
    if (!in->image && !img.on_device) img_free(&img);
    return rc;
}
