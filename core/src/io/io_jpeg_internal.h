/* What the whole-image JPEG codec (io_jpeg.c) and the streamed one (io_jpeg_stream.c) share:
 * libjpeg's error handling, the output colour chosen for a file, the writer's settings. */
#ifndef IMGPIPE_IO_JPEG_INTERNAL_H
#define IMGPIPE_IO_JPEG_INTERNAL_H
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>
#include "io/io.h"
#include "io/meta_jpeg.h"

/* libjpeg's error manager, extended with a jump target and our message buffer. */
typedef struct {
    struct jpeg_error_mgr pub;
    struct jpeg_progress_mgr progress;
    jmp_buf jmp;
    int rc;                    /* what the jump returns: IP_EFORMAT, or IP_ELIMIT from the scan limit */
    /* The reader's limits, where its warnings go and whether they are refused; NULL for the writer. */
    const io_options *opt;
    const char *prefix;
    char *err;
    size_t errlen;
} jpegx_error_ctx;

/* Errors jump to ctx->jmp with the message in err; a reader's warnings go through io_warn (and
 * jump under --fail-on warning); a reader's scans are counted against the scan limit. */
void jpegx_init_error_ctx(jpegx_error_ctx *ctx, const io_options *opt, const char *prefix, char *err, size_t errlen);
/* Gray, RGB, or CMYK (turned into RGB by the caller) for the file's colour space, after
 * jpeg_read_header. */
int jpegx_choose_output_colour(struct jpeg_decompress_struct *c, char *err, size_t errlen);

/* Reads the header of f: *shape is the decoded image's, after the pixel limit and opt->on_shape;
 * *cmyk when rows come as CMYK. libjpeg's errors jump to the caller's setjmp; the others are
 * returned. Then jpeg_start_decompress (a progressive file's scans are all read there, so the scan
 * limit acts before the first row). */
int jpegx_read_start(jpegx_error_ctx *e, struct jpeg_decompress_struct *c, FILE *f, const io_options *opt,
                     ip_shape *shape, int *cmyk);
/* One CMYK row turned into RGB as Adobe (Photoshop) writes CMYK, 0 meaning full ink. */
void jpegx_cmyk_row(const unsigned char *cmyk, unsigned char *rgb, unsigned width);

/* The writer's settings, the same for the whole-image and the streamed writer. */
typedef struct {
    const io_options *opt;
    meta_jpeg_output meta;
} jpegx_settings;

/* After jpeg_set_defaults, for every file and band: quality, chroma, density (user: jpegx_settings). */
void jpegx_configure(void *user, struct jpeg_compress_struct *c);
/* The metadata's APP segments, right after the header. */
void jpegx_write_segments(void *user, struct jpeg_compress_struct *c);
/* Starts one stream of the image's shape to f with the settings, the segments written (libjpeg's
 * errors jump to the caller's setjmp). */
void jpegx_compress_start(struct jpeg_compress_struct *c, FILE *f, const ip_shape *shape, jpegx_settings *s);
#endif
