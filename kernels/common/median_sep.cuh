/* The separable-network median of kernels/gpu/median.cu (Adams, "Fast Median Filters Using
 * Separable Sorting Networks", 2021) on 2 pixels per word in 16-bit lanes: columns are sorted
 * once and shared by the rows around them; two horizontally adjacent output words merge their
 * 2R-1 common sorted columns once, then each adds its own 2 columns and takes one rank of the
 * union. The compiler drops every min/max whose result the final rank does not read, which
 * prunes the Batcher merges to the ranks that can be the median.
 * Host and device alike: tests/gpu/test_median_sep_host.cu runs these on the CPU. */
#ifndef IPK_MEDIAN_SEP_CUH
#define IPK_MEDIAN_SEP_CUH

#include "median_packed.cuh"

/* Thread tile of the packed kernels: 16 adjacent pixels (8 words of 2) by ROWS rows. A row is
 * 8 words of columns gx..gx+15 and R edge words: [8] holds gx-2, gx-1 and [9] gx+16, gx+17
 * (R >= 2); the last one packs the odd outer pair, gx-R in its high lane and gx+15+R in its
 * low lane (R = 1 or 3). */
template <int R> struct med_pk {
    static constexpr int S = 2 * R + 1;
    static constexpr int NW = 8 + R;            /* words per row */
    static constexpr int ROWS = R == 1 ? 4 : 2; /* output rows per thread of the old kernel */
};

MED_HD unsigned med_lanes(unsigned lo, unsigned hi) { return lo | hi << 16; }

/* The edge words of a row from pixels gx-1, gx-2, gx-3 (l) and gx+16, gx+17, gx+18 (r). */
template <int R>
MED_HD void med_pk_edges(const unsigned *l, const unsigned *r, unsigned *w)
{
    if (R == 1) w[8] = med_lanes(r[0], l[0]);
    if (R >= 2) {
        w[8] = med_lanes(l[1], l[0]);
        w[9] = med_lanes(r[0], r[1]);
    }
    if (R == 3) w[10] = med_lanes(r[2], l[2]);
}

/* Word `wi` of row words w as extended by the edge words: index -(R+1)/2 .. 8+(R+1)/2-1. */
template <int R>
MED_HD unsigned med_pk_ext(const unsigned *w, int wi)
{
    if (wi >= 0 && wi < 8) return w[wi];
    if constexpr (R == 1) return w[8];
    else if constexpr (R == 2) return wi < 0 ? w[8] : w[9];
    else return wi == -1 ? w[8] : wi == 8 ? w[9] : w[10];   /* w[10]: wi == -2 or 9 */
}

/* Pixels gx+p, gx+p+1 as one word, p in -R..16+R-2 (a funnel shift for odd p). */
template <int R>
MED_HD unsigned med_pk_pair(const unsigned *w, int p)
{
    const int q = p >= 0 ? p / 2 : -((-p + 1) / 2);
    if ((p & 1) == 0) return med_pk_ext<R>(w, q);
    return med_pk_ext<R>(w, q) >> 16 | med_pk_ext<R>(w, q + 1) << 16;
}

/* Batcher's odd-even merge of sorted a[NA] and b[NB] into out[NA+NB] (any sizes). */
template <int NA, int NB>
MED_HD void med_merge(const unsigned *a, const unsigned *b, unsigned *out)
{
    if constexpr (NA == 0) {
MED_UNROLL
        for (int i = 0; i < NB; i++) out[i] = b[i];
    } else if constexpr (NB == 0) {
MED_UNROLL
        for (int i = 0; i < NA; i++) out[i] = a[i];
    } else if constexpr (NA == 1 && NB == 1) {
        out[0] = med_min(a[0], b[0]);
        out[1] = med_max(a[0], b[0]);
    } else {
        constexpr int EA = (NA + 1) / 2, EB = (NB + 1) / 2, OA = NA / 2, OB = NB / 2;
        unsigned ae[EA], be[EB], ao[OA > 0 ? OA : 1], bo[OB > 0 ? OB : 1];
MED_UNROLL
        for (int i = 0; i < EA; i++) ae[i] = a[2 * i];
MED_UNROLL
        for (int i = 0; i < EB; i++) be[i] = b[2 * i];
MED_UNROLL
        for (int i = 0; i < OA; i++) ao[i] = a[2 * i + 1];
MED_UNROLL
        for (int i = 0; i < OB; i++) bo[i] = b[2 * i + 1];
        constexpr int NE = EA + EB, NO = OA + OB;
        unsigned even[NE], odd[NO > 0 ? NO : 1];
        med_merge<EA, EB>(ae, be, even);
        med_merge<OA, OB>(ao, bo, odd);
        /* out = e0, then the pairs (o_i, e_i+1) put in order; a last o or e closes the list */
        out[0] = even[0];
MED_UNROLL
        for (int i = 0; i < NO; i++) {
            if (i + 1 < NE) {
                out[2 * i + 1] = med_min(odd[i], even[i + 1]);
                out[2 * i + 2] = med_max(odd[i], even[i + 1]);
            } else {
                out[2 * i + 1] = odd[i];
            }
        }
        if (NE == NO + 2) out[NA + NB - 1] = even[NE - 1];
    }
}

