#include "stream/band_plan.h"
#include <stdio.h>
#include <stdlib.h>
#include "plan/stage_class.h"

ip_stage_class band_step_class(const plan_step *st)
{
    ip_stage_class c = stage_use_class(st->plugin->stage, st->state);
    if (c == IP_CLASS_GLOBAL) return c;
    if (st->out.width != st->in.width || st->out.height != st->in.height) return IP_CLASS_GLOBAL;
    if (c == IP_CLASS_REDUCTION &&
        (st->out.channels != st->in.channels || st->out.dtype != st->in.dtype)) return IP_CLASS_GLOBAL;
    return c;
}

int band_layout_make(const plan *p, band_layout *out, char *err, size_t errlen)
{
    out->n = 0;
    out->segs = calloc((size_t)(p->n > 0 ? p->n : 1), sizeof *out->segs);
    if (!out->segs) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    for (int i = 0; i < p->n; i++) {
        const plan_step *st = &p->steps[i];
        ip_stage_class c = band_step_class(st);
        band_seg *cur = out->n ? &out->segs[out->n - 1] : NULL;
        if (c == IP_CLASS_GLOBAL || !cur || cur->global) {
            cur = &out->segs[out->n++];
            cur->first = i;
            cur->global = c == IP_CLASS_GLOBAL;
            cur->halo_sum = 0;
        }
        cur->last = i + 1;
        if (c == IP_CLASS_AREA) cur->halo_sum += st->needs.halo;
    }
    return IP_OK;
}

void band_layout_free(band_layout *l)
{
    free(l->segs);
    l->segs = NULL;
    l->n = 0;
}

int band_layout_has_global(const band_layout *l)
{
    for (int i = 0; i < l->n; i++)
        if (l->segs[i].global) return 1;
    return 0;
}
