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

/* For a writer handed the rows a group of bands at a time (io_jpeg_stream_write.c). */
typedef struct {
    size_t n, band_rows;
    unsigned height, interval;   /* the image's, and the restart interval in MCUs (one band) */
} jpeg_bands_layout;
/* -1: the image is written as one stream. */
int jpeg_bands_layout_make(const ip_shape *shape, const jpeg_band_hooks *hooks, jpeg_bands_layout *l);

typedef struct {
    unsigned char *data;   /* the band's whole JPEG, from jpeg_mem_dest */
    unsigned long len;
    size_t ecs_start;      /* its entropy-coded data: [ecs_start, len - 2) */
    size_t sos;            /* where its SOS segment starts */
    int rc;
    char message[JMSG_LENGTH_MAX];
} jpeg_band_out;
/* Encodes rows [y0, y0 + rows) of img as band (first: the file's first, with the markers);
 * out->rc and out->message say how it went; free out->data. */
void jpeg_bands_encode(const ip_image *img, const jpeg_band_hooks *hooks, size_t y0, size_t rows, int first,
                       jpeg_band_out *out);
/* Writes band k (for the first, the file's header too; for the last, the end marker); -1 on a
 * write error. */
int jpeg_bands_put(FILE *f, const jpeg_band_out *b, size_t k, const jpeg_bands_layout *l);

/* Writes the whole file to f; IP_EIO or IP_ENOMEM with a message. */
int jpeg_bands_write(FILE *f, const ip_image *img, const jpeg_band_hooks *hooks, int threads, char *err,
                     size_t errlen);
#endif
