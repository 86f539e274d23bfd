/* grayscale kernel against a plain reference: every depth, 3 and 4 channels, odd sizes and
 * strides, several weight sets, thread counts. */
#include <math.h>
#include "testutil.h"

static const int32_t weight_sets[][3] = { { 9798, 19235, 3735 }, { 6966, 23436, 2366 }, { 10923, 10923, 10922 } };

static double reference(const ipk_img *src, int x, int y, const int32_t w[3])
{
    double r = tu_get(src, x, y, 0), g = tu_get(src, x, y, 1), b = tu_get(src, x, y, 2);
    if (src->dtype == IPK_F32)
        return (float)r * ((float)w[0] / 32768.0f) + (float)g * ((float)w[1] / 32768.0f) +
               (float)b * ((float)w[2] / 32768.0f);
    uint64_t sum = (uint64_t)r * (uint64_t)w[0] + (uint64_t)g * (uint64_t)w[1] + (uint64_t)b * (uint64_t)w[2];
    return (double)((sum + 16384) >> 15);
}

static void check_case(int w, int h, int ch, ipk_dtype t, int pad, const int32_t weights[3], int threads, tu_rng *r)
{
    ipk_img src = tu_img_random(w, h, ch, t, pad, r);
    ipk_img dst = tu_img_zeros(w, h, 1, t, pad + 3);
    CHECK(ipk_grayscale_cpu(&src, &dst, weights, threads) == IPK_OK, "%dx%d c%d t%d", w, h, ch, (int)t);
    double worst = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double d = fabs(tu_get(&dst, x, y, 0) - reference(&src, x, y, weights));
            worst = d > worst ? d : worst;
        }
    CHECK(worst <= (t == IPK_F32 ? 1e-6 : 0), "%dx%d c%d dtype %d threads %d: max diff %g", w, h, ch, (int)t,
          threads, worst);
    tu_img_free(&src);
    tu_img_free(&dst);
}

/* Hand-worked values: OpenCV's RGB2GRAY of pure colours and of white. */
static void check_known_values(void)
{
    uint8_t px[4][3] = { { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 }, { 255, 255, 255 } };
    uint8_t out[4];
    ipk_img src = { px, 12, 4, 1, 3, IPK_U8 }, dst = { out, 4, 4, 1, 1, IPK_U8 };
    CHECK(ipk_grayscale_cpu(&src, &dst, weight_sets[0], 1) == IPK_OK, "known values");
    CHECK(out[0] == 76 && out[1] == 150 && out[2] == 29 && out[3] == 255, "got %d %d %d %d", out[0], out[1],
          out[2], out[3]);
}

static void check_refusals(void)
{
    uint8_t buf[64];
    ipk_img two = { buf, 8, 4, 2, 2, IPK_U8 }, one = { buf, 4, 4, 2, 1, IPK_U8 };
    ipk_img wrong = { buf, 8, 4, 2, 1, IPK_U16 }, rgb = { buf, 12, 4, 2, 3, IPK_U8 };
    CHECK(ipk_grayscale_cpu(&two, &one, weight_sets[0], 1) == IPK_EINVAL, "2 channels must be refused");
    CHECK(ipk_grayscale_cpu(&rgb, &wrong, weight_sets[0], 1) == IPK_EINVAL, "dtype change must be refused");
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 11);
    const int sizes[][2] = { { 1, 1 }, { 1, 17 }, { 17, 1 }, { 7, 5 }, { 37, 23 }, { 101, 61 }, { 1031, 3 } };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int ti = 0; ti < 3; ti++)
            for (int ch = 3; ch <= 4; ch++)
                for (int wi = 0; wi < 3; wi++)
                    check_case(sizes[s][0], sizes[s][1], ch, types[ti], (int)(s * 5 % 11), weight_sets[wi],
                               1 + (int)(s % 3), &r);
    check_known_values();
    check_refusals();
    return tu_finish();
}
