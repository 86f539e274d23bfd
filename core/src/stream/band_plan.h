/* Cutting a planned pipeline into segments for a streamed run: runs of point, area and
 * reduction stages that bands of rows flow through, split by global stages that need the whole
 * image. */
#ifndef IMGPIPE_BAND_PLAN_H
#define IMGPIPE_BAND_PLAN_H
#include "plan/plan.h"

typedef struct {
    int first, last;     /* steps [first, last) of the plan */
    int global;          /* one step that runs on the whole image */
    int halo_sum;        /* context rows the segment's stages need in all */
} band_seg;

typedef struct {
    band_seg *segs;
    int n;
} band_layout;

/* The class a step runs as in a streamed run: its use class, or global when its plan breaks the
 * class's promise (a point or area stage changing the width or height). */
ip_stage_class band_step_class(const plan_step *st);

/* Segments of p, whose shapes are planned (plan_shapes). Free with band_layout_free. */
int band_layout_make(const plan *p, band_layout *out, char *err, size_t errlen);
void band_layout_free(band_layout *l);
/* Whether any step is global. */
int band_layout_has_global(const band_layout *l);
#endif
