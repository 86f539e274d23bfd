/* imgpipe_run: an image in memory through a pooled worker, its result into the caller's memory
 * or memory the library allocates; device images are ordered on the caller's CUDA stream. */
#include <stdio.h>
#include <string.h>
#include "api/api_image.h"
#include "api/api_internal.h"
#include "gpu/gpu.h"

/* Where a run goes: the GPU for device memory (the input's device, else the output's), the
 * option's device for host images, auto by the cost estimate once the shape is planned. */
typedef struct {
    exec_device dev;
    int gpu;
    int decided;                 /* 0: auto, decided after planning */
} api_place;

static int place_of(const imgpipe_image *in, const imgpipe_image *out, const imgpipe_run_options *v, api_place *pl,
                    imgpipe_error *err)
{
    int in_dev = in->memory == IMGPIPE_CUDA_DEVICE, out_dev = out->memory == IMGPIPE_CUDA_DEVICE;
    *pl = (api_place){ EXEC_CPU, 0, 1 };
    if (out->memory != IMGPIPE_HOST && !out_dev)
        return api_fail(err, IMGPIPE_EINVAL, "out->memory must be IMGPIPE_HOST or IMGPIPE_CUDA_DEVICE (it is %d)",
                        (int)out->memory);
    if (in_dev || out_dev) {
        if (!gpu_built()) return api_fail(err, IMGPIPE_EUNSUPPORTED, "device memory: imgpipe was built without CUDA");
        if (v->device == IMGPIPE_DEVICE_CPU)
            return api_fail(err, IMGPIPE_EINVAL, "IMGPIPE_DEVICE_CPU with device memory: device images run on the GPU "
                            "(use IMGPIPE_DEVICE_AUTO or _GPU, or copy the image to host memory)");
        if (!in_dev && !out->data && out->device < 0)
            return api_fail(err, IMGPIPE_EINVAL, "out->device must be a CUDA device number (it is %d)", out->device);
        *pl = (api_place){ EXEC_GPU, in_dev ? in->device : out->device, 1 };
        return IP_OK;
    }
    if (v->device == IMGPIPE_DEVICE_GPU && !gpu_built())
        return api_fail(err, IMGPIPE_EUNSUPPORTED, "IMGPIPE_DEVICE_GPU: imgpipe was built without CUDA");
    if (v->device == IMGPIPE_DEVICE_GPU) *pl = (api_place){ EXEC_GPU, v->gpu, 1 };
    if (v->device == IMGPIPE_DEVICE_AUTO && gpu_built()) pl->decided = 0;
    return IP_OK;
}

/* Plans the slot's steps for the input and gives the final shape. */
static int plan_slot(api_slot *s, const ip_shape *in, ip_shape *final, imgpipe_error *err)
{
    char msg[1024];
    int rc = plan_shapes(&s->own, in, final, msg, sizeof msg);
    return rc == IP_OK ? IP_OK : api_fail_from(err, rc, msg, NULL);
}

/* A planned worker on the place's device; auto takes the CPU one to plan, then trades it for a
 * GPU one when the estimate favours the GPU. */
static int take_planned(imgpipe_pipeline *p, api_place *pl, const run_options *ro, const ip_shape *in, api_slot **s,
                        ip_shape *final, imgpipe_error *err)
{
    int rc = api_take(p, pl->dev, pl->gpu, ro, 0, s, err);
    if (rc == IP_OK) rc = plan_slot(*s, in, final, err);
    if (rc != IP_OK || pl->decided) return rc;
    char why[1024];
    pl->decided = 1;
    if (run_choose_device(&(*s)->own, in, ro, why, sizeof why) != RUN_DEVICE_GPU) return IP_OK;
    api_give_back(p, *s);
    *s = NULL;
    pl->dev = EXEC_GPU;
    rc = api_take(p, EXEC_GPU, ro->n_gpus ? ro->gpu_ids[0] : 0, ro, 1, s, err);   /* auto: a GPU failure retries on the CPU */
    return rc == IP_OK ? plan_slot(*s, in, final, err) : rc;
}

static void shape_text(const ip_shape *s, char *buf, size_t len) { plan_shape_text(s, buf, len); }

