#define _POSIX_C_SOURCE 200809L
#include "io/meta_jpeg.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/exif.h"

#define SEGMENT_MAX 65533u                      /* payload bytes: the length field counts itself */
#define ICC_HEAD 14u                            /* "ICC_PROFILE\0", sequence number, count */
#define ICC_PIECE_MAX (SEGMENT_MAX - ICC_HEAD)
#define JFIF_BYTES 18u                          /* a JFIF APP0 segment without thumbnail, marker included */

static const char exif_id[6] = { 'E', 'x', 'i', 'f', 0, 0 };
static const char xmp_id[] = "http://ns.adobe.com/xap/1.0/";   /* with its NUL: 29 bytes */
static const char icc_id[12] = { 'I', 'C', 'C', '_', 'P', 'R', 'O', 'F', 'I', 'L', 'E', 0 };

/* The APP2 pieces of a profile, by sequence number; any inconsistency drops the profile, as
 * libjpeg's jpeg_read_icc_profile does. */
typedef struct {
    unsigned char *piece[256];
    size_t len[256];
    int count;
    int bad;
} icc_pieces;

static void take_jfif(io_meta *m, const unsigned char *p, size_t len)
{
    if (len < 12 || memcmp(p, "JFIF\0", 5) || m->res_unit != META_RES_NONE) return;
    unsigned unit = p[7], x = (unsigned)p[8] << 8 | p[9], y = (unsigned)p[10] << 8 | p[11];
    /* Unit 0 with equal densities is libjpeg's default, which says nothing. */
    if (!x || !y || unit > 2 || (unit == 0 && x == y)) return;
    m->res_unit = unit == 0 ? META_RES_ASPECT : unit == 1 ? META_RES_INCH : META_RES_CM;
    m->res_x = x;
    m->res_y = y;
}

static int take_icc_piece(icc_pieces *icc, const unsigned char *p, size_t len)
{
    int seq = p[12], count = p[13];
    if (!count || !seq || seq > count || (icc->count && count != icc->count) || icc->piece[seq]) {
        icc->bad = 1;
        return IP_OK;
    }
    icc->count = count;
    icc->len[seq] = len - ICC_HEAD;
    icc->piece[seq] = malloc(len - ICC_HEAD + 1);
    if (!icc->piece[seq]) return IP_ENOMEM;
    memcpy(icc->piece[seq], p + ICC_HEAD, len - ICC_HEAD);
    return IP_OK;
}

static int take_app(io_meta *m, int marker, const unsigned char *p, size_t len, icc_pieces *icc)
{
    if (marker == 0xE0) take_jfif(m, p, len);
    if (marker == 0xE1 && len >= sizeof exif_id && !memcmp(p, exif_id, sizeof exif_id) && !m->exif)
        return meta_set_bytes(&m->exif, &m->exif_len, p + sizeof exif_id, len - sizeof exif_id);
    if (marker == 0xE1 && len >= sizeof xmp_id && !memcmp(p, xmp_id, sizeof xmp_id) && !m->xmp)
        return meta_set_bytes(&m->xmp, &m->xmp_len, p + sizeof xmp_id, len - sizeof xmp_id);
    if (marker == 0xE2 && len >= ICC_HEAD && !memcmp(p, icc_id, sizeof icc_id)) return take_icc_piece(icc, p, len);
    return IP_OK;
}

static int assemble_icc(io_meta *m, icc_pieces *icc)
{
    size_t total = 0;
    int rc = IP_OK;
    for (int i = 1; i <= icc->count && !icc->bad; i++) {
        if (!icc->piece[i]) icc->bad = 1;
        else total += icc->len[i];
    }
    if (!icc->bad && icc->count && total) {
        unsigned char *joined = malloc(total);
        if (!joined) rc = IP_ENOMEM;
        for (int i = 1, at = 0; joined && i <= icc->count; at += (int)icc->len[i], i++)
            memcpy(joined + at, icc->piece[i], icc->len[i]);
        if (joined) m->icc = joined, m->icc_len = total;
    }
    for (int i = 0; i < 256; i++) free(icc->piece[i]);
    return rc;
}

