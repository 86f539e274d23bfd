/* JPEG encoding in bands of MCU rows on all threads: each band is compressed by libjpeg-turbo as
 * an image of its own, with the same tables, and the bands' entropy-coded data are joined with
 * restart markers (a DRI segment sets the interval to one band), which reset exactly what a new
 * image starts from (the DC predictions, the bit buffer). The file decodes to the same pixels as
 * one libjpeg-turbo stream; its bytes depend on the image and the settings only, never on the
 * thread count. */
#ifndef IMGPIPE_IO_JPEG_BANDS_H
#define IMGPIPE_IO_JPEG_BANDS_H
#include <stdio.h>
#include <jpeglib.h>
#include "imgpipe/plugin.h"

typedef struct {
    /* After jpeg_set_defaults, before jpeg_start_compress, for every band: quality, sampling. */
    void (*configure)(void *user, struct jpeg_compress_struct *c);
    /* After jpeg_start_compress of the first band only: markers (metadata). May be NULL. */
    void (*after_start)(void *user, struct jpeg_compress_struct *c);
    void *user;
} jpeg_band_hooks;

/* How many bands an image of this shape is cut into with these settings (1: write it as one
 * stream); *band_rows: the rows of each band but the last. */
size_t jpeg_bands_plan(const ip_shape *shape, const jpeg_band_hooks *hooks, size_t *band_rows);

/* Writes the whole file to f; IP_EIO or IP_ENOMEM with a message. */
int jpeg_bands_write(FILE *f, const ip_image *img, const jpeg_band_hooks *hooks, int threads, char *err,
                     size_t errlen);
#endif
