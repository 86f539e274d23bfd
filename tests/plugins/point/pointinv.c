/* A point stage that offers its per-pixel function for run-time fusion (docs/PLUGINS.md, "Point
 * functions"): 8-bit inversion, any channel count. It has no GPU kernel of its own: unfused on
 * the GPU it runs on the CPU (a round trip), fused it runs inside the fused kernel. */
#include <stdio.h>
#include "imgpipe/plugin.h"

static int pinv_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    (void)args; (void)err; (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int pinv_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)state; (void)needs;
    if (in->dtype != IP_U8) {
        snprintf(err, errlen, "pointinv takes 8-bit images only");
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    return IP_OK;
}

static int pinv_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state; (void)ex;
    for (int y = 0; y < in->shape.height; y++) {
        const unsigned char *s = (const unsigned char *)in->data + y * in->stride;
        unsigned char *d = (unsigned char *)out->data + y * out->stride;
        for (int x = 0; x < in->shape.width * in->shape.channels; x++) d[x] = (unsigned char)(255 - s[x]);
    }
    return IP_OK;
}

static int pinv_point_cuda(const void *state, const ip_shape *in, char *src, size_t cap)
{
    (void)state;
    int n = snprintf(src, cap, "__device__ __forceinline__ void IP_POINT_FN(const IP_T *in, IP_T *out)\n"
                               "{ for (int c = 0; c < %d; c++) out[c] = (IP_T)(255 - in[c]); }\n", in->channels);
    return n > 0 && (size_t)n < cap ? IP_OK : IP_ELIMIT;
}

static void pinv_destroy(void *state) { (void)state; }

static const ip_stage pinv_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "pointinv",
    .summary = "255 - value, offering its CUDA source for fusion (test plugin)",
    .create = pinv_create,
    .plan = pinv_plan,
    .run_cpu = pinv_run,
    .destroy = pinv_destroy,
    .stage_class = IP_CLASS_POINT,
    .point_cuda = pinv_point_cuda,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &pinv_stage; }