/* The next marker's code, past any fill bytes and stray data; -1 at the end of the file. */
static int next_marker(FILE *f)
{
    int c;
    while ((c = fgetc(f)) != EOF && c != 0xFF) {}
    while (c == 0xFF) c = fgetc(f);
    return c == EOF ? -1 : c;
}

/* The segments before the first scan: JFIF, Exif, XMP and the ICC pieces are kept. */
static int walk_segments(FILE *f, io_meta *m, unsigned char *buf, icc_pieces *icc)
{
    for (;;) {
        int marker = next_marker(f);
        if (marker < 0 || marker == 0xD9 || marker == 0xDA) return IP_OK;
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
        int hi = fgetc(f), lo = fgetc(f);
        if (hi == EOF || lo == EOF || (hi << 8 | lo) < 2) return IP_OK;
        size_t len = (size_t)(hi << 8 | lo) - 2;
        if (marker < 0xE0 || marker > 0xE2) {
            if (fseek(f, (long)len, SEEK_CUR) != 0) return IP_OK;
            continue;
        }
        if (fread(buf, 1, len, f) != len) return IP_OK;
        int rc = take_app(m, marker, buf, len, icc);
        if (rc) return rc;
    }
}

int meta_read_jpeg(FILE *f, io_meta *m)
{
    meta_clear(m);
    if (fgetc(f) != 0xFF || fgetc(f) != 0xD8) return IP_OK;
    unsigned char *buf = malloc(SEGMENT_MAX + 2);
    icc_pieces *icc = calloc(1, sizeof *icc);
    int rc = buf && icc ? walk_segments(f, m, buf, icc) : IP_ENOMEM;
    if (icc) {
        int icc_rc = assemble_icc(m, icc);
        if (!rc) rc = icc_rc;
    }
    free(icc);
    free(buf);
    if (rc == IP_ELIMIT) rc = IP_OK;
    m->orientation = exif_orientation(m->exif, m->exif_len);
    if (rc) meta_clear(m);
    return rc;
}

int meta_read_jpeg_bytes(const unsigned char *data, size_t len, io_meta *m)
{
    meta_clear(m);
    if (len < 2) return IP_OK;
    FILE *f = fmemopen((void *)data, len, "rb");
    if (!f) return IP_ENOMEM;
    int rc = meta_read_jpeg(f, m);
    fclose(f);
    return rc;
}

static int add_segment(meta_jpeg_output *out, int marker, const void *id, size_t id_len, const void *a,
                       size_t a_len, const void *b, size_t b_len)
{
    meta_jpeg_segment *grown = realloc(out->segments, (size_t)(out->n + 1) * sizeof *grown);
    if (!grown) return IP_ENOMEM;
    out->segments = grown;
    size_t len = id_len + a_len + b_len;
    unsigned char *data = malloc(len);
    if (!data) return IP_ENOMEM;
    memcpy(data, id, id_len);
    if (a_len) memcpy(data + id_len, a, a_len);
    if (b_len) memcpy(data + id_len + a_len, b, b_len);
    out->segments[out->n++] = (meta_jpeg_segment){ marker, data, len };
    return IP_OK;
}

static int add_icc(meta_jpeg_output *out, const unsigned char *icc, size_t len)
{
    size_t count = (len + ICC_PIECE_MAX - 1) / ICC_PIECE_MAX;
    if (count == 0 || count > 255) return IP_OK;
    int rc = IP_OK;
    for (size_t i = 0; i < count && !rc; i++) {
        size_t at = i * ICC_PIECE_MAX, n = len - at < ICC_PIECE_MAX ? len - at : ICC_PIECE_MAX;
        unsigned char numbers[2] = { (unsigned char)(i + 1), (unsigned char)count };
        rc = add_segment(out, 0xE2, icc_id, sizeof icc_id, numbers, 2, icc + at, n);
    }
    return rc;
}

/* JFIF densities are 16-bit integers: rounded, and scaled down together when too large. */
static void set_density(const io_meta *m, meta_jpeg_output *out)
{
    double x = m->res_x, y = m->res_y;
    if (m->res_unit == META_RES_NONE || !(x > 0) || !(y > 0) || !isfinite(x) || !isfinite(y)) return;
    double big = x > y ? x : y;
    if (big > 65535) x = x * 65535 / big, y = y * 65535 / big;
    long xi = lround(x), yi = lround(y);
    if (xi < 1 || yi < 1) return;
    out->has_density = 1;
    out->density_unit = m->res_unit == META_RES_INCH ? 1 : m->res_unit == META_RES_CM ? 2 : 0;
    out->x_density = (unsigned)xi;
    out->y_density = (unsigned)yi;
}

