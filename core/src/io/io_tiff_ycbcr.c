#include "io/io_tiff_ycbcr.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct tiff_ycbcr {
    TIFFYCbCrToRGB *table;
    unsigned hs, vs;
};

/* libtiff's own checks before it builds the tables (tif_getimage.c): NaN or a zero green
 * coefficient would divide badly, references out of int range would overflow. */
static int usable(const float *luma, const float *ref, char *why, size_t whylen)
{
    if (isnan(luma[0]) || isnan(luma[1]) || isnan(luma[2]) || fabsf(luma[1]) < 1e-10f) {
        snprintf(why, whylen, "invalid YCbCrCoefficients");
        return 0;
    }
    for (int i = 0; i < 6; i++)
        if (!(ref[i] > (float)(-0x7FFFFFFF + 128) && ref[i] < (float)0x7FFFFFFF)) {
            snprintf(why, whylen, "invalid ReferenceBlackWhite");
            return 0;
        }
    return 1;
}

static int valid_factor(unsigned f)
{
    return f == 1 || f == 2 || f == 4;
}

tiff_ycbcr *tiff_ycbcr_open(TIFF *tif, unsigned *hs, unsigned *vs, char *why, size_t whylen)
{
    float *luma = NULL, *ref = NULL;
    uint16_t h = 0, v = 0;
    TIFFGetFieldDefaulted(tif, TIFFTAG_YCBCRCOEFFICIENTS, &luma);
    TIFFGetFieldDefaulted(tif, TIFFTAG_REFERENCEBLACKWHITE, &ref);
    TIFFGetFieldDefaulted(tif, TIFFTAG_YCBCRSUBSAMPLING, &h, &v);
    if (!luma || !ref || !usable(luma, ref, why, whylen)) {
        if (!luma || !ref) snprintf(why, whylen, "no YCbCr coefficients");
        return NULL;
    }
    if (!valid_factor(h) || !valid_factor(v)) {
        snprintf(why, whylen, "YCbCr subsampling %ux%u (TIFF allows 1, 2, 4)", h, v);
        return NULL;
    }
    /* The size tiffio.h's TIFFYCbCrToRGBInit expects: the struct, rounded to a long, then its tables. */
    size_t head = (sizeof(TIFFYCbCrToRGB) + sizeof(long) - 1) / sizeof(long) * sizeof(long);
    size_t tables = 4 * 256 * sizeof(TIFFRGBValue) + 2 * 256 * sizeof(int) + 3 * 256 * sizeof(int32_t);
    tiff_ycbcr *t = calloc(1, sizeof *t);
    if (t) t->table = calloc(1, head + tables);
    if (!t || !t->table || TIFFYCbCrToRGBInit(t->table, luma, ref) < 0) {
        tiff_ycbcr_free(t);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    t->hs = *hs = h;
    t->vs = *vs = v;
    return t;
}

void tiff_ycbcr_free(tiff_ycbcr *t)
{
    if (!t) return;
    free(t->table);
    free(t);
}

static inline void put_rgb(TIFFYCbCrToRGB *table, unsigned y, int cb, int cr, unsigned char *dst)
{
    uint32_t r, g, b;
    TIFFYCbCrtoRGB(table, y, cb, cr, &r, &g, &b);
    dst[0] = (unsigned char)r, dst[1] = (unsigned char)g, dst[2] = (unsigned char)b;
}

void tiff_ycbcr_units(const tiff_ycbcr *t, const unsigned char *units, uint32_t units_across, uint32_t cols,
                      uint32_t rows, unsigned char *dst, size_t dst_stride)
{
    size_t unit = (size_t)t->hs * t->vs + 2;
    for (uint32_t by = 0; by * t->vs < rows; by++)
        for (uint32_t bx = 0; bx < units_across && bx * t->hs < cols; bx++) {
            const unsigned char *u = units + ((size_t)by * units_across + bx) * unit;
            int cb = u[unit - 2], cr = u[unit - 1];
            for (unsigned dy = 0; dy < t->vs && by * t->vs + dy < rows; dy++)
                for (unsigned dx = 0; dx < t->hs && bx * t->hs + dx < cols; dx++) {
                    unsigned char *px = dst + (size_t)(by * t->vs + dy) * dst_stride + (size_t)(bx * t->hs + dx) * 3;
                    put_rgb(t->table, u[dy * t->hs + dx], cb, cr, px);
                }
        }
}

void tiff_ycbcr_in_place(const tiff_ycbcr *t, ip_image *img, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int32_t y = 0; y < img->shape.height; y++) {
        unsigned char *row = (unsigned char *)img->data + (size_t)y * (size_t)img->stride;
        for (int32_t x = 0; x < img->shape.width; x++) {
            unsigned char *px = row + (size_t)x * 3;
            put_rgb(t->table, px[0], px[1], px[2], px);
        }
    }
}
