#include "imgpipe/plugin.h"
#include "../common/window.h"

static const ip_param median_params[] = {
    { "radius", IP_INT, "1", 1, 25, NULL, "window radius: the window is (2*radius+1) pixels square" },
    { "border", IP_ENUM, "replicate", 0, 0, ADAPT_BORDER_CHOICES,
      "pixels beyond the edge: replicate (as OpenCV medianBlur), reflect101, zero, or shrink "
      "(the window is cut to the image; the lower median of what is left)" },
};

#ifdef IMGPIPE_HAVE_CUDA
#define MEDIAN_GPU_SCRATCH ipk_median_gpu_scratch
#else
#define MEDIAN_GPU_SCRATCH NULL
#endif

static int median_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                       char *err, size_t errlen)
{
    return window_plan("median", state, MEDIAN_GPU_SCRATCH, in, out, needs, err, errlen);
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
#define MEDIAN_RUN_GPU median_run_gpu
#else
#define MEDIAN_RUN_GPU NULL
#endif

static const ip_stage median_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "median",
    .summary = "median of the (2*radius+1)^2 window per channel (identical to OpenCV medianBlur for 8-bit)",
    .params = median_params,
    .n_params = 2,
    .create = window_create,
    .plan = median_plan,
    .run_cpu = median_run_cpu,
    .run_gpu = MEDIAN_RUN_GPU,
    .destroy = free,
    .stage_class = IP_CLASS_AREA,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &median_stage; }
