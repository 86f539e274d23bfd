/* The entropy kernels' host-side constants, in one place (glibc's log): the CPU kernel uses them, the
 * GPU kernel uploads these tables, and the run-time fused kernel (core/src/exec/fuse_plan.c)
 * writes the same values into its source, so both match the CPU bit for bit. Plain C or CUDA host. */
#ifndef IPK_ENTROPY_TABLES_H
#define IPK_ENTROPY_TABLES_H
#include <math.h>
#include <stdint.h>

#define IPK_ENTROPY_FIX_SCALE 1099511627776.0   /* 2^40, as the CPU kernel */

/* The factor from nats to the base chosen by the entropy stage's "base" (e, 2, 10), by index. */
#define IPK_ENTROPY_LOG_SCALES { 1.0, 1.4426950408889634, 0.43429448190325176 }

/* T(n) = llround(n ln n 2^40) and 1 / (n 2^40), n = 0..nmax (both 0 at n = 0). */
static inline void ipk_entropy_host_tables(int64_t *t_n, double *inv_n, int nmax)
{
    t_n[0] = 0;
    inv_n[0] = 0;
    for (int n = 1; n <= nmax; n++) {
        t_n[n] = llround((double)n * log((double)n) * IPK_ENTROPY_FIX_SCALE);
        inv_n[n] = 1.0 / ((double)n * IPK_ENTROPY_FIX_SCALE);
    }
}

/* What the entropy in nats is multiplied by: the base's log_scale, or for u8 output 255 over the
 * largest entropy the window can hold, log(min(bins, window)). */
static inline double ipk_entropy_out_scale(int radius, int bins, int dst_u8, double log_scale)
{
    const int side = 2 * radius + 1, nmax = side * side;
    double hmax = log((double)(bins < nmax ? bins : nmax));
    return dst_u8 ? (hmax > 0 ? 255.0 / hmax : 0.0) : log_scale;
}
#endif
