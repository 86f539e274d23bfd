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

/* The arguments "radius" (IP_INT) and "border" (IP_ENUM of ADAPT_BORDER_CHOICES) of a table of
 * n_params that has both. */
static inline int window_create(const ip_param *params, int n_params, const ip_value *args, void **state, char *err,
                                size_t errlen)
{
    const ip_value *radius = ip_arg(params, n_params, args, "radius"), *border = ip_arg(params, n_params, args, "border");
    if (!radius || !border) {
        snprintf(err, errlen, "the parameter table has no radius or no border");
        return IP_EINVAL;
    }
    window_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->radius = (int)radius->i;
    s->border = (ipk_border)border->i;
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

/* This use as the core's fused kernel of the given kind computes it (any shape: the core decides
 * which it fuses). */
static inline int window_describe(ip_window_kind kind, const window_state *s, ip_window *w)
{
    w->kind = kind;
    w->radius = s->radius;
    w->border = (uint32_t)s->border;
    return IP_OK;
}
#endif
