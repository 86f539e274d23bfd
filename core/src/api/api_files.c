/* Files and folders, as `imgpipe run`: one file through run/, a folder through batch/ with the
 * caller's progress callback (which may cancel). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "api/api_internal.h"
#include "batch/batch.h"
#include "batch/folder_device.h"
#include "gpu/gpu.h"

int imgpipe_run_file(imgpipe_pipeline *p, const char *src, const char *dst, const imgpipe_run_options *o,
                     imgpipe_error *err)
{
    if (!p || !src || !dst)
        return api_fail(err, IMGPIPE_EINVAL, "imgpipe_run_file: %s is NULL", !p ? "p" : !src ? "src" : "dst");
    imgpipe_run_options v;
    run_options ro;
    int rc = api_run_options(o, &v, &ro, err);
    if (rc != IP_OK) return rc;
    if (io_format_from_ext(dst) == IO_FMT_UNKNOWN)
        return api_fail(err, IMGPIPE_EINVAL, "%s: cannot tell the output format from its extension: use .png, .jpg, "
                        ".jpeg, .tif or .tiff", dst);
    if (ro.device == RUN_DEVICE_GPU && !gpu_built())
        return api_fail(err, IMGPIPE_EUNSUPPORTED, "IMGPIPE_DEVICE_GPU: imgpipe was built without CUDA");
    plan own;   /* shapes are written into the steps: a copy of them, the plugin states shared */
    if (plan_share(&p->p, &own) != IP_OK) return api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    run_source in = { src, NULL, NULL, 0, NULL, NULL };
    run_sink out = { dst, NULL, 0, NULL, NULL };
    run_result *res = malloc(sizeof *res);
    char msg[1024];
    rc = res ? run_image(NULL, &own, &in, &out, &ro, res, msg, sizeof msg) : IP_ENOMEM;
    if (!res) rc = api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    else if (rc != IP_OK) api_fail_from(err, rc, msg, res->failed_path);
    else api_ok(err);
    free(res);
    plan_unshare(&own);
    return rc;
}

/* The caller's callback behind batch/'s (called with batch/'s lock held, one at a time). */
typedef struct {
    imgpipe_progress_fn fn;
    void *user;
    volatile sig_atomic_t stop;
    char failed_path[1024];      /* the last failure, told with the progress call that follows it */
    char failed_message[1024];
    int failure_pending;
} folder_call;

static void on_failure(void *user, const char *path, const char *message)
{
    folder_call *c = user;
    snprintf(c->failed_path, sizeof c->failed_path, "%s", path);
    snprintf(c->failed_message, sizeof c->failed_message, "%s", message);
    c->failure_pending = 1;
}

static void on_progress(void *user, const batch_progress *bp)
{
    folder_call *c = user;
    imgpipe_progress pr = { bp->total, bp->done + bp->resumed, bp->failed, bp->last,
                            c->failure_pending ? c->failed_message : NULL };
    c->failure_pending = 0;
    if (c->fn && c->fn(c->user, &pr)) c->stop = 1;
}

static int cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* batch/'s options as the command line sets them (cli_folder.c) for dev. */
static void folder_options(const imgpipe_run_options *v, const run_options *ro, exec_device dev, const char *src,
                           const char *dst, batch_options *b)
{
    int n = cores();
    memset(b, 0, sizeof *b);
    b->input = src;
    b->output_dir = dst;
    b->recursive = v->recursive;
    b->format = !v->output_format ? IO_FMT_UNKNOWN : strcmp(v->output_format, "png") == 0 ? IO_FMT_PNG
              : strcmp(v->output_format, "jpg") == 0 ? IO_FMT_JPEG : IO_FMT_TIFF;
    b->jobs = v->jobs ? v->jobs : n;
    b->device = dev;
    int share = n / b->jobs > 0 ? n / b->jobs : 1;
    b->threads = v->threads ? v->threads : (dev == EXEC_CPU ? share : 1);
    b->cpu_fallback = v->device == IMGPIPE_DEVICE_AUTO;
    b->io = ro->io;
    b->io.threads = v->threads ? v->threads : share;
    b->memory = (v->memory ? v->memory : run_default_memory()) / (uint64_t)b->jobs;
    b->gpu_ids[0] = v->gpu;
    b->n_gpus = 1;
}

