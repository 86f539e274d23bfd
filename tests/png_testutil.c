#define _POSIX_C_SOURCE 200809L
#include "png_testutil.h"
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zlib.h>
#include "io/io_png_internal.h"

ip_image ptu_photo(int w, int h, int c, ip_dtype t, size_t pad_bytes, uint64_t seed)
{
    size_t sample = t == IP_U16 ? 2 : 1, row = (size_t)w * (size_t)c * sample;
    ip_image img = { 0 };
    img.shape = (ip_shape){ w, h, c, t };
    img.stride = (ptrdiff_t)(row + pad_bytes);
    img.data = malloc((size_t)img.stride * (size_t)h + 1);
    if (!img.data) exit(2);
    memset(img.data, 0xA5, (size_t)img.stride * (size_t)h + 1);
    tu_rng r;
    tu_seed(&r, seed);
    double top = t == IP_U16 ? 65535.0 : 255.0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < c; ch++) {
                /* a sky gradient, a darker disc with an edge, and a little sensor noise */
                double v = 0.3 + 0.5 * y / (h + 1.0) + 0.1 * ch;
                double dx = x - w * 0.6, dy = y - h * 0.4;
                if (dx * dx + dy * dy < (double)w * w * 0.04) v = 0.2 + 0.2 * x / (w + 1.0);
                v += ((int)(tu_next(&r) % 9) - 4) / 255.0;
                v = v < 0 ? 0 : v > 1 ? 1 : v;
                unsigned q = (unsigned)(v * top + 0.5);
                uint8_t *p = (uint8_t *)img.data + (size_t)y * (size_t)img.stride + ((size_t)x * c + ch) * sample;
                if (sample == 2) memcpy(p, &(uint16_t){ (uint16_t)q }, 2);
                else *p = (uint8_t)q;
            }
    return img;
}

unsigned char *ptu_filtered(const ip_image *img, size_t *len)
{
    const ip_shape *s = &img->shape;
    size_t sample = s->dtype == IP_U16 ? 2 : 1, n = (size_t)s->width * s->channels * sample;
    unsigned bpp = (unsigned)(s->channels * sample), allowed = pngx_allowed_filters((uint32_t)s->width, (uint32_t)s->height);
    *len = (n + 1) * (size_t)s->height;
    unsigned char *out = malloc(*len), *rows = calloc((size_t)s->height + 1, n + 1), *tmp = malloc(n + 1);
    if (!out || !rows || !tmp) exit(2);
    /* rows[0] stays zero: the row before the first; rows[y + 1]: row y big-endian */
    for (int y = 0; y < s->height; y++) {
        const uint8_t *src = (const uint8_t *)img->data + (size_t)y * (size_t)img->stride;
        uint8_t *dst = rows + (size_t)(y + 1) * n;
        for (size_t i = 0; i < n; i++) dst[i] = sample == 2 ? src[i ^ 1] : src[i];
    }
    for (int y = 0; y < s->height; y++)
        pngx_filter_row(rows + (size_t)(y + 1) * n, rows + (size_t)y * n, n, bpp, allowed, out + (size_t)y * (n + 1), tmp);
    free(rows);
    free(tmp);
    return out;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The file's IDAT data joined, or NULL. */
static unsigned char *idat_data(const unsigned char *file, size_t size, size_t *len)
{
    unsigned char *out = malloc(size + 1);
    *len = 0;
    for (size_t at = 8; out && at + 12 <= size;) {
        size_t n = be32(file + at);
        if (n > size - at - 12) break;
        if (!memcmp(file + at + 4, "IDAT", 4)) memcpy(out + *len, file + at + 8, n), *len += n;
        at += 12 + n;
    }
    return out;
}

unsigned char *ptu_inflate_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    unsigned char *file = size > 0 ? malloc((size_t)size) : NULL;
    size_t got = file ? fread(file, 1, (size_t)size, f) : 0;
    fclose(f);
    size_t zlen = 0;
    unsigned char *z = got == (size_t)size ? idat_data(file, got, &zlen) : NULL;
    free(file);
    size_t cap = 1024 + zlen * 8;
    unsigned char *out = NULL;
    z_stream s = { 0 };
    int rc = z && inflateInit(&s) == Z_OK ? Z_OK : Z_MEM_ERROR;
    s.next_in = z, s.avail_in = (uInt)zlen;
    while (rc == Z_OK || rc == Z_BUF_ERROR) {
        unsigned char *grown = realloc(out, cap *= 2);
        if (!grown) break;
        out = grown;
        s.next_out = out + s.total_out, s.avail_out = (uInt)(cap - s.total_out);
        rc = inflate(&s, Z_FINISH);
    }
    *len = s.total_out;
    int ok = rc == Z_STREAM_END && s.avail_in == 0;
    if (z) inflateEnd(&s);
    free(z);
    if (!ok) free(out);
    return ok ? out : NULL;
}

int ptu_same_pixels(const ip_image *a, const ip_image *b)
{
    if (memcmp(&a->shape, &b->shape, sizeof a->shape)) return 0;
    size_t n = (size_t)a->shape.width * a->shape.channels * (a->shape.dtype == IP_U16 ? 2 : 1);
    for (int y = 0; y < a->shape.height; y++)
        if (memcmp((const uint8_t *)a->data + (size_t)y * (size_t)a->stride,
                   (const uint8_t *)b->data + (size_t)y * (size_t)b->stride, n))
            return 0;
    return 1;
}

void ptu_list_add(FILE *list, const char *png, const ip_image *img)
{
    const ip_shape *s = &img->shape;
    char raw[1024];
    snprintf(raw, sizeof raw, "%s.raw", png);
    FILE *f = fopen(raw, "wb");
    if (!f) return;
    size_t n = (size_t)s->width * s->channels * (s->dtype == IP_U16 ? 2 : 1);
    for (int y = 0; y < s->height; y++) fwrite((const uint8_t *)img->data + (size_t)y * (size_t)img->stride, 1, n, f);
    fclose(f);
    fprintf(list, "%s %s %d %d %d %d\n", png, raw, s->width, s->height, s->channels, s->dtype == IP_U16 ? 16 : 8);
}

int ptu_decode_check(const char *list_path)
{
    const char *src = getenv("IMGPIPE_SOURCE_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/tools/png_decode_check.py %s", src ? src : ".", list_path);
    int status = system(cmd);
    if (status == -1 || !WIFEXITED(status)) return 1;
    return WEXITSTATUS(status) == 127 ? 77 : WEXITSTATUS(status);
}
