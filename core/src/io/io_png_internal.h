/* Shared by the io_png*.c files: chunk framing, row filters, the two decoders. */
#ifndef IMGPIPE_IO_PNG_INTERNAL_H
#define IMGPIPE_IO_PNG_INTERNAL_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "io/io.h"

/* Deflate expands at most 1032 to 1: a file claiming more image data than that is refused before
 * allocating for it. */
#define PNGX_DEFLATE_MAX_RATIO 1032

enum { PNGX_FILTER_NONE, PNGX_FILTER_SUB, PNGX_FILTER_UP, PNGX_FILTER_AVG, PNGX_FILTER_PAETH };
/* The filters libpng may choose from, as bits (1 << filter type). */
#define PNGX_ALL_FILTERS 0x1fu

/* The header and where the pieces of the image data lie in a file held in memory. */
typedef struct {
    uint32_t width, height;
    int depth, color_type, interlace;
    int has_plte, has_trns;             /* then libpng expands them */
    const unsigned char **idat;         /* each IDAT chunk's data, in file order */
    uint32_t *idat_len;
    size_t n_idat, idat_cap, idat_total;
    size_t at;                          /* where parsing goes on */
    int ended;                          /* IEND seen */
    int bad_crcs;                       /* ancillary chunks skipped for a bad CRC */
    char first_bad[5];                  /* the first one's name */
} pngx_layout;

/* Walk the chunks, checking lengths, names and CRCs as libpng does (a bad CRC on a critical
 * chunk is an error, on an ancillary one the chunk is skipped and counted in bad_crcs); a file without IEND, an
 * unknown critical chunk or a malformed IHDR is IP_EFORMAT. The head stops before the first
 * IDAT, so that the shape is known before the image data is looked at; the rest goes to IEND. */
int pngx_parse_head(const unsigned char *data, size_t size, pngx_layout *out, char *err, size_t errlen);
int pngx_parse_rest(const unsigned char *data, size_t size, pngx_layout *l, char *err, size_t errlen);
void pngx_layout_free(pngx_layout *l);

/* Chooses the filter for one row as libpng does (minimum sum of the filtered bytes taken as
 * signed, None, Sub, Up, Avg, Paeth in that order, ties to the earlier one) among the allowed
 * bits, writing the filter byte and the filtered row to out (n + 1 bytes). prev: the previous
 * unfiltered row, zeros for the first. try is scratch of n + 1 bytes. */
void pngx_filter_row(const uint8_t *row, const uint8_t *prev, size_t n, unsigned bpp, unsigned allowed,
                     uint8_t *out, uint8_t *try);
/* The filters libpng's writer allows for an image of this size (it drops those that cannot
 * help one row high or one pixel wide). */
unsigned pngx_allowed_filters(uint32_t width, uint32_t height);
/* Reconstructs a row of n bytes from its filtered bytes; prev is the previous reconstructed
 * row (zeros for the first). Returns 0, or -1 for an unknown filter type. */
int pngx_unfilter_row(int type, const uint8_t *filtered, uint8_t *row, const uint8_t *prev, size_t n,
                      unsigned bpp);
/* The same for bytes [i0, i1) of the row, given the bytes before i0 are already reconstructed. */
int pngx_unfilter_span(int type, const uint8_t *filtered, uint8_t *row, const uint8_t *prev, size_t i0, size_t i1,
                       unsigned bpp);
/* Reconstructs every row of an 8-bit image (filtered: rows of a filter byte and n bytes) into img
 * with up to `threads` threads, each owning a strip of columns one row behind its left neighbour. */
int pngx_unfilter_wavefront(const unsigned char *filtered, ip_image *img, unsigned bpp, int threads, char *err,
                            size_t errlen);

/* Decoders of a parsed file: ours (8/16-bit gray, gray+alpha, RGB, RGBA, not interlaced, no
 * tRNS) and libpng's for everything else. */
int pngx_decode_fast(const unsigned char *data, size_t size, pngx_layout *l, const io_options *opt, ip_image *out, char *err, size_t errlen);
int pngx_decode_libpng(const unsigned char *data, size_t size, const io_options *opt, ip_image *out,
                       char *err, size_t errlen);
int pngx_fast_path(const pngx_layout *l);
/* The file rebuilt from its header chunks and the image data up to the first damage after it
 * (a cut, bad IDAT CRCs, a broken chunk), ending in IEND: *out is malloc'ed. IP_EFORMAT when the
 * header chunks themselves are damaged or no IDAT follows them. */
int pngx_rebuild(const unsigned char *data, size_t size, unsigned char **out, size_t *out_size);
#endif
