#include "io_png_internal.h"
#include "io_internal.h"
#include "meta_png.h"
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include <zlib.h>
#include "deflate_walk.h"

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
#define DICT_BYTES ((size_t)32768)
#define IDAT_MAX ((size_t)1 << 20)
#define FAST_MAX_LEVEL 4

typedef struct {
    const ip_image *img;
    const io_meta *meta;  /* chunks written between IHDR and the image data */
    size_t row_bytes;     /* unfiltered */
    unsigned bpp, allowed;
    int swap16, level, strategy;
    size_t band_rows, n_bands;
} encoder;

typedef struct {
    unsigned char *data;
    size_t len;
    uLong adler;          /* of the band's filtered bytes */
    size_t filtered_len;
    int rc;
} band_result;

/* Row y as PNG stores it (16-bit samples big-endian); into buf when it must be converted. */
static const uint8_t *png_row(const encoder *e, size_t y, uint8_t *buf)
{
    const uint8_t *row = (const uint8_t *)e->img->data + y * (size_t)e->img->stride;
    if (!e->swap16) return row;
    for (size_t i = 0; i + 1 < e->row_bytes; i += 2) buf[i] = row[i + 1], buf[i + 1] = row[i];
    return buf;
}

/* Filters rows [y0, y1) into out, each row after its filter byte. */
static int filter_rows(const encoder *e, size_t y0, size_t y1, uint8_t *out)
{
    size_t n = e->row_bytes;
    uint8_t *scratch = calloc(4, n + 1);
    if (!scratch) return IP_ENOMEM;
    uint8_t *zeros = scratch, *try = scratch + (n + 1), *cur_buf = try + (n + 1), *prev_buf = cur_buf + (n + 1);
    const uint8_t *prev = y0 > 0 ? png_row(e, y0 - 1, prev_buf) : zeros;
    for (size_t y = y0; y < y1; y++) {
        const uint8_t *cur = png_row(e, y, cur_buf);
        pngx_filter_row(cur, prev, n, e->bpp, e->allowed, out + (y - y0) * (n + 1), try);
        if (e->swap16) {
            uint8_t *t = prev_buf;
            prev_buf = cur_buf, cur_buf = t;
        }
        prev = e->swap16 ? prev_buf : cur;
    }
    free(scratch);
    return IP_OK;
}

/* Raw deflate of in, ending with a sync flush or, for the last band, the final block. The
 * input goes in pieces that fit zlib's 32-bit counts. */
static int deflate_band(const encoder *e, const uint8_t *dict, size_t dict_len, const uint8_t *in, size_t len,
                        int last, band_result *out)
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
static int deflate_band_fast(const encoder *e, const uint8_t *in, size_t len, int last, band_result *out)
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

static int encode_band(const encoder *e, size_t band, band_result *out)
{
    size_t n = e->row_bytes + 1, h = (size_t)e->img->shape.height;
    size_t y0 = band * e->band_rows, y1 = y0 + e->band_rows < h ? y0 + e->band_rows : h;
    /* The rows whose filtered bytes end the previous band, for the dictionary. */
    size_t dict_rows = (DICT_BYTES + n - 1) / n, yd = y0 > dict_rows ? y0 - dict_rows : 0;
    uint8_t *filtered = malloc((y1 - yd) * n);
    if (!filtered) return IP_ENOMEM;
    int rc = filter_rows(e, yd, y1, filtered);
    size_t before = (y0 - yd) * n, dict_len = before < DICT_BYTES ? before : DICT_BYTES;
    const uint8_t *data = filtered + before;
    out->filtered_len = (y1 - y0) * n;
    out->adler = adler32_z(adler32(0L, Z_NULL, 0), data, out->filtered_len);
    int last = band + 1 == e->n_bands;
    if (!rc) rc = deflate_band_fast(e, data, out->filtered_len, last, out);
    if (rc == IP_EUNSUPPORTED) rc = deflate_band(e, data - dict_len, dict_len, data, out->filtered_len, last, out);
    free(filtered);
    return rc;
}

