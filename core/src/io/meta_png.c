#define _POSIX_C_SOURCE 200809L
#include "io/meta_png.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "io/exif.h"

#define CHUNK_MAX 0x7fffffffu
#define METRE_PER_INCH 0.0254

static const unsigned char png_signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
static const char xmp_key[] = "XML:com.adobe.xmp";

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* A zlib stream inflated within *budget bytes, which shrinks by what was inflated, success or not:
 * the text and profile chunks of one file inflate to META_MAX_BYTES at most in all, however many
 * there are. IP_EFORMAT for bad data or a stream over the budget. */
static int inflate_capped(const unsigned char *in, size_t len, size_t *budget, unsigned char **out, size_t *out_len)
{
    size_t limit = *budget, cap = len * 4 + 64 < limit ? len * 4 + 64 : limit, n = 0;
    if (!limit) return IP_EFORMAT;
    z_stream z = { 0 };
    if (inflateInit(&z) != Z_OK) return IP_ENOMEM;
    unsigned char *buf = malloc(cap + 1);
    int rc = buf ? IP_OK : IP_ENOMEM, zr = Z_OK;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    while (!rc && zr != Z_STREAM_END) {
        if (n == cap) {
            size_t grown_cap = cap * 2 < limit ? cap * 2 : limit;
            unsigned char *grown = cap < limit ? realloc(buf, grown_cap + 1) : NULL;
            if (!grown) {
                rc = cap < limit ? IP_ENOMEM : IP_EFORMAT;
                break;
            }
            buf = grown;
            cap = grown_cap;
        }
        z.next_out = buf + n;
        z.avail_out = (uInt)(cap - n);
        zr = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
        if (zr == Z_MEM_ERROR) rc = IP_ENOMEM;
        else if (zr != Z_OK && zr != Z_STREAM_END) rc = IP_EFORMAT;
        else if (zr == Z_OK && z.avail_in == 0 && n < cap) rc = IP_EFORMAT;   /* the stream stops early */
    }
    inflateEnd(&z);
    *budget -= n;
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = n;
    return IP_OK;
}

/* The length of a NUL-terminated field starting at p within end, or -1 (no NUL, or a keyword
 * outside 1..79 bytes when keyword is set). */
static long field_len(const unsigned char *p, const unsigned char *end, int keyword)
{
    const unsigned char *nul = memchr(p, 0, (size_t)(end - p));
    if (!nul) return -1;
    long n = (long)(nul - p);
    return keyword && (n < 1 || n > 79) ? -1 : n;
}

static int take_iccp(io_meta *m, const unsigned char *d, size_t len, size_t *budget)
{
    long name = field_len(d, d + len, 1);
    if (name < 0 || (size_t)name + 2 > len || d[name + 1] != 0 || m->icc) return IP_OK;
    unsigned char *icc;
    size_t icc_len;
    int rc = inflate_capped(d + name + 2, len - (size_t)name - 2, budget, &icc, &icc_len);
    if (rc) return rc == IP_ENOMEM ? rc : IP_OK;
    free(m->icc);
    m->icc = icc;
    m->icc_len = icc_len;
    return IP_OK;
}

static int take_text(io_meta *m, const unsigned char *d, size_t len, int zipped, size_t *budget)
{
    const unsigned char *end = d + len;
    long key = field_len(d, end, 1);
    if (key < 0) return IP_OK;
    const unsigned char *text = d + key + 1;
    if (!zipped) {
        size_t n = (size_t)(end - text);
        if (n > *budget) return IP_OK;
        *budget -= n;
        return meta_add_text(m, META_TEXT_PLAIN, 0, (const char *)d, NULL, NULL, (const char *)text, n);
    }
    if (text >= end || *text != 0) return IP_OK;
    unsigned char *plain;
    size_t n;
    int rc = inflate_capped(text + 1, (size_t)(end - text - 1), budget, &plain, &n);
    if (rc) return rc == IP_ENOMEM ? rc : IP_OK;
    rc = meta_add_text(m, META_TEXT_ZIP, 0, (const char *)d, NULL, NULL, (const char *)plain, n);
    free(plain);
    return rc;
}

