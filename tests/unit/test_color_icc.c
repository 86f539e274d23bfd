/* color_icc_cmyk_to_rgb through CMYK profiles made here with lcms2 (version 2: a version 4 profile's
 * perceptual table would be rescaled to its reference black): one whose table holds the plain
 * formula R = (1 - C)(1 - K) (the output must agree with it, up to the table's interpolation), one
 * with red and blue exchanged (the output must follow the profile, not a formula), 8 and 16-bit,
 * inverted samples, padded rows, threads; profiles that are not CMYK refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/color_icc.h"
#include "testutil.h"

#ifdef IMGPIPE_HAVE_LCMS2
#include <lcms2.h>
#include "icc_make.h"

static unsigned char *srgb_profile(size_t *len)
{
    cmsHPROFILE p = cmsCreate_sRGBProfile();
    cmsUInt32Number n = 0;
    cmsSaveProfileToMem(p, NULL, &n);
    unsigned char *bytes = malloc(n);
    cmsSaveProfileToMem(p, bytes, &n);
    cmsCloseProfile(p);
    *len = n;
    return bytes;
}

/* Random CMYK (rows padded), converted; the largest and mean distance from the plain formula. */
static void convert_case(const unsigned char *icc, size_t icc_len, ip_dtype dtype, int inverted, int swap, int w, int h,
                         int threads, tu_rng *r)
{
    size_t sample = dtype == IP_U8 ? 1 : 2, in_stride = (size_t)w * 4 * sample + 6, out_stride = (size_t)w * 3 * sample + 10;
    unsigned char *cmyk = malloc(in_stride * (size_t)h), *rgb = calloc(out_stride, (size_t)h);
    double maxv = dtype == IP_U8 ? 255 : 65535, worst = 0, sum = 0;
    for (size_t i = 0; i < in_stride * (size_t)h; i++) cmyk[i] = (unsigned char)tu_next(r);
    char err[256];
    int rc = color_icc_cmyk_to_rgb(icc, icc_len, dtype, inverted, cmyk, (ptrdiff_t)in_stride, rgb, (ptrdiff_t)out_stride,
                                   w, h, threads, err, sizeof err);
    CHECK(rc == IP_OK, "convert: %s", err);
    for (int y = 0; y < h && rc == IP_OK; y++)
        for (int x = 0; x < w; x++) {
            double ink[4], want[3];
            for (int c = 0; c < 4; c++) {
                const unsigned char *p = cmyk + (size_t)y * in_stride + ((size_t)x * 4 + (size_t)c) * sample;
                double v = dtype == IP_U8 ? *p : *(const uint16_t *)p;
                ink[c] = (inverted ? maxv - v : v) / maxv;
            }
            for (int c = 0; c < 3; c++) want[c] = (1 - ink[swap ? 2 - c : c]) * (1 - ink[3]) * maxv;
            for (int c = 0; c < 3; c++) {
                const unsigned char *p = rgb + (size_t)y * out_stride + ((size_t)x * 3 + (size_t)c) * sample;
                double got = dtype == IP_U8 ? *p : *(const uint16_t *)p, d = fabs(got - want[c]) / maxv * 255;
                worst = d > worst ? d : worst;
                sum += d;
            }
        }
    double mean = sum / ((double)w * h * 3);
    CHECK(worst <= 1.5 && mean <= 0.5, "%s %s%s %dx%d: largest distance %.2f, mean %.3f (8-bit levels)",
          dtype == IP_U8 ? "u8" : "u16", inverted ? "inverted " : "", swap ? "red-blue profile" : "plain profile", w, h,
          worst, mean);
    free(cmyk);
    free(rgb);
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 12);
    size_t plain_len, swap_len, srgb_len;
    unsigned char *plain = make_cmyk_profile(0, &plain_len), *swapped = make_cmyk_profile(1, &swap_len);
    CHECK(plain_len > 128 && !memcmp(plain + 16, "CMYK", 4), "a CMYK profile made");
    const int sizes[][2] = { { 1, 1 }, { 37, 11 }, { 256, 3 } };
    for (int s = 0; s < 3; s++)
        for (int inverted = 0; inverted <= 1; inverted++) {
            convert_case(plain, plain_len, IP_U8, inverted, 0, sizes[s][0], sizes[s][1], 1 + s, &r);
            convert_case(plain, plain_len, IP_U16, inverted, 0, sizes[s][0], sizes[s][1], 2, &r);
            convert_case(swapped, swap_len, IP_U8, inverted, 1, sizes[s][0], sizes[s][1], 3, &r);
        }
    unsigned char *srgb = srgb_profile(&srgb_len), px[4] = { 0 }, out[3];
    char err[256];
    CHECK(color_icc_cmyk_to_rgb(srgb, srgb_len, IP_U8, 0, px, 4, out, 3, 1, 1, 1, err, sizeof err) == IP_EFORMAT,
          "an RGB profile is refused");
    unsigned char junk[300] = { 0 };
    memcpy(junk + 16, "CMYK", 4);
    CHECK(color_icc_cmyk_to_rgb(junk, sizeof junk, IP_U8, 0, px, 4, out, 3, 1, 1, 1, err, sizeof err) == IP_EFORMAT &&
          strstr(err, "profile"), "a damaged profile is refused: %s", err);
    CHECK(color_icc_cmyk_to_rgb(plain, plain_len, IP_F32, 0, px, 4, out, 3, 1, 1, 1, err, sizeof err) == IP_EINVAL,
          "float samples are refused");
    free(plain);
    free(swapped);
    free(srgb);
    return tu_finish();
}
#else
int main(void)
{
    char err[256];
    unsigned char px[4] = { 0 }, out[3];
    if (color_icc_cmyk_to_rgb(px, 4, IP_U8, 0, px, 4, out, 3, 1, 1, 1, err, sizeof err) != IP_EUNSUPPORTED) return 1;
    tu_skip("built without lcms2: CMYK through ICC profiles not available (the readers fall back to the plain formula)");
    return 0;
}
#endif