typedef struct {
    FILE *f;
    unsigned char buf[IDAT_MAX];
    size_t len;
} idat_writer;

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

static void idat_put(idat_writer *w, const unsigned char *p, size_t n)
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

static void write_header(FILE *f, const encoder *e)
{
    static const unsigned char signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    static const unsigned char color_types[4] = { 0, 4, 2, 6 };
    const ip_shape *s = &e->img->shape;
    unsigned char ihdr[13] = { 0 };
    put_be32(ihdr, (uint32_t)s->width);
    put_be32(ihdr + 4, (uint32_t)s->height);
    ihdr[8] = s->dtype == IP_U16 ? 16 : 8;
    ihdr[9] = color_types[s->channels - 1];
    fwrite(signature, 1, 8, f);
    write_chunk(f, "IHDR", ihdr, 13);
}

/* The zlib header zlib itself would write for this level (32 KiB window). */
static void zlib_header(int level, unsigned char out[2])
{
    unsigned flevel = level < 2 ? 0 : level < 6 ? 1 : level == 6 ? 2 : 3;
    unsigned header = (0x78u << 8) | (flevel << 6);
    header += 31 - header % 31;
    out[0] = (unsigned char)(header >> 8), out[1] = (unsigned char)header;
}

static int write_file(FILE *f, const encoder *e, const band_result *bands)
{
    idat_writer *w = malloc(sizeof *w);
    if (!w) return IP_ENOMEM;
    w->f = f, w->len = 0;
    write_header(f, e);
    if (meta_png_write(f, e->meta, &e->img->shape) != IP_OK) {
        free(w);
        return IP_ENOMEM;
    }
    unsigned char bytes[4];
    zlib_header(e->level, bytes);
    idat_put(w, bytes, 2);
    uLong adler = adler32(0L, Z_NULL, 0);
    for (size_t b = 0; b < e->n_bands; b++) {
        idat_put(w, bands[b].data, bands[b].len);
        adler = adler32_combine(adler, bands[b].adler, (z_off_t)bands[b].filtered_len);
    }
    put_be32(bytes, (uint32_t)adler);
    idat_put(w, bytes, 4);
    if (w->len) write_chunk(f, "IDAT", w->buf, w->len);
    write_chunk(f, "IEND", NULL, 0);
    free(w);
    return IP_OK;
}

static void plan(encoder *e, const ip_image *img, const io_options *opt)
{
    const ip_shape *s = &img->shape;
    unsigned sample_bytes = s->dtype == IP_U16 ? 2 : 1;
    int level = opt->png_level;
    e->img = img;
    e->meta = opt->meta;
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

static int encode(FILE *f, const encoder *e, int threads, char *err, size_t errlen)
{
    band_result *bands = calloc(e->n_bands, sizeof *bands);
    if (!bands) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    long n_bands = (long)e->n_bands;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long b = 0; b < n_bands; b++) bands[b].rc = encode_band(e, (size_t)b, &bands[b]);
    int rc = IP_OK;
    for (size_t b = 0; b < e->n_bands && !rc; b++) rc = bands[b].rc;
    if (!rc) rc = write_file(f, e, bands);
    if (rc) snprintf(err, errlen, rc == IP_ENOMEM ? "out of memory" : "cannot write PNG: compression failed");
    for (size_t b = 0; b < e->n_bands; b++) free(bands[b].data);
    free(bands);
    return rc;
}

int io_write_png(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    encoder e;
    plan(&e, img, opt);
    int threads = io_thread_count(opt);
    if ((size_t)threads > e.n_bands) threads = (int)e.n_bands;
    int rc = encode(f, &e, threads, err, errlen);
    if (rc) {
        fclose(f);
        return rc;
    }
    return io_fclose_checked(f, err, errlen);
}
