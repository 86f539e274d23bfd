/* Shared by the tests of the certified float convolves (test_conv_cert, test_conv_tc): the CPU's
 * float order written out, random windows, and a kernel's per-pixel model checked against
 * ipk_convolve_cpu. */
#ifndef IMGPIPE_CONV_MODEL_H
#define IMGPIPE_CONV_MODEL_H
#include "testutil.h"

/* acc = 0.0f, then acc + w*x for t ascending, each rounded (C11 mode: no contraction). */
float tu_conv_cpu_sum(const float *w, const float *x, int taps);
/* rintf(v), saturated to 0..255. */
uint8_t tu_conv_cpu_byte(float v);
/* A window of taps values in one of 4 styles: noise, runs of 0 and 255, noise with a third at
 * 255, mid-grey. */
void tu_conv_random_window(float *x, int taps, int style, tu_rng *rng);

/* The byte a kernel gives for the k x k window x (row-major); ++*open where it recomputed it. */
typedef uint8_t (*tu_conv_model)(const void *plan, const float *x, long *open);

/* The model over random and extreme images of odd sizes and every border against ipk_convolve_cpu
 * with the weights w, byte for byte (CHECKed); returns the share of recomputed pixels. */
double tu_conv_check_model(const char *name, tu_conv_model model, const void *plan, const double *w, int k,
                           double divisor, double offset, tu_rng *rng);
#endif
