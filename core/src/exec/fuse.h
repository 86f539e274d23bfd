/* Run-time fusion on the GPU: a group of steps (fuse_plan.h) compiled by NVRTC, kept in memory
 * and in the disk cache (fuse_cache.h), loaded and launched through the driver (cuda_drv.h).
 * One fuser per exec context, used from the thread that runs it. */
#ifndef IMGPIPE_FUSE_H
#define IMGPIPE_FUSE_H
#include <stddef.h>
#include "exec/fuse_plan.h"

typedef struct fuser fuser;

/* Opens NVRTC and the driver for device (selected on this thread); IP_EUNSUPPORTED with the
 * reason in err when fusion cannot run (the stages then run unfused). */
int fuser_create(fuser **f, int device, char *err, size_t errlen);
void fuser_destroy(fuser *f);

typedef struct {
    void *function;        /* the loaded kernel */
    int compiled;          /* 1: compiled now (compile_ms), 0: found in memory or on disk */
    int from_disk;
    double compile_ms;
    char cache_note[512];  /* why the disk cache was not used, or "" */
} fuse_kernel;

/* The group's kernel: from memory, else the disk cache, else compiled and stored there.
 * IP_ELIMIT: the run holds as many kernels as it can; this group runs unfused, the others fused. */
int fuser_prepare(fuser *f, const plan *p, const fuse_group *g, fuse_kernel *k, char *err, size_t errlen);
/* Queues the kernel on stream, reading in (the first step's input) and writing out (the last
 * step's output). IP_EUNSUPPORTED when the image is too tall for its grid (run unfused). */
int fuser_launch(const fuser *f, const fuse_kernel *k, const fuse_group *g, const void *in, ptrdiff_t in_stride,
                 void *out, ptrdiff_t out_stride, int width, int height, void *stream, char *err, size_t errlen);

/* The same for a FUSE_HISTOGRAM group, which also adds into counts_dev (fuse_counter_count(g)
 * uint32 counters, zeroed by the caller before). */
int fuser_launch_counts(const fuser *f, const fuse_kernel *k, const fuse_group *g, const void *in,
                        ptrdiff_t in_stride, void *out, ptrdiff_t out_stride, int width, int height,
                        unsigned *counts_dev, void *stream, char *err, size_t errlen);

/* Run-time compiles beside decoding: the kernels p (shapes planned) will fuse into on device are
 * compiled on a thread of its own into the disk cache, where the run then finds them. NULL when
 * there is nothing to compile. The sources are made before it returns: p may change after. */
#define FUSE_WARM_MAX_SOURCES 32
typedef struct fuse_warm fuse_warm;
fuse_warm *fuse_warm_begin(const plan *p, int device);
/* Waits for it (NULL: nothing); the number of kernels it compiled, and in *ms how long it took. */
int fuse_warm_end(fuse_warm *w, double *ms);
#endif
