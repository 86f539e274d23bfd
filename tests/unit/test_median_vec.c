/* The GPU vec median's lane arithmetic (kernels/common/median_vec.h) run on the host as the kernel
 * runs it. Every 0-1 window (values 0 and 255) of a pair of output rows at each of a thread's 16
 * positions, with random 0-1 pixels around it, against a sort of the window, paired and alone;
 * then whole images through modelled warps (32 threads x 16 pixels, edge bytes on the warps' first
 * and last lanes, the neighbours' words where the kernel shuffles, rows through the border, thread
 * tiles of 2, 4 and 6 rows) against ipk_median_cpu, every border the kernel takes, widths around the
 * 16-pixel groups and 512-pixel warps, odd heights, random, few-valued and 0/255-run images. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "convolve_vec.h"
#include "median_vec.h"

#define WARP 32
#define TILE_W (IPK_VEC_PX + 2)   /* a thread's pixels x-1 .. x+16 */

/* A row as the kernel holds it from pixels x-1 .. x+16 (px[0..17]), with byte edges (the warp's
 * first and last lanes). */
static void row_from_pixels(const uint8_t *px, uint32_t *row)
{
    memset(row, 0, IPK_MVEC_ROW * sizeof *row);
    for (int b = 0; b < IPK_VEC_PX; b++) row[b / 4] |= (uint32_t)px[1 + b] << (8 * (b % 4));
    row[IPK_MVEC_EDGE] = ipk_mvec_edge(ipk_vec_edge(px[0], 1), ipk_vec_edge(px[TILE_W - 1], 0));
}

static int cmp_u8(const void *a, const void *b) { return *(const uint8_t *)a - *(const uint8_t *)b; }

static uint8_t median_of(const uint8_t tile[][TILE_W], int r0, int k)
{
    uint8_t v[9];
    for (int dy = 0; dy < 3; dy++)
        for (int dx = 0; dx < 3; dx++) v[3 * dy + dx] = tile[r0 + dy][k + dx];
    qsort(v, 9, 1, cmp_u8);
    return v[4];
}

static uint8_t out_byte(const uint32_t *out, int k) { return (uint8_t)(out[k / 4] >> (8 * (k % 4))); }

/* Both output rows of a 4-row tile through ipk_mvec_pair and ipk_mvec_row, every one of the 16
 * outputs against the sort of its window. */
static int check_tile(const uint8_t tile[4][TILE_W])
{
    uint32_t rows[4][IPK_MVEC_ROW], pair[2][4], alone[2][4];
    for (int r = 0; r < 4; r++) row_from_pixels(tile[r], rows[r]);
    ipk_mvec_pair(rows[0], rows[1], rows[2], rows[3], pair[0], pair[1]);
    ipk_mvec_row(rows[0], rows[1], rows[2], alone[0]);
    ipk_mvec_row(rows[1], rows[2], rows[3], alone[1]);
    for (int o = 0; o < 2; o++)
        for (int k = 0; k < IPK_VEC_PX; k++) {
            const uint8_t want = median_of(tile, o, k);
            if (out_byte(pair[o], k) != want || out_byte(alone[o], k) != want) return 0;
        }
    return 1;
}

/* Every 0-1 pattern of the 4 x 3 pixels around output position k (the 0-1 principle: a min/max
 * network that takes the median of every 0-1 window takes it of every window). */
static void zero_one_windows(tu_rng *rng)
{
    for (int k = 0; k < IPK_VEC_PX; k++)
        for (uint32_t bits = 0; bits < (1u << 12); bits++) {
            uint8_t tile[4][TILE_W];
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < TILE_W; c++) tile[r][c] = (tu_next(rng) & 1) ? 255 : 0;
            for (int i = 0; i < 12; i++) tile[i / 3][k + i % 3] = ((bits >> i) & 1) ? 255 : 0;
            if (!check_tile((const uint8_t(*)[TILE_W])tile)) {
                CHECK(0, "0-1 window %#x at position %d: not the median", bits, k);
                return;
            }
        }
    for (int trial = 0; trial < 20000; trial++) {   /* random bytes, and few values (ties) */
        uint8_t tile[4][TILE_W];
        const uint32_t mask = trial & 1 ? 0xffu : 0x03u;
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < TILE_W; c++) tile[r][c] = (uint8_t)(tu_next(rng) & mask);
        if (!check_tile((const uint8_t(*)[TILE_W])tile)) {
            CHECK(0, "random tile %d: not the median", trial);
            return;
        }
    }
}

static uint8_t px_u8(const ipk_img *src, int x, int y, int border)
{
    int sx = ipk_border_index(x, src->width, border), sy = ipk_border_index(y, src->height, border);
    return sx < 0 || sy < 0 ? 0 : *(const uint8_t *)tu_px(src, sx, sy, 0);
}

/* Row y of every lane of the warp at x0 as the kernel builds it: 16 loaded bytes, then the edge word
 * from the neighbours' words 7 and 0 (the shuffles) or the lane's own edge byte. */
