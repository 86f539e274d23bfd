/* A minimal out-of-core stage for the registry and command-line tests: 8-bit inversion. */
#include <stdio.h>
#include "imgpipe/plugin.h"

static int inv_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    (void)args; (void)err; (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int inv_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)state; (void)needs;
    if (in->dtype != IP_U8) {
        snprintf(err, errlen, "invert takes 8-bit images only");
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    return IP_OK;
}

static int inv_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state; (void)ex;
    for (int y = 0; y < in->shape.height; y++) {
        const unsigned char *s = (const unsigned char *)in->data + y * in->stride;
        unsigned char *d = (unsigned char *)out->data + y * out->stride;
        for (int x = 0; x < in->shape.width * in->shape.channels; x++) d[x] = (unsigned char)(255 - s[x]);
    }
    return IP_OK;
}

static void inv_destroy(void *state) { (void)state; }

static const ip_stage inv_stage = { IP_ABI_VERSION, sizeof(ip_stage), "invert", "255 - value (test plugin)",
                                    NULL, 0, inv_create, inv_plan, inv_run, NULL, inv_destroy };

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &inv_stage; }
