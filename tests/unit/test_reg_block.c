/* The GPU register-streaming kernel (kernels/gpu/reg_block.cuh) walked on the host with its
 * per-thread arithmetic (kernels/common/reg_block.h): warps of 32 lanes that take their halo
 * from the neighbouring lanes' words, blocks of 128 threads, bands of rows, the ring of rows
 * loaded ahead and the rotating output slots, exactly as the kernel orders them. Its outputs,
 * finished as the kernel's functors finish them, must equal the CPU convolve and mean bit for
 * bit: integer and float weights, split and not, K = 3, 5, 7, u8 and f32 output, every border,
 * odd sizes (1x1, 1xN, Nx1, primes, warps and blocks cut by the right edge, bands cut by the
 * bottom) and row strides that are not the width. Likewise the running-sum mean kernel of
 * radius 4 to 15 (rm_kernel in mean.cu), every border, shrink included. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "conv_round.h"
#include "conv_separable.h"
#include "reg_block.h"

#define BX 128   /* RG_BX of reg_block.cuh */

/* How the sum becomes the output, as the GPU functors do (convolve.cu, mean.cu). */
typedef enum { FIN_MEAN, FIN_INT, FIN_FLOAT } fin_kind;

typedef struct {
    fin_kind kind;
    uint32_t n;              /* mean: window pixels */
    double div, off;         /* convolve */
    int out_f32;
} fin_spec;

static void finish(const fin_spec *f, float sum, void *d)
{
    if (f->kind == FIN_MEAN) {
        *(uint8_t *)d = (uint8_t)(((uint32_t)sum + f->n / 2) / f->n);
        return;
    }
    if (f->kind == FIN_INT) {
        const double v = (double)sum / f->div + f->off;
        if (f->out_f32) *(float *)d = (float)v;
        else *(uint8_t *)d = (uint8_t)ipk_conv_saturate(v, 255.0);
        return;
    }
    const float v = sum / (float)f->div + (float)f->off;
    if (f->out_f32) {
        *(float *)d = v;
        return;
    }
    const float r = rintf(v);
    *(uint8_t *)d = (uint8_t)(r >= 0 ? (r <= 255.0f ? r : 255.0f) : 0.0f);
}

/* One warp (lanes with x = (w0 + lane) * 8) down one band, as rg_kernel and rg_step. */
static void walk_warp(const ipk_img *src, const ipk_img *dst, int border, int k, int sep, int contract,
                      const rg_weights *w, const fin_spec *f, int x_first, int y0, int band)
{
    const int r = k / 2, d = RG_DEPTH(k), j_first = y0 - r;
    const int n_in = (band < src->height - y0 ? band : src->height - y0) + k - 1;
    const uint8_t *base = src->data;
    static rg_row ring[32][RG_DEPTH(RG_MAXK) > 6 ? RG_DEPTH(RG_MAXK) : 6];
    static float acc[32][RG_MAXK][RG_PX];
    for (int lane = 0; lane < 32; lane++) {
        const int x = x_first + 8 * lane;
        for (int i = 0; i < d; i++)
            ring[lane][i] = i < n_in ? rg_load(base, src->stride, src->width, src->height, border, x, j_first + i,
                                               0, lane)
                                     : (rg_row){ 0, 0, 0 };
        memset(acc[lane], 0, sizeof acc[lane]);
    }
    for (int g = 0; g < n_in; g += d)
        for (int i = 0; i < d && g + i < n_in; i++) {
            const int row = g + i;
            rg_row cur[32];
            for (int lane = 0; lane < 32; lane++) {
                cur[lane] = ring[lane][i];
                if (row + d < n_in)
                    ring[lane][i] = rg_load(base, src->stride, src->width, src->height, border, x_first + 8 * lane,
                                            j_first + row + d, 0, lane);
            }
            for (int lane = 0; lane < 32; lane++) {
                const int x = x_first + 8 * lane;
                /* __shfl_up / __shfl_down: a lane with no neighbour keeps its own value */
                const uint32_t left = cur[lane > 0 ? lane - 1 : lane].m1, right = cur[lane < 31 ? lane + 1 : lane].m0;
                float v[RG_NV];
                rg_values(cur[lane], left, right, lane, r, v);
                rg_add_row(acc[lane], k, sep, contract, w, v, i % k);
                if (row < k - 1 || x >= src->width) continue;
                const int done = (i % k + 1) % k, y = y0 + row - (k - 1);
                for (int j = 0; j < RG_PX && x + j < src->width; j++) {
                    char *drow = (char *)dst->data + (ptrdiff_t)y * dst->stride;
                    finish(f, acc[lane][done][j], f->out_f32 ? (void *)((float *)drow + x + j) : (void *)(drow + x + j));
                }
            }
        }
}

