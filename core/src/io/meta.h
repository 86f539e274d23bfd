/* Metadata that travels beside an image from its reader to its writer: the ICC profile, EXIF,
 * XMP, PNG text chunks, the physical resolution and the EXIF orientation. Each format's part is
 * in meta_jpeg.c, meta_png.c and meta_tiff.c; io_read fills a record when io_options.meta is set
 * and io_write writes what the output format holds. */
#ifndef IMGPIPE_META_H
#define IMGPIPE_META_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "io/io.h"

/* No one piece of metadata is taken larger than this (a PNG iCCP or zTXt inflating without end). */
#define META_MAX_BYTES ((size_t)64 << 20)
#define META_MAX_TEXTS 1024

typedef enum { META_TEXT_PLAIN, META_TEXT_ZIP, META_TEXT_INTL } meta_text_kind;   /* tEXt, zTXt, iTXt */

typedef struct {
    meta_text_kind kind;
    int compressed;            /* iTXt: its text is stored compressed */
    char *key;                 /* NUL-terminated, 1..79 bytes */
    char *lang, *translated;   /* iTXt only (may be ""), else NULL */
    char *text;                /* Latin-1 (tEXt, zTXt) or UTF-8 (iTXt), NUL-terminated */
    size_t text_len;
} meta_text;

/* META_RES_ASPECT: only the ratio of res_x to res_y means something (PNG unit 0, JFIF unit 0). */
typedef enum { META_RES_NONE = 0, META_RES_ASPECT, META_RES_INCH, META_RES_CM } meta_res_unit;

typedef struct io_meta {
    unsigned char *icc;        /* the ICC profile as stored */
    size_t icc_len;
    unsigned char *exif;       /* TIFF-structured ("II*\0" or "MM\0*"), as after JPEG's "Exif\0\0" */
    size_t exif_len;
    unsigned char *xmp;        /* the XMP packet (UTF-8 XML) */
    size_t xmp_len;
    meta_text *texts;          /* PNG text chunks, in file order (XMP's iTXt is in xmp instead) */
    int n_texts;
    meta_res_unit res_unit;
    double res_x, res_y;       /* pixels per unit */
    int orientation;           /* EXIF orientation 1..8 of the pixels as they are now; 1: as shown */
} io_meta;

void meta_init(io_meta *m);
/* Frees everything held and starts again empty (orientation 1). */
void meta_clear(io_meta *m);

/* Replaces *dst with a copy of n bytes of src. IP_ENOMEM or IP_ELIMIT (over META_MAX_BYTES). */
int meta_set_bytes(unsigned char **dst, size_t *dst_len, const void *src, size_t n);
/* Appends a text entry (copies every string; lang and translated only for iTXt). Entries past
 * META_MAX_TEXTS are dropped. */
int meta_add_text(io_meta *m, meta_text_kind kind, int compressed, const char *key, const char *lang,
                  const char *translated, const char *text, size_t text_len);

/* An ICC profile's colour space from its header (bytes 16..19): "RGB ", "GRAY", "CMYK", ...;
 * NULL when the bytes are not a profile. */
const char *meta_icc_space(const unsigned char *icc, size_t len);
/* Whether the record's profile describes an output of this shape (gray for 1 or 2 channels, RGB
 * for 3 or 4): a grayscale stage turning RGB into one channel leaves an RGB profile behind. */
int meta_icc_fits(const io_meta *m, const ip_shape *shape);

/* The EXIF to write: the record's EXIF with its orientation tag set to m->orientation (added when
 * missing and not 1). NULL (*len 0) when there is nothing to write. Free with free(). */
int meta_exif_for_output(const io_meta *m, unsigned char **exif, size_t *len);

/* Applies an orientation transform's effect on the record: orientation 1, and for the transposing
 * ones (5..8) the horizontal and vertical resolutions swapped. */
void meta_oriented(io_meta *m);

/* Fills m (cleared first) from a file of this format read from its start: f for JPEG and PNG, its
 * descriptor (read with pread, the stream's position untouched) for TIFF, whose page `page` (its
 * directory, from 0) is read; other formats have page 0 only. Damaged or unknown metadata is
 * skipped, never an error: the decoder judges the file. IP_ENOMEM only. */
int meta_read(FILE *f, io_format fmt, uint32_t page, io_meta *m);
int meta_read_jpeg(FILE *f, io_meta *m);
int meta_read_png(FILE *f, io_meta *m);
int meta_read_tiff(int fd, uint32_t page, io_meta *m);
/* The same for a whole JPEG file held in memory. */
int meta_read_jpeg_bytes(const unsigned char *data, size_t len, io_meta *m);
#endif
