/* Writes the JPEG layouts the corpus cross-check needs and Python's writers cannot make:
 * jpeg_variant_write W H C HxV huffman|arithmetic|progressive RESTART_ROWS QUALITY IN.raw OUT.jpg,
 * IN.raw holding W*H pixels of C bytes (1 gray, 3 RGB); HxV the luma sampling factors (chroma
 * 1x1), so 4x1 is 4:1:1; RESTART_ROWS 0 for no restart markers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include "jpeg_tool.h"

static unsigned char *read_pixels(const char *path, size_t bytes)
{
    unsigned char *px = malloc(bytes);
    FILE *in = fopen(path, "rb");
    int ok = px && in && fread(px, 1, bytes, in) == bytes;
    if (in) fclose(in);
    if (!ok) {
        free(px);
        return NULL;
    }
    return px;
}

static void set_layout(struct jpeg_compress_struct *c, int hs, int vs, const char *coding, int restart_rows)
{
    c->comp_info[0].h_samp_factor = hs, c->comp_info[0].v_samp_factor = vs;
    c->arith_code = strcmp(coding, "arithmetic") == 0;
    if (strcmp(coding, "progressive") == 0) jpeg_simple_progression(c);
    c->restart_in_rows = restart_rows;
}

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: jpeg_variant_write W H C HxV huffman|arithmetic|progressive RESTART_ROWS QUALITY "
                        "IN.raw OUT.jpg\n");
        return 2;
    }
    int w = atoi(argv[1]), h = atoi(argv[2]), comps = atoi(argv[3]), hs = 0, vs = 0;
    if (w < 1 || h < 1 || w > 65500 || h > 65500 || (comps != 1 && comps != 3) ||
        sscanf(argv[4], "%dx%d", &hs, &vs) != 2 || hs < 1 || hs > 4 || vs < 1 || vs > 4)
        return 2;
    size_t row = (size_t)w * (size_t)comps;
    unsigned char *px = read_pixels(argv[8], row * (size_t)h);
    FILE *out = px ? fopen(argv[9], "wb") : NULL;
    if (!out) {
        fprintf(stderr, "jpeg_variant_write: cannot read %s or write %s\n", argv[8], argv[9]);
        free(px);
        return 1;
    }
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, out);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h;
    c.input_components = comps, c.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, atoi(argv[7]), TRUE);
    set_layout(&c, hs, vs, argv[5], atoi(argv[6]));
    return jpeg_tool_finish(&c, px, row, out);
}