/* The device as the command line chooses it for a folder: under auto, the CPU when the estimate
 * says the stages cost its workers less than the GPU's start-up and staging. */
static int folder_device(const imgpipe_run_options *v, const run_options *ro, const plan *p, const char *src,
                         const char *dst, exec_device *dev, imgpipe_error *err)
{
    char why[256] = "";
    int count = v->device == IMGPIPE_DEVICE_CPU ? 0 : gpu_device_count(why, sizeof why);
    if (v->device == IMGPIPE_DEVICE_GPU && count == 0)
        return api_fail(err, IMGPIPE_EUNSUPPORTED, "IMGPIPE_DEVICE_GPU: %s", why);
    *dev = count > 0 ? EXEC_GPU : EXEC_CPU;
    if (*dev == EXEC_GPU && v->device == IMGPIPE_DEVICE_AUTO) {
        batch_options b;
        folder_estimate est;
        char msg[1024];
        folder_options(v, ro, EXEC_CPU, src, dst, &b);
        if (folder_estimate_run(&b, p, cores(), &est, msg, sizeof msg) == IP_OK && est.gpu_s >= est.cpu_s) *dev = EXEC_CPU;
    }
    return IP_OK;
}

static int folder_outcome(const batch_progress *r, folder_call *c, imgpipe_error *err)
{
    if (r->stopped) return api_fail(err, IMGPIPE_ECANCELED, "canceled after %d of %d images", r->done + r->failed, r->total);
    if (r->failed) {
        api_fail(err, IMGPIPE_EFAILED, "%d of %d images failed; the last: %s: %s", r->failed, r->total, c->failed_path,
                 c->failed_message);
        if (err) snprintf(err->path, sizeof err->path, "%s", c->failed_path);
        return IMGPIPE_EFAILED;
    }
    api_ok(err);
    return IMGPIPE_OK;
}

int imgpipe_run_folder(imgpipe_pipeline *p, const char *src_dir, const char *dst_dir, const imgpipe_run_options *o,
                       imgpipe_progress_fn progress, void *user, imgpipe_error *err)
{
    if (!p || !src_dir || !dst_dir)
        return api_fail(err, IMGPIPE_EINVAL, "imgpipe_run_folder: %s is NULL", !p ? "p" : !src_dir ? "src_dir" : "dst_dir");
    imgpipe_run_options v;
    run_options ro;
    int rc = api_run_options(o, &v, &ro, err);
    if (rc != IP_OK) return rc;
    if (!batch_is_batch_input(src_dir))
        return api_fail(err, IMGPIPE_EINVAL, "%s is not a folder (or an @LIST): use imgpipe_run_file for one image", src_dir);
    exec_device dev = EXEC_CPU;
    if ((rc = folder_device(&v, &ro, &p->p, src_dir, dst_dir, &dev, err)) != IP_OK) return rc;
    batch_options b;
    folder_options(&v, &ro, dev, src_dir, dst_dir, &b);
    folder_call *c = calloc(1, sizeof *c);
    if (!c) return api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    c->fn = progress;
    c->user = user;
    b.stop = &c->stop;
    batch_callbacks cb = { on_progress, on_failure, NULL, NULL, c };
    batch_progress result;
    char msg[1024];
    rc = batch_run(&b, &p->p, &cb, &result, msg, sizeof msg);
    rc = rc != IP_OK ? api_fail_from(err, rc, msg, NULL) : folder_outcome(&result, c, err);
    free(c);
    return rc;
}
