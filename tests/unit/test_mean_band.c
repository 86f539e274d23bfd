/* The band mean kernel's thread arithmetic (kernels/common/mean_band.h) run on the host as
 * kernels/gpu/mean_band.cuh runs it: threads of 32 output columns over ipk_mband_span's columns,
 * walking bands of rows with their 64 or 96 columns' vertical sums in 16-bit pairs. Against the
 * CPU mean, bit for bit, on those columns: radius 1 to 31 (both halos), the borders the kernel
 * takes, the narrowest widths it takes and odd ones, heights smaller than the window, bands
 * shorter than it, pitches that are not the width; runs of 0 and 255 drive the sums to their
 * extremes. Columns outside the span must stay as they were (the tile kernels make them). Also the
 * span and the rounding. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "border.h"
#include "mean_band.h"

/* The thread's words of input row y at halo h through the vertical border, as its 16-byte loads
 * read them. */
static void load_row(const ipk_img *src, int border, int x0, int y, int h, uint32_t *w)
{
    memset(w, 0, IPK_MBAND_WORDS_MAX * sizeof *w);
    const int yi = ipk_border_index(y, src->height, border);
    if (yi < 0) return;
    const uint8_t *row = (const uint8_t *)src->data + (ptrdiff_t)yi * src->stride + x0 - h;
    memcpy(w, row, (size_t)ipk_mband_words(h) * sizeof *w);
}

/* One thread: step s enters row y0 - r + s, takes out the row 2r + 1 before it, emits from s = 2r. */
static void run_thread(const ipk_img *src, ipk_img *dst, int border, int r, int x0, int y0, int band)
{
    const int k = 2 * r + 1, rows = band < src->height - y0 ? band : src->height - y0, steps = rows + 2 * r;
    const uint32_t mul = ipk_mband_mul(r);
    const int h = ipk_mband_halo(r);
    uint32_t vp[IPK_MBAND_PAIRS_MAX];
    memset(vp, 0, sizeof vp);
    for (int s = 0; s < steps; s++) {
        uint32_t enter[IPK_MBAND_WORDS_MAX], leave[IPK_MBAND_WORDS_MAX];
        memset(leave, 0, sizeof leave);
        load_row(src, border, x0, y0 - r + s, h, enter);
        if (s >= k) load_row(src, border, x0, y0 - r + s - k, h, leave);
        ipk_mband_vstep(vp, enter, leave, ipk_mband_words(h));
        if (s < 2 * r) continue;
        uint32_t out[IPK_MBAND_OUT / 4];
        ipk_mband_row(vp, r, h, mul, out);
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
    CHECK(ipk_mband_span(w, ipk_mband_halo(radius), &x_begin, &x_end), "width %d r=%d has band columns", w, radius);
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

/* Band columns start at the first 128 and stop h or more columns short of the right side, on a
 * multiple of 128; narrower images have none. */
static void check_span(void)
{
    int b = 0, e = 0;
    CHECK(!ipk_mband_span(271, 16, &b, &e), "271 columns: none");
    CHECK(ipk_mband_span(272, 16, &b, &e) && b == 128 && e == 256, "272 columns: [%d, %d)", b, e);
    CHECK(!ipk_mband_span(287, 32, &b, &e), "287 columns, halo 32: none");
    CHECK(ipk_mband_span(288, 32, &b, &e) && b == 128 && e == 256, "288 columns, halo 32: [%d, %d)", b, e);
    CHECK(ipk_mband_span(8192, 16, &b, &e) && b == 128 && e == 8064, "8192 columns: [%d, %d)", b, e);
    CHECK(ipk_mband_span(8208, 16, &b, &e) && e == 8192, "8208 columns: end %d", e);
    CHECK(ipk_mband_halo(15) == 16 && ipk_mband_halo(16) == 32 && ipk_mband_halo(31) == 32, "halos");
    for (int h = 16; h <= 32; h += 16)
        for (int w = 1; w < 3000; w++)
            if (ipk_mband_span(w, h, &b, &e))
                CHECK(b == 128 && e % 128 == 0 && e + h <= w && e + h + 128 > w, "width %d halo %d: [%d, %d)", w, h, b, e);
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
    const int sizes[][2] = { { 288, 1 }, { 288, 2 }, { 300, 5 }, { 383, 31 }, { 416, 33 }, { 417, 40 },
                             { 527, 64 }, { 1031, 17 }, { 2053, 9 } };
    const int bands[] = { 1, 7, 32, 64, 1000 };
    int k = 0;
    for (int r = 1; r <= IPK_MBAND_MAXR; r++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++, k++)
            for (int border = IPK_REPLICATE; border <= IPK_ZERO; border++)
                check_case(sizes[i][0], sizes[i][1], 16 * (k % 3), r, border, bands[(k + border) % 5], &rng);
    check_case(272, 3, 0, 15, IPK_ZERO, 2, &rng);
    check_case(700, 300, 0, 15, IPK_REFLECT101, 64, &rng);
    check_case(700, 300, 48, 15, IPK_REPLICATE, 29, &rng);
    check_case(700, 300, 16, 31, IPK_REFLECT101, 64, &rng);
    check_case(800, 200, 0, 25, IPK_REPLICATE, 37, &rng);
    return tu_finish();
}
