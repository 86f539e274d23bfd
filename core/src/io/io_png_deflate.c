#include "io/io_png_deflate.h"
#include "io/io_png_internal.h"
#include "io/io_internal.h"
#include "io/meta_png.h"
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include "io/deflate_walk.h"
#include "io/zlib_frame.h"

/* The rows are cut into bands of about BAND_BYTES filtered bytes, a size that depends on the
 * row length only (never on the thread count, so every thread count writes the same file).
 * At levels 1 to FAST_MAX_LEVEL each band is deflated on its own by libdeflate (at level 3 about
 * twice as fast as zlib and 5% smaller), its final block made an ordinary one ending byte-aligned
 * (deflate_walk.h), so that the bands join into one zlib stream, as pigz does with zlib's sync
 * flushes. Above it zlib's Z_FILTERED compresses filtered rows better (libdeflate's files were 5%
 * larger than libpng's at levels 5 and 9 on astronaut.png); there, at level 0, and for any band
 * libdeflate's output cannot be joined for, zlib deflates the band primed with the 32 KiB of
 * filtered data before it. */
#define BAND_BYTES ((size_t)1 << 21)
#define IDAT_MAX ((size_t)1 << 20)
#define FAST_MAX_LEVEL 4

void pngx_plan_make(pngx_plan *e, const ip_shape *s, int level)
{
    unsigned sample_bytes = s->dtype == IP_U16 ? 2 : 1;
    e->bpp = (unsigned)s->channels * sample_bytes;
    e->row_bytes = (size_t)s->width * e->bpp;
    e->allowed = pngx_allowed_filters((uint32_t)s->width, (uint32_t)s->height);
    e->swap16 = sample_bytes == 2 && io_host_is_little_endian();
    e->level = level;
    /* libpng's choice: Z_FILTERED whenever rows may be filtered. */
    e->strategy = e->allowed == 1u ? Z_DEFAULT_STRATEGY : Z_FILTERED;
    size_t rows = BAND_BYTES / (e->row_bytes + 1);
    e->band_rows = rows ? rows : 1;
    e->n_bands = ((size_t)s->height + e->band_rows - 1) / e->band_rows;
}

/* Raw deflate of in, ending with a sync flush or, for the last band, the final block. The
 * input goes in pieces that fit zlib's 32-bit counts. */
static int deflate_band_zlib(const pngx_plan *e, const uint8_t *dict, size_t dict_len, const uint8_t *in, size_t len,
                        int last, pngx_band *out)
{
    z_stream z = { 0 };
    if (deflateInit2(&z, e->level, Z_DEFLATED, -15, 8, e->strategy) != Z_OK) return IP_ENOMEM;
    int rc = IP_OK;
    if (dict_len && deflateSetDictionary(&z, dict, (uInt)dict_len) != Z_OK) rc = IP_ENOMEM;
    size_t cap = deflateBound(&z, (uLong)len) + 64, done = 0;
    out->data = rc ? NULL : malloc(cap);
    if (!out->data) rc = IP_ENOMEM;
    while (!rc) {
        size_t piece = len - done < ((size_t)1 << 30) ? len - done : (size_t)1 << 30;
        int final = done + piece == len, flush = !final ? Z_NO_FLUSH : last ? Z_FINISH : Z_SYNC_FLUSH;
        z.next_in = (Bytef *)in + done;
        z.avail_in = (uInt)piece;
        z.next_out = out->data + out->len;
        z.avail_out = (uInt)(cap - out->len < UINT32_MAX ? cap - out->len : UINT32_MAX);
        uInt offered = z.avail_out;
        int zr = deflate(&z, flush);
        done += piece - z.avail_in;
        out->len += offered - z.avail_out;
        if (zr == Z_STREAM_ERROR) rc = IP_EIO;
        else if (final && done == len && (last ? zr == Z_STREAM_END : z.avail_out > 0)) break;
        else if (z.avail_out == 0 && cap - out->len == 0) {
            unsigned char *grown = realloc(out->data, cap * 2);
            if (!grown) rc = IP_ENOMEM;
            else out->data = grown, cap *= 2;
        }
    }
    deflateEnd(&z);
    return rc;
}

