/* The GPU median's per-thread logic run on the CPU, no GPU needed. Networks
 * (kernels/common/median_sep.cuh): the merges and sorts on every 0-1 input (0-1 principle),
 * the rank selection against sorting, and whole images cut into the separable kernel's thread
 * tiles (16 pixels by 2 rows, rows packed by the kernel's own byte shuffles) against
 * ipk_median_cpu, u8 and u16, on odd sizes and every border the kernel takes, full-range and
 * few-valued (many ties) pixels; the same for the warps of the u8 kernel that shares column sorts
 * between lanes (kernels/gpu/median_sep_warp.cuh: 8 or 16 pixels by 1 or 2 rows, radius 2 and 3).
 * Histograms (median_huang.cuh): every column and strip of the shared-atomic Huang kernel, 1-4
 * channels, every border, radii 1 to 25. */
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "testutil.h"
}
#include "border.h"
#include "median_sep.cuh"
#include "median_huang.cuh"

/* Lane l of a word holds a 0-1 value; lane 0 and lane 1 get two different inputs. */
static unsigned two_lanes(unsigned lo, unsigned hi) { return lo | hi << 16; }

/* Sorted 0-1 list of n values with z zeros, in lane 0; lane 1 holds the one with n-z zeros. */
static void zero_one(unsigned *v, int n, int z)
{
    for (int i = 0; i < n; i++) v[i] = two_lanes(i >= z, i >= n - z);
}

static int lanes_sorted(const unsigned *v, int n)
{
    for (int i = 1; i < n; i++)
        if ((v[i] & 0xffffu) < (v[i - 1] & 0xffffu) || (v[i] >> 16) < (v[i - 1] >> 16)) return 0;
    return 1;
}

template <int NA, int NB>
static void merge_case(void)
{
    for (int za = 0; za <= NA; za++)
        for (int zb = 0; zb <= NB; zb++) {
            unsigned a[NA > 0 ? NA : 1], b[NB > 0 ? NB : 1], out[NA + NB];
            zero_one(a, NA, za);
            zero_one(b, NB, zb);
            med_merge<NA, NB>(a, b, out);
            unsigned zeros = 0, sum_lo = 0;
            for (int i = 0; i < NA + NB; i++) sum_lo += out[i] & 0xffffu;
            zeros = (unsigned)(NA + NB) - sum_lo;
            CHECK(lanes_sorted(out, NA + NB) && zeros == (unsigned)(za + zb), "merge %d+%d zeros %d,%d", NA, NB, za, zb);
        }
}

template <int N>
static void sort_case(void)
{
    for (unsigned bits = 0; bits < (1u << N); bits++) {
        unsigned v[N];
        for (int i = 0; i < N; i++) v[i] = two_lanes((bits >> i) & 1u, (~bits >> i) & 1u);
        med_msort<N>(v);
        CHECK(lanes_sorted(v, N), "sort %d of %#x", N, bits);
    }
}

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

/* The K-th of two random sorted lists (small values: ties) against sorting their union. */
template <int NA, int NB, int K>
static void kth_case(tu_rng *rng)
{
    for (int trial = 0; trial < 200; trial++) {
        unsigned a[NA], b[NB], all[NA + NB];
        for (int i = 0; i < NA; i++) a[i] = tu_next(rng) % 7;
        for (int i = 0; i < NB; i++) b[i] = tu_next(rng) % 7;
        qsort(a, NA, sizeof *a, cmp_unsigned);
        qsort(b, NB, sizeof *b, cmp_unsigned);
        memcpy(all, a, sizeof a);
        memcpy(all + NA, b, sizeof b);
        qsort(all, NA + NB, sizeof *all, cmp_unsigned);
        unsigned got = med_kth<NA, NB, K>(a, b);
        CHECK(got == all[K], "kth %d of %d+%d", K, NA, NB);
    }
}

static void networks(tu_rng *rng)
{
    merge_case<1, 1>();
    merge_case<1, 2>();
    merge_case<2, 1>();
    merge_case<2, 2>();
    merge_case<3, 3>();
    merge_case<3, 6>();
    merge_case<5, 5>();
    merge_case<5, 10>();
    merge_case<7, 7>();
    merge_case<7, 14>();
    merge_case<14, 21>();
    merge_case<28, 14>();
    merge_case<10, 10>();
    merge_case<4, 9>();
    sort_case<2>();
    sort_case<3>();
    sort_case<4>();
    sort_case<5>();
    sort_case<6>();
    sort_case<7>();
    sort_case<9>();
    kth_case<3, 6, 4>(rng);
    kth_case<15, 10, 12>(rng);
    kth_case<35, 14, 24>(rng);
    kth_case<20, 5, 12>(rng);
    kth_case<42, 7, 24>(rng);
    kth_case<1, 1, 0>(rng);
    kth_case<4, 2, 5>(rng);
}

