/* Run-time fusion into convolve (kernels/fused/fused_convolve.cu): which convolve steps a chain of
 * point stages fuses into, and the #defines that bake their weights and rounding into the kernel's
 * source (so the source, the cache key, names them). Pure C. */
#ifndef IMGPIPE_FUSE_WINDOW_H
#define IMGPIPE_FUSE_WINDOW_H
#include <stddef.h>
#include "plan/plan.h"

/* The largest radius the fused window kernels' tiles hold (fused_load.cuh's IPF_HALO). */
#define FUSE_WINDOW_MAX_RADIUS 16
/* Room for fuse_convolve_defines' text: 31 x 31 weights of up to 7 characters, and the rest. */
#define FUSE_CONV_DEFINES_MAX 16384

/* Whether st's stage names a convolve window (ip_window) for this use, on 8-bit one-channel input
 * and output with whole weights whose sums fit int32 (the integer path of kernels/cpu/convolve.c);
 * its larger half-side and its border in *radius and *border. */
int fuse_convolve_fits(const plan_step *st, int *radius, int *border);
/* fused_convolve.cu's IPF_KW, IPF_KH, IPF_WEIGHTS, IPF_FINISH, IPF_ROUNDING, IPF_DIVISOR and
 * IPF_OFFSET for st (which fuse_convolve_fits accepts) into buf; IP_ELIMIT when cap is too small. */
int fuse_convolve_defines(const plan_step *st, char *buf, size_t cap);
#endif