int meta_jpeg_prepare(const io_meta *m, const ip_shape *shape, meta_jpeg_output *out)
{
    memset(out, 0, sizeof *out);
    if (!m) return IP_OK;
    set_density(m, out);
    unsigned char *exif = NULL;
    size_t exif_len = 0;
    int rc = meta_exif_for_output(m, &exif, &exif_len);
    if (!rc && exif && exif_len + sizeof exif_id <= SEGMENT_MAX)
        rc = add_segment(out, 0xE1, exif_id, sizeof exif_id, exif, exif_len, NULL, 0);
    free(exif);
    if (!rc && m->xmp && m->xmp_len + sizeof xmp_id <= SEGMENT_MAX)
        rc = add_segment(out, 0xE1, xmp_id, sizeof xmp_id, m->xmp, m->xmp_len, NULL, 0);
    if (!rc && meta_icc_fits(m, shape)) rc = add_icc(out, m->icc, m->icc_len);
    if (rc == IP_ELIMIT) rc = IP_OK;   /* EXIF too large to rewrite: left out */
    if (rc) meta_jpeg_output_free(out);
    return rc;
}

void meta_jpeg_output_free(meta_jpeg_output *out)
{
    for (int i = 0; i < out->n; i++) free(out->segments[i].data);
    free(out->segments);
    memset(out, 0, sizeof *out);
}

static size_t jfif_app0_length(const unsigned char *in, size_t len)
{
    if (len < 4 + 16 || in[2] != 0xFF || in[3] != 0xE0) return 0;
    size_t seg = (size_t)in[4] << 8 | in[5];
    if (seg < 14 || 4 + seg > len || memcmp(in + 6, "JFIF\0", 5)) return 0;
    return seg + 2;
}

int meta_jpeg_splice(const unsigned char *in, size_t len, const io_meta *m, const ip_shape *shape,
                     unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    *out = NULL;
    *out_len = 0;
    if (len < 4 || in[0] != 0xFF || in[1] != 0xD8) {
        snprintf(err, errlen, "encoded JPEG does not start with SOI");
        return IP_EINVAL;
    }
    meta_jpeg_output add;
    int rc = meta_jpeg_prepare(m, shape, &add);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    /* A density needs a JFIF header: the encoder's is patched, or one is made (version 1.01, no
     * thumbnail). Either way it lies right after SOI, its density at bytes 13..17 of the file. */
    static const unsigned char jfif_head[JFIF_BYTES] = { 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1 };
    size_t keep = 2 + jfif_app0_length(in, len), made = keep == 2 && add.has_density ? JFIF_BYTES : 0;
    size_t total = len + made;
    for (int i = 0; i < add.n; i++) total += 4 + add.segments[i].len;
    unsigned char *buf = malloc(total);
    if (!buf) {
        meta_jpeg_output_free(&add);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    memcpy(buf, in, keep);
    if (made) memcpy(buf + 2, jfif_head, JFIF_BYTES);
    if (add.has_density) {
        buf[13] = (unsigned char)add.density_unit;
        buf[14] = (unsigned char)(add.x_density >> 8), buf[15] = (unsigned char)add.x_density;
        buf[16] = (unsigned char)(add.y_density >> 8), buf[17] = (unsigned char)add.y_density;
    }
    size_t at = keep + made;
    for (int i = 0; i < add.n; i++) {
        size_t seg = add.segments[i].len + 2;
        buf[at] = 0xFF, buf[at + 1] = (unsigned char)add.segments[i].marker;
        buf[at + 2] = (unsigned char)(seg >> 8), buf[at + 3] = (unsigned char)seg;
        memcpy(buf + at + 4, add.segments[i].data, add.segments[i].len);
        at += 4 + add.segments[i].len;
    }
    memcpy(buf + at, in + keep, len - keep);
    meta_jpeg_output_free(&add);
    *out = buf;
    *out_len = total;
    return IP_OK;
}
