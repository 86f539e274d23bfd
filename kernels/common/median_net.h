/* Comparator networks for the small median windows, shared by the CPU and GPU kernels.
 * Each function works on a local array v[] in place; instantiate with IPK_MEDIAN_NETS(T, sfx)
 * for an element type T that has < (integers, float). The 5x5 pieces are Batcher odd-even
 * merges of sorted columns, pruned to the outputs the next step reads (checked by the
 * 0-1 principle when generated, and against sorting in tests/unit/test_median.c). */
#ifndef IPK_MEDIAN_NET_H
#define IPK_MEDIAN_NET_H
#include "border.h"

#define IPK_MIN(a, b) ((b) < (a) ? (b) : (a))
#define IPK_MAX(a, b) ((a) < (b) ? (b) : (a))
/* compare-exchange: a gets the smaller value, b the larger */
#define IPK_CX(T, a, b) do { T lo_ = IPK_MIN(a, b); (b) = IPK_MAX(a, b); (a) = lo_; } while (0)

/* Initialisers for index tables: where merge_5_5 leaves the ranks 0..9, and
 * mid6_of_10_10 the ranks 7..12 of its 20 inputs. */
#define IPK_MERGE55_RANKS { 0, 1, 2, 3, 4, 6, 7, 8, 5, 9 }
#define IPK_MID6_RANKS { 7, 8, 9, 12, 13, 14 }

#define IPK_MEDIAN_NETS(T, sfx)                                                               \
/* median of three */                                                                         \
IPK_HD T ipk_med3_##sfx(T a, T b, T c)                                                        \
{                                                                                             \
    return IPK_MAX(IPK_MIN(a, b), IPK_MIN(IPK_MAX(a, b), c));                                 \
}                                                                                             \
IPK_HD void ipk_sort3_##sfx(T *v)                                                             \
{                                                                                             \
    IPK_CX(T, v[0], v[1]); IPK_CX(T, v[1], v[2]); IPK_CX(T, v[0], v[1]);                      \
}                                                                                             \
/* optimal 9-comparator sort of five */                                                       \
IPK_HD void ipk_sort5_##sfx(T *v)                                                             \
{                                                                                             \
    IPK_CX(T, v[0], v[1]); IPK_CX(T, v[3], v[4]); IPK_CX(T, v[2], v[4]);                      \
    IPK_CX(T, v[2], v[3]); IPK_CX(T, v[0], v[3]); IPK_CX(T, v[0], v[2]);                      \
    IPK_CX(T, v[1], v[4]); IPK_CX(T, v[1], v[3]); IPK_CX(T, v[1], v[2]);                      \
}                                                                                             \
/* v[0..4], v[5..9] sorted -> rank i at v[IPK_MERGE55_RANKS[i]] */                            \
IPK_HD void ipk_merge_5_5_##sfx(T *v)                                                         \
{                                                                                             \
    IPK_CX(T, v[0], v[5]); IPK_CX(T, v[4], v[9]); IPK_CX(T, v[4], v[5]);                      \
    IPK_CX(T, v[2], v[7]); IPK_CX(T, v[2], v[4]); IPK_CX(T, v[7], v[5]);                      \
    IPK_CX(T, v[1], v[6]); IPK_CX(T, v[3], v[8]); IPK_CX(T, v[3], v[6]);                      \
    IPK_CX(T, v[1], v[2]); IPK_CX(T, v[3], v[4]); IPK_CX(T, v[6], v[7]);                      \
    IPK_CX(T, v[8], v[5]);                                                                    \
}                                                                                             \
/* v[0..9], v[10..19] sorted -> ranks 7..12 of the 20 at v[IPK_MID6_RANKS[0..5]] */           \
IPK_HD void ipk_mid6_of_10_10_##sfx(T *v)                                                     \
{                                                                                             \
    v[10] = IPK_MAX(v[0], v[10]); v[8] = IPK_MIN(v[8], v[18]); IPK_CX(T, v[8], v[10]);        \
    IPK_CX(T, v[4], v[14]); v[8] = IPK_MAX(v[4], v[8]); v[14] = IPK_MIN(v[14], v[10]);        \
    v[12] = IPK_MAX(v[2], v[12]); v[6] = IPK_MIN(v[6], v[16]); IPK_CX(T, v[6], v[12]);        \
    v[8] = IPK_MAX(v[6], v[8]); IPK_CX(T, v[12], v[14]); v[11] = IPK_MAX(v[1], v[11]);        \
    v[9] = IPK_MIN(v[9], v[19]); IPK_CX(T, v[9], v[11]); IPK_CX(T, v[5], v[15]);              \
    v[9] = IPK_MAX(v[5], v[9]); v[15] = IPK_MIN(v[15], v[11]); v[13] = IPK_MAX(v[3], v[13]);  \
    v[7] = IPK_MIN(v[7], v[17]); IPK_CX(T, v[7], v[13]); IPK_CX(T, v[7], v[9]);               \
    v[13] = IPK_MIN(v[13], v[15]); IPK_CX(T, v[7], v[8]); IPK_CX(T, v[9], v[12]);             \
    IPK_CX(T, v[13], v[14]);                                                                  \
}                                                                                             \
/* v[0..5] (ranks 7..12 of 20 sorted values) and v[6..10] (a sorted column):                  \
 * the 13th smallest of the 25, i.e. the 5x5 median */                                        \
IPK_HD T ipk_med25_last_##sfx(T *v)                                                           \
{                                                                                             \
    v[6] = IPK_MAX(v[0], v[6]); v[4] = IPK_MIN(v[4], v[10]); v[6] = IPK_MAX(v[4], v[6]);      \
    v[8] = IPK_MAX(v[2], v[8]); v[8] = IPK_MIN(v[8], v[6]); v[7] = IPK_MAX(v[1], v[7]);       \
    v[5] = IPK_MIN(v[5], v[7]); v[3] = IPK_MIN(v[3], v[9]); v[5] = IPK_MAX(v[3], v[5]);       \
    return IPK_MIN(v[5], v[8]);                                                               \
}

#endif
