/* threshold: an imgpipe stage built out of tree. Values above a level become the maximum
 * (255 or 65535), the others 0; mode=otsu picks the level per image with Otsu's method. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "threshold.h"

/* The core checks every argument against this table (type, range, choices) before create(). */
static const ip_param threshold_params[] = {
    { "value", IP_FLOAT, "128", 0, 65535, NULL,
      "level: values above it become the maximum (255 or 65535), the others 0" },
    { "mode", IP_ENUM, "binary", 0, 0, "binary|otsu",
      "binary uses value; otsu picks the level per image from its histogram (as OpenCV THRESH_OTSU)" },
    { "invert", IP_BOOL, "false", 0, 0, NULL, "swap the two outputs: values above the level become 0" },
};

/* args come in the table's order; IP_ARG finds each by name, so the table may be reordered or grow. */
static int threshold_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    const ip_value *value = IP_ARG(threshold_params, args, "value"), *mode = IP_ARG(threshold_params, args, "mode"),
                   *invert = IP_ARG(threshold_params, args, "invert");
    if (!value || !mode || !invert) {
        snprintf(err, errlen, "the parameter table lacks a parameter create reads");
        return IP_EINVAL;
    }
    threshold_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->level = (long)value->f;   /* value >= 0, so this is floor: v > 127.5 exactly when v > 127 */
    s->otsu = mode->i == 1;
    s->invert = invert->i != 0;
    *state = s;
    return IP_OK;
}

/* Same shape out as in; Otsu's histogram lives in scratch memory the core provides. */
static int threshold_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                          char *err, size_t errlen)
{
    const threshold_state *s = state;
    if (in->dtype != IP_U8 && in->dtype != IP_U16) {
        snprintf(err, errlen, "takes 8- or 16-bit images, not 32-bit float");
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    needs->halo = 0;   /* each pixel on its own; mode=otsu reads the whole image: threshold_class says so */
    needs->scratch_bytes = s->otsu ? threshold_hist_bytes(in->dtype) : 0;
    needs->gpu_scratch_bytes = s->otsu ? threshold_hist_bytes(in->dtype) + sizeof(long long) : 0;
    return IP_OK;
}

static unsigned read_value(const ip_image *im, const char *row, size_t i)
{
    return im->shape.dtype == IP_U8 ? ((const uint8_t *)row)[i] : ((const uint16_t *)row)[i];
}

static long otsu_level_cpu(const ip_image *in, unsigned long long *hist)
{
    int bins = threshold_bins(in->shape.dtype);
    size_t row_values = (size_t)in->shape.width * (size_t)in->shape.channels;
    memset(hist, 0, (size_t)bins * sizeof *hist);
    for (int y = 0; y < in->shape.height; y++) {
        const char *row = (const char *)in->data + (ptrdiff_t)y * in->stride;
        for (size_t i = 0; i < row_values; i++) hist[read_value(in, row, i)]++;
    }
    return threshold_otsu(hist, bins, (unsigned long long)row_values * (unsigned long long)in->shape.height);
}

/* Host images, owned by the core; in and out never overlap. Single-threaded for clarity:
 * a stage may use up to ex->threads OpenMP threads. */
static int threshold_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const threshold_state *s = state;
    long level = s->level;
    if (s->otsu) {
        if (ex->scratch_bytes < threshold_hist_bytes(in->shape.dtype)) {
            snprintf(ex->err, ex->errlen, "got %zu bytes of scratch memory, planned %zu", ex->scratch_bytes,
                     threshold_hist_bytes(in->shape.dtype));
            return IP_EINVAL;
        }
        level = otsu_level_cpu(in, ex->scratch);
    }
    unsigned maxval = in->shape.dtype == IP_U8 ? 255u : 65535u;
    size_t row_values = (size_t)in->shape.width * (size_t)in->shape.channels;
    for (int y = 0; y < in->shape.height; y++) {
        const char *src = (const char *)in->data + (ptrdiff_t)y * in->stride;
        char *dst = (char *)out->data + (ptrdiff_t)y * out->stride;
        for (size_t i = 0; i < row_values; i++) {
            unsigned v = threshold_pixel(read_value(in, src, i), level, maxval, s->invert);
            if (in->shape.dtype == IP_U8) ((uint8_t *)dst)[i] = (uint8_t)v;
            else ((uint16_t *)dst)[i] = (uint16_t)v;
        }
    }
    return IP_OK;
}

#ifdef IMGPIPE_HAVE_CUDA
/* Device images and device scratch memory; the work goes on ex->stream, no waiting here. */
static int threshold_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    return threshold_run_cuda(state, in, out, ex->scratch, ex->stream, ex->err, ex->errlen);
}
#endif

/* The class of this use: a given level is a point stage, which the core may stream in bands of
 * rows; Otsu's level needs the whole image first. */
static uint32_t threshold_class(const void *state)
{
    const threshold_state *s = state;
    return s->otsu ? IP_CLASS_GLOBAL : IP_CLASS_POINT;
}

/* For --device auto: nanoseconds per input byte on the CPU (times the cores used) and on the GPU.
 * Measure yours alone on a large image with `imgpipe run --profile`; until then these guesses are
 * grayscale's measured costs (a light point stage), doubled for Otsu's extra pass over the image. */
static int threshold_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    const threshold_state *s = state;
    (void)in;
    cost->cpu_ns = s->otsu ? 1.28 : 0.64;
    cost->gpu_ns = s->otsu ? 0.00128 : 0.00064;
    return IP_OK;
}

static const ip_stage threshold_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "threshold",
    .summary = "values above a level become the maximum, the others 0; the level given or found by Otsu's method",
    .params = threshold_params,
    .n_params = IP_COUNT(threshold_params),
    .create = threshold_create,
    .plan = threshold_plan,
    .run_cpu = threshold_run_cpu,
    .run_gpu = IP_GPU_ENTRY(threshold_run_gpu),   /* NULL when built without CUDA */
    .destroy = free,
    .stage_class = IP_CLASS_POINT,
    .class_of = threshold_class,
    .cost_of = threshold_cost,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &threshold_stage; }
