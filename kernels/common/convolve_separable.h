/* Convolution kernel analysis shared by the CPU and GPU convolve, so that both take the
 * same path and, on the float path, add the same float numbers in the same order. */
#ifndef IPK_CONV_SEPARABLE_H
#define IPK_CONV_SEPARABLE_H
#include <math.h>
#include <stdint.h>
#include "border.h"

/* Integer path: every weight is a whole number with |w| <= 2^16 (the input must also be
 * u8 or u16); then the window sum is exact in int64 and its order does not matter. */
IPK_HD int ipk_conv_weights_integral(const double *w, int n)
{
    for (int i = 0; i < n; i++)
        if (!(fabs(w[i]) <= 65536.0) || w[i] != floor(w[i])) return 0;
    return 1;
}

/* Float path factors of a rank-1 kernel, w[i*kw + j] ~ col[i] * row[j]. The rule: the pivot
 * is the first entry (row-major) of largest |w|; row = the pivot's row as is, col[i] =
 * w[i][pj] / pivot, both computed in double and rounded to float. Accepted when every
 * |col[i]*row[j] - w[i][j]| <= 1e-6 * |pivot| (in double from the float factors);
 * an all-zero kernel is not split. Returns 1 when split. */
IPK_HD int ipk_conv_split_float(const double *w, int kw, int kh, float *col, float *row)
{
    int pivot = 0;
    for (int i = 1; i < kw * kh; i++)
        if (fabs(w[i]) > fabs(w[pivot])) pivot = i;
    const double p = w[pivot];
    if (p == 0.0) return 0;
    const int pi = pivot / kw, pj = pivot % kw;
    for (int j = 0; j < kw; j++) row[j] = (float)w[pi * kw + j];
    for (int i = 0; i < kh; i++) col[i] = (float)(w[i * kw + pj] / p);
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++)
            if (!(fabs((double)col[i] * (double)row[j] - w[i * kw + j]) <= 1e-6 * fabs(p))) return 0;
    return 1;
}

/* Integer path factors (integral weights only): row = the first non-zero kernel row divided
 * by the gcd of its entries, col[i] = w[i][j] / row[j]; accepted only when col[i]*row[j]
 * equals every weight exactly. Returns 1 when split. */
IPK_HD int ipk_conv_split_int(const double *w, int kw, int kh, int64_t *col, int64_t *row)
{
    int r0 = -1;
    for (int i = 0; i < kw * kh && r0 < 0; i++)
        if (w[i] != 0.0) r0 = i / kw;
    if (r0 < 0) return 0;
    int64_t g = 0;
    for (int j = 0; j < kw; j++) {
        int64_t a = (int64_t)fabs(w[r0 * kw + j]);
        while (a) { int64_t t = g % a; g = a; a = t; }
    }
    int jn = -1;
    for (int j = 0; j < kw; j++) {
        row[j] = (int64_t)w[r0 * kw + j] / g;
        if (row[j] != 0 && jn < 0) jn = j;
    }
    for (int i = 0; i < kh; i++) {
        int64_t wij = (int64_t)w[i * kw + jn];
        if (wij % row[jn]) return 0;
        col[i] = wij / row[jn];
    }
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++)
            if (col[i] * row[j] != (int64_t)w[i * kw + j]) return 0;
    return 1;
}
#endif
