/* A streamed TIFF's bands of strips decoded beside libtiff (a GPU's, tiff_gpu_bands.h): the
 * reader reads each band's strips raw and hands them over; whatever the decoder does not return
 * as exactly libtiff's pixels, the reader decodes with libtiff, whose verdict on the file stands.
 * No CUDA here: the reader sees only this. */
#ifndef IMGPIPE_TIFF_BAND_DECODE_H
#define IMGPIPE_TIFF_BAND_DECODE_H
#include <stddef.h>
#include <stdint.h>
#include <tiffio.h>
#include "imgpipe/plugin.h"
#include "io/io.h"

/* One strip of a band: its bytes as stored, and the rows they decode to (len bytes: its own
 * rows, the image's last strip perhaps fewer than rows_per_strip). */
typedef struct {
    uint32_t index;
    const unsigned char *raw;
    size_t raw_len;
    size_t len;
} tiff_band_strip;

typedef struct tiff_band_decoder {
    /* For the page tif is on (tags only read) and bands of up to max_strips strips of
     * rows_per_strip rows: IP_EUNSUPPORTED with why when the decoder does not take the file. */
    int (*open)(const struct tiff_band_decoder *d, TIFF *tif, const io_options *opt, uint32_t rows_per_strip,
                uint32_t max_strips, void **state, char *why, size_t whylen);
    /* The strips' pixels into rows (packed, strips[0]'s first row first): IP_OK only when they are
     * libtiff's; anything else leaves the band to libtiff. */
    int (*decode)(void *state, const tiff_band_strip *strips, uint32_t n, unsigned char *rows, char *why,
                  size_t whylen);
    void (*close)(void *state);
    /* A band's raw bytes the state takes at most; a larger band goes to libtiff. */
    size_t (*raw_capacity)(const void *state);
    uint64_t (*held_bytes)(const void *state);   /* host memory the state holds */
    void *user;
} tiff_band_decoder;

/* Bands the reader gave a decoder, and those libtiff decoded after it declined them. */
typedef struct {
    uint64_t bands, declined;
    char first_why[160];     /* why the first declined band was */
} tiff_band_decode_stat;
#endif
