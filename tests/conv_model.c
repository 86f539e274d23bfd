#include "conv_model.h"
#include <math.h>
#include "border.h"

#define MAX_TAPS 81

float tu_conv_cpu_sum(const float *w, const float *x, int taps)
{
    float acc = 0.0f;
    for (int t = 0; t < taps; t++) acc = acc + w[t] * x[t];
    return acc;
}

uint8_t tu_conv_cpu_byte(float v)
{
    const float r = rintf(v);
    return (uint8_t)(r > 255.0f ? 255.0f : r > 0.0f ? r : 0.0f);
}

void tu_conv_random_window(float *x, int taps, int style, tu_rng *rng)
{
    for (int t = 0; t < taps; t++) {
        const uint32_t rnd = tu_next(rng);
        x[t] = style == 0 ? (float)(rnd & 255u) : style == 1 ? (rnd & 1u ? 255.0f : 0.0f)
             : style == 2 ? (float)(rnd % 3u == 0 ? 255u : rnd & 255u) : (float)(120u + rnd % 16u);
    }
}

static float px_u8(const ipk_img *src, int x, int y, int border)
{
    const int sx = ipk_border_index(x, src->width, border), sy = ipk_border_index(y, src->height, border);
    return sx < 0 || sy < 0 ? 0.0f : (float)*(const uint8_t *)tu_px(src, sx, sy, 0);
}

static const int SIZES[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 4, 5 }, { 37, 35 }, { 127, 7 }, { 131, 67 } };

double tu_conv_check_model(const char *name, tu_conv_model model, const void *plan, const double *w, int k,
                           double divisor, double offset, tu_rng *rng)
{
    const int r = k / 2;
    long open = 0, pixels = 0;
    if (k * k > MAX_TAPS) {
        CHECK(0, "%s: %dx%d is past the model's windows", name, k, k);
        return 1.0;
    }
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
        for (int border = 0; border < 4; border++) {
            ipk_img src = s % 2 ? tu_img_u8_extremes(SIZES[s][0], SIZES[s][1], rng)
                                : tu_img_random(SIZES[s][0], SIZES[s][1], 1, IPK_U8, 3, rng);
            ipk_img want = tu_img_zeros(src.width, src.height, 1, IPK_U8, 0);
            ipk_conv_params cp = { w, k, k, divisor, offset, (ipk_border)border };
            CHECK(ipk_convolve_cpu(&src, &want, &cp, 1) == IPK_OK, "%s: cpu", name);
            long wrong = 0;
            for (int y = 0; y < src.height; y++)
                for (int x = 0; x < src.width; x++) {
                    float win[MAX_TAPS];
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) win[ky * k + kx] = px_u8(&src, x - r + kx, y - r + ky, border);
                    wrong += model(plan, win, &open) != *(const uint8_t *)tu_px(&want, x, y, 0);
                }
            pixels += (long)src.width * src.height;
            CHECK(wrong == 0, "%s %dx%d on %dx%d border %d: %ld pixels not the CPU's", name, k, k, src.width,
                  src.height, border, wrong);
            tu_img_free(&src);
            tu_img_free(&want);
        }
    return (double)open / (double)pixels;
}
