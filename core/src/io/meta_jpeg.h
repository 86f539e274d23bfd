/* Metadata in JPEG files: the APP segments a writer adds (APP1 Exif, APP1 XMP, APP2 ICC_PROFILE
 * split into numbered pieces) and the JFIF density. */
#ifndef IMGPIPE_META_JPEG_H
#define IMGPIPE_META_JPEG_H
#include "io/meta.h"

typedef struct {
    int marker;                /* 0xE1, 0xE2 */
    unsigned char *data;       /* the payload after the length field */
    size_t len;
} meta_jpeg_segment;

typedef struct {
    meta_jpeg_segment *segments;
    int n;
    int has_density;
    int density_unit;          /* JFIF: 0 aspect ratio only, 1 per inch, 2 per cm */
    unsigned x_density, y_density;
} meta_jpeg_output;

/* What a JPEG of this shape holds of m (NULL: nothing): the profile only when it fits the shape;
 * EXIF and XMP larger than one segment are left out. */
int meta_jpeg_prepare(const io_meta *m, const ip_shape *shape, meta_jpeg_output *out);
void meta_jpeg_output_free(meta_jpeg_output *out);

/* A copy of an encoded JPEG (from SOI) with m's segments inserted after SOI and any JFIF APP0,
 * whose density is set from m (a JFIF APP0 is added for it when there is none): for encoders that
 * take no markers (nvJPEG). */
int meta_jpeg_splice(const unsigned char *in, size_t len, const io_meta *m, const ip_shape *shape,
                     unsigned char **out, size_t *out_len, char *err, size_t errlen);
#endif
