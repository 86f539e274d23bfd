#include "io/io_png_internal.h"
#include "base/image.h"
#include "io/io_internal.h"
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

int pngx_fast_path(const pngx_layout *l)
{
    int plain_type = l->color_type == 0 || l->color_type == 2 || l->color_type == 4 || l->color_type == 6;
    return plain_type && (l->depth == 8 || l->depth == 16) && !l->interlace && !l->has_trns && !l->has_plte;
}

static ip_shape layout_shape(const pngx_layout *l)
{
    static const int channels[7] = { 1, 0, 3, 0, 2, 0, 4 };
    ip_shape s = { (int32_t)l->width, (int32_t)l->height, channels[l->color_type], l->depth == 16 ? IP_U16 : IP_U8 };
    return s;
}

/* libdeflate inflates from one buffer: several IDAT chunks are joined first. */
static const unsigned char *joined_idat(const pngx_layout *l, unsigned char **owned)
{
    *owned = NULL;
    if (l->n_idat == 1) return l->idat[0];
    unsigned char *buf = malloc(l->idat_total ? l->idat_total : 1);
    if (!buf) return NULL;
    size_t at = 0;
    for (size_t i = 0; i < l->n_idat; i++) {
        memcpy(buf + at, l->idat[i], l->idat_len[i]);
        at += l->idat_len[i];
    }
    *owned = buf;
    return buf;
}

/* Inflates all the image data into filtered (exactly expected bytes: less or more are corrupt
 * files; bytes after the end of the zlib stream are a warning, as libpng gives). */
static int inflate_all(const pngx_layout *l, const io_options *opt, unsigned char *filtered, size_t expected,
                       char *err, size_t errlen)
{
    if (l->n_idat == 0) {
        snprintf(err, errlen, "truncated or corrupt PNG: no image data");
        return IP_EFORMAT;
    }
    unsigned char *owned;
    const unsigned char *in = joined_idat(l, &owned);
    struct libdeflate_decompressor *d = in ? libdeflate_alloc_decompressor() : NULL;
    if (!d) {
        free(owned);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    size_t used_in = 0;
    enum libdeflate_result r = libdeflate_zlib_decompress_ex(d, in, l->idat_total, filtered, expected, &used_in, NULL);
    libdeflate_free_decompressor(d);
    free(owned);
    const char *what = r == LIBDEFLATE_SHORT_OUTPUT            ? "not enough image data"
                       : r == LIBDEFLATE_INSUFFICIENT_SPACE    ? "too much image data"
                       : r != LIBDEFLATE_SUCCESS               ? "bad compressed image data"
                                                               : NULL;
    if (!what && used_in != l->idat_total)
        return io_warn(opt, 1, "PNG: IDAT: data after the end of the compressed image", err, errlen);
    if (!what) return IP_OK;
    snprintf(err, errlen, "truncated or corrupt PNG: %s", what);
    return IP_EFORMAT;
}

static void swap16(uint8_t *row, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        uint8_t t = row[i];
        row[i] = row[i + 1];
        row[i + 1] = t;
    }
}

/* Reconstructs every row into the image; 16-bit samples turn to host order one row behind,
 * once the next row no longer needs them big-endian. */
static int unfilter_rows(const unsigned char *filtered, ip_image *img, unsigned bpp, int swap, char *err,
                         size_t errlen)
{
    size_t n = (size_t)img->stride, h = (size_t)img->shape.height;
    uint8_t *zeros = calloc(1, n);
    if (!zeros) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    uint8_t *prev = zeros;
    int rc = IP_OK;
    for (size_t y = 0; y < h && !rc; y++) {
        const unsigned char *src = filtered + y * (n + 1);
        uint8_t *row = (uint8_t *)img->data + y * n;
        if (pngx_unfilter_row(src[0], src + 1, row, prev, n, bpp)) {
            snprintf(err, errlen, "truncated or corrupt PNG: bad filter type");
            rc = IP_EFORMAT;
        }
        if (swap && y > 0) swap16(prev, n);
        prev = row;
    }
    if (swap && !rc) swap16(prev, n);
    free(zeros);
    return rc;
}

int pngx_decode_fast(const unsigned char *data, size_t size, pngx_layout *l, const io_options *opt, ip_image *out,
                     char *err, size_t errlen)
{
    ip_shape shape = layout_shape(l);
    int rc = io_shape_known(opt, &shape, size, err, errlen);
    if (!rc) rc = pngx_parse_rest(data, size, l, err, errlen);
    if (!rc && l->bad_crcs) {   /* as libpng: the chunk is skipped, with a warning */
        char what[64];
        snprintf(what, sizeof what, "PNG: %s: CRC error", l->first_bad);
        rc = io_warn(opt, l->bad_crcs, what, err, errlen);
    }
    if (rc) return rc;
    unsigned bpp = (unsigned)(shape.channels * (l->depth / 8));
    size_t row_bytes = (size_t)shape.width * bpp;
    if ((size_t)shape.height > SIZE_MAX / (row_bytes + 1)) {
        snprintf(err, errlen, "image too large");
        return IP_ELIMIT;
    }
    size_t filtered_bytes = (size_t)shape.height * (row_bytes + 1);
    if (filtered_bytes / PNGX_DEFLATE_MAX_RATIO > l->idat_total) {
        snprintf(err, errlen, "truncated or corrupt PNG: not enough image data");
        return IP_EFORMAT;
    }
    unsigned char *filtered = img_big_malloc(filtered_bytes);
    if (!filtered) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    rc = inflate_all(l, opt, filtered, filtered_bytes, err, errlen);
    if (!rc) rc = io_image_alloc(opt, out, &shape, err, errlen);
    if (!rc) {
        rc = l->depth == 8 && io_thread_count(opt) > 1
                 ? pngx_unfilter_wavefront(filtered, out, bpp, io_thread_count(opt), err, errlen)
                 : unfilter_rows(filtered, out, bpp, l->depth == 16 && io_host_is_little_endian(), err, errlen);
        if (rc) io_image_free(opt, out);
    }
    free(filtered);
    return rc;
}
