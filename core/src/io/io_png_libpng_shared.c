#include "io/io_png_libpng.h"
#include "io/io_internal.h"
#include <string.h>

void pngx_on_error(png_structp png, png_const_charp msg)
{
    pngx_error_ctx *ctx = png_get_error_ptr(png);
    snprintf(ctx->err, ctx->errlen, "truncated or corrupt PNG: %s", msg);
    longjmp(ctx->jmp, 1);
}

/* Warnings about the image data or a chunk's integrity. The others are about the content of
 * ancillary chunks (a profile, a text keyword) that do not change the pixels, which our own
 * decoder does not even look at. */
static int is_damage(const char *msg)
{
    return strstr(msg, "CRC error") || strstr(msg, "IDAT") || strstr(msg, "image data") ||
           strstr(msg, "Extra compressed data");
}

void pngx_on_warning(png_structp png, png_const_charp msg)
{
    pngx_error_ctx *ctx = png_get_error_ptr(png);
    if (!is_damage(msg)) return;
    char what[256];
    snprintf(what, sizeof what, "PNG: %s", msg);
    if (io_warn(ctx->opt, 1, what, ctx->err, ctx->errlen) != IP_OK) longjmp(ctx->jmp, 1);
}

ip_shape pngx_decoded_shape(png_structp png, png_infop info)
{
    int type = png_get_color_type(png, info);
    int trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    int channels = type == PNG_COLOR_TYPE_GRAY         ? 1 + trns
                   : type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                   : type == PNG_COLOR_TYPE_RGB_ALPHA  ? 4
                                                       : 3 + trns;
    ip_shape s = { (int32_t)png_get_image_width(png, info), (int32_t)png_get_image_height(png, info),
                   channels, png_get_bit_depth(png, info) == 16 ? IP_U16 : IP_U8 };
    return s;
}

/* A palette shorter than the indices can reach is padded as Pillow pads it, entry i gray (i, i, i)
 * (libpng would give black), so every index means what it means to Pillow. */
static void pad_palette(png_structp png, png_infop info)
{
    png_colorp plte = NULL;
    int n = 0, full = 1 << png_get_bit_depth(png, info);
    if (png_get_color_type(png, info) != PNG_COLOR_TYPE_PALETTE || !png_get_PLTE(png, info, &plte, &n) || n >= full)
        return;
    png_color padded[256];
    for (int i = 0; i < full; i++)
        padded[i] = i < n ? plte[i] : (png_color){ (png_byte)i, (png_byte)i, (png_byte)i };
    png_set_PLTE(png, info, padded, full);
}

void pngx_request_plain_samples(png_structp png, png_infop info)
{
    pad_palette(png, info);
    png_set_expand(png);   /* palette -> RGB, gray below 8 bits -> 8, tRNS -> alpha */
    if (png_get_bit_depth(png, info) == 16 && io_host_is_little_endian()) png_set_swap(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

int pngx_enough_data(uint32_t width, uint32_t height, unsigned channels, unsigned depth, uint64_t file_bytes,
                     char *err, size_t errlen)
{
    uint64_t row_bytes = ((uint64_t)width * channels * depth + 7) / 8;
    if (row_bytes == 0 || file_bytes > UINT64_MAX / PNGX_DEFLATE_MAX_RATIO ||
        height <= file_bytes * PNGX_DEFLATE_MAX_RATIO / row_bytes)
        return IP_OK;
    snprintf(err, errlen, "truncated or corrupt PNG: not enough image data");
    return IP_EFORMAT;
}
