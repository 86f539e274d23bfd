#define _POSIX_C_SOURCE 200809L
#include "io/io_png_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static const unsigned char png_signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int corrupt(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "truncated or corrupt PNG: %s", what);
    return IP_EFORMAT;
}

static int depth_allowed(int type, int depth)
{
    switch (type) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8;
    case 2: case 4: case 6: return depth == 8 || depth == 16;
    default: return 0;
    }
}

static int parse_ihdr(const unsigned char *d, pngx_layout *l, char *err, size_t errlen)
{
    l->width = be32(d), l->height = be32(d + 4);
    l->depth = d[8], l->color_type = d[9], l->interlace = d[12];
    if (l->width == 0 || l->height == 0 || l->width > 0x7fffffffu || l->height > 0x7fffffffu)
        return corrupt(err, errlen, "invalid image size in IHDR");
    if (!depth_allowed(l->color_type, l->depth)) return corrupt(err, errlen, "invalid bit depth or colour type");
    if (d[10] != 0 || d[11] != 0 || l->interlace > 1)
        return corrupt(err, errlen, "unknown compression, filter or interlace method");
    return IP_OK;
}

static int add_idat(pngx_layout *l, const unsigned char *p, uint32_t len)
{
    if (l->n_idat == l->idat_cap) {
        size_t grown = l->idat_cap ? l->idat_cap * 2 : 16;
        const unsigned char **ptrs = realloc(l->idat, grown * sizeof *ptrs);
        if (ptrs) l->idat = ptrs;
        uint32_t *lens = ptrs ? realloc(l->idat_len, grown * sizeof *lens) : NULL;
        if (lens) l->idat_len = lens;
        if (!ptrs || !lens) return IP_ENOMEM;
        l->idat_cap = grown;
    }
    l->idat[l->n_idat] = p;
    l->idat_len[l->n_idat++] = len;
    l->idat_total += len;
    return IP_OK;
}

static int name_valid(const unsigned char *t)
{
    for (int i = 0; i < 4; i++)
        if (!((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z'))) return 0;
    return 1;
}

/* One chunk after IHDR; *done at IEND. */
static int take_chunk(const unsigned char *c, uint32_t len, pngx_layout *l, char *err, size_t errlen)
{
    const unsigned char *type = c + 4;
    int critical = !(type[0] & 0x20);
    uint32_t crc = (uint32_t)crc32(0L, type, len + 4);
    if (crc != be32(c + 8 + len) && critical) return corrupt(err, errlen, "CRC error in a critical chunk");
    if (crc != be32(c + 8 + len)) {
        if (l->bad_crcs++ == 0) memcpy(l->first_bad, type, 4);
        return IP_OK;
    }
    if (!memcmp(type, "IDAT", 4)) {
        if (add_idat(l, c + 8, len)) {
            snprintf(err, errlen, "out of memory");
            return IP_ENOMEM;
        }
    } else if (!memcmp(type, "IEND", 4)) {
        l->ended = 1;
    } else if (!memcmp(type, "PLTE", 4)) {
        l->has_plte = 1;
    } else if (!memcmp(type, "tRNS", 4)) {
        l->has_trns = 1;
    } else if (!memcmp(type, "IHDR", 4)) {
        return corrupt(err, errlen, "a second IHDR");
    } else if (critical) {
        return corrupt(err, errlen, "unknown critical chunk");
    }
    return IP_OK;
}

/* Takes chunks from l->at on; with until_idat, stops before the first IDAT. */
static int walk(const unsigned char *data, size_t size, pngx_layout *l, int until_idat, char *err, size_t errlen)
{
    int rc = IP_OK;
    while (!rc && !l->ended) {
        size_t at = l->at;
        if (size - at < 12) return corrupt(err, errlen, "file ends before IEND");
        uint32_t len = be32(data + at);
        if (len > 0x7fffffffu || !name_valid(data + at + 4)) return corrupt(err, errlen, "invalid chunk");
        if (until_idat && !memcmp(data + at + 4, "IDAT", 4)) break;
        if (size - at - 12 < len) return corrupt(err, errlen, "file ends inside a chunk");
        rc = take_chunk(data + at, len, l, err, errlen);
        l->at = at + 12 + (size_t)len;
    }
    return rc;
}

int pngx_parse_head(const unsigned char *data, size_t size, pngx_layout *out, char *err, size_t errlen)
{
    *out = (pngx_layout){ 0 };
    if (size < 8 || memcmp(data, png_signature, 8)) return corrupt(err, errlen, "not a PNG signature");
    if (size < 8 + 12 + 13 || be32(data + 8) != 13 || memcmp(data + 12, "IHDR", 4))
        return corrupt(err, errlen, "missing IHDR");
    if ((uint32_t)crc32(0L, data + 12, 17) != be32(data + 29)) return corrupt(err, errlen, "CRC error in IHDR");
    int rc = parse_ihdr(data + 16, out, err, errlen);
    out->at = 33;
    return rc ? rc : walk(data, size, out, 1, err, errlen);
}

int pngx_parse_rest(const unsigned char *data, size_t size, pngx_layout *l, char *err, size_t errlen)
{
    return walk(data, size, l, 0, err, errlen);
}

void pngx_layout_free(pngx_layout *l)
{
    free(l->idat);
    free(l->idat_len);
    l->idat = NULL;
    l->idat_len = NULL;
}
