/* The separable-network median of kernels/gpu/median.cu (Adams, "Fast Median Filters Using
 * Separable Sorting Networks", 2021) on 2 pixels per word in 16-bit lanes, and the packing
 * helpers of the older packed kernel. Columns are sorted once and shared by the rows around
 * them; along a row, outputs share most of their window's columns, so a tile's common columns
 * are merged once, then each half of the tile adds its own, down to single outputs, which take
 * one rank of the union (a hierarchical merge). The compiler drops every min/max whose result
 * that rank does not read, which prunes the Batcher merges to the ranks that can be the median.
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

IPK_HD unsigned med_lanes(unsigned lo, unsigned hi) { return lo | hi << 16; }

/* The edge words of a row from pixels gx-1, gx-2, gx-3 (l) and gx+16, gx+17, gx+18 (r). */
template <int R>
IPK_HD void med_pk_edges(const unsigned *l, const unsigned *r, unsigned *w)
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
IPK_HD unsigned med_pk_ext(const unsigned *w, int wi)
{
    if (wi >= 0 && wi < 8) return w[wi];
    if constexpr (R == 1) return w[8];
    else if constexpr (R == 2) return wi < 0 ? w[8] : w[9];
    else return wi == -1 ? w[8] : wi == 8 ? w[9] : w[10];   /* w[10]: wi == -2 or 9 */
}

/* Pixels gx+p, gx+p+1 as one word, p in -R..16+R-2 (a funnel shift for odd p). */
template <int R>
IPK_HD unsigned med_pk_pair(const unsigned *w, int p)
{
    const int q = p >= 0 ? p / 2 : -((-p + 1) / 2);
    if ((p & 1) == 0) return med_pk_ext<R>(w, q);
    return med_pk_ext<R>(w, q) >> 16 | med_pk_ext<R>(w, q + 1) << 16;
}

