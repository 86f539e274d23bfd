#include "imgpipe/plugin.h"
#include "../common/cost.h"
#include "../common/window.h"

static const ip_param mean_params[] = {
    { "radius", IP_INT, "1", 1, 100, NULL, "window radius: the window is (2*radius+1) pixels square" },
    { "border", IP_ENUM, "reflect101", 0, 0, ADAPT_BORDER_CHOICES,
      "pixels beyond the edge: reflect101 (as OpenCV blur), replicate, zero, or shrink "
      "(the window is cut to the image and the mean is over what is left)" },
};

static int mean_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    return window_create(mean_params, IP_COUNT(mean_params), args, state, err, errlen);
}

static int mean_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                     char *err, size_t errlen)
{
    return window_plan("mean", state, IP_GPU_ENTRY(ipk_mean_gpu_scratch), in, out, needs, err, errlen);
}

static int mean_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const window_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_mean_cpu(&src, &dst, s->radius, s->border, ex->threads), "mean", ex);
}

#ifdef IMGPIPE_HAVE_CUDA
static int mean_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const window_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_mean_gpu(&src, &dst, s->radius, s->border, ex->scratch, ex->scratch_bytes,
                                     ex->stream), "mean", ex);
}
#endif

static int mean_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    const int r = ((const window_state *)state)->radius;
    (void)in;
    return cost_set(cost, 1.45 + 0.12 * r, 0.0020 + 0.00006 * r);
}

static int mean_window(const void *state, const ip_shape *in, ip_window *w)
{
    (void)in;
    return window_describe(IP_WINDOW_MEAN, state, w);
}

static const ip_stage mean_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "mean",
    .summary = "box average of the (2*radius+1)^2 window per channel, rounded half up "
               "(identical to OpenCV blur for 8-bit)",
    .params = mean_params,
    .n_params = IP_COUNT(mean_params),
    .create = mean_create,
    .plan = mean_plan,
    .run_cpu = mean_run_cpu,
    .run_gpu = IP_GPU_ENTRY(mean_run_gpu),
    .destroy = free,
    .stage_class = IP_CLASS_AREA,
    .cost_of = mean_cost,
    .window_of = mean_window,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &mean_stage; }
