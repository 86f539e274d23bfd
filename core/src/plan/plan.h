/* Binding each stage to its plugin and arguments, and shape inference stage by stage. */
#ifndef IMGPIPE_PLAN_H
#define IMGPIPE_PLAN_H
#include "plan/args.h"
#include "plan/pipeline.h"
#include "plan/registry.h"

typedef struct {
    const reg_plugin *plugin;
    args_bound args;
    void *state;          /* from the plugin's create() */
    int line, col;        /* of the stage name in the pipeline text */
    ip_shape in, out;     /* from the last plan_shapes() */
    ip_needs needs;
} plan_step;

typedef struct {
    plan_step *steps;
    int n;
    char *source;
} plan;

/* Looks up every stage (with "did you mean"), binds and range-checks its arguments and calls
 * create(). Errors are "SOURCE:LINE:COL: message". */
int plan_build(const registry *reg, const pl_pipeline *pl, plan *out, char *err, size_t errlen);
/* Runs every stage's plan() from the input shape on; fills each step's in/out/needs and the
 * final shape. Errors are "SOURCE:LINE:COL: stage: message". */
int plan_shapes(plan *p, const ip_shape *input, ip_shape *final, char *err, size_t errlen);
void plan_free(plan *p);
/* A plan for another thread: p's plugin states, arguments and source shared, the steps its own
 * (plan_shapes writes each run's shapes into them). IP_OK, or IP_ENOMEM. Release it with
 * plan_unshare, never plan_free. */
int plan_share(const plan *p, plan *copy);
void plan_unshare(plan *copy);
/* A shape as text, e.g. "512x512 3-channel 8-bit". */
void plan_shape_text(const ip_shape *s, char *buf, size_t len);
#endif
