/* orient_apply: the eight EXIF orientations against a reference loop that places every stored pixel
 * where a viewer shows it, for every depth and channel count, odd sizes, padded strides, threads. */
#include <string.h>
#include "io/orient.h"
#include "testutil.h"

/* Where the stored pixel (x, y) of a w x h image is shown, by EXIF's definitions. */
static void shown_at(int orientation, int w, int h, int x, int y, int *ux, int *uy)
{
    const int to[9][2] = { { 0, 0 }, { x, y }, { w - 1 - x, y }, { w - 1 - x, h - 1 - y }, { x, h - 1 - y },
                           { y, x }, { h - 1 - y, x }, { h - 1 - y, w - 1 - x }, { y, w - 1 - x } };
    *ux = to[orientation][0];
    *uy = to[orientation][1];
}

static ip_image as_ip(const ipk_img *k)
{
    ip_image img = { k->data, k->stride, { k->width, k->height, k->channels, (ip_dtype)k->dtype }, 0 };
    return img;
}

static void check_case(int w, int h, int ch, ipk_dtype t, int pad, int orientation, int threads, tu_rng *r)
{
    int swap = orientation >= 5;
    ipk_img src = tu_img_random(w, h, ch, t, pad, r);
    ipk_img dst = tu_img_zeros(swap ? h : w, swap ? w : h, ch, t, pad * 2 + 1);
    ip_image in = as_ip(&src), out = as_ip(&dst);
    ip_shape want = orient_shape(&in.shape, orientation);
    CHECK(want.width == dst.width && want.height == dst.height, "orientation %d: shape %dx%d", orientation,
          want.width, want.height);
    CHECK(orient_apply(&in, &out, orientation, threads) == IP_OK, "%dx%d orientation %d", w, h, orientation);
    size_t bytes = t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4;
    int bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int ux, uy;
            shown_at(orientation, w, h, x, y, &ux, &uy);
            for (int c = 0; c < ch; c++) bad += memcmp(tu_px(&dst, ux, uy, c), tu_px(&src, x, y, c), bytes) != 0;
        }
    CHECK(bad == 0, "%dx%d c%d dtype %d orientation %d threads %d: %d values wrong", w, h, ch, (int)t,
          orientation, threads, bad);
    tu_img_free(&src);
    tu_img_free(&dst);
}

static void check_refusals(void)
{
    uint8_t a[12], b[12];
    ip_image src = { a, 4, { 4, 3, 1, IP_U8 }, 0 }, same = { b, 4, { 4, 3, 1, IP_U8 }, 0 };
    ip_image swapped = { b, 3, { 3, 4, 1, IP_U8 }, 0 };
    CHECK(orient_apply(&src, &same, 6, 1) == IP_EINVAL, "a turn needs width and height swapped");
    CHECK(orient_apply(&src, &swapped, 3, 1) == IP_EINVAL, "a half turn keeps them");
    CHECK(orient_apply(&src, &same, 0, 1) == IP_EINVAL && orient_apply(&src, &same, 9, 1) == IP_EINVAL,
          "orientations outside 1..8");
    CHECK(orient_apply(&src, &swapped, 8, 1) == IP_OK, "a quarter turn into the swapped shape");
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 8);
    const int sizes[][2] = { { 1, 1 }, { 1, 29 }, { 29, 1 }, { 7, 5 }, { 64, 64 }, { 65, 63 }, { 131, 67 } };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int ti = 0; ti < 3; ti++)
            for (int ch = 1; ch <= 4; ch++)
                for (int o = 1; o <= 8; o++)
                    check_case(sizes[s][0], sizes[s][1], ch, types[ti], (int)((s + (size_t)o) % 5) * 3, o,
                               1 + (int)((s + (size_t)o) % 3), &r);
    check_refusals();
    return tu_finish();
}
