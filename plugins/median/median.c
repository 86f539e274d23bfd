#include "imgpipe/plugin.h"
#include "../common/cost.h"
#include "../common/window.h"

static const ip_param median_params[] = {
    { "radius", IP_INT, "1", 1, 25, NULL, "window radius: the window is (2*radius+1) pixels square" },
    { "border", IP_ENUM, "replicate", 0, 0, ADAPT_BORDER_CHOICES,
      "pixels beyond the edge: replicate (as OpenCV medianBlur), reflect101, zero, or shrink "
      "(the window is cut to the image; the lower median of what is left)" },
};

static int median_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    return window_create(median_params, IP_COUNT(median_params), args, state, err, errlen);
}

static int median_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                       char *err, size_t errlen)
{
    return window_plan("median", state, IP_GPU_ENTRY(ipk_median_gpu_scratch), in, out, needs, err, errlen);
}

static int median_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const window_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_median_cpu(&src, &dst, s->radius, s->border, ex->threads), "median", ex);
}

#ifdef IMGPIPE_HAVE_CUDA
static int median_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const window_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_median_gpu(&src, &dst, s->radius, s->border, ex->scratch,
                                       ex->scratch_bytes, ex->stream), "median", ex);
}
#endif

/* Measured at radius 1, 2, 3, 7 and 15, straight lines between (and beyond 15). */
static int median_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    static const struct { int r; double cpu, gpu; } at[] = {
        { 1, 1.51, 0.0028 }, { 2, 3.68, 0.0120 }, { 3, 18.5, 0.0405 }, { 7, 19.2, 0.116 }, { 15, 19.6, 0.209 },
    };
    const int r = ((const window_state *)state)->radius, n = IP_COUNT(at);
    int i = 0;
    (void)in;
    if (r <= at[0].r) return cost_set(cost, at[0].cpu, at[0].gpu);
    while (i < n - 2 && r > at[i + 1].r) i++;
    double f = (double)(r - at[i].r) / (at[i + 1].r - at[i].r);
    return cost_set(cost, at[i].cpu + f * (at[i + 1].cpu - at[i].cpu), at[i].gpu + f * (at[i + 1].gpu - at[i].gpu));
}

static int median_window(const void *state, const ip_shape *in, ip_window *w)
{
    (void)in;
    return window_describe(IP_WINDOW_MEDIAN, state, w);
}

static const ip_stage median_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "median",
    .summary = "median of the (2*radius+1)^2 window per channel (identical to OpenCV medianBlur for 8-bit)",
    .params = median_params,
    .n_params = IP_COUNT(median_params),
    .create = median_create,
    .plan = median_plan,
    .run_cpu = median_run_cpu,
    .run_gpu = IP_GPU_ENTRY(median_run_gpu),
    .destroy = free,
    .stage_class = IP_CLASS_AREA,
    .cost_of = median_cost,
    .window_of = median_window,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &median_stage; }