/* IP_EUNSUPPORTED: use zlib for this band. */
static int deflate_band_fast(const pngx_plan *e, const uint8_t *in, size_t len, int last, pngx_band *out)
{
    if (e->level < 1 || e->level > FAST_MAX_LEVEL) return IP_EUNSUPPORTED;
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(e->level);
    if (!c) return IP_ENOMEM;
    size_t cap = libdeflate_deflate_compress_bound(c, len) + 5;
    out->data = malloc(cap);
    size_t n = out->data ? libdeflate_deflate_compress(c, in, len, out->data, cap - 5) : 0;
    libdeflate_free_compressor(c);
    deflate_walk_result w;
    if (n && !last && deflate_walk(out->data, n, &w) == 0) n = deflate_make_joinable(out->data, n, &w);
    else if (!last) n = 0;
    if (n) {
        out->len = n;
        return IP_OK;
    }
    int rc = out->data ? IP_EUNSUPPORTED : IP_ENOMEM;
    free(out->data);
    out->data = NULL;
    return rc;
}

int pngx_deflate_band(const pngx_plan *p, const uint8_t *dict, size_t dict_len, const uint8_t *in, size_t len,
                      int last, pngx_band *out)
{
    out->filtered_len = len;
    out->adler = adler32_z(adler32(0L, Z_NULL, 0), in, len);
    int rc = deflate_band_fast(p, in, len, last, out);
    if (rc == IP_EUNSUPPORTED) rc = deflate_band_zlib(p, dict, dict_len, in, len, last, out);
    return rc;
}

struct pngx_idat {
    FILE *f;
    uLong adler;
    unsigned char buf[IDAT_MAX];
    size_t len;
};

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void write_chunk(FILE *f, const char *type, const unsigned char *data, size_t n)
{
    unsigned char head[8], tail[4];
    put_be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uLong crc = crc32(0L, head + 4, 4);
    if (n) crc = crc32(crc, data, (uInt)n);   /* zlib answers 0 for a NULL buffer */
    put_be32(tail, (uint32_t)crc);
    fwrite(head, 1, 8, f);
    if (n) fwrite(data, 1, n, f);
    fwrite(tail, 1, 4, f);
}

static void idat_put(pngx_idat *w, const unsigned char *p, size_t n)
{
    while (n) {
        size_t take = IDAT_MAX - w->len < n ? IDAT_MAX - w->len : n;
        memcpy(w->buf + w->len, p, take);
        w->len += take, p += take, n -= take;
        if (w->len == IDAT_MAX) {
            write_chunk(w->f, "IDAT", w->buf, w->len);
            w->len = 0;
        }
    }
}

static void write_header(FILE *f, const ip_shape *s)
{
    static const unsigned char signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    static const unsigned char color_types[4] = { 0, 4, 2, 6 };
    unsigned char ihdr[13] = { 0 };
    put_be32(ihdr, (uint32_t)s->width);
    put_be32(ihdr + 4, (uint32_t)s->height);
    ihdr[8] = s->dtype == IP_U16 ? 16 : 8;
    ihdr[9] = color_types[s->channels - 1];
    fwrite(signature, 1, 8, f);
    write_chunk(f, "IHDR", ihdr, 13);
}

int pngx_begin(FILE *f, const ip_shape *s, const io_meta *meta, int level, pngx_idat **out)
{
    pngx_idat *w = malloc(sizeof *w);
    *out = w;
    if (!w) return IP_ENOMEM;
    w->f = f, w->len = 0;
    w->adler = adler32(0L, Z_NULL, 0);
    write_header(f, s);
    if (meta_png_write(f, meta, s) != IP_OK) return IP_ENOMEM;
    unsigned char bytes[ZLIB_FRAME_HEADER];
    zlib_frame_header(level, bytes);
    idat_put(w, bytes, sizeof bytes);
    return IP_OK;
}

void pngx_idat_band(pngx_idat *w, const pngx_band *b)
{
    idat_put(w, b->data, b->len);
    w->adler = adler32_combine(w->adler, b->adler, (z_off_t)b->filtered_len);
}

void pngx_end(pngx_idat *w)
{
    unsigned char bytes[ZLIB_FRAME_TRAILER];
    zlib_frame_trailer((uint32_t)w->adler, bytes);
    idat_put(w, bytes, sizeof bytes);
    if (w->len) write_chunk(w->f, "IDAT", w->buf, w->len);
    write_chunk(w->f, "IEND", NULL, 0);
}

void pngx_idat_free(pngx_idat *w) { free(w); }
