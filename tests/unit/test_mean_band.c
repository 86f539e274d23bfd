/* The band mean kernel's thread arithmetic (kernels/common/mean_band.h) run on the host as
 * kernels/gpu/mean_band.cuh runs it: threads of 32 output columns over ipk_mband_span's columns,
 * walking bands of rows with their 64 columns' vertical sums in 16-bit pairs. Against the CPU mean,
 * bit for bit, on those columns: radius 1 to 15, the borders the kernel takes, the narrowest
 * widths it takes and odd ones, heights smaller than the window, bands shorter than it, pitches
 * that are not the width; runs of 0 and 255 drive the sums to their extremes. Columns outside the
 * span must stay as they were (the tile kernel makes them). Also the span and the rounding. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "border.h"
#include "mean_band.h"

/* The thread's 64 bytes of input row y through the vertical border, as its 16-byte loads read them. */
static void load_row(const ipk_img *src, int border, int x0, int y, uint32_t *w)
{
    memset(w, 0, IPK_MBAND_WORDS * sizeof *w);
    const int yi = ipk_border_index(y, src->height, border);
    if (yi < 0) return;
    const uint8_t *row = (const uint8_t *)src->data + (ptrdiff_t)yi * src->stride + x0 - IPK_MBAND_HALO;
    memcpy(w, row, IPK_MBAND_WORDS * sizeof *w);
}

/* One thread: step s enters row y0 - r + s, takes out the row 2r + 1 before it, emits from s = 2r. */
static void run_thread(const ipk_img *src, ipk_img *dst, int border, int r, int x0, int y0, int band)
{
    const int k = 2 * r + 1, rows = band < src->height - y0 ? band : src->height - y0, steps = rows + 2 * r;
    const uint32_t mul = ipk_mband_mul(r);
    uint32_t vp[IPK_MBAND_PAIRS];
    memset(vp, 0, sizeof vp);
    for (int s = 0; s < steps; s++) {
        uint32_t enter[IPK_MBAND_WORDS], leave[IPK_MBAND_WORDS];
        memset(leave, 0, sizeof leave);
        load_row(src, border, x0, y0 - r + s, enter);
        if (s >= k) load_row(src, border, x0, y0 - r + s - k, leave);
        ipk_mband_vstep(vp, enter, leave);
        if (s < 2 * r) continue;
        uint32_t out[IPK_MBAND_OUT / 4];
        ipk_mband_row(vp, r, mul, out);
        memcpy((uint8_t *)dst->data + (ptrdiff_t)(y0 + s - 2 * r) * dst->stride + x0, out, sizeof out);
    }
}

static void fill_runs(ipk_img *src, tu_rng *rng)
{
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x += 1 + (int)(tu_next(rng) % 23))
            for (int n = (int)(tu_next(rng) % 40), v = (tu_next(rng) & 1) ? 255 : 0; n > 0 && x < src->width; n--, x++)
                *(uint8_t *)tu_px(src, x, y, 0) = (uint8_t)v;
}

static void check_case(int w, int h, int pad, int radius, int border, int band, tu_rng *rng)
{
    int x_begin = 0, x_end = 0;
    CHECK(ipk_mband_span(w, &x_begin, &x_end), "width %d has band columns", w);
    ipk_img src = tu_img_random(w, h, 1, IPK_U8, pad, rng);
    fill_runs(&src, rng);
    ipk_img cpu = tu_img_zeros(w, h, 1, IPK_U8, 3), got = tu_img_zeros(w, h, 1, IPK_U8, 5);
    CHECK(ipk_mean_cpu(&src, &cpu, radius, (ipk_border)border, 1) == IPK_OK, "cpu mean");
    memset(got.data, 0xa5, (size_t)got.stride * (size_t)h);
    for (int y0 = 0; y0 < h; y0 += band)
        for (int x0 = x_begin; x0 < x_end; x0 += IPK_MBAND_OUT) run_thread(&src, &got, border, radius, x0, y0, band);
    int bad = 0, untouched = 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t g = *(const uint8_t *)tu_px(&got, x, y, 0), c = *(const uint8_t *)tu_px(&cpu, x, y, 0);
            if (x >= x_begin && x < x_end) bad += g != c;
            else untouched &= g == 0xa5;
        }
    CHECK(bad == 0, "%dx%d pad %d r=%d border=%d band=%d: %d outputs differ", w, h, pad, radius, border, band, bad);
    CHECK(untouched, "%dx%d r=%d: a column outside [%d, %d) was written", w, h, radius, x_begin, x_end);
    tu_img_free(&src);
    tu_img_free(&cpu);
    tu_img_free(&got);
}

/* Band columns start at the first tile's end and stop 16 or more columns short of the right side,
 * on a tile boundary; narrower images have none. */
static void check_span(void)
{
    int b = 0, e = 0;
    CHECK(!ipk_mband_span(271, &b, &e), "271 columns: none");
    CHECK(ipk_mband_span(272, &b, &e) && b == 128 && e == 256, "272 columns: [%d, %d)", b, e);
    CHECK(ipk_mband_span(8192, &b, &e) && b == 128 && e == 8064, "8192 columns: [%d, %d)", b, e);
    CHECK(ipk_mband_span(8208, &b, &e) && e == 8192, "8208 columns: end %d", e);
    for (int w = 1; w < 3000; w++)
        if (ipk_mband_span(w, &b, &e))
            CHECK(b == 128 && e % 128 == 0 && e + IPK_MBAND_HALO <= w && e + IPK_MBAND_HALO + 128 > w,
                  "width %d: [%d, %d)", w, b, e);
}

/* umulhi(s + n/2, mul) = floor((s + n/2) / n) for every window sum s at every radius. */
static void check_rounding(void)
{
    for (int r = 1; r <= IPK_MBAND_MAXR; r++) {
        const uint32_t n = (uint32_t)((2 * r + 1) * (2 * r + 1)), mul = ipk_mband_mul(r);
        int bad = 0;
        for (uint32_t s = 0; s <= 255 * n; s++) bad += ipk_swar_umulhi(s + n / 2, mul) != (s + n / 2) / n;
        CHECK(bad == 0, "r=%d: %d sums round wrong", r, bad);
    }
}

int main(void)
{
    tu_rng rng;
    tu_seed(&rng, 0x6d62616e);
    check_span();
    check_rounding();
    const int sizes[][2] = { { 272, 1 }, { 272, 2 }, { 300, 5 }, { 383, 31 }, { 400, 33 }, { 401, 40 },
                             { 527, 64 }, { 1031, 17 }, { 2053, 9 } };
    const int bands[] = { 1, 7, 32, 64, 1000 };
    int k = 0;
    for (int r = 1; r <= IPK_MBAND_MAXR; r++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++, k++)
            for (int border = IPK_REPLICATE; border <= IPK_ZERO; border++)
                check_case(sizes[i][0], sizes[i][1], 16 * (k % 3), r, border, bands[(k + border) % 5], &rng);
    check_case(700, 300, 0, 15, IPK_REFLECT101, 64, &rng);
    check_case(700, 300, 48, 15, IPK_REPLICATE, 29, &rng);
    return tu_finish();
}
