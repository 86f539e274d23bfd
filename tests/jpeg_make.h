/* Test helper: JPEG files made in memory with libjpeg-turbo, with the settings the GPU decoder
 * tests need (subsampling, progressive, restart markers). */
#ifndef TEST_JPEG_MAKE_H
#define TEST_JPEG_MAKE_H
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

typedef enum { JM_444, JM_422, JM_420 } jm_sampling;

typedef struct {
    int quality;
    jm_sampling sampling;
    int progressive;
    int restart_rows;   /* restart marker every this many MCU rows; 0: none */
    J_COLOR_SPACE file_colour;   /* JCS_UNKNOWN (0): libjpeg's default for the input */
} jm_settings;

/* Encodes packed 8-bit pixels (1, 3 or 4 = CMYK channels, stride bytes a row); returns malloc'd bytes or
 * NULL (libjpeg's errors end the process: the inputs are the test's own). */
static inline unsigned char *jm_encode(const unsigned char *pixels, size_t stride, int w, int h, int channels,
                                       const jm_settings *s, size_t *len)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    unsigned char *out = NULL;
    unsigned long out_len = 0;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, &out_len);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = channels;
    c.in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 4 ? JCS_CMYK : JCS_RGB;
    jpeg_set_defaults(&c);
    if (s->file_colour != JCS_UNKNOWN) jpeg_set_colorspace(&c, s->file_colour);
    jpeg_set_quality(&c, s->quality, TRUE);
    if (channels == 3 && s->file_colour != JCS_RGB) {
        c.comp_info[0].h_samp_factor = s->sampling == JM_444 ? 1 : 2;
        c.comp_info[0].v_samp_factor = s->sampling == JM_420 ? 2 : 1;
        for (int k = 1; k < 3; k++) c.comp_info[k].h_samp_factor = c.comp_info[k].v_samp_factor = 1;
    }
    if (s->progressive) jpeg_simple_progression(&c);
    c.restart_in_rows = s->restart_rows;
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * stride);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    *len = out_len;
    return out;
}
#endif
