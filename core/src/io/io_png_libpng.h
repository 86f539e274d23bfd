/* What the libpng decoders (whole, io_png_libpng.c, and by rows, io_png_stream_read.c) share:
 * the error and warning handlers and the samples asked of libpng. */
#ifndef IMGPIPE_IO_PNG_LIBPNG_H
#define IMGPIPE_IO_PNG_LIBPNG_H
#include <png.h>
#include <setjmp.h>
#include "io/io_png_internal.h"

/* libpng reports errors through these; the error function must not return, so it jumps back
 * to the setjmp of the function calling libpng (err and errlen: where the message goes). */
typedef struct {
    jmp_buf jmp;
    char *err;
    size_t errlen;
    const io_options *opt;
} pngx_error_ctx;

void pngx_on_error(png_structp png, png_const_charp msg);
/* Damage libpng went past (a bad ancillary CRC, extra image data): decoded with a warning, or
 * refused (a jump, as an error) under --fail-on warning. */
void pngx_on_warning(png_structp png, png_const_charp msg);
/* The decoded shape after pngx_request_plain_samples, known from the header alone. */
ip_shape pngx_decoded_shape(png_structp png, png_infop info);
/* Asks libpng for 8 or 16-bit gray, gray+alpha, RGB or RGBA in host byte order. */
void pngx_request_plain_samples(png_structp png, png_infop info);
/* Whether a file of file_bytes is large enough to inflate to an image of this size, samples a
 * pixel and bits a sample as stored (ignoring filter bytes, which keeps it a lower bound for
 * interlaced files too). */
int pngx_enough_data(uint32_t width, uint32_t height, unsigned channels, unsigned depth, uint64_t file_bytes,
                     char *err, size_t errlen);
#endif