/* Pixel x of logical row ly as the kernels read it: the border's pixel, or 0 outside (zero). */
static unsigned pixel_at(const ipk_img *im, int border, int x, int ly)
{
    int yy = ipk_border_index(ly, im->height, border), xx = ipk_border_index(x, im->width, border);
    if (yy < 0 || xx < 0) return 0u;
    return im->dtype == IPK_U8 ? *(const unsigned char *)tu_px(im, xx, yy, 0) : *(const unsigned short *)tu_px(im, xx, yy, 0);
}

/* med_sp_load / med_sp_load16 on the host: pixels gx-4..gx+19 of logical row ly packed 4 (u8)
 * or 2 (u16) a word, then the kernel's own shuffles. */
template <int R>
static void load_row(const ipk_img *im, int border, int gx, int ly, unsigned *w)
{
    unsigned v[12] = {0};
    const int wide = im->dtype == IPK_U16, per_word = wide ? 2 : 4;
    for (int i = 0; i < 24; i++)
        v[i / per_word] |= pixel_at(im, border, gx - 4 + i, ly) << ((wide ? 16 : 8) * (i % per_word));
    if (wide) med_sp_pack16<R>(v + 2, v, v + 10, w);
    else med_sp_pack<R>(v + 1, v[0], v[5], w);
}

static void store_row(ipk_img *out, int gx, int y, const unsigned *words)
{
    unsigned q[8];
    const int wide = out->dtype == IPK_U16;
    if (wide) med_sp_unpack16(words, q);
    else med_sp_unpack(words, q);
    for (int j = 0; j < 16 && gx + j < out->width && y < out->height; j++) {
        if (wide) *(unsigned short *)tu_px(out, gx + j, y, 0) = (unsigned short)med_half(q, j);
        else *(unsigned char *)tu_px(out, gx + j, y, 0) = (unsigned char)(q[j / 4] >> (8 * (j % 4)));
    }
}

/* Every thread tile of the image through med_sp_pair, as med_sep_kernel runs them. */
template <int R>
static void emulate(const ipk_img *src, ipk_img *out, int border)
{
    typedef med_sp<R> P;
    for (int y0 = 0; y0 < src->height; y0 += 2)
        for (int gx = 0; gx < src->width; gx += 16) {
            unsigned rows[2 * R + 2][P::NW];
            for (int j = 0; j < 2 * R + 2; j++) load_row<R>(src, border, gx, y0 - R + j, rows[j]);
            unsigned top[8], bottom[8];
            med_sp_pair<R>(rows, top, bottom);
            store_row(out, gx, y0, top);
            store_row(out, gx, y0 + 1, bottom);
        }
}

/* A row as med_sepv_gather makes it: pixels gx..gx+2W-1 4 a word, then the words of gx-4..gx-1
 * and gx+2W..gx+2W+3. */
template <int W>
static void load_raw(const ipk_img *im, int border, int gx, int ly, unsigned *raw)
{
    for (int i = 0; i < med_sp_raw<W>::N; i++) raw[i] = 0;
    for (int i = 0; i < 2 * W + 8; i++)
        raw[med_sp_raw<W>::word(i)] |= pixel_at(im, border, gx - 4 + i, ly) << (8 * (i % 4));
}

template <int W>
static void store_raw_row(ipk_img *out, int gx, int y, const unsigned *words)
{
    unsigned q[W / 2];
    med_sp_unpack<W>(words, q);
    for (int j = 0; j < 2 * W && gx + j < out->width && y < out->height; j++)
        *(unsigned char *)tu_px(out, gx + j, y, 0) = (unsigned char)(q[j / 4] >> (8 * (j % 4)));
}

/* Lane `lane` of a med_sepx_kernel warp whose lane 1 starts at column base: its own sorted
 * columns of output row y (ROWS == 1) or rows y and y+1 (ROWS == 2: both from the pair's
 * shared sorts, as the kernel builds them). */