/* Sorts v[N] per lane by odd-even merge sort. */
template <int N>
MED_HD void med_msort(unsigned *v)
{
    if constexpr (N > 1) {
        constexpr int H = N / 2;
        unsigned lo[H], hi[N - H];
MED_UNROLL
        for (int i = 0; i < H; i++) lo[i] = v[i];
MED_UNROLL
        for (int i = 0; i < N - H; i++) hi[i] = v[H + i];
        med_msort<H>(lo);
        med_msort<N - H>(hi);
        med_merge<H, N - H>(lo, hi, v);
    }
}

/* The K-th smallest (0-based) of sorted a[NA] and b[NB]: the least over the splits i + j = K+1
 * of max(a[i-1], b[j-1]), the largest of the K+1 values a split takes. */
template <int NA, int NB, int K>
MED_HD unsigned med_kth(const unsigned *a, const unsigned *b)
{
    constexpr int lo = K + 1 - NB > 0 ? K + 1 - NB : 0, hi = K + 1 < NA ? K + 1 : NA;
    unsigned best = 0;
MED_UNROLL
    for (int i = lo; i <= hi; i++) {
        unsigned v = i == 0 ? b[K] : i == K + 1 ? a[K] : med_max(a[i - 1], b[K - i]);
        best = i == lo ? v : med_min(best, v);
    }
    return best;
}

/* Merges the sorted columns p..p+NC-1 (pair positions) of one output row into out[NC*S]. */
template <int R, int NC>
MED_HD void med_merge_cols(unsigned (*sorted)[med_pk<R>::NW], int p, unsigned *out)
{
    constexpr int S = med_pk<R>::S;
    if constexpr (NC == 1) {
MED_UNROLL
        for (int k = 0; k < S; k++) out[k] = med_pk_pair<R>(sorted[k], p);
    } else {
        constexpr int H = NC / 2;
        unsigned left[H * S], right[(NC - H) * S];
        med_merge_cols<R, H>(sorted, p, left);
        med_merge_cols<R, NC - H>(sorted, p + H, right);
        med_merge<H * S, (NC - H) * S>(left, right, out);
    }
}

/* Radius 1: per output word, each rank row of its 3 sorted columns ordered and the 3
 * entries that can be the median kept (Adams' pruned 3x3 network). */
template <int R>
MED_HD void med_rank_rows(unsigned (*sorted)[med_pk<R>::NW], unsigned *out)
{
    constexpr int S = med_pk<R>::S;
MED_UNROLL
    for (int i = 0; i < 8; i++) {
        unsigned col[S][S];   /* [rank][column offset + R] */
MED_UNROLL
        for (int k = 0; k < S; k++)
MED_UNROLL
            for (int d = -R; d <= R; d++) col[k][R + d] = med_pk_pair<R>(sorted[k], 2 * i + d);
        out[i] = med_from_sorted_columns<S>(col);
    }
}

/* Radius 2, 3: output words i and i+1 share columns 2i+2-R..2i+R, merged once. */
template <int R>
MED_HD void med_shared_merge(unsigned (*sorted)[med_pk<R>::NW], unsigned *out)
{
    constexpr int S = med_pk<R>::S, NC = 2 * R - 1, K = (S * S - 1) / 2;
MED_UNROLL
    for (int i = 0; i < 8; i += 2) {
        unsigned core[NC * S], own[2 * S];
        med_merge_cols<R, NC>(sorted, 2 * i + 2 - R, core);
        med_merge_cols<R, 2>(sorted, 2 * i - R, own);
        out[i] = med_kth<NC * S, 2 * S, K>(core, own);
        med_merge_cols<R, 2>(sorted, 2 * i + R + 1, own);
        out[i + 1] = med_kth<NC * S, 2 * S, K>(core, own);
    }
}

/* Medians of the 8 words of one output row from its window's rows sorted per word
 * (sorted[k][w]: the k-th smallest of word w over the 2R+1 rows). */
template <int R>
MED_HD void med_sep_row(unsigned (*sorted)[med_pk<R>::NW], unsigned *out)
{
    if constexpr (R == 1) med_rank_rows<R>(sorted, out);
    else med_shared_merge<R>(sorted, out);
}

/* Two output rows from their 2R+2 input rows rows[0..2R+1]: the 2R rows both windows hold
 * are sorted once per word, then each output's own row is inserted. */
template <int R>
MED_HD void med_sep_pair(unsigned (*rows)[med_pk<R>::NW], unsigned *top_out, unsigned *bottom_out)
{
    typedef med_pk<R> P;
    unsigned top[P::S][P::NW], bottom[P::S][P::NW];
MED_UNROLL
    for (int i = 0; i < P::NW; i++) {
        unsigned shared[2 * R], sa[P::S], sb[P::S];
MED_UNROLL
        for (int j = 0; j < 2 * R; j++) shared[j] = rows[1 + j][i];
        med_sort_n<2 * R>(shared);
        med_insert<2 * R>(shared, rows[0][i], sa);
        med_insert<2 * R>(shared, rows[2 * R + 1][i], sb);
MED_UNROLL
        for (int k = 0; k < P::S; k++) {
            top[k][i] = sa[k];
            bottom[k][i] = sb[k];
        }
    }
    med_sep_row<R>(top, top_out);
    med_sep_row<R>(bottom, bottom_out);
}

#endif
