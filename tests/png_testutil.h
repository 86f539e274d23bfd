/* What the GPU PNG writer's tests share (the host join's unit test and the device test): a
 * photo-like source image with padded rows, PNG's filtered image data of it made by the CPU
 * writer's own row filter, the image data of a written file inflated by zlib, and the
 * Pillow/OpenCV decode check (tests/tools/png_decode_check.py). */
#ifndef IMGPIPE_PNG_TESTUTIL_H
#define IMGPIPE_PNG_TESTUTIL_H
#include <stdio.h>
#include "base/image.h"
#include "testutil.h"

/* A host image of smooth gradients, edges and low noise (u8 or u16), rows pad_bytes longer
 * than the row; free with img_free. */
ip_image ptu_photo(int w, int h, int c, ip_dtype t, size_t pad_bytes, uint64_t seed);
/* PNG's filtered image data of img (each row: its filter byte, then the row filtered as the CPU
 * writer filters it, 16-bit samples big-endian); malloc'd, *len bytes. */
unsigned char *ptu_filtered(const ip_image *img, size_t *len);
/* The file's IDAT data inflated by zlib (which checks the adler32): malloc'd, *len bytes; NULL
 * when the file cannot be read or its data is no valid zlib stream. */
unsigned char *ptu_inflate_file(const char *path, size_t *len);
/* Whether the decoded pixels equal img's, ignoring padding. */
int ptu_same_pixels(const ip_image *a, const ip_image *b);
/* Writes img's packed pixels beside png (png + ".raw") and the line that names both to list. */
void ptu_list_add(FILE *list, const char *png, const ip_image *img);
/* Runs the Pillow/OpenCV check on list's files: 0 all equal, 77 no Python with both, else failed. */
int ptu_decode_check(const char *list_path);
#endif
