/* Sorting-network pieces on 2 pixels per word, one in each 16-bit lane: on sm_90
 * __vminu2/__vmaxu2 are single native instructions, while the byte-wise __vminu4/__vmaxu4
 * are emulated with several. Host and device alike, so that tests/gpu/test_median_sep_host.cu
 * runs the very networks the kernels run, on a machine without a GPU. */
#ifndef IPK_MEDIAN_PACKED_CUH
#define IPK_MEDIAN_PACKED_CUH

#include "swar_ops.h"

IPK_HD unsigned med_min(unsigned a, unsigned b) { return ipk_swar_min2(a, b); }
IPK_HD unsigned med_max(unsigned a, unsigned b) { return ipk_swar_max2(a, b); }

IPK_HD void med_sort2(unsigned &a, unsigned &b)
{
    unsigned lo = med_min(a, b);
    b = med_max(a, b);
    a = lo;
}

IPK_HD unsigned med_med3(unsigned a, unsigned b, unsigned c)
{
    return med_max(med_min(a, b), med_min(med_max(a, b), c));
}

/* Sorts v[0..N-1] per lane (insertion network: the compiler drops the min/max whose results
 * go unused when only some ranks are read). */
template <int N>
IPK_HD void med_sort_n(unsigned *v)
{
IPK_UNROLL
    for (int i = 1; i < N; i++)
IPK_UNROLL
        for (int j = i; j > 0; j--) med_sort2(v[j - 1], v[j]);
}

/* Inserts c into the sorted s[0..N-1], giving the sorted out[0..N]. */
template <int N>
IPK_HD void med_insert(const unsigned *s, unsigned c, unsigned *out)
{
IPK_UNROLL
    for (int i = 0; i < N; i++) {
        out[i] = med_min(s[i], c);
        c = med_max(s[i], c);
    }
    out[N] = c;
}

/* Forgetful selection of the median of N (odd): keep N/2 + 2 values, drop the smallest and
 * the largest, take the next value, repeat; the median of the last three is the answer. */
template <int N>
IPK_HD unsigned med_forgetful(const unsigned *v)
{
    constexpr int keep = N / 2 + 2 < N ? N / 2 + 2 : N;
    unsigned w[keep];
IPK_UNROLL
    for (int i = 0; i < keep; i++) w[i] = v[i];
IPK_UNROLL
    for (int step = 0; step < N - keep; step++) {
        const int n = keep - step;
IPK_UNROLL
        for (int i = 1; i < n; i++) med_sort2(w[0], w[i]);
IPK_UNROLL
        for (int i = 1; i < n - 1; i++) med_sort2(w[i], w[n - 1]);
IPK_UNROLL
        for (int i = 0; i < n - 2; i++) w[i] = w[i + 1];
        w[n - 2] = v[keep + step];
    }
    return med_med3(w[0], w[1], w[2]);
}

/* Median of the S x S window from its columns sorted (col[k][j]: k-th smallest of column j):
 * after sorting each rank row too, columns stay sorted, so entry (k, j) has at least
 * (k+1)(j+1) values at or below it and (S-k)(S-j) at or above; only entries that can hold
 * rank (S*S+1)/2 are kept, and as many values lie surely below them as surely above. */
template <int S>
IPK_HD unsigned med_from_sorted_columns(unsigned (*col)[S])
{
    constexpr int half = (S * S + 1) / 2;
    constexpr int ncand = S == 3 ? 3 : S == 5 ? 13 : 29;
    unsigned cand[ncand];
    int n = 0;
IPK_UNROLL
    for (int k = 0; k < S; k++) {
        med_sort_n<S>(col[k]);
IPK_UNROLL
        for (int j = 0; j < S; j++)
            if ((k + 1) * (j + 1) <= half && (S - k) * (S - j) <= half) cand[n++] = col[k][j];
    }
    return med_forgetful<ncand>(cand);
}

#endif
