#include <stdlib.h>
#include "imgpipe/plugin.h"
#include "../common/adapt.h"
#include "../common/cost.h"
#include "../../kernels/common/entropy_tables.h"

typedef struct {
    ipk_entropy_params p;
    int out_u8;
} entropy_state;

static const ip_param entropy_params[] = {
    { "radius", IP_INT, "2", 1, 30, NULL, "window is (2*radius+1)^2, cut at the image border" },
    { "levels", IP_INT, "256", 2, 65536, NULL,
      "number of possible input values (256 for 8-bit, 65536 for 16-bit images)" },
    { "bins", IP_INT, "16", 1, 65536, NULL, "histogram bins: bin = value * bins / levels (at most levels)" },
    { "base", IP_ENUM, "e", 0, 0, "e|2|10", "logarithm base: e (nats), 2 (bits) or 10" },
    { "output", IP_ENUM, "f32", 0, 0, "f32|u8",
      "f32: the entropy itself; u8: 0..log(min(bins, window)) scaled to 0..255" },
};

static int entropy_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    const ip_value *radius = IP_ARG(entropy_params, args, "radius"), *levels = IP_ARG(entropy_params, args, "levels"),
                   *bins = IP_ARG(entropy_params, args, "bins"), *base = IP_ARG(entropy_params, args, "base"),
                   *output = IP_ARG(entropy_params, args, "output");
    if (!radius || !levels || !bins || !base || !output) {
        snprintf(err, errlen, "entropy's parameter table lacks a parameter its create reads");
        return IP_EINVAL;
    }
    if (bins->i > levels->i) {
        snprintf(err, errlen, "bins=%lld is more than levels=%lld: bins must be at most levels", (long long)bins->i,
                 (long long)levels->i);
        return IP_EINVAL;
    }
    entropy_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    static const double log_scales[] = IPK_ENTROPY_LOG_SCALES;
    s->p.radius = (int)radius->i;
    s->p.levels = (int)levels->i;
    s->p.bins = (int)bins->i;
    s->p.log_scale = log_scales[base->i];
    s->out_u8 = output->i == 1;
    *state = s;
    return IP_OK;
}

static int entropy_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                        char *err, size_t errlen)
{
    const entropy_state *s = state;
    if (in->channels != 1) {
        snprintf(err, errlen, "entropy needs one channel, got %d: add 'grayscale' before it", (int)in->channels);
        return IP_EINVAL;
    }
    if (in->dtype != IP_U8 && in->dtype != IP_U16) {
        snprintf(err, errlen, "entropy needs 8- or 16-bit integer pixels, got %s: entropy of float "
                 "values is not defined here", adapt_dtype_name(in->dtype));
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    out->dtype = s->out_u8 ? IP_U8 : IP_F32;
    needs->halo = s->p.radius;
    size_t (*gpu_scratch)(int, int, const ipk_entropy_params *) = IP_GPU_ENTRY(ipk_entropy_gpu_scratch);
    needs->gpu_scratch_bytes = gpu_scratch ? gpu_scratch(in->width, in->height, &s->p) : 0;
    return IP_OK;
}

static int entropy_range_error(const entropy_state *s, const ip_image *in, int64_t bad, const ip_exec *ex)
{
    int full = in->shape.dtype == IP_U8 ? 256 : 65536;
    if (ex->err && ex->errlen)
        snprintf(ex->err, ex->errlen, "entropy: pixel value %lld is >= levels=%d (set levels=%d for %s images)",
                 (long long)bad, s->p.levels, full, adapt_dtype_name(in->shape.dtype));
    return IP_EINVAL;
}

static int entropy_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const entropy_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    int64_t bad = 0;
    int rc = ipk_entropy_cpu(&src, &dst, &s->p, ex->threads, &bad);
    if (rc == IPK_ERANGE) return entropy_range_error(s, in, bad, ex);
    return adapt_status(rc, "entropy", ex);
}

#ifdef IMGPIPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#include "../../kernels/common/entropy_scratch.cuh"

/* The kernel clamps values >= levels and flags them in scratch. Only when the input's depth
 * can hold such values is the flag read back, at the cost of one wait on the stream. */
static int entropy_gpu_check_range(const entropy_state *s, const ip_image *in, const ip_exec *ex)
{
    int64_t depth_max = in->shape.dtype == IP_U8 ? 255 : 65535;
    if (s->p.levels > depth_max) return IP_OK;
    uint32_t words[2] = { 0, 0 };
    cudaStream_t stream = (cudaStream_t)ex->stream;
    if (cudaMemcpyAsync(words, (const char *)ex->scratch + IPK_ENTROPY_GPU_FLAG_OFFSET, sizeof words,
                        cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess)
        return adapt_status(IPK_ECUDA, "entropy", ex);
    return words[0] ? entropy_range_error(s, in, (int64_t)words[1], ex) : IP_OK;
}

static int entropy_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const entropy_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    int rc = ipk_entropy_gpu(&src, &dst, &s->p, ex->scratch, ex->scratch_bytes, ex->stream);
    if (rc != IPK_OK) return adapt_status(rc, "entropy", ex);
    return entropy_gpu_check_range(s, in, ex);
}
#endif

static int entropy_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    const double side = cost_side(((const entropy_state *)state)->p.radius);
    (void)in;
    return cost_set(cost, 11.0 * side * side / 25.0, 0.0065 * side * side / 25.0);
}

static int entropy_window(const void *state, const ip_shape *in, ip_window *w)
{
    const entropy_state *s = state;
    (void)in;
    w->kind = IP_WINDOW_ENTROPY;
    w->radius = s->p.radius;
    w->levels = s->p.levels;
    w->bins = s->p.bins;
    w->log_scale = s->p.log_scale;
    return IP_OK;
}

static const ip_stage entropy_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "entropy",
    .summary = "local Shannon entropy of each pixel's window (as scikit-image rank.entropy)",
    .params = entropy_params,
    .n_params = IP_COUNT(entropy_params),
    .create = entropy_create,
    .plan = entropy_plan,
    .run_cpu = entropy_run_cpu,
    .run_gpu = IP_GPU_ENTRY(entropy_run_gpu),
    .destroy = free,
    .stage_class = IP_CLASS_AREA,
    .cost_of = entropy_cost,
    .window_of = entropy_window,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &entropy_stage; }
