/* YCbCr TIFF without JPEG compression (any other compression; chroma subsampled or not) to RGB,
 * as libtiff's own RGBA reader converts it and Pillow gets it: each chroma pair serves its whole
 * subsampling block, and libtiff's TIFFYCbCrtoRGB applies the file's coefficients and reference
 * black and white. The blocks are decoded as any other TIFF's, by all threads. */
#ifndef IMGPIPE_IO_TIFF_YCBCR_H
#define IMGPIPE_IO_TIFF_YCBCR_H
#include <stddef.h>
#include <stdint.h>
#include <tiffio.h>
#include "imgpipe/plugin.h"

typedef struct tiff_ycbcr tiff_ycbcr;

/* The conversion for the handle's current directory (8-bit samples). NULL with why filled when
 * the tags are unusable (or out of memory). *hs, *vs: the subsampling (1, 2 or 4 each). */
tiff_ycbcr *tiff_ycbcr_open(TIFF *tif, unsigned *hs, unsigned *vs, char *why, size_t whylen);
void tiff_ycbcr_free(tiff_ycbcr *t);

/* Converts a decoded strip or tile of data units (for each hs x vs block of pixels: its luma
 * samples row by row, then Cb and Cr), units_across blocks to a row of blocks, into the
 * cols x rows pixels at dst (RGB rows dst_stride bytes apart). */
void tiff_ycbcr_units(const tiff_ycbcr *t, const unsigned char *units, uint32_t units_across, uint32_t cols,
                      uint32_t rows, unsigned char *dst, size_t dst_stride);

/* Without subsampling the samples were read as any 3-sample image: converted in place. */
void tiff_ycbcr_in_place(const tiff_ycbcr *t, ip_image *img, int threads);
#endif
