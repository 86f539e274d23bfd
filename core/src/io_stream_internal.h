/* The per-format halves of io_stream.h. */
#ifndef IMGPIPE_IO_STREAM_INTERNAL_H
#define IMGPIPE_IO_STREAM_INTERNAL_H
#include "io_stream.h"

/* A format's streaming reader: open reads the header (fd stays the caller's until close). */
typedef struct {
    int (*next)(void *codec, ip_image *rows, int *y0, char *err, size_t errlen);
    int (*block_rows)(const void *codec);
    void (*close)(void *codec);
} io_stream_read_ops;

typedef struct {
    int (*write)(void *codec, const ip_image *rows, char *err, size_t errlen);   /* rows in order */
    int (*finish)(void *codec, char *err, size_t errlen);   /* flushes and closes fd */
    void (*abort)(void *codec);                              /* closes fd */
} io_stream_write_ops;

int io_tiff_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape, const io_stream_read_ops **ops,
                        char *err, size_t errlen);
int io_tiff_stream_create(int fd, const ip_shape *shape, const io_options *opt, void **codec,
                          const io_stream_write_ops **ops, char *err, size_t errlen);
#endif
