/* Which steps of a planned pipeline fuse into one run-time compiled kernel, and its source.
 * Pure C: no GPU needed (tests build and compile these sources with NVRTC anywhere). */
#ifndef IMGPIPE_FUSE_PLAN_H
#define IMGPIPE_FUSE_PLAN_H
#include <stddef.h>
#include "plan/plan.h"

typedef enum {
    FUSE_NONE = 0,
    FUSE_POINT,      /* two or more point stages, nothing fusable after them: one kernel */
    FUSE_MEDIAN3,    /* point stages, then median radius 1 on 8-bit one-channel: the median's load */
    FUSE_MEAN,       /* point stages, then mean radius 1..16 on 8-bit one-channel: a shared tile */
    FUSE_CONVOLVE,   /* point stages, then integer-weight convolve on 8-bit one-channel: a shared tile */
    FUSE_ENTROPY,    /* point stages, then entropy's fast path (radius <= 3, bins <= 16, levels >= 256) on 8-bit */
    FUSE_HISTOGRAM   /* point stages, then the in-tree histogram on 8-bit: the image written and counted at once */
} fuse_kind;

typedef struct {
    fuse_kind kind;
    int first, n_steps;     /* steps first .. first + n_steps - 1 (the points, then the consumer) */
    int n_points;
    int border;             /* the consumer's ipk_border (median: replicate, reflect101, zero) */
    int radius;             /* the consumer's radius (convolve: its larger half-side) */
} fuse_group;

/* The group starting at step i of p (shapes planned), or kind FUSE_NONE. */
fuse_group fuse_group_at(const plan *p, int i);
/* The kernel's name in the group's source. */
const char *fuse_kernel_name(fuse_kind kind);
/* The whole program for NVRTC, malloc'd; headers it includes are fuse_headers'. */
int fuse_source(const plan *p, const fuse_group *g, char **src, char *err, size_t errlen);
/* A FUSE_HISTOGRAM group's counters (channels * bins): its kernel adds into uint32 counts[c * bins + b]
 * on the device (zeroed first), which widened to uint64 are the histogram's partial (reduce_finish's
 * total); 0 for other kinds. */
size_t fuse_counter_count(const plan *p, const fuse_group *g);
/* The "a+b+c" names of the group's stages, for messages. */
void fuse_group_label(const plan *p, const fuse_group *g, char *buf, size_t len);

/* The headers fused sources include (kernels/common/border.h, swar_ops.h, median_vec.h,
 * conv_round.h, entropy_fast.cuh, kernels/fused/fused_pixels.cuh, fused_load.cuh), embedded. */
#define FUSE_MAX_HEADERS 16
int fuse_header_count(void);   /* at most FUSE_MAX_HEADERS */
const char *const *fuse_header_names(void);
const char *const *fuse_header_sources(void);
#endif
