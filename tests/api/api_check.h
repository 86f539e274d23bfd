/* What the API tests share: a check macro, fixed-seed images and reference loops computed
 * independently of imgpipe (OpenCV's RGB2GRAY formula, a 3x3 median with replicated borders). */
#ifndef IMGPIPE_API_CHECK_H
#define IMGPIPE_API_CHECK_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/imgpipe.h"

extern int api_failures;
#define CHECK(cond, ...)                                                                                    \
    do {                                                                                                    \
        if (!(cond)) {                                                                                      \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond);                              \
            fprintf(stderr, __VA_ARGS__);                                                                   \
            fputc('\n', stderr);                                                                            \
            api_failures++;                                                                                 \
        }                                                                                                   \
    } while (0)

size_t api_sample_size(imgpipe_sample s);
/* A host image of random samples (seeded), rows stride bytes apart (0: packed), padding filled
 * with 0xAB so a read past a row shows. */
imgpipe_image api_random_image(int w, int h, int c, imgpipe_sample s, size_t stride, uint32_t seed);
/* Sample (x, y, k) of a host image as a double. */
double api_at(const imgpipe_image *im, int x, int y, int k);
/* The reference of "median radius=1" (replicate) on any sample type, packed, malloc'd. */
imgpipe_image api_ref_median3(const imgpipe_image *in);
/* The reference of "grayscale" on 8-bit RGB, packed, malloc'd. */
imgpipe_image api_ref_gray_u8(const imgpipe_image *in);
/* Whether two host images hold the same samples (any strides); says where they first differ. */
int api_same(const imgpipe_image *a, const imgpipe_image *b, const char *what);
#endif