/* Batcher's odd-even merge of sorted a[NA] and b[NB] into out[NA+NB] (any sizes). */
template <int NA, int NB>
IPK_HD void med_merge(const unsigned *a, const unsigned *b, unsigned *out)
{
    if constexpr (NA == 0) {
IPK_UNROLL
        for (int i = 0; i < NB; i++) out[i] = b[i];
    } else if constexpr (NB == 0) {
IPK_UNROLL
        for (int i = 0; i < NA; i++) out[i] = a[i];
    } else if constexpr (NA == 1 && NB == 1) {
        out[0] = med_min(a[0], b[0]);
        out[1] = med_max(a[0], b[0]);
    } else {
        constexpr int EA = (NA + 1) / 2, EB = (NB + 1) / 2, OA = NA / 2, OB = NB / 2;
        unsigned ae[EA], be[EB], ao[OA > 0 ? OA : 1], bo[OB > 0 ? OB : 1];
IPK_UNROLL
        for (int i = 0; i < EA; i++) ae[i] = a[2 * i];
IPK_UNROLL
        for (int i = 0; i < EB; i++) be[i] = b[2 * i];
IPK_UNROLL
        for (int i = 0; i < OA; i++) ao[i] = a[2 * i + 1];
IPK_UNROLL
        for (int i = 0; i < OB; i++) bo[i] = b[2 * i + 1];
        constexpr int NE = EA + EB, NO = OA + OB;
        unsigned even[NE], odd[NO > 0 ? NO : 1];
        med_merge<EA, EB>(ae, be, even);
        med_merge<OA, OB>(ao, bo, odd);
        /* out = e0, then the pairs (o_i, e_i+1) put in order; a last o or e closes the list */
        out[0] = even[0];
IPK_UNROLL
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
IPK_HD void med_msort(unsigned *v)
{
    if constexpr (N > 1) {
        constexpr int H = N / 2;
        unsigned lo[H], hi[N - H];
IPK_UNROLL
        for (int i = 0; i < H; i++) lo[i] = v[i];
IPK_UNROLL
        for (int i = 0; i < N - H; i++) hi[i] = v[H + i];
        med_msort<H>(lo);
        med_msort<N - H>(hi);
        med_merge<H, N - H>(lo, hi, v);
    }
}

/* The K-th smallest (0-based) of sorted a[NA] and b[NB]: the least over the splits i + j = K+1
 * of max(a[i-1], b[j-1]), the largest of the K+1 values a split takes. */
template <int NA, int NB, int K>
IPK_HD unsigned med_kth(const unsigned *a, const unsigned *b)
{
    constexpr int lo = K + 1 - NB > 0 ? K + 1 - NB : 0, hi = K + 1 < NA ? K + 1 : NA;
    unsigned best = 0;
IPK_UNROLL
    for (int i = lo; i <= hi; i++) {
        unsigned v = i == 0 ? b[K] : i == K + 1 ? a[K] : med_max(a[i - 1], b[K - i]);
        best = i == lo ? v : med_min(best, v);
    }
    return best;
}

/* Radius 1: per output word, each rank row of its 3 sorted columns ordered and the 3
 * entries that can be the median kept (Adams' pruned 3x3 network). */
template <int R>
IPK_HD void med_rank_rows(unsigned (*sorted)[med_pk<R>::NW], unsigned *out)
{
    constexpr int S = med_pk<R>::S;
IPK_UNROLL
    for (int i = 0; i < 8; i++) {
        unsigned col[S][S];   /* [rank][column offset + R] */
IPK_UNROLL
        for (int k = 0; k < S; k++)
IPK_UNROLL
            for (int d = -R; d <= R; d++) col[k][R + d] = med_pk_pair<R>(sorted[k], 2 * i + d);
        out[i] = med_from_sorted_columns<S>(col);
    }
}

/* Split layout of the separable kernel: a thread's 2W pixels gx..gx+2W-1 (W = 8 or 4 words) as
 * word j holding pixel gx+j in its low lane and gx+W+j in its high lane, so that its W output
 * words are W adjacent positions j = 0..W-1 and word j's window is words j-R..j+R of the
 * extended row, j = -R..W-1+R, stored at index j+R. u8 and u16 pixels alike fill the 16-bit
 * lanes (u16: W = 8 only). */
template <int R, int W = 8> struct med_sp {
    static_assert(W == 4 || W == 8, "a tile is 1 or 2 words of 4 pixels per half");
    static constexpr int S = 2 * R + 1;
    static constexpr int NW = W + 2 * R;
};

/* Two words from bytes a[i], a[i+1] and b[i], b[i+1] (i = 0 or 2): lanes (a[i], b[i]) and
 * (a[i+1], b[i+1]). */
IPK_HD void med_sp_two(unsigned a, unsigned b, int i, unsigned *w)
{
    unsigned t = ipk_swar_perm(a, b, i == 0 ? 0x5140u : 0x7362u);   /* a[i], b[i], a[i+1], b[i+1] */
    w[0] = ipk_swar_perm(t, 0, 0x4140u);
    w[1] = ipk_swar_perm(t, 0, 0x4342u);
}

/* Row words from q[0..W/2-1] (pixels gx..gx+2W-1, little-endian) and the words left
 * (gx-4..gx-1) and right (gx+2W..gx+2W+3). */
template <int W>
IPK_HD void med_sp_pack_inner(const unsigned *q, unsigned *inner)
{
    constexpr int H = W / 4;   /* words of 4 pixels in each half of the tile */
IPK_UNROLL
    for (int h = 0; h < H; h++) {
        med_sp_two(q[h], q[H + h], 0, inner + 4 * h);
        med_sp_two(q[h], q[H + h], 2, inner + 4 * h + 2);
    }
}

template <int R, int W = 8>
IPK_HD void med_sp_pack(const unsigned *q, unsigned left, unsigned right, unsigned *w)
{
    constexpr int H = W / 4;
    unsigned inner[W], edge[4];
    med_sp_pack_inner<W>(q, inner);
IPK_UNROLL
    for (int j = 0; j < W; j++) w[R + j] = inner[j];
    /* j = -4..-1: pixels gx+j (left) and gx+W+j (q[H-1]); j = W..W+3: gx+j (q[H]) and gx+W+j (right) */
    med_sp_two(left, q[H - 1], 0, edge);
    med_sp_two(left, q[H - 1], 2, edge + 2);
IPK_UNROLL
    for (int j = -R; j < 0; j++) w[R + j] = edge[4 + j];
    med_sp_two(q[H], right, 0, edge);
    med_sp_two(q[H], right, 2, edge + 2);
IPK_UNROLL
    for (int j = W; j < W + R; j++) w[R + j] = edge[j - W];
}

/* Output words (pixel gx+j low, gx+W+j high) back to pixels gx..gx+2W-1 in q[0..W/2-1]. */
template <int W = 8>
IPK_HD void med_sp_unpack(const unsigned *v, unsigned *q)
{
IPK_UNROLL
    for (int i = 0; i < W; i += 4) {
        unsigned t0 = ipk_swar_perm(v[i], v[i + 1], 0x6240u);       /* px i, i+1, W+i, W+1+i */
        unsigned t1 = ipk_swar_perm(v[i + 2], v[i + 3], 0x6240u);   /* px i+2, i+3, W+2+i, W+3+i */
        q[i / 4] = ipk_swar_perm(t0, t1, 0x5410u);
        q[W / 4 + i / 4] = ipk_swar_perm(t0, t1, 0x7632u);
    }
}

/* 16-bit pixels (u16 images): pixel i of a word pair is half i & 1 of word i >> 1. */
IPK_HD unsigned med_half(const unsigned *words, int i) { return (words[i >> 1] >> (16 * (i & 1))) & 0xffffu; }

/* The split layout's row words from 16-bit pixels: q[0..7] (gx..gx+15, 2 a word), left[0..1]
 * (gx-4..gx-1) and right[0..1] (gx+16..gx+19). */
template <int R>
IPK_HD void med_sp_pack16(const unsigned *q, const unsigned *left, const unsigned *right, unsigned *w)
{
IPK_UNROLL
    for (int j = 0; j < 8; j += 2) {
        w[R + j] = ipk_swar_perm(q[j / 2], q[4 + j / 2], 0x5410u);       /* pixels j, 8+j */
        w[R + j + 1] = ipk_swar_perm(q[j / 2], q[4 + j / 2], 0x7632u);   /* j+1, 9+j */
    }
IPK_UNROLL
    for (int j = -R; j < 0; j++) w[R + j] = med_lanes(med_half(left, 4 + j), med_half(q, 8 + j));
IPK_UNROLL
    for (int j = 8; j < 8 + R; j++) w[R + j] = med_lanes(med_half(q, j), med_half(right, j - 8));
}

/* Output words back to 16-bit pixels gx..gx+15 in q[0..7], 2 a word. */
IPK_HD void med_sp_unpack16(const unsigned *v, unsigned *q)
{
IPK_UNROLL
    for (int k = 0; k < 4; k++) {
        q[k] = ipk_swar_perm(v[2 * k], v[2 * k + 1], 0x5410u);       /* low lanes: pixels 2k, 2k+1 */
        q[4 + k] = ipk_swar_perm(v[2 * k], v[2 * k + 1], 0x7632u);   /* high lanes: 8+2k, 9+2k */
    }
}

/* Merges the sorted columns j0..j0+NC-1 (positions -R..W-1+R) of one output row into out[NC*S]. */
template <int R, int NC, int W = 8>
IPK_HD void med_sp_cols(unsigned (*sorted)[med_sp<R, W>::NW], int j0, unsigned *out)
{
    constexpr int S = med_sp<R, W>::S;
    if constexpr (NC == 1) {
IPK_UNROLL
        for (int k = 0; k < S; k++) out[k] = sorted[k][R + j0];
    } else {
        constexpr int H = NC / 2;
        unsigned left[H * S], right[(NC - H) * S];
        med_sp_cols<R, H, W>(sorted, j0, left);
        med_sp_cols<R, NC - H, W>(sorted, j0 + H, right);
        med_merge<H * S, (NC - H) * S>(left, right, out);
    }
}

/* The medians of output words j and j+1, which share the NP sorted values `common` (their
 * columns j+1-R..j+R): each adds its own column, j-R or j+1+R. */
template <int R, int NP, int W = 8>
IPK_HD void med_sp_leaves(unsigned (*sorted)[med_sp<R, W>::NW], const unsigned *common, int j, unsigned *out)
{
    constexpr int S = med_sp<R, W>::S, K = (S * S - 1) / 2;
    unsigned own[S];
    med_sp_cols<R, 1, W>(sorted, j - R, own);
    out[j] = med_kth<NP, S, K>(common, own);
    med_sp_cols<R, 1, W>(sorted, j + 1 + R, own);
    out[j + 1] = med_kth<NP, S, K>(common, own);
}

/* Four output words j0..j0+3: columns j0+3-R..j0+R are common to all four (none at R = 1),
 * each pair adds 2 columns, each word 1. */
template <int R, int W = 8>
IPK_HD void med_sp_quad(unsigned (*sorted)[med_sp<R, W>::NW], int j0, unsigned *out)
{
    constexpr int S = med_sp<R, W>::S, NQ = 2 * R - 2, NP = 2 * R;
    unsigned common[NP * S];
    if constexpr (NQ == 0) {
        med_sp_cols<R, 2, W>(sorted, j0, common);
        med_sp_leaves<R, NP * S, W>(sorted, common, j0, out);
        med_sp_cols<R, 2, W>(sorted, j0 + 2, common);
        med_sp_leaves<R, NP * S, W>(sorted, common, j0 + 2, out);
    } else {
        unsigned quad[NQ * S], pair_cols[2 * S];
        med_sp_cols<R, NQ, W>(sorted, j0 + 3 - R, quad);
        med_sp_cols<R, 2, W>(sorted, j0 + 1 - R, pair_cols);
        med_merge<NQ * S, 2 * S>(quad, pair_cols, common);
        med_sp_leaves<R, NP * S, W>(sorted, common, j0, out);
        med_sp_cols<R, 2, W>(sorted, j0 + 1 + R, pair_cols);
        med_merge<NQ * S, 2 * S>(quad, pair_cols, common);
        med_sp_leaves<R, NP * S, W>(sorted, common, j0 + 2, out);
    }
}

/* The sorted columns of one output row: its own row inserted into the 2R shared ones. */
template <int R, int W = 8>
IPK_HD void med_sp_insert_row(unsigned (*shared)[2 * R], const unsigned *own, unsigned (*sorted)[med_sp<R, W>::NW])
{
    constexpr int S = med_sp<R, W>::S;
IPK_UNROLL
    for (int i = 0; i < med_sp<R, W>::NW; i++) {
        unsigned col[S];
        med_insert<2 * R>(shared[i], own[i], col);
IPK_UNROLL
        for (int k = 0; k < S; k++) sorted[k][i] = col[k];
    }
}

/* Two output rows (W words each) from their 2R+2 input rows in the split layout: the 2R rows
 * both windows hold are sorted once per word, then each output's own row is inserted; one
 * output row is finished before the next is built, which keeps fewer values live. */
template <int R, int W = 8>
IPK_HD void med_sp_pair(unsigned (*rows)[med_sp<R, W>::NW], unsigned *top_out, unsigned *bottom_out)
{
    typedef med_sp<R, W> P;
    unsigned shared[P::NW][2 * R], sorted[P::S][P::NW];
IPK_UNROLL
    for (int i = 0; i < P::NW; i++) {
IPK_UNROLL
        for (int j = 0; j < 2 * R; j++) shared[i][j] = rows[1 + j][i];
        med_msort<2 * R>(shared[i]);
    }
    med_sp_insert_row<R, W>(shared, rows[0], sorted);
IPK_UNROLL
    for (int j0 = 0; j0 < W; j0 += 4) med_sp_quad<R, W>(sorted, j0, top_out);
    med_sp_insert_row<R, W>(shared, rows[2 * R + 1], sorted);
IPK_UNROLL
    for (int j0 = 0; j0 < W; j0 += 4) med_sp_quad<R, W>(sorted, j0, bottom_out);
}

/* Columns i0..i1-1 (indices into the extended row) of 2R+1 rows, sorted whole into sorted[][i]. */
template <int R, int W>
IPK_HD void med_sp_sort_columns(unsigned (*rows)[med_sp<R, W>::NW], int i0, int i1,
                                unsigned (*sorted)[med_sp<R, W>::NW])
{
    constexpr int S = med_sp<R, W>::S;
IPK_UNROLL
    for (int i = i0; i < i1; i++) {
        unsigned col[S];
IPK_UNROLL
        for (int k = 0; k < S; k++) col[k] = rows[k][i];
        med_msort<S>(col);
IPK_UNROLL
        for (int k = 0; k < S; k++) sorted[k][i] = col[k];
    }
}

/* Words a loaded row takes: pixels gx..gx+2W-1 (4 a word), then gx-4..gx-1 and gx+2W..gx+2W+3;
 * word(i): the word that holds pixel gx-4+i. */
template <int W> struct med_sp_raw {
    static constexpr int N = W / 2 + 2;
    static IPK_HD int word(int i) { return i < 4 ? W / 2 : i < 2 * W + 4 ? (i - 4) / 4 : W / 2 + 1; }
};

/* Column sorts shared between the threads of a warp (med_sepx_kernel): a thread sorts only
 * its own W columns; its edge columns j = -R..-1 pair the left neighbour's word W+j (high
 * lane: pixel gx+j) with its own word W+j (low lane: gx+W+j), and j = W..W+R-1 its own word
 * j-W (high lane: gx+j) with the right neighbour's word j-W (low lane: gx+W+j). Sorting the
 * two lanes apart keeps each rank of each lane, so the sorted words combine rank by rank. */
template <int R, int W>
IPK_HD void med_sp_sort_own(unsigned (*raw)[W / 2], unsigned (*sorted)[med_sp<R, W>::NW])
{
    typedef med_sp<R, W> P;
    unsigned rows[P::S][P::NW];
IPK_UNROLL
    for (int k = 0; k < P::S; k++) med_sp_pack_inner<W>(raw[k], rows[k] + R);
    med_sp_sort_columns<R, W>(rows, R, R + W, sorted);
}

/* What a thread passes its left neighbour (to_left[k][i]: rank k of its word i, the right
 * edge words of that neighbour) and its right one (to_right[k][i]: its word W-R+i). */
template <int R, int W>
IPK_HD unsigned med_sp_to_left(unsigned (*sorted)[med_sp<R, W>::NW], int k, int i) { return sorted[k][R + i]; }
template <int R, int W>
IPK_HD unsigned med_sp_to_right(unsigned (*sorted)[med_sp<R, W>::NW], int k, int i) { return sorted[k][W + i]; }

/* The edge columns from the neighbours' words: from_left[k][i] is the left neighbour's
 * med_sp_to_right(k, i), from_right[k][i] the right one's med_sp_to_left(k, i). */
template <int R, int W>
IPK_HD void med_sp_edges(unsigned (*sorted)[med_sp<R, W>::NW], unsigned (*from_left)[R], unsigned (*from_right)[R])
{
    static_assert(R <= W, "edge columns from the next thread only");
IPK_UNROLL
    for (int k = 0; k < med_sp<R, W>::S; k++)
IPK_UNROLL
        for (int i = 0; i < R; i++) {
            sorted[k][i] = ipk_swar_perm(from_left[k][i], sorted[k][W + i], 0x5432u);
            sorted[k][R + W + i] = ipk_swar_perm(sorted[k][R + i], from_right[k][i], 0x5432u);
        }
}

/* Two output rows of med_sepx_kernel: the 2R rows both windows hold, sorted per own word
 * (shared[i], i = 0..W-1), and the own words of the top output's first row and the bottom
 * output's last row. raw[] holds the 2R+2 input rows. */
template <int R, int W>
IPK_HD void med_sp_pair_own(unsigned (*raw)[W / 2], unsigned (*shared)[2 * R], unsigned *first, unsigned *last)
{
    unsigned rows[2 * R + 2][W];
IPK_UNROLL
    for (int j = 0; j < 2 * R + 2; j++) med_sp_pack_inner<W>(raw[j], rows[j]);
IPK_UNROLL
    for (int i = 0; i < W; i++) {
IPK_UNROLL
        for (int j = 0; j < 2 * R; j++) shared[i][j] = rows[1 + j][i];
        med_msort<2 * R>(shared[i]);
        first[i] = rows[0][i];
        last[i] = rows[2 * R + 1][i];
    }
}

/* One output row's own sorted columns: its own row's words inserted into the shared sorts. */
template <int R, int W>
IPK_HD void med_sp_insert_own(unsigned (*shared)[2 * R], const unsigned *own, unsigned (*sorted)[med_sp<R, W>::NW])
{
IPK_UNROLL
    for (int i = 0; i < W; i++) {
        unsigned col[med_sp<R, W>::S];
        med_insert<2 * R>(shared[i], own[i], col);
IPK_UNROLL
        for (int k = 0; k < med_sp<R, W>::S; k++) sorted[k][R + i] = col[k];
    }
}

/* One output row (W words) from the sorted columns, edges included. */
template <int R, int W>
IPK_HD void med_sp_row_from_sorted(unsigned (*sorted)[med_sp<R, W>::NW], unsigned *out)
{
IPK_UNROLL
    for (int j0 = 0; j0 < W; j0 += 4) med_sp_quad<R, W>(sorted, j0, out);
}

#endif
