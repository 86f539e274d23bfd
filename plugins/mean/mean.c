#include <stdlib.h>
#include "imgpipe/plugin.h"
#include "../common/adapt.h"

typedef struct {
    int radius;
    ipk_border border;
} mean_state;

static const ip_param mean_params[] = {
    { "radius", IP_INT, "1", 1, 100, NULL, "window radius: the window is (2*radius+1) pixels square" },
    { "border", IP_ENUM, "reflect101", 0, 0, ADAPT_BORDER_CHOICES,
      "pixels beyond the edge: reflect101 (as OpenCV blur), replicate, zero, or shrink "
      "(the window is cut to the image and the mean is over what is left)" },
};

static int mean_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    mean_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->radius = (int)args[0].i;
    s->border = (ipk_border)args[1].i;
    *state = s;
    return IP_OK;
}

static int mean_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                     char *err, size_t errlen)
{
    const mean_state *s = state;
    if (in->channels < 1 || in->channels > 4) {
        snprintf(err, errlen, "mean needs 1 to 4 channels, got %d", (int)in->channels);
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    needs->halo = s->radius;
    needs->scratch_bytes = 0;
#ifdef IMGPIPE_HAVE_CUDA
    needs->gpu_scratch_bytes = ipk_mean_gpu_scratch(in->width, in->height, in->channels,
                                                    (ipk_dtype)in->dtype, s->radius);
#else
    needs->gpu_scratch_bytes = 0;
#endif
    return IP_OK;
}

static int mean_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const mean_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_mean_cpu(&src, &dst, s->radius, s->border, ex->threads), "mean", ex);
}

#ifdef IMGPIPE_HAVE_CUDA
static int mean_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const mean_state *s = state;
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
    .create = mean_create,
    .plan = mean_plan,
    .run_cpu = mean_run_cpu,
    .run_gpu = MEAN_RUN_GPU,
    .destroy = free,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &mean_stage; }
