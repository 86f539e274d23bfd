#include "plan/stage_class.h"
#include <stddef.h>
#include <string.h>

#define COVERS(s, field) ((s)->struct_size >= offsetof(ip_stage, field) + sizeof((s)->field))

int stage_has_class_fields(const ip_stage *s) { return COVERS(s, reduce_finish); }

int (*stage_point_cuda(const ip_stage *s))(const void *, const ip_shape *, char *, size_t)
{
    return COVERS(s, point_cuda) ? s->point_cuda : NULL;
}

int (*stage_cost_hook(const ip_stage *s))(const void *, const ip_shape *, ip_cost *)
{
    return COVERS(s, cost_of) ? s->cost_of : NULL;
}

int stage_window(const ip_stage *s, const void *state, const ip_shape *in, ip_window *w)
{
    memset(w, 0, sizeof *w);
    if (!COVERS(s, window_of) || !s->window_of || s->window_of(state, in, w) != IP_OK) {
        w->kind = IP_WINDOW_NONE;
        return 0;
    }
    return w->kind != IP_WINDOW_NONE;
}

ip_stage_class stage_declared_class(const ip_stage *s)
{
    if (!COVERS(s, stage_class)) return IP_CLASS_GLOBAL;
    switch (s->stage_class) {
    case IP_CLASS_POINT: return IP_CLASS_POINT;
    case IP_CLASS_AREA: return IP_CLASS_AREA;
    case IP_CLASS_REDUCTION: return IP_CLASS_REDUCTION;
    default: return IP_CLASS_GLOBAL;
    }
}

static int has_reduction(const ip_stage *s)
{
    return stage_has_class_fields(s) && s->partial_bytes && s->reduce_band && s->reduce_merge && s->reduce_finish;
}

ip_stage_class stage_use_class(const ip_stage *s, const void *state)
{
    ip_stage_class declared = stage_declared_class(s);
    if (!stage_has_class_fields(s) || !s->class_of) return declared;
    uint32_t asked = s->class_of(state);
    if (asked > IP_CLASS_REDUCTION || (asked == IP_CLASS_REDUCTION && !has_reduction(s))) return IP_CLASS_GLOBAL;
    return (ip_stage_class)asked;
}

const char *stage_class_name(ip_stage_class c)
{
    switch (c) {
    case IP_CLASS_POINT: return "point";
    case IP_CLASS_AREA: return "area";
    case IP_CLASS_REDUCTION: return "reduction";
    case IP_CLASS_GLOBAL: break;
    }
    return "global";
}

const char *stage_class_problem(const ip_stage *s)
{
    if (stage_declared_class(s) != IP_CLASS_REDUCTION) return NULL;
    if (!has_reduction(s))
        return "stage declares the reduction class without partial_bytes, reduce_band, reduce_merge and reduce_finish";
    return NULL;
}

const char *stage_class_text(const ip_stage *s)
{
    if (!stage_has_class_fields(s) && stage_declared_class(s) == IP_CLASS_GLOBAL)
        return "global (the plugin was built before stage classes: it gets whole images)";
    switch (stage_declared_class(s)) {
    case IP_CLASS_POINT:
        return s->class_of ? "point (some arguments make it global)" : "point (streamed in bands of rows)";
    case IP_CLASS_AREA:
        return s->class_of ? "area (some arguments make it global)"
                           : "area (streamed in bands of rows, with its halo of rows around each)";
    case IP_CLASS_REDUCTION: return "reduction (streamed in bands; its results are combined over the bands)";
    case IP_CLASS_GLOBAL: break;
    }
    return "global (needs the whole image: a streamed run holds the image before it)";
}
