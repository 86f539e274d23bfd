#include "io/io_png_internal.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Pillow decodes a PNG as soon as its image data inflates to every row: it checks neither the
 * IDAT CRCs nor the end of the zlib stream, and does not read on to IEND. The same file is
 * rebuilt here from what can be trusted: the chunks before the first IDAT as they are, then the
 * payloads of the consecutive IDAT chunks up to the damage, inflated only as far as the image
 * needs and deflated again into one IDAT, then IEND. */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* The bytes of image data from `at` on, copied to dst when it is not NULL; returns their count. */
static size_t idat_payloads(const unsigned char *data, size_t size, size_t at, unsigned char *dst)
{
    size_t total = 0;
    while (size - at >= 8 && !memcmp(data + at + 4, "IDAT", 4)) {
        size_t len = be32(data + at), left = size - at - 8;
        size_t take = len < left ? len : left;
        if (dst) memcpy(dst + total, data + at + 8, take);
        total += take;
        if (left - take < 4) break;   /* cut inside this chunk or its CRC */
        at += 12 + len;
    }
    return total;
}

/* Bytes of filtered rows (a filter byte each) of a w-pixel-wide, h-row image; 0 past SIZE_MAX. */
static size_t rows_bytes(uint64_t w, uint64_t h, unsigned bits_per_pixel)
{
    if (w == 0 || h == 0) return 0;
    uint64_t row = (w * bits_per_pixel + 7) / 8 + 1;
    return row > SIZE_MAX / h ? 0 : (size_t)(row * h);
}

/* The inflated size of the image data the header promises, or 0 when it does not fit a size_t. */
static size_t filtered_size(const pngx_layout *l)
{
    static const unsigned channels[7] = { 1, 0, 3, 1, 2, 0, 4 };
    static const unsigned adam7[7][4] = { { 0, 0, 8, 8 }, { 4, 0, 8, 8 }, { 0, 4, 4, 8 }, { 2, 0, 4, 4 },
                                          { 0, 2, 2, 4 }, { 1, 0, 2, 2 }, { 0, 1, 1, 2 } };
    unsigned bits = channels[l->color_type] * (unsigned)l->depth;
    if (!l->interlace) return rows_bytes(l->width, l->height, bits);
    size_t total = 0;
    for (int p = 0; p < 7; p++) {
        const unsigned *a = adam7[p];
        uint64_t pw = l->width > a[0] ? (l->width - a[0] + a[2] - 1) / a[2] : 0;
        uint64_t ph = l->height > a[1] ? (l->height - a[1] + a[3] - 1) / a[3] : 0;
        size_t part = rows_bytes(pw, ph, bits);
        if ((pw && ph && !part) || part > SIZE_MAX - total) return 0;
        total += part;
    }
    return total;
}

/* Inflates in until out holds want bytes; IP_OK only when it does. */
static int inflate_prefix(const unsigned char *in, size_t n, unsigned char *out, size_t want)
{
    z_stream z = { 0 };
    if (inflateInit(&z) != Z_OK) return IP_ENOMEM;
    size_t got = 0;
    int zr = Z_OK;
    while (zr == Z_OK && got < want && n > 0) {
        uInt in_now = n > 65536 ? 65536 : (uInt)n, out_now = want - got > 65536 ? 65536 : (uInt)(want - got);
        z.next_in = (Bytef *)in, z.avail_in = in_now, z.next_out = out + got, z.avail_out = out_now;
        zr = inflate(&z, Z_SYNC_FLUSH);
        in += in_now - z.avail_in, n -= in_now - z.avail_in;
        got += out_now - z.avail_out;
        if (zr == Z_BUF_ERROR && z.avail_in == 0) break;
    }
    inflateEnd(&z);
    return got == want ? IP_OK : IP_EFORMAT;
}

/* The image's filtered rows, from the IDAT payloads after head, deflated again into one stream. */
static int clean_stream(const unsigned char *data, size_t size, const pngx_layout *l, unsigned char **z, uLong *zlen)
{
    size_t payload = idat_payloads(data, size, l->at, NULL), want = filtered_size(l);
    if (payload == 0 || want == 0 || want / PNGX_DEFLATE_MAX_RATIO > payload) return IP_EFORMAT;
    unsigned char *joined = malloc(payload), *rows = malloc(want);
    *zlen = compressBound((uLong)want);
    *z = malloc(*zlen);
    int rc = joined && rows && *z ? IP_OK : IP_ENOMEM;
    if (!rc) {
        idat_payloads(data, size, l->at, joined);
        rc = inflate_prefix(joined, payload, rows, want);
    }
    if (!rc && compress2(*z, zlen, rows, (uLong)want, 1) != Z_OK) rc = IP_ENOMEM;
    free(joined);
    free(rows);
    if (rc) free(*z);
    return rc;
}

int pngx_rebuild(const unsigned char *data, size_t size, unsigned char **out, size_t *out_size)
{
    static const unsigned char iend[12] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
    pngx_layout l;
    char ignored[8];
    int rc = pngx_parse_head(data, size, &l, ignored, sizeof ignored);
    pngx_layout_free(&l);
    if (rc || size - l.at < 8 || memcmp(data + l.at + 4, "IDAT", 4)) return IP_EFORMAT;
    unsigned char *z;
    uLong zlen;
    rc = clean_stream(data, size, &l, &z, &zlen);
    if (rc) return rc;
    unsigned char *buf = zlen <= 0x7fffffffu ? malloc(l.at + 12 + zlen + sizeof iend) : NULL;
    if (!buf) {
        free(z);
        return IP_ENOMEM;
    }
    memcpy(buf, data, l.at);
    unsigned char *chunk = buf + l.at;
    put_be32(chunk, (uint32_t)zlen);
    memcpy(chunk + 4, "IDAT", 4);
    memcpy(chunk + 8, z, zlen);
    put_be32(chunk + 8 + zlen, (uint32_t)crc32(0L, chunk + 4, (uInt)(zlen + 4)));
    memcpy(chunk + 12 + zlen, iend, sizeof iend);
    free(z);
    *out = buf;
    *out_size = l.at + 12 + zlen + sizeof iend;
    return IP_OK;
}