static int take_itxt(io_meta *m, const unsigned char *d, size_t len, size_t *budget)
{
    const unsigned char *end = d + len;
    long key = field_len(d, end, 1);
    if (key < 0 || (size_t)key + 3 > len) return IP_OK;
    int compressed = d[key + 1], method = d[key + 2];
    const unsigned char *lang = d + key + 3;
    long lang_len = field_len(lang, end, 0);
    if (lang_len < 0 || compressed > 1 || method != 0) return IP_OK;
    const unsigned char *translated = lang + lang_len + 1;
    long translated_len = field_len(translated, end, 0);
    if (translated_len < 0) return IP_OK;
    const unsigned char *text = translated + translated_len + 1;
    unsigned char *plain = NULL;
    size_t n = (size_t)(end - text);
    if (compressed) {
        int rc = inflate_capped(text, n, budget, &plain, &n);
        if (rc) return rc == IP_ENOMEM ? rc : IP_OK;
    } else if (n <= *budget) {
        *budget -= n;
    } else {
        return IP_OK;
    }
    const char *body = plain ? (const char *)plain : (const char *)text;
    int rc;
    if (!strcmp((const char *)d, xmp_key)) rc = m->xmp ? IP_OK : meta_set_bytes(&m->xmp, &m->xmp_len, body, n);
    else rc = meta_add_text(m, META_TEXT_INTL, compressed, (const char *)d, (const char *)lang,
                            (const char *)translated, body, n);
    free(plain);
    return rc;
}

static void take_phys(io_meta *m, const unsigned char *d, size_t len)
{
    if (len != 9 || m->res_unit != META_RES_NONE) return;
    uint32_t x = be32(d), y = be32(d + 4);
    if (!x || !y || d[8] > 1) return;
    /* Pixels per metre are kept per inch, as they are mostly given: 11811 is 300 dpi. */
    m->res_unit = d[8] == 1 ? META_RES_INCH : META_RES_ASPECT;
    m->res_x = d[8] == 1 ? x * METRE_PER_INCH : x;
    m->res_y = d[8] == 1 ? y * METRE_PER_INCH : y;
}

static int take_chunk(io_meta *m, const unsigned char *type, const unsigned char *d, size_t len, size_t *budget)
{
    if (!memcmp(type, "iCCP", 4)) return take_iccp(m, d, len, budget);
    if (!memcmp(type, "tEXt", 4)) return take_text(m, d, len, 0, budget);
    if (!memcmp(type, "zTXt", 4)) return take_text(m, d, len, 1, budget);
    if (!memcmp(type, "iTXt", 4)) return take_itxt(m, d, len, budget);
    if (!memcmp(type, "pHYs", 4)) take_phys(m, d, len);
    if (!memcmp(type, "eXIf", 4) && !m->exif) {
        size_t skip = len >= 6 && !memcmp(d, "Exif\0\0", 6) ? 6 : 0;
        return meta_set_bytes(&m->exif, &m->exif_len, d + skip, len - skip);
    }
    return IP_OK;
}

static int wanted(const unsigned char *type)
{
    static const char *const names[] = { "iCCP", "tEXt", "zTXt", "iTXt", "pHYs", "eXIf" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!memcmp(type, names[i], 4)) return 1;
    return 0;
}

/* Every chunk up to IEND: text and eXIf may follow the image data. Chunks with a bad CRC are
 * skipped. */
static int walk_chunks(FILE *f, io_meta *m)
{
    size_t budget = META_MAX_BYTES;
    unsigned char head[8];
    while (fread(head, 1, 8, f) == 8) {
        uint32_t len = be32(head);
        if (len > CHUNK_MAX || !memcmp(head + 4, "IEND", 4)) break;
        if (!wanted(head + 4) || len > META_MAX_BYTES) {
            if (fseek(f, (long)len + 4, SEEK_CUR) != 0) break;
            continue;
        }
        unsigned char *data = malloc((size_t)len + 5);
        if (!data) return IP_ENOMEM;
        int rc = IP_OK;
        if (fread(data, 1, (size_t)len + 4, f) != (size_t)len + 4) {
            free(data);
            break;
        }
        uLong crc = crc32(crc32(0L, head + 4, 4), data, (uInt)len);
        if ((uint32_t)crc == be32(data + len)) {
            data[len] = 0;   /* after the CRC check: text fields may end at the chunk's end */
            rc = take_chunk(m, head + 4, data, len, &budget);
        }
        free(data);
        if (rc == IP_ENOMEM) return rc;
    }
    return IP_OK;
}

int meta_read_png(FILE *f, io_meta *m)
{
    meta_clear(m);
    unsigned char sig[8];
    if (fread(sig, 1, 8, f) != 8 || memcmp(sig, png_signature, 8)) return IP_OK;
    int rc = walk_chunks(f, m);
    m->orientation = exif_orientation(m->exif, m->exif_len);
    if (rc) meta_clear(m);
    return rc;
}