/* The bands rg_launch picks for this image on a 132-SM device with 7 blocks resident each, or
 * for one wave of 9 slots (tall bands, a few rows cut off at the bottom). */
static void walk_grid(const ipk_img *src, const ipk_img *dst, int border, int k, int sep, int contract,
                      const rg_weights *w, const fin_spec *f)
{
    const int blocks_x0 = (src->width + BX * RG_PX - 1) / (BX * RG_PX);
    const int band = rg_band(src->height, blocks_x0, (src->width + src->height) % 2 ? 132 * 7 : 9, rg_min_band(k));
    CHECK(band >= 1 && band <= src->height, "band %d for height %d", band, src->height);
    const int blocks_x = (src->width + BX * RG_PX - 1) / (BX * RG_PX);
    for (int y0 = 0; y0 < src->height; y0 += band)
        for (int bx = 0; bx < blocks_x; bx++)
            for (int warp = 0; warp < BX / 32; warp++)
                walk_warp(src, dst, border, k, sep, contract, w, f, (bx * BX + warp * 32) * RG_PX, y0, band);
}

/* Weights as convolve.cu hands them to the kernel (conv_prepare_int / conv_prepare_float). */
static int make_weights(const double *wt, int k, rg_weights *w, int *sep, int *integral)
{
    memset(w, 0, sizeof *w);
    *integral = ipk_conv_weights_integral(wt, k * k);
    if (*integral) {
        int64_t col[RG_MAXK] = { 0 }, row[RG_MAXK] = { 0 };
        *sep = ipk_conv_split_int(wt, k, k, col, row);
        for (int i = 0; i < k; i++) {
            w->row[i] = (float)row[i];
            w->col[i] = (float)col[i];
        }
    } else {
        *sep = ipk_conv_split_float(wt, k, k, w->col, w->row);
    }
    for (int i = 0; i < k * k; i++) w->w[i] = (float)wt[i];
    return 1;
}

static ipk_img with_pad(int w, int h, ipk_dtype t, int pad, tu_rng *rng)
{
    return rng ? tu_img_random(w, h, 1, t, pad, rng) : tu_img_zeros(w, h, 1, t, pad);
}

static void check_conv(int width, int height, const double *wt, int k, double div, double off, int border,
                       int out_f32, tu_rng *rng)
{
    ipk_img src = with_pad(width, height, IPK_U8, 1 + (int)(tu_next(rng) % 9), rng);
    for (int y = 0; y < height; y++)   /* runs of 0 and 255 drive the sums to their extremes */
        for (int x = 0; x < width; x += 1 + (int)(tu_next(rng) % 9))
            *(uint8_t *)tu_px(&src, x, y, 0) = (tu_next(rng) & 1) ? 255 : 0;
    const ipk_dtype ot = out_f32 ? IPK_F32 : IPK_U8;
    ipk_img cpu = with_pad(width, height, ot, 4, NULL), got = with_pad(width, height, ot, 4, NULL);
    ipk_conv_params p = { wt, k, k, div, off, (ipk_border)border };
    CHECK(ipk_convolve_cpu(&src, &cpu, &p, 1) == IPK_OK, "cpu convolve");
    rg_weights w;
    int sep = 0, integral = 0;
    make_weights(wt, k, &w, &sep, &integral);
    fin_spec f = { integral ? FIN_INT : FIN_FLOAT, 0, div, off, out_f32 };
    walk_grid(&src, &got, border, k, sep, integral, &w, &f);
    CHECK(tu_max_diff(&got, &cpu) == 0, "convolve k=%d sep=%d int=%d %dx%d border=%d f32=%d div=%g off=%g: max diff %g",
          k, sep, integral, width, height, border, out_f32, div, off, tu_max_diff(&got, &cpu));
    tu_img_free(&src);
    tu_img_free(&cpu);
    tu_img_free(&got);
}

static void check_mean(int width, int height, int radius, int border, tu_rng *rng)
{
    const int k = 2 * radius + 1;
    ipk_img src = with_pad(width, height, IPK_U8, 1 + (int)(tu_next(rng) % 9), rng);
    ipk_img cpu = with_pad(width, height, IPK_U8, 3, NULL), got = with_pad(width, height, IPK_U8, 3, NULL);
    CHECK(ipk_mean_cpu(&src, &cpu, radius, (ipk_border)border, 1) == IPK_OK, "cpu mean");
    rg_weights w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < k; i++) w.row[i] = w.col[i] = 1.0f;
    fin_spec f = { FIN_MEAN, (uint32_t)(k * k), 0, 0, 0 };
    walk_grid(&src, &got, border, k, 1, 1, &w, &f);
    CHECK(tu_max_diff(&got, &cpu) == 0, "mean r=%d %dx%d border=%d: max diff %g", radius, width, height, border,
          tu_max_diff(&got, &cpu));
    tu_img_free(&src);
    tu_img_free(&cpu);
    tu_img_free(&got);
}