template <int R, int W, int ROWS>
static void lane_sorted(const ipk_img *src, int border, int base, int lane, int y,
                        unsigned (*sorted)[med_sp<R, W>::S][med_sp<R, W>::NW])
{
    unsigned raw[ROWS + 2 * R][W / 2], edged[med_sp_raw<W>::N];
    for (int j = 0; j < ROWS + 2 * R; j++) {
        load_raw<W>(src, border, base + 2 * W * (lane - 1), y - R + j, edged);
        for (int i = 0; i < W / 2; i++) raw[j][i] = edged[i];
    }
    if constexpr (ROWS == 1) {
        med_sp_sort_own<R, W>(raw, sorted[0]);
    } else {
        unsigned shared[W][2 * R], first[W], last[W];
        med_sp_pair_own<R, W>(raw, shared, first, last);
        med_sp_insert_own<R, W>(shared, first, sorted[0]);
        med_sp_insert_own<R, W>(shared, last, sorted[1]);
    }
}

/* Every warp of med_sepx_kernel (ROWS rows, 30 lanes of 2W pixels making outputs, the lanes at
 * both ends sorting columns for them): 32 lanes' sorted columns, then each output lane's edge
 * columns from its neighbours' as the shuffles pass them. */
template <int R, int W, int ROWS>
static void emulate_warps(const ipk_img *src, ipk_img *out, int border)
{
    typedef med_sp<R, W> P;
    static unsigned sorted[32][ROWS][P::S][P::NW];
    for (int y = 0; y < src->height; y += ROWS)
        for (int base = 0; base < src->width; base += 2 * W * 30) {
            for (int lane = 0; lane < 32; lane++) lane_sorted<R, W, ROWS>(src, border, base, lane, y, sorted[lane]);
            for (int lane = 1; lane <= 30; lane++)
                for (int h = 0; h < ROWS; h++) {
                    unsigned from_left[P::S][R], from_right[P::S][R], row[P::S][P::NW], words[W];
                    memcpy(row, sorted[lane][h], sizeof row);
                    for (int k = 0; k < P::S; k++)
                        for (int i = 0; i < R; i++) {
                            from_left[k][i] = med_sp_to_right<R, W>(sorted[lane - 1][h], k, i);
                            from_right[k][i] = med_sp_to_left<R, W>(sorted[lane + 1][h], k, i);
                        }
                    med_sp_edges<R, W>(row, from_left, from_right);
                    med_sp_row_from_sorted<R, W>(row, words);
                    const int gx = base + 2 * W * (lane - 1);
                    if (gx < src->width) store_raw_row<W>(out, gx, y + h, words);
                }
        }
}

typedef void (*emulate_fn)(const ipk_img *src, ipk_img *out, int border);

/* The warp shapes of med_sepx_kernel (plain calls run 8x2); radius 2 then radius 3. */
static const struct {
    int radius;
    const char *tile;
    emulate_fn run;
} TILES[] = {
    {2, "8x1 shfl", emulate_warps<2, 4, 1>}, {2, "16x1 shfl", emulate_warps<2, 8, 1>},
    {2, "8x2 shfl", emulate_warps<2, 4, 2>}, {2, "16x2 shfl", emulate_warps<2, 8, 2>},
    {3, "8x1 shfl", emulate_warps<3, 4, 1>}, {3, "16x1 shfl", emulate_warps<3, 8, 1>},
    {3, "8x2 shfl", emulate_warps<3, 4, 2>}, {3, "16x2 shfl", emulate_warps<3, 8, 2>},
};

/* The u8 image through each warp shape of its radius against the CPU. */
static void warp_cases(const ipk_img *src, const ipk_img *want, int radius, int border, int few_values)
{
    for (size_t v = 0; v < sizeof TILES / sizeof TILES[0]; v++) {
        if (TILES[v].radius != radius) continue;
        ipk_img got = tu_img_zeros(src->width, src->height, 1, IPK_U8, 5);
        TILES[v].run(src, &got, border);
        double diff = tu_max_diff(want, &got);
        CHECK(diff == 0, "%dx%d tile %s r%d border %d few %d: max diff %g", src->width, src->height, TILES[v].tile,
              radius, border, few_values, diff);
        tu_img_free(&got);
    }
}

/* few_values: pixels masked to a few levels (many ties); u16 keeps its high bits so that
 * both bytes of a lane matter. */
