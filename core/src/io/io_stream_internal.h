/* The per-format halves of io_stream.h. */
#ifndef IMGPIPE_IO_STREAM_INTERNAL_H
#define IMGPIPE_IO_STREAM_INTERNAL_H
#include "io/io_stream.h"
#include <stdio.h>

/* A format's streaming reader: open reads the header (fd stays the caller's until close). */
typedef struct {
    int (*next)(void *codec, ip_image *rows, int *y0, char *err, size_t errlen);
    int (*block_rows)(const void *codec);
    uint64_t (*held_bytes)(const void *codec);   /* its band and its decoder's state */
    void (*close)(void *codec);
    /* TIFF's only (NULL elsewhere): io_stream_set_band_decoder, io_stream_band_decode_stat */
    int (*set_band_decoder)(void *codec, const tiff_band_decoder *d, char *why, size_t whylen);
    void (*band_decode_stat)(const void *codec, tiff_band_decode_stat *st);
    /* TIFF's only (NULL elsewhere): io_stream_next_into */
    int (*next_into)(void *codec, ip_image *dst, int *y0, char *err, size_t errlen);
} io_stream_read_ops;

typedef struct {
    int (*write)(void *codec, const ip_image *rows, char *err, size_t errlen);   /* rows in order */
    int (*finish)(void *codec, char *err, size_t errlen);   /* flushes and closes fd */
    void (*abort)(void *codec);                              /* closes fd */
} io_stream_write_ops;

int io_tiff_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape, const io_stream_read_ops **ops,
                        char *err, size_t errlen);
int io_png_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape,
                       const io_stream_read_ops **ops, char *err, size_t errlen);
int io_jpeg_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape,
                        const io_stream_read_ops **ops, char *err, size_t errlen);
int io_tiff_stream_create(int fd, const ip_shape *shape, const io_options *opt, void **codec,
                          const io_stream_write_ops **ops, char *err, size_t errlen);
int io_png_stream_create(int fd, const ip_shape *shape, const io_options *opt, void **codec,
                         const io_stream_write_ops **ops, char *err, size_t errlen);
int io_jpeg_stream_create(int fd, const ip_shape *shape, const io_options *opt, void **codec,
                          const io_stream_write_ops **ops, char *err, size_t errlen);
/* What each writer holds at most for this shape (its group of bands, its compressors' state),
 * given opt->stream_hold_bytes. */
uint64_t io_tiff_stream_write_bytes(const ip_shape *shape, const io_options *opt);
uint64_t io_png_stream_write_bytes(const ip_shape *shape, const io_options *opt);
uint64_t io_jpeg_stream_write_bytes(const ip_shape *shape, const io_options *opt);

/* A stdio stream of its own on fd, for readers through stdio (libpng, libjpeg); NULL with err. */
FILE *io_stream_read_file(int fd, char *err, size_t errlen);

/* Rows a reader of whole rows hands out at a time: about band_bytes of them (at most 16 MiB:
 * fewer, larger bands cost less per stage call), at least one, at most the image. */
uint32_t io_stream_band_rows(const ip_shape *shape, uint64_t band_bytes);
/* The rows of a reader that hands out whole rows in order, a band at a time (PNG, JPEG). */
typedef struct {
    ip_image band;
    uint32_t height, band_rows, next_row;
    int failed;
} io_stream_rows;
/* The band for an image of shape, about band_bytes of it (free s->band.data). */
int io_stream_rows_init(io_stream_rows *s, const ip_shape *shape, uint64_t band_bytes, char *err, size_t errlen);
/* The next band for io_stream_read_ops.next: read decodes the next n rows into s->band (the last
 * call ends the file); after a failure every call fails. what: the format, for the message. */
int io_stream_rows_next(io_stream_rows *s, int (*read)(void *codec, uint32_t n, char *err, size_t errlen), void *codec,
                        const char *what, ip_image *rows, int *y0, char *err, size_t errlen);
#endif