static void write_chunk(FILE *f, const char *type, const unsigned char *a, size_t a_len, const unsigned char *b,
                        size_t b_len)
{
    if (a_len + b_len > CHUNK_MAX) return;
    unsigned char head[8], tail[4];
    put_be32(head, (uint32_t)(a_len + b_len));
    memcpy(head + 4, type, 4);
    uLong crc = crc32(0L, head + 4, 4);
    if (a_len) crc = crc32(crc, a, (uInt)a_len);
    if (b_len) crc = crc32(crc, b, (uInt)b_len);
    put_be32(tail, (uint32_t)crc);
    fwrite(head, 1, 8, f);
    if (a_len) fwrite(a, 1, a_len, f);
    if (b_len) fwrite(b, 1, b_len, f);
    fwrite(tail, 1, 4, f);
}

/* A header (keyword and fields) followed by data, compressed when asked. */
static int write_with_header(FILE *f, const char *type, const unsigned char *head, size_t head_len,
                             const void *data, size_t len, int compress)
{
    if (!compress) {
        write_chunk(f, type, head, head_len, data, len);
        return IP_OK;
    }
    uLong bound = compressBound((uLong)len);
    unsigned char *z = malloc(bound);
    if (!z) return IP_ENOMEM;
    int zr = compress2(z, &bound, data, (uLong)len, Z_BEST_COMPRESSION);
    if (zr == Z_OK) write_chunk(f, type, head, head_len, z, bound);
    free(z);
    return zr == Z_OK ? IP_OK : IP_ENOMEM;
}

static int write_text(FILE *f, const meta_text *t)
{
    size_t key = strlen(t->key);
    size_t extra = t->kind == META_TEXT_INTL ? 2 + strlen(t->lang) + 1 + strlen(t->translated) + 1
                 : t->kind == META_TEXT_ZIP ? 1 : 0;
    unsigned char *head = malloc(key + 1 + extra);
    if (!head) return IP_ENOMEM;
    memcpy(head, t->key, key + 1);
    size_t at = key + 1;
    if (t->kind == META_TEXT_ZIP) head[at++] = 0;
    if (t->kind == META_TEXT_INTL) {
        head[at++] = (unsigned char)t->compressed;
        head[at++] = 0;
        memcpy(head + at, t->lang, strlen(t->lang) + 1);
        at += strlen(t->lang) + 1;
        memcpy(head + at, t->translated, strlen(t->translated) + 1);
        at += strlen(t->translated) + 1;
    }
    const char *type = t->kind == META_TEXT_PLAIN ? "tEXt" : t->kind == META_TEXT_ZIP ? "zTXt" : "iTXt";
    int compress = t->kind == META_TEXT_ZIP || (t->kind == META_TEXT_INTL && t->compressed);
    int rc = write_with_header(f, type, head, at, t->text, t->text_len, compress);
    free(head);
    return rc;
}

static void write_phys(FILE *f, const io_meta *m)
{
    double scale = m->res_unit == META_RES_INCH ? 1 / METRE_PER_INCH : m->res_unit == META_RES_CM ? 100 : 1;
    double x = m->res_x * scale, y = m->res_y * scale;
    if (m->res_unit == META_RES_NONE || !(x >= 0.5 && x < 4294967295.0) || !(y >= 0.5 && y < 4294967295.0)) return;
    unsigned char d[9];
    put_be32(d, (uint32_t)lround(x));
    put_be32(d + 4, (uint32_t)lround(y));
    d[8] = m->res_unit == META_RES_ASPECT ? 0 : 1;
    write_chunk(f, "pHYs", d, 9, NULL, 0);
}

int meta_png_write(FILE *f, const io_meta *m, const ip_shape *shape)
{
    if (!m) return IP_OK;
    /* The profile's name, its NUL and compression method 0: the literal's own NUL is the last. */
    static const unsigned char icc_head[] = "ICC profile\0";
    int rc = IP_OK;
    if (meta_icc_fits(m, shape)) rc = write_with_header(f, "iCCP", icc_head, sizeof icc_head, m->icc, m->icc_len, 1);
    write_phys(f, m);
    unsigned char *exif = NULL;
    size_t exif_len = 0;
    if (!rc) rc = meta_exif_for_output(m, &exif, &exif_len);
    if (rc == IP_ELIMIT) rc = IP_OK;
    if (!rc && exif) write_chunk(f, "eXIf", exif, exif_len, NULL, 0);
    free(exif);
    /* Key, NUL, not compressed, method 0, empty language and translated key (the literal's NUL). */
    static const unsigned char xmp_head[] = "XML:com.adobe.xmp\0\0\0\0";
    if (!rc && m->xmp) write_chunk(f, "iTXt", xmp_head, sizeof xmp_head, m->xmp, m->xmp_len);
    for (int i = 0; i < m->n_texts && !rc; i++) rc = write_text(f, &m->texts[i]);
    return rc;
}
