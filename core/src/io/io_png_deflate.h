/* What the whole-image PNG writer (io_png_write.c) and the streamed one (io_png_stream_write.c)
 * share, so that both write the same bytes: the cut into bands, each band's deflate, the chunks. */
#ifndef IMGPIPE_IO_PNG_DEFLATE_H
#define IMGPIPE_IO_PNG_DEFLATE_H
#include <stdio.h>
#include <stdint.h>
#include <zlib.h>
#include "io/io.h"

/* A band's filtered rows are deflated primed with the DICT_BYTES of filtered data before it. */
#define PNGX_DICT_BYTES ((size_t)32768)

typedef struct {
    size_t row_bytes;     /* unfiltered */
    unsigned bpp, allowed;
    int swap16, level, strategy;
    size_t band_rows, n_bands;
} pngx_plan;

/* The bands and settings for an image of this shape: bands of about 2 MiB of filtered rows, a
 * size that depends on the row length only (never on the thread count). */
void pngx_plan_make(pngx_plan *p, const ip_shape *s, int level);

typedef struct {
    unsigned char *data;
    size_t len;
    uLong adler;          /* of the band's filtered bytes */
    size_t filtered_len;
    int rc;
} pngx_band;

/* Deflates one band of filtered rows (in, len bytes), the dict_len bytes before it (up to
 * PNGX_DICT_BYTES) priming zlib; ends with a sync flush, or the final block for the last band.
 * libdeflate at levels 1 to 4, zlib otherwise. out->data is malloc'd. */
int pngx_deflate_band(const pngx_plan *p, const uint8_t *dict, size_t dict_len, const uint8_t *in, size_t len,
                      int last, pngx_band *out);

/* The file: signature, IHDR and the metadata's chunks; then the bands' data cut into IDAT chunks
 * of 1 MiB; then the checksum, the last IDAT and IEND. */
typedef struct pngx_idat pngx_idat;
int pngx_begin(FILE *f, const ip_shape *s, const struct io_meta *meta, int level, pngx_idat **w);
void pngx_idat_band(pngx_idat *w, const pngx_band *b);
void pngx_end(pngx_idat *w);
void pngx_idat_free(pngx_idat *w);
#endif
