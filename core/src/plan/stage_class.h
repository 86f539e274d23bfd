/* Stage classes: what the core may assume about a stage when it streams an image in bands,
 * read from the descriptor with its struct_size (a plugin built before classes is global); and
 * the descriptor's other optional fields, read the same way. */
#ifndef IMGPIPE_STAGE_CLASS_H
#define IMGPIPE_STAGE_CLASS_H
#include "imgpipe/plugin.h"

/* The class the descriptor declares; IP_CLASS_GLOBAL when it is too old to say, or says
 * something this core does not know. */
ip_stage_class stage_declared_class(const ip_stage *s);
/* The class of one use: class_of's answer when the plugin has it (global when it names a class
 * the core does not know, or a reduction without the reduction functions). */
ip_stage_class stage_use_class(const ip_stage *s, const void *state);
/* Whether the descriptor is new enough to have class_of and the reduction functions. */
int stage_has_class_fields(const ip_stage *s);
/* The descriptor's point_cuda (run-time fusion), or NULL when it is too old to have one. */
int (*stage_point_cuda(const ip_stage *s))(const void *, const ip_shape *, char *, size_t);
/* The descriptor's cost_of, or NULL when it has none or is too old to have one. */
int (*stage_cost_hook(const ip_stage *s))(const void *, const ip_shape *, ip_cost *);
/* The fused window that computes this use on input shape in, into *w (zeroed first): 1 when the
 * descriptor has window_of and it names a kind, else 0 (and w->kind IP_WINDOW_NONE). */
int stage_window(const ip_stage *s, const void *state, const ip_shape *in, ip_window *w);
/* "point", "area", "reduction", "global". */
const char *stage_class_name(ip_stage_class c);
/* A reason to refuse the descriptor (a reduction without its functions), or NULL. */
const char *stage_class_problem(const ip_stage *s);
/* The class for `imgpipe plugins STAGE`, with what it means for a run. */
const char *stage_class_text(const ip_stage *s);
#endif
