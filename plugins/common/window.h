/* Shared by the window stages (median, mean): a radius and a border, halo = radius. */
#ifndef IMGPIPE_PLUGIN_WINDOW_H
#define IMGPIPE_PLUGIN_WINDOW_H
#include <stdlib.h>
#include "adapt.h"

typedef struct {
    int radius;
    ipk_border border;
} window_state;

typedef size_t (*window_gpu_scratch_fn)(int width, int height, int channels, ipk_dtype dtype, int radius);

/* args: radius (IP_INT) then border (IP_ENUM of ADAPT_BORDER_CHOICES). */
static inline int window_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    window_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->radius = (int)args[0].i;
    s->border = (ipk_border)args[1].i;
    *state = s;
    return IP_OK;
}

/* Same shape out; gpu_scratch may be NULL when built without CUDA. */
static inline int window_plan(const char *stage, const window_state *s, window_gpu_scratch_fn gpu_scratch,
                              const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    if (in->channels < 1 || in->channels > 4) {
        snprintf(err, errlen, "%s needs 1 to 4 channels, got %d", stage, (int)in->channels);
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    needs->halo = s->radius;
    needs->scratch_bytes = 0;
    needs->gpu_scratch_bytes = gpu_scratch ? gpu_scratch(in->width, in->height, in->channels,
                                                         (ipk_dtype)in->dtype, s->radius) : 0;
    return IP_OK;
}
#endif
