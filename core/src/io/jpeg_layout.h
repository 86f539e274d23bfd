/* The marker structure of a whole JPEG file in memory, checked without entropy decoding: what a
 * GPU decoder needs to know before it is trusted with the file (it reports fewer errors than
 * libjpeg-turbo, so damage that shows in the structure is caught here). */
#ifndef IMGPIPE_JPEG_LAYOUT_H
#define IMGPIPE_JPEG_LAYOUT_H
#include <stddef.h>

/* The colour space libjpeg-turbo would assume (jdapimin.c's rules: JFIF, then Adobe, then ids). */
typedef enum { JL_GRAY, JL_YCBCR, JL_RGB, JL_CMYK, JL_YCCK, JL_OTHER } jpeg_layout_colour;

typedef enum { JL_BASELINE, JL_EXTENDED, JL_PROGRESSIVE, JL_LOSSLESS, JL_ARITHMETIC, JL_HIERARCHICAL } jpeg_layout_coding;

typedef struct {
    int width, height, components, precision;
    jpeg_layout_coding coding;
    jpeg_layout_colour colour;
    int h[4], v[4];    /* sampling factors of each component */
    int scans;             /* all of them (INT_MAX at most): the caller holds them to its limit */
    int restart_markers;   /* over all scans */
} jpeg_layout;

/* IP_OK: SOI, one frame, scans whose restart markers come in order and in the number each scan
 * needs, then EOI. IP_EFORMAT with the reason otherwise (truncated, stray markers, bad lengths,
 * zero or DNL-defined height). Bytes after EOI are ignored, as libjpeg-turbo does. */
int jpeg_layout_read(const unsigned char *data, size_t len, jpeg_layout *out, char *why, size_t whylen);
#endif
