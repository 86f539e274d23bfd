/* The band tests' shared steps (a pipeline planned on a shape: plan_testutil.h): random images, the whole-image
 * run (CPU or GPU executor) and the streamed run (stream_run, any place and worker count). */
#ifndef IMGPIPE_BAND_TESTUTIL_H
#define IMGPIPE_BAND_TESTUTIL_H
#include "exec/exec.h"
#include "plan/plan.h"
#include "plan_testutil.h"
#include "plan/registry.h"
#include "stream/stream.h"

/* Random pixels from seed; max_value > 0 bounds integer values (entropy's levels). Free data. */
ip_image bt_random_image(const ip_shape *s, uint64_t seed, int max_value);
/* The whole-image executor's result of text on in, copied into *out (img_free it). */
int bt_run_whole(const registry *reg, const char *text, const ip_image *in, exec_device dev, ip_image *out);
/* The streamed result of text on in with so (so->band_rows rows per band), fed band_rows rows
 * at a time; prof may be NULL. */
int bt_run_streamed(const registry *reg, const char *text, const ip_image *in, const stream_options *so,
                    ip_image *out, stream_profile *prof);
int bt_same_image(const ip_image *a, const ip_image *b);
/* Largest absolute difference of two images of one shape (infinity when the shapes differ). */
double bt_max_diff(const ip_image *a, const ip_image *b);
/* The whole file, NUL-terminated (up to 1 MiB); NULL when it cannot be read. free() it. */
char *bt_slurp(const char *path);
#endif
