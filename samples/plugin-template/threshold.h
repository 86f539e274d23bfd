/* threshold: what the CPU path (threshold.c) and the CUDA path (threshold.cu) share, so that
 * both compute the same level with the same arithmetic and give identical images. */
#ifndef THRESHOLD_H
#define THRESHOLD_H
#include <float.h>
#include "imgpipe/plugin.h"

#ifdef __CUDACC__
#define THRESHOLD_HD __host__ __device__
#else
#define THRESHOLD_HD
#endif

/* nvcc would fuse a multiply and an add into one rounding; the CPU rounds twice. */
#ifdef __CUDA_ARCH__
#define THRESHOLD_MUL(a, b) __dmul_rn((a), (b))
#else
#define THRESHOLD_MUL(a, b) ((a) * (b))
#endif

/* Read-only once create() has filled it: run_cpu may be called from several threads at once. */
typedef struct {
    long level;   /* values above it become the maximum (binary mode) */
    int otsu;     /* 1: pick the level per image with Otsu's method */
    int invert;   /* 1: values above the level become 0, the others the maximum */
} threshold_state;

static inline THRESHOLD_HD int threshold_bins(ip_dtype dtype) { return dtype == IP_U8 ? 256 : 65536; }

static inline THRESHOLD_HD unsigned threshold_pixel(unsigned v, long level, unsigned maxval, int invert)
{
    return ((long)v > level) != invert ? maxval : 0u;
}

/* Otsu's level from a histogram of total values, step for step as OpenCV 4.6
 * getThreshVal_Otsu, so that OpenCV's THRESH_OTSU picks the same level. */
static inline THRESHOLD_HD long threshold_otsu(const unsigned long long *hist, int bins, unsigned long long total)
{
    double scale = 1.0 / (double)total, mu = 0, mu1 = 0, q1 = 0, max_sigma = 0;
    long level = 0;
    for (int i = 0; i < bins; i++) mu += THRESHOLD_MUL((double)i, (double)hist[i]);
    mu = THRESHOLD_MUL(mu, scale);
    for (int i = 0; i < bins; i++) {
        double p = THRESHOLD_MUL((double)hist[i], scale);
        mu1 = THRESHOLD_MUL(mu1, q1);
        q1 += p;
        double q2 = 1.0 - q1;
        double qmin = q2 < q1 ? q2 : q1, qmax = q1 < q2 ? q2 : q1;
        if (qmin < FLT_EPSILON || qmax > 1.0 - FLT_EPSILON) continue;
        mu1 = (mu1 + THRESHOLD_MUL((double)i, p)) / q1;
        double mu2 = (mu - THRESHOLD_MUL(q1, mu1)) / q2;
        double sigma = THRESHOLD_MUL(THRESHOLD_MUL(THRESHOLD_MUL(q1, q2), mu1 - mu2), mu1 - mu2);
        if (sigma > max_sigma) {
            max_sigma = sigma;
            level = i;
        }
    }
    return level;
}

/* Scratch memory the stage asks for: the histogram, then (on the GPU) the level it gives. */
static inline size_t threshold_hist_bytes(ip_dtype dtype)
{
    return (size_t)threshold_bins(dtype) * sizeof(unsigned long long);
}

#ifdef __cplusplus
extern "C" {
#endif
/* The CUDA path (threshold.cu): queues its work on stream and returns without waiting. */
int threshold_run_cuda(const threshold_state *s, const ip_image *in, ip_image *out, void *scratch,
                       void *stream, char *err, size_t errlen);
#ifdef __cplusplus
}
#endif
#endif