static void image_case(int w, int h, ipk_dtype t, int radius, int border, int few_values, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, 1, t, 5, &rng);
    for (int y = 0; few_values && y < h; y++)
        for (int x = 0; x < w; x++) {
            if (t == IPK_U8) *(unsigned char *)tu_px(&src, x, y, 0) &= 3;
            else *(unsigned short *)tu_px(&src, x, y, 0) &= 0xc003;
        }
    ipk_img want = tu_img_zeros(w, h, 1, t, 0), got = tu_img_zeros(w, h, 1, t, 3);
    CHECK(ipk_median_cpu(&src, &want, radius, (ipk_border)border, 1) == IPK_OK, "cpu median");
    if (radius == 1) emulate<1>(&src, &got, border);
    else if (radius == 2) emulate<2>(&src, &got, border);
    else emulate<3>(&src, &got, border);
    double diff = tu_max_diff(&want, &got);
    CHECK(diff == 0, "%dx%d dtype %d r%d border %d few %d: max diff %g", w, h, (int)t, radius, border, few_values, diff);
    if (t == IPK_U8) warp_cases(&src, &want, radius, border, few_values);
    tu_img_free(&src);
    tu_img_free(&want);
    tu_img_free(&got);
}

static void images(void)
{
    static const int sizes[][2] = {{1, 1}, {1, 13}, {13, 1}, {2, 2}, {7, 5}, {8, 6}, {9, 3}, {16, 3}, {17, 9},
                                   {23, 2}, {31, 4}, {37, 23}, {64, 17}, {101, 37}, {257, 11}, {487, 5}};
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int r = 1; r <= 3; r++)
            for (int b = IPK_REPLICATE; b <= IPK_ZERO; b++)
                for (int few = 0; few <= 1; few++) {
                    image_case(sizes[s][0], sizes[s][1], IPK_U8, r, b, few, seed++);
                    image_case(sizes[s][0], sizes[s][1], IPK_U16, r, b, few, seed++);
                }
}

/* Each (column, channel) of each strip through med_huang2_column, in thread slot 0 of
 * histograms laid out as the kernel's shared memory. */
static void emulate_huang(const ipk_img *src, ipk_img *out, int radius, int border)
{
    static unsigned fine[128 * MED_HUANG_THREADS], coarse[8 * MED_HUANG_THREADS];
    med_args a = {(const char *)src->data, (char *)out->data, src->stride, out->stride,
                  src->width, src->height, src->channels, radius, border};
    const int strip = med_huang_strip(radius);
    for (int y0 = 0; y0 < src->height; y0 += strip)
        for (int col = 0; col < src->width * src->channels; col++) {
            for (int i = 0; i < 128; i++) fine[i * MED_HUANG_THREADS] = 0;
            for (int i = 0; i < 8; i++) coarse[i * MED_HUANG_THREADS] = 0;
            int y1 = y0 + strip < src->height ? y0 + strip : src->height;
            med_huang2_column(a, fine, coarse, col / src->channels, col % src->channels, y0, y1);
        }
}

static void huang_case(int w, int h, int c, int radius, int border, int few_values, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, c, IPK_U8, 7, &rng);
    for (int y = 0; few_values && y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < c; ch++) *(unsigned char *)tu_px(&src, x, y, ch) &= 0x31;
    ipk_img want = tu_img_zeros(w, h, c, IPK_U8, 0), got = tu_img_zeros(w, h, c, IPK_U8, 5);
    CHECK(ipk_median_cpu(&src, &want, radius, (ipk_border)border, 1) == IPK_OK, "cpu median");
    emulate_huang(&src, &got, radius, border);
    double diff = tu_max_diff(&want, &got);
    CHECK(diff == 0, "huang %dx%d c%d r%d border %d few %d: max diff %g", w, h, c, radius, border, few_values, diff);
    tu_img_free(&src);
    tu_img_free(&want);
    tu_img_free(&got);
}

static void histograms(void)
{
    static const int sizes[][2] = {{1, 1}, {1, 13}, {13, 1}, {7, 5}, {37, 23}, {60, 131}};
    static const int radii[] = {1, 2, 3, 7, 8, 12, 25};
    uint64_t seed = 5000;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t r = 0; r < sizeof radii / sizeof radii[0]; r++)
            for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
                for (int c = 1; c <= 4; c += 2) {
                    huang_case(sizes[s][0], sizes[s][1], c + (int)(s & 1), radii[r], b, (int)(seed & 1), seed);
                    seed++;
                }
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 14);
    networks(&rng);
    images();
    histograms();
    return tu_finish();
}
