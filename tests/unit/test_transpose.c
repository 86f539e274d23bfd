/* transpose kernel: out(x, y) = in(y, x) for every depth and channel count, odd sizes, strides. */
#include <string.h>
#include "testutil.h"

static void check_case(int w, int h, int ch, ipk_dtype t, int pad, int threads, tu_rng *r)
{
    ipk_img src = tu_img_random(w, h, ch, t, pad, r);
    ipk_img dst = tu_img_zeros(h, w, ch, t, pad * 2 + 1);
    CHECK(ipk_transpose_cpu(&src, &dst, threads) == IPK_OK, "%dx%d", w, h);
    int bad = 0;
    size_t bytes = t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++)
                bad += memcmp(tu_px(&dst, y, x, c), tu_px(&src, x, y, c), bytes) != 0;
    CHECK(bad == 0, "%dx%d c%d dtype %d threads %d: %d values wrong", w, h, ch, (int)t, threads, bad);
    tu_img_free(&src);
    tu_img_free(&dst);
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 5);
    const int sizes[][2] = { { 1, 1 }, { 1, 40 }, { 40, 1 }, { 7, 5 }, { 33, 31 }, { 37, 23 }, { 130, 67 } };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int ti = 0; ti < 3; ti++)
            for (int ch = 1; ch <= 4; ch++)
                check_case(sizes[s][0], sizes[s][1], ch, types[ti], (int)(s * 3 % 7), 1 + (int)(s % 3), &r);
    uint8_t buf[16];
    ipk_img a = { buf, 4, 4, 2, 1, IPK_U8 }, b = { buf, 4, 4, 2, 1, IPK_U8 };
    CHECK(ipk_transpose_cpu(&a, &b, 1) == IPK_EINVAL, "a 4x2 destination for a 4x2 source must be refused");
    return tu_finish();
}
