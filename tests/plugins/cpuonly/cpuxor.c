/* A point stage with no GPU path, for the GPU band executor's round trip: 8-bit value ^ 0x5A. */
#include <stdio.h>
#include "imgpipe/plugin.h"

static int xor_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    (void)args; (void)err; (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int xor_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)state; (void)needs;
    if (in->dtype != IP_U8) {
        snprintf(err, errlen, "cpuxor takes 8-bit images only");
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    return IP_OK;
}

static int xor_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state; (void)ex;
    for (int y = 0; y < in->shape.height; y++) {
        const unsigned char *s = (const unsigned char *)in->data + y * in->stride;
        unsigned char *d = (unsigned char *)out->data + y * out->stride;
        for (int x = 0; x < in->shape.width * in->shape.channels; x++) d[x] = (unsigned char)(s[x] ^ 0x5A);
    }
    return IP_OK;
}

static void xor_destroy(void *state) { (void)state; }

static const ip_stage xor_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "cpuxor",
    .summary = "value ^ 0x5A, on the CPU only (test plugin)",
    .create = xor_create,
    .plan = xor_plan,
    .run_cpu = xor_run,
    .destroy = xor_destroy,
    .stage_class = IP_CLASS_POINT,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &xor_stage; }
