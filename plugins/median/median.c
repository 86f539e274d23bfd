#include <stdlib.h>
#include "imgpipe/plugin.h"
#include "../common/adapt.h"

typedef struct {
    int radius;
    ipk_border border;
} median_state;

static const ip_param median_params[] = {
    { "radius", IP_INT, "1", 1, 25, NULL, "window radius: the window is (2*radius+1) pixels square" },
    { "border", IP_ENUM, "replicate", 0, 0, ADAPT_BORDER_CHOICES,
      "pixels beyond the edge: replicate (as OpenCV medianBlur), reflect101, zero, or shrink "
      "(the window is cut to the image; the lower median of what is left)" },
};

static int median_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    median_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->radius = (int)args[0].i;
    s->border = (ipk_border)args[1].i;
    *state = s;
    return IP_OK;
}

static int median_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                       char *err, size_t errlen)
{
    const median_state *s = state;
    if (in->channels < 1 || in->channels > 4) {
        snprintf(err, errlen, "median needs 1 to 4 channels, got %d", (int)in->channels);
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    needs->halo = s->radius;
    needs->scratch_bytes = 0;
#ifdef IMGPIPE_HAVE_CUDA
    needs->gpu_scratch_bytes = ipk_median_gpu_scratch(in->width, in->height, in->channels,
                                                      (ipk_dtype)in->dtype, s->radius);
#else
    needs->gpu_scratch_bytes = 0;
#endif
    return IP_OK;
}

static int median_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const median_state *s = state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_median_cpu(&src, &dst, s->radius, s->border, ex->threads), "median", ex);
}

#ifdef IMGPIPE_HAVE_CUDA
static int median_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const median_state *s = state;
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
    .create = median_create,
    .plan = median_plan,
    .run_cpu = median_run_cpu,
    .run_gpu = MEDIAN_RUN_GPU,
    .destroy = free,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &median_stage; }
