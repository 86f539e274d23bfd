/* Shared between io.c and the per-format codecs; not part of the core's interface. */
#ifndef IMGPIPE_IO_INTERNAL_H
#define IMGPIPE_IO_INTERNAL_H
#include <stdio.h>
#include "io/io.h"

/* Readers decode the whole file into a freshly allocated packed image (out->data NULL on
 * failure). TIFF reads through the descriptor, which it does not close. */
int io_read_tiff(int fd, const io_options *opt, ip_image *out, char *err, size_t errlen);
int io_read_png(FILE *f, const io_options *opt, ip_image *out, char *err, size_t errlen);
int io_read_jpeg(FILE *f, const io_options *opt, ip_image *out, char *err, size_t errlen);
/* Decodes f (at its start) with the reader of fmt; first reads its metadata when opt->meta or
 * opt->autorotate asks for it, and turns the pixels upright (io_meta.c). */
int io_decode_with_meta(FILE *f, io_format fmt, const io_options *opt, ip_image *out, char *err, size_t errlen);

/* Writers own fd: they always close it, and a failed close is a failed write. The shape
 * has already passed io_check_writable. */
int io_write_tiff(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen);
int io_write_png(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen);
int io_write_jpeg(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen);

/* Reads the whole stream (a FILE of any kind) into malloc'd memory. */
int io_slurp(FILE *f, unsigned char **data, size_t *size, char *err, size_t errlen);
/* fdopen for writing; closes fd and fills err when that fails. */
FILE *io_fdopen_write(int fd, char *err, size_t errlen);
/* fclose with the stream's error state and the close itself checked. */
int io_fclose_checked(FILE *f, char *err, size_t errlen);
/* Thread-safe strerror. */
const char *io_strerror(int errnum, char *buf, size_t len);
int io_host_is_little_endian(void);
/* A new temporary file beside path (malloc'd name in *tmp_path, mode as a plain new file), for
 * writers that rename it into place when complete and unlink it otherwise; opt's temp_slot (opt
 * may be NULL) names it here, and io_temp_done clears it when it is gone. */
int io_temp_open(const char *path, const io_options *opt, char **tmp_path, int *fd, char *err, size_t errlen);
void io_temp_done(const io_options *opt, const char *tmp_path);
/* Fills the open temporary file; owns fd (always closes it). */
typedef int (*io_fill_fn)(int fd, void *ctx, char *err, size_t errlen);
/* Writes path atomically: a temporary beside it filled by fill(ctx), renamed into place when
 * complete and removed otherwise. */
int io_write_atomically(const char *path, const io_options *opt, io_fill_fn fill, void *ctx, char *err, size_t errlen);
#endif