/* rm_kernel (mean.cu, radius 4 to 15) walked the same way: one warp down one band. */
static void rm_walk_warp(const ipk_img *src, const ipk_img *dst, int border, int radius, int warp, int y0, int band)
{
    const int k = 2 * radius + 1, d = RM_DEPTH, j_first = y0 - radius;
    const int n_in = (band < src->height - y0 ? band : src->height - y0) + k - 1;
    const uint32_t n = (uint32_t)(k * k);
    const rm_row zero = { 0, 0 };
    static uint32_t cs[32][RG_PX], p[32][RG_PX];
    static rm_row enter[32][RM_DEPTH], leave[32][RM_DEPTH];
    for (int lane = 0; lane < 32; lane++) {
        const int x = rm_lane_x(warp, lane);
        memset(cs[lane], 0, sizeof cs[lane]);
        for (int i = 0; i < d; i++) {
            enter[lane][i] = i < n_in ? rm_load(src->data, src->stride, src->width, src->height, border, x, j_first + i, 0)
                                      : zero;
            leave[lane][i] = zero;
        }
    }
    for (int g = 0; g < n_in; g += d)
        for (int i = 0; i < d && g + i < n_in; i++) {
            const int r = g + i;
            for (int lane = 0; lane < 32; lane++) {
                const int x = rm_lane_x(warp, lane);
                const rm_row a = enter[lane][i], b = leave[lane][i];
                if (r + d < n_in) {
                    enter[lane][i] = rm_load(src->data, src->stride, src->width, src->height, border, x, j_first + r + d, 0);
                    leave[lane][i] = r + d >= k ? rm_load(src->data, src->stride, src->width, src->height, border, x,
                                                          j_first + r + d - k, 0)
                                                : zero;
                }
                rm_add(cs[lane], a, 0);
                if (r >= k) rm_add(cs[lane], b, 1);
            }
            if (r < k - 1) continue;
            uint32_t before = 0;   /* the warp's exclusive scan of the lanes' totals */
            for (int lane = 0; lane < 32; lane++) {
                rm_prefix(cs[lane], p[lane]);
                const uint32_t total = p[lane][RG_PX - 1];
                for (int e = 0; e < RG_PX; e++) p[lane][e] += before;
                before += total;
            }
            const int y = y0 + r - (k - 1);
            for (int lane = 0; lane < 32; lane++) {
                const int x = rm_lane_x(warp, lane);
                if (!rm_stores(lane) || x >= src->width) continue;
                for (int e = 0; e < RG_PX && x + e < src->width; e++) {
                    const uint32_t hi = p[lane + rm_hi_lanes(e, radius)][rm_hi_elem(e, radius)];
                    const uint32_t lo = p[lane - rm_lo_lanes(e, radius)][rm_lo_elem(e, radius)];
                    const uint32_t cnt = border == IPK_SHRINK
                                             ? rm_span(x + e, src->width, radius) * rm_span(y, src->height, radius)
                                             : n;
                    ((uint8_t *)dst->data + (ptrdiff_t)y * dst->stride)[x + e] = (uint8_t)((hi - lo + cnt / 2) / cnt);
                }
            }
        }
}

