/* A plugin as built before stage classes: its descriptor is the first version's, so struct_size
 * ends at destroy. The core must load it and give it whole images (class global). */
#include <stdio.h>
#include "imgpipe/plugin.h"

typedef struct {
    uint32_t abi_version, struct_size;
    const char *name, *summary;
    const ip_param *params;
    int n_params;
    int (*create)(const ip_value *args, void **state, char *err, size_t errlen);
    int (*plan)(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen);
    int (*run_cpu)(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex);
    int (*run_gpu)(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex);
    void (*destroy)(void *state);
} ip_stage_v1;

static int old_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    (void)args; (void)err; (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int old_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)state; (void)needs;
    if (in->dtype != IP_U8) {
        snprintf(err, errlen, "oldinvert takes 8-bit images only");
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    return IP_OK;
}

/* Inverts and marks the first row of what it was given with its height (mod 256) in the first
 * value: given the whole image, as a global stage is, that is the image's height. */
static int old_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state; (void)ex;
    for (int y = 0; y < in->shape.height; y++) {
        const unsigned char *s = (const unsigned char *)in->data + y * in->stride;
        unsigned char *d = (unsigned char *)out->data + y * out->stride;
        for (int x = 0; x < in->shape.width * in->shape.channels; x++) d[x] = (unsigned char)(255 - s[x]);
    }
    *(unsigned char *)out->data = (unsigned char)in->shape.height;
    return IP_OK;
}

static void old_destroy(void *state) { (void)state; }

static const ip_stage_v1 old_stage = { IP_ABI_VERSION, sizeof(ip_stage_v1), "oldinvert",
                                       "255 - value, first value = rows seen (test plugin of the first descriptor)",
                                       NULL, 0, old_create, old_plan, old_run, NULL, old_destroy };

IP_EXPORT const ip_stage *imgpipe_stage(void) { return (const ip_stage *)(const void *)&old_stage; }