static void warp_row(const ipk_img *src, int x0, int y, int border, uint32_t rows[WARP][IPK_MVEC_ROW])
{
    for (int lane = 0; lane < WARP; lane++) {
        const int x = x0 + IPK_VEC_PX * lane;
        memset(rows[lane], 0, IPK_MVEC_ROW * sizeof rows[lane][0]);
        for (int b = 0; b < IPK_VEC_PX; b++)
            rows[lane][b / 4] |= (uint32_t)px_u8(src, x + b, y, border) << (8 * (b % 4));
    }
    for (int lane = 0; lane < WARP; lane++) {
        const int x = x0 + IPK_VEC_PX * lane;
        const uint32_t left = lane == 0 ? ipk_vec_edge(px_u8(src, x - 1, y, border), 1)
                                        : ipk_mvec_word(rows[lane - 1], 7);
        const uint32_t right = lane == WARP - 1 ? ipk_vec_edge(px_u8(src, x + IPK_VEC_PX, y, border), 0)
                                                : ipk_mvec_word(rows[lane + 1], 0);
        rows[lane][IPK_MVEC_EDGE] = ipk_mvec_edge(left, right);
    }
}

/* One thread tile of `tile_rows` output rows from y0 for the warp at x0, paired or alone. */
static void model_tile(const ipk_img *src, const ipk_img *dst, int border, int x0, int y0, int tile_rows, int paired)
{
    static uint32_t rows[8][WARP][IPK_MVEC_ROW];
    for (int r = 0; r < tile_rows + 2; r++) warp_row(src, x0, y0 - 1 + r, border, rows[r]);
    for (int lane = 0; lane < WARP; lane++) {
        const int x = x0 + IPK_VEC_PX * lane;
        for (int o = 0; o < tile_rows; o += paired ? 2 : 1) {
            uint32_t out[2][4];
            if (paired)
                ipk_mvec_pair(rows[o][lane], rows[o + 1][lane], rows[o + 2][lane], rows[o + 3][lane], out[0], out[1]);
            else ipk_mvec_row(rows[o][lane], rows[o + 1][lane], rows[o + 2][lane], out[0]);
            for (int k = 0; k < (paired ? 2 : 1); k++)
                for (int b = 0; b < IPK_VEC_PX && x + b < dst->width && y0 + o + k < dst->height; b++)
                    *(uint8_t *)tu_px(dst, x + b, y0 + o + k, 0) = out_byte(out[k], b);
        }
    }
}

static void model(const ipk_img *src, const ipk_img *dst, int border, int tile_rows, int paired)
{
    for (int y0 = 0; y0 < src->height; y0 += tile_rows)
        for (int x0 = 0; x0 < src->width; x0 += WARP * IPK_VEC_PX)
            model_tile(src, dst, border, x0, y0, tile_rows, paired);
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 2, 2 }, { 3, 5 }, { 16, 3 }, { 17, 6 }, { 18, 4 },
                                { 31, 2 }, { 37, 23 }, { 97, 13 }, { 511, 4 }, { 512, 3 }, { 513, 5 }, { 514, 2 },
                                { 1031, 7 } };
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

/* kind 0: random bytes; 1: runs of 0 and 255; 2: few values (many ties). */
static ipk_img test_image(int w, int h, int kind, tu_rng *rng)
{
    if (kind == 1) return tu_img_u8_extremes(w, h, rng);
    ipk_img im = tu_img_random(w, h, 1, IPK_U8, 3, rng);
    for (int y = 0; kind == 2 && y < h; y++)
        for (int x = 0; x < w; x++) *(uint8_t *)tu_px(&im, x, y, 0) &= 0x81;
    return im;
}

static void images(tu_rng *rng)
{
    static const int variants[][2] = { { 2, 0 }, { 4, 0 }, { 6, 0 }, { 2, 1 }, { 4, 1 } };   /* rows, paired */
    for (int s = 0; s < N_SIZES; s++)
        for (int border = IPK_REPLICATE; border <= IPK_ZERO; border++)
            for (int kind = 0; kind < 3; kind++) {
                const int w = SIZES[s][0], h = SIZES[s][1];
                ipk_img src = test_image(w, h, kind, rng);
                ipk_img want = tu_img_zeros(w, h, 1, IPK_U8, 0);
                CHECK(ipk_median_cpu(&src, &want, 1, (ipk_border)border, 1) == IPK_OK, "cpu median");
                for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
                    ipk_img got = tu_img_zeros(w, h, 1, IPK_U8, 5);
                    memset(got.data, 0xa5, (size_t)got.stride * (size_t)h);   /* an unwritten pixel shows */
                    model(&src, &got, border, variants[v][0], variants[v][1]);
                    CHECK(tu_max_diff(&got, &want) == 0,
                          "%dx%d border %d image %d rows %d paired %d: lanes differ by %g", w, h, border, kind,
                          variants[v][0], variants[v][1], tu_max_diff(&got, &want));
                    tu_img_free(&got);
                }
                tu_img_free(&src);
                tu_img_free(&want);
            }
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 1403);
    zero_one_windows(&rng);
    images(&rng);
    return tu_finish();
}
