#include "imgpipe/plugin.h"
#include "../common/window.h"

static const ip_param mean_params[] = {
    { "radius", IP_INT, "1", 1, 100, NULL, "window radius: the window is (2*radius+1) pixels square" },
    { "border", IP_ENUM, "reflect101", 0, 0, ADAPT_BORDER_CHOICES,
      "pixels beyond the edge: reflect101 (as OpenCV blur), replicate, zero, or shrink "
      "(the window is cut to the image and the mean is over what is left)" },
};

#ifdef IMGPIPE_HAVE_CUDA
#define MEAN_GPU_SCRATCH ipk_mean_gpu_scratch
#else
#define MEAN_GPU_SCRATCH NULL
#endif

static int mean_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                     char *err, size_t errlen)
{
    return window_plan("mean", state, MEAN_GPU_SCRATCH, in, out, needs, err, errlen);
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
#define MEAN_RUN_GPU mean_run_gpu
#else
#define MEAN_RUN_GPU NULL
#endif

static const ip_stage mean_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "mean",
    .summary = "box average of the (2*radius+1)^2 window per channel, rounded half up "
               "(identical to OpenCV blur for 8-bit)",
    .params = mean_params,
    .n_params = 2,
    .create = window_create,
    .plan = mean_plan,
    .run_cpu = mean_run_cpu,
    .run_gpu = MEAN_RUN_GPU,
    .destroy = free,
    .stage_class = IP_CLASS_AREA,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &mean_stage; }
