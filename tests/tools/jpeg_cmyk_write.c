/* Writes 4-component JPEG for the cross-checks, which Python's writers cannot make (YCCK, CMYK
 * without the Adobe marker): jpeg_cmyk_write W H cmyk|ycck adobe|noadobe QUALITY IN.raw OUT.jpg,
 * IN.raw holding W*H pixels of 4 bytes, stored as given (Adobe's convention is the caller's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include "jpeg_tool.h"

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: jpeg_cmyk_write W H cmyk|ycck adobe|noadobe QUALITY IN.raw OUT.jpg\n");
        return 2;
    }
    int w = atoi(argv[1]), h = atoi(argv[2]), quality = atoi(argv[5]);
    if (w < 1 || h < 1 || w > 65500 || h > 65500) return 2;
    size_t row = (size_t)w * 4, bytes = row * (size_t)h;
    unsigned char *px = malloc(bytes);
    FILE *in = fopen(argv[6], "rb");
    if (!px || !in || fread(px, 1, bytes, in) != bytes) {
        fprintf(stderr, "jpeg_cmyk_write: cannot read %zu bytes from %s\n", bytes, argv[6]);
        return 1;
    }
    fclose(in);
    FILE *out = fopen(argv[7], "wb");
    if (!out) return 1;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, out);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h;
    c.input_components = 4, c.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_colorspace(&c, strcmp(argv[3], "ycck") == 0 ? JCS_YCCK : JCS_CMYK);
    jpeg_set_quality(&c, quality, TRUE);
    c.write_Adobe_marker = strcmp(argv[4], "adobe") == 0;
    return jpeg_tool_finish(&c, px, row, out);
}
