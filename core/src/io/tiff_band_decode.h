/* A streamed TIFF's bands of strips or rows of tiles decoded beside libtiff (a GPU's,
 * tiff_gpu_bands.h): the reader reads each band's blocks raw and hands them over, a group of
 * bands at a time, then takes the bands' rows back one by one; whatever the decoder does not
 * return as exactly libtiff's pixels, the reader decodes with libtiff, whose verdict on the file
 * stands. No CUDA here: the reader sees only this. */
#ifndef IMGPIPE_TIFF_BAND_DECODE_H
#define IMGPIPE_TIFF_BAND_DECODE_H
#include <stddef.h>
#include <stdint.h>
#include <tiffio.h>
#include "imgpipe/plugin.h"
#include "io/io.h"

/* One block of a band: its bytes as stored, and what they decode to (len bytes: a whole tile,
 * or a strip's own rows, the image's last strip perhaps fewer than rows_per_strip). */
typedef struct {
    uint32_t index;
    const unsigned char *raw;
    size_t raw_len;
    size_t len;
} tiff_band_block;

typedef struct tiff_band_decoder {
    /* For the page tif is on (tags only read) and bands of up to blocks_down strips or rows of
     * tiles: IP_EUNSUPPORTED with why when the decoder does not take the file. */
    int (*open)(const struct tiff_band_decoder *d, TIFF *tif, uint32_t blocks_down, void **state, char *why,
                size_t whylen);
    /* Bands it decodes together at most: a GPU inflates each block on few threads, so one band's
     * blocks would leave it mostly idle. */
    uint32_t (*group)(const void *state);
    /* Optional (NULL: 1): groups it holds at once. Group g's bands are k = g * group + 0, 1, ...;
     * the reader stages and inflates every group in turn, then, each time it has taken the last
     * rows of one, stages that group again with the rows after all the others, so that the next
     * groups inflate while their turn comes. */
    uint32_t (*depth)(const void *state);
    /* Band k of the group being staged (in order, some perhaps left out) from its blocks: strips,
     * or rows of tiles across then down. The state keeps what it needs; the reader may reuse the
     * bytes. IP_OK, or why that band goes to libtiff. */
    int (*stage)(void *state, uint32_t k, const tiff_band_block *blocks, uint32_t n, uint32_t band_rows, char *why,
                 size_t whylen);
    /* Optional: where band k's blocks (raw_len set, raw not) are to be read, at[i] for the ith, so
     * that stage, called next for the same k with raw pointing there, copies nothing; the reader
     * then reads them on all its threads. IP_OK, or why the band goes to libtiff. */
    int (*place)(void *state, uint32_t k, const tiff_band_block *blocks, uint32_t n, unsigned char **at, char *why,
                 size_t whylen);
    /* The group staged so far decoded (or queued for it): IP_OK, or why all of its bands go to
     * libtiff. */
    int (*inflate)(void *state, char *why, size_t whylen);
    /* Band k's rows (packed) after its group's inflate: IP_OK only when they are libtiff's pixels;
     * anything else (among them its group's inflate failing) leaves the band to libtiff. */
    int (*rows)(void *state, uint32_t k, unsigned char *rows, char *why, size_t whylen);
    void (*close)(void *state);
    /* A band's raw bytes the state takes at most, for a decoder without place (the reader then
     * keeps a buffer of this size); a larger band goes to libtiff. */
    size_t (*raw_capacity)(const void *state);
    uint64_t (*held_bytes)(const void *state);   /* host memory the state holds */
    /* Where its time went so far, for --profile (a line without its newline). */
    void (*describe)(const void *state, char *text, size_t len);
    void *user;
} tiff_band_decoder;

/* Bands the reader gave a decoder, and those libtiff decoded after it declined them. */
typedef struct {
    uint64_t bands, declined;
    uint64_t placed;         /* bands read straight where the decoder asked, on all threads */
    char first_why[160];     /* why the first declined band was */
    double read_ms, decode_ms;   /* reading the bands' blocks raw, and the decoder's calls */
    char steps[160];         /* the decoder's own account of its time */
} tiff_band_decode_stat;
#endif
