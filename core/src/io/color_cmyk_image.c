#include "io/color_cmyk_image.h"
#include "io/color_cmyk.h"
#include "io/color_icc.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void plain(const void *src, ptrdiff_t src_stride, int src_step, int inverted, int alpha, ip_image *out,
                  int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int32_t y = 0; y < out->shape.height; y++)
        color_cmyk_to_rgb_row((const unsigned char *)src + (ptrdiff_t)y * src_stride, src_step, inverted, alpha,
                              (unsigned char *)out->data + (size_t)y * (size_t)out->stride, out->shape.dtype,
                              (size_t)out->shape.width);
}

/* lcms2 takes 4 samples a pixel in and gives 3 out: extra samples are set aside and put back. */
static int through_packed(const unsigned char *icc, size_t icc_len, const void *src, ptrdiff_t src_stride,
                          int src_step, int inverted, int alpha, ip_image *out, int threads, char *why, size_t whylen)
{
    size_t w = (size_t)out->shape.width, h = (size_t)out->shape.height, sb = ip_dtype_size(out->shape.dtype);
    if (w > SIZE_MAX / 4 / sb / h) return IP_ENOMEM;
    unsigned char *inks = calloc(w * h, 4 * sb), *rgb = malloc(w * h * 3 * sb);
    if (!inks || !rgb) {
        free(inks);
        free(rgb);
        return IP_ENOMEM;
    }
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++)
            memcpy(inks + (y * w + x) * 4 * sb, (const unsigned char *)src + (ptrdiff_t)y * src_stride +
                   x * (size_t)src_step * sb, 4 * sb);
    int rc = color_icc_cmyk_to_rgb(icc, icc_len, out->shape.dtype, inverted, inks, (ptrdiff_t)(w * 4 * sb), rgb,
                                   (ptrdiff_t)(w * 3 * sb), (int)w, (int)h, threads, why, whylen);
    for (size_t y = 0; !rc && y < h; y++) {
        const unsigned char *s = (const unsigned char *)src + (ptrdiff_t)y * src_stride;
        unsigned char *d = (unsigned char *)out->data + y * (size_t)out->stride;
        for (size_t x = 0; x < w; x++) {
            size_t c = (size_t)out->shape.channels;
            memcpy(d + x * c * sb, rgb + (y * w + x) * 3 * sb, 3 * sb);
            if (alpha >= 0) memcpy(d + (x * c + 3) * sb, s + (x * (size_t)src_step + (size_t)alpha) * sb, sb);
        }
    }
    free(inks);
    free(rgb);
    return rc;
}

int color_cmyk_image_to_rgb(const unsigned char *icc, size_t icc_len, const void *src, ptrdiff_t src_stride,
                            int src_step, int inverted, int alpha, ip_image *out, int threads, char *why,
                            size_t whylen)
{
    why[0] = '\0';
    if (!icc || !icc_len) {
        plain(src, src_stride, src_step, inverted, alpha, out, threads);
        return IP_OK;
    }
    int rc = src_step == 4 && alpha < 0
                 ? color_icc_cmyk_to_rgb(icc, icc_len, out->shape.dtype, inverted, src, src_stride, out->data,
                                         out->stride, out->shape.width, out->shape.height, threads, why, whylen)
                 : through_packed(icc, icc_len, src, src_stride, src_step, inverted, alpha, out, threads, why, whylen);
    if (rc == IP_ENOMEM) return rc;
    if (rc) plain(src, src_stride, src_step, inverted, alpha, out, threads);
    else why[0] = '\0';
    return IP_OK;
}
