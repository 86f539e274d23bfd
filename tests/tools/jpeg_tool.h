/* Shared by the JPEG-writing test tools: the compression of pixels already set up in c. */
#ifndef IMGPIPE_TESTS_JPEG_TOOL_H
#define IMGPIPE_TESTS_JPEG_TOOL_H
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

/* Compresses rows of `row` bytes from px, frees c and px, closes out; returns the exit status. */
static inline int jpeg_tool_finish(struct jpeg_compress_struct *c, unsigned char *px, size_t row, FILE *out)
{
    jpeg_start_compress(c, TRUE);
    while (c->next_scanline < c->image_height) {
        JSAMPROW r = px + (size_t)c->next_scanline * row;
        jpeg_write_scanlines(c, &r, 1);
    }
    jpeg_finish_compress(c);
    jpeg_destroy_compress(c);
    free(px);
    return fclose(out) == 0 ? 0 : 1;
}
#endif