static void check_mean_rm(int width, int height, int radius, int border, tu_rng *rng)
{
    ipk_img src = with_pad(width, height, IPK_U8, 1 + (int)(tu_next(rng) % 9), rng);
    for (int y = 0; y < height; y++)   /* runs of 255 drive the sums to their top */
        for (int x = (int)(tu_next(rng) % 5); x < width; x += 1 + (int)(tu_next(rng) % 3))
            *(uint8_t *)tu_px(&src, x, y, 0) = 255;
    ipk_img cpu = with_pad(width, height, IPK_U8, 3, NULL), got = with_pad(width, height, IPK_U8, 3, NULL);
    CHECK(ipk_mean_cpu(&src, &cpu, radius, (ipk_border)border, 1) == IPK_OK, "cpu mean");
    const int warps_x = (width + RM_OUT_COLS * 4 - 1) / (RM_OUT_COLS * 4) * 4;
    const int band = rg_band(height, warps_x / 4, (width + height) % 2 ? 132 * 8 : 5, rm_min_band());
    for (int y0 = 0; y0 < height; y0 += band)
        for (int w = 0; w < warps_x; w++) rm_walk_warp(&src, &got, border, radius, w, y0, band);
    CHECK(tu_max_diff(&got, &cpu) == 0, "mean rm r=%d %dx%d border=%d band=%d: max diff %g", radius, width, height,
          border, band, tu_max_diff(&got, &cpu));
    tu_img_free(&src);
    tu_img_free(&cpu);
    tu_img_free(&got);
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 37 }, { 29, 1 }, { 7, 5 }, { 8, 8 }, { 13, 50 }, { 257, 33 },
                                { 263, 49 }, { 1031, 41 }, { 2053, 7 } };
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static void conv_cases(tu_rng *rng)
{
    static const double b3[3] = { 1, 2, 1 }, b5[5] = { 1, 4, 6, 4, 1 }, b7[7] = { 1, 6, 15, 20, 15, 6, 1 };
    static const double sharpen[9] = { 0, -1, 0, -1, 5, -1, 0, -1, 0 };
    const double *binom[3] = { b3, b5, b7 };
    const double divs[4] = { 1, 16, 7, -0.5 }, offs[2] = { 0, 3.25 };
    double wt[49];
    int n = 0;
    for (int ki = 0; ki < 3; ki++) {
        const int k = 3 + 2 * ki;
        for (int kind = 0; kind < 5; kind++)
            for (int si = 0; si < N_SIZES; si++, n++) {
                double div = 1, off = 0;
                if (kind == 0) {   /* gaussian */
                    for (int i = 0; i < k * k; i++) wt[i] = binom[ki][i / k] * binom[ki][i % k];
                    div = (double)(1 << (4 * ki + 4));
                } else if (kind == 1) {   /* integer, not split, signed */
                    for (int i = 0; i < k * k; i++) wt[i] = ki == 0 ? sharpen[i] : (double)((int)(tu_next(rng) % 19) - 9);
                    div = divs[n % 4];
                    off = offs[n % 2];
                } else if (kind == 2) {   /* float, not split (as bench_gpu's) */
                    double sum = 0;
                    for (int i = 0; i < k * k; i++) sum += wt[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
                    for (int i = 0; i < k * k; i++) wt[i] /= sum;
                    div = divs[n % 4];
                    off = offs[(n / 4) % 2];
                } else if (kind == 3) {   /* float, split */
                    double col[7], row[7];
                    for (int i = 0; i < k; i++) {
                        col[i] = (double)(tu_next(rng) % 1000) / 731.0 - 0.4;
                        row[i] = (double)(tu_next(rng) % 1000) / 613.0 - 0.2;
                    }
                    for (int i = 0; i < k * k; i++) wt[i] = col[i / k] * row[i % k];
                    div = divs[n % 4];
                } else {   /* integer split with negative factors */
                    double col[7], row[7];
                    for (int i = 0; i < k; i++) {
                        col[i] = 1 + (int)(tu_next(rng) % 5);
                        row[i] = (int)(tu_next(rng) % 9) - 3;
                    }
                    for (int i = 0; i < k * k; i++) wt[i] = col[i / k] * row[i % k];
                    div = divs[n % 4];
                    off = offs[n % 2];
                }
                check_conv(SIZES[si][0], SIZES[si][1], wt, k, div, off, n % 4, (n / 3) % 3 == 0, rng);
            }
    }
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 1409);
    for (int r = 1; r <= 3; r++)
        for (int si = 0; si < N_SIZES; si++)
            for (int b = IPK_REPLICATE; b < IPK_SHRINK; b++) check_mean(SIZES[si][0], SIZES[si][1], r, b, &rng);
    conv_cases(&rng);
    CHECK(rg_band(8192, 8, 132 * 7, 16) == 15, "8192 rows on 8 block columns, 924 slots: 5 waves of 15-row bands");
    CHECK(rg_band(4000000, 1, 132 * 7, 16) == 62, "4M rows: at most 65535 bands");
    static const int rm_sizes[][2] = { { 1, 1 }, { 1, 40 }, { 31, 1 }, { 9, 13 }, { 223, 70 }, { 224, 31 },
                                       { 225, 65 }, { 897, 131 }, { 1031, 20 }, { 2053, 3 } };
    int n = 0;
    for (int r = 4; r <= RM_MAXR; r++)
        for (size_t si = 0; si < sizeof rm_sizes / sizeof rm_sizes[0]; si++, n++)
            check_mean_rm(rm_sizes[si][0], rm_sizes[si][1], r, n % 4, &rng);
    return tu_finish();
}
