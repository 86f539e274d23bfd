/* Binding a stage's key=value arguments to its plugin's parameter table. */
#ifndef IMGPIPE_ARGS_H
#define IMGPIPE_ARGS_H
#include "imgpipe/plugin.h"
#include "plan/pipeline.h"

/* Owns everything the ip_value array points into (strings, matrices). */
typedef struct {
    ip_value *values;   /* n, in parameter-table order */
    int n;
    void *arena;        /* private */
} args_bound;

/* Fills every parameter from the stage's arguments or the parameter's default_text.
 * Errors are "SOURCE:LINE:COL: message" (IP_EINVAL): unknown parameter (with a
 * suggestion), repeated parameter, bad number, out of range (naming the range), unknown
 * choice (listing the choices), bad matrix. */
int args_bind(const ip_stage *stage, const pl_stage *ps, const char *source,
              args_bound *out, char *err, size_t errlen);
void args_free(args_bound *b);
#endif