/* The caller's output memory, checked against the result's shape; or memory allocated for it. */
static int output_view(imgpipe_image *out, const imgpipe_image *in, const ip_shape *final,
                       void *cuda_stream, ip_image *view, int *allocated, imgpipe_error *err)
{
    *allocated = 0;
    if (!out->data) {
        api_image_set_shape(out, final);
        if (out->memory == IMGPIPE_CUDA_DEVICE && in->memory == IMGPIPE_CUDA_DEVICE) out->device = in->device;
        void *pool = NULL;
        int rc = out->memory == IMGPIPE_CUDA_DEVICE ? api_result_pool(out->device, &pool, err) : IP_OK;
        if (rc == IP_OK) rc = api_image_alloc(out, pool, cuda_stream, err);
        if (rc != IP_OK) return rc;
        *allocated = 1;
    }
    int rc = api_image_view(out, "out", view, err);
    if (rc != IP_OK) return rc;
    const ip_shape *s = &view->shape;
    if (s->width != final->width || s->height != final->height || s->channels != final->channels ||
        s->dtype != final->dtype) {
        char have[64], want[64];
        shape_text(s, have, sizeof have);
        shape_text(final, want, sizeof want);
        return api_fail(err, IMGPIPE_EINVAL, "out is %s, but the result is %s (imgpipe_output_shape gives it)", have, want);
    }
    return IP_OK;
}

/* Device work waits for what the caller queued on its stream, and the caller's stream for it. */
static int order_after(void **event, void *wait_on, void *waiter, imgpipe_error *err)
{
    char msg[512];
    int rc = *event ? IP_OK : gpu_event_create(event, msg, sizeof msg);
    if (rc == IP_OK && gpu_event_record(*event, wait_on) != IP_OK) {
        snprintf(msg, sizeof msg, "cudaEventRecord failed");
        rc = IP_ECUDA;
    }
    if (rc == IP_OK) rc = gpu_stream_wait_event(waiter, *event, msg, sizeof msg);
    return rc == IP_OK ? IP_OK : api_fail_from(err, rc, msg, NULL);
}

static int run_on_slot(api_slot *s, const ip_image *src, ip_image *dst, const run_options *ro, void *cuda_stream,
                       imgpipe_error *err)
{
    void *stream = s->device == EXEC_GPU ? run_worker_stream(s->worker) : NULL;
    int rc = IP_OK;
    char msg[1024];
    if (stream && (rc = gpu_select(s->gpu, msg, sizeof msg)) != IP_OK) return api_fail_from(err, rc, msg, NULL);
    if (stream && (src->on_device || dst->on_device)) rc = order_after(&s->events[0], cuda_stream, stream, err);
    if (rc != IP_OK) return rc;
    run_source source = { NULL, src, NULL, 0, NULL, NULL };
    run_sink sink = { NULL, dst, 1, NULL, NULL };
    run_result res;
    rc = run_image(s->worker, &s->own, &source, &sink, ro, &res, msg, sizeof msg);
    if (rc != IP_OK) return api_fail_from(err, rc, msg, NULL);
    if (stream && (src->on_device || dst->on_device)) rc = order_after(&s->events[1], stream, cuda_stream, err);
    return rc;
}

int imgpipe_run(imgpipe_pipeline *p, const imgpipe_image *in, imgpipe_image *out, const imgpipe_run_options *o,
                void *cuda_stream, imgpipe_error *err)
{
    if (!p || !in || !out) return api_fail(err, IMGPIPE_EINVAL, "imgpipe_run: %s is NULL", !p ? "p" : !in ? "in" : "out");
    imgpipe_run_options v;
    run_options ro;
    ip_image src, dst;
    api_place pl;
    int rc = api_run_options(o, &v, &ro, err);
    if (rc == IP_OK) rc = api_image_view(in, "in", &src, err);
    if (rc == IP_OK) rc = place_of(in, out, &v, &pl, err);
    if (rc != IP_OK) return rc;
    api_slot *s = NULL;
    ip_shape final;
    int allocated = 0;
    rc = take_planned(p, &pl, &ro, &src.shape, &s, &final, err);
    if (rc == IP_OK) rc = output_view(out, in, &final, cuda_stream, &dst, &allocated, err);
    ro.device = pl.dev == EXEC_GPU ? RUN_DEVICE_GPU : RUN_DEVICE_CPU;
    if (rc == IP_OK) rc = run_on_slot(s, &src, &dst, &ro, cuda_stream, err);
    if (s) api_give_back(p, s);
    if (rc != IP_OK && allocated) imgpipe_image_free_async(out, cuda_stream, NULL);
    if (rc == IP_OK) api_ok(err);
    return rc;
}
