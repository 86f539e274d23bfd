#include "io/io_tiff_strip_cpu.h"
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/image.h"
#include "io/io_tiff_handle.h"
#include "io/io_tiff_predict.h"

int tiff_libdeflate_level(int zlib_level)
{
    return zlib_level <= 0 ? 6 : zlib_level > 9 ? 9 : zlib_level;
}

/* Measured on the H200 machine (bench/RESULTS.md, 2026-11-29), the 10-gigapixel run at level 6:
 * the cores at 6 took 18% of the strips and the run 10.7-11.0 s; at 2 they took 30% and the run
 * 9.5 s, the file 1.8% larger than the cores' alone at 6 (at 1: 8.96 s, 2.4%). 1-3 take the
 * fastest, where the card's algorithm 4 deflates better than 3; 7-9, asked for small files, keep
 * their own. */
static const int level_beside_card[10] = { 2, 1, 1, 1, 2, 2, 2, 7, 8, 9 };

int tiff_libdeflate_level_beside_card(int zlib_level)
{
    return level_beside_card[zlib_level >= 1 && zlib_level <= 9 ? zlib_level : 0];
}

/* A whole image's writer beside the card (a folder's worker) gives the cores half the strips or
 * more, where level 2 would add 4.6% to the file: 4 adds 2.0% and ran 16% faster (the H200
 * machine's TIFF folder at level 6, 2026-11-29: 54.4-55.7 images/s against 46.2-48.2, level 5
 * 49.4-51.9 at +1.0-1.2%). */
static const int level_beside_card_image[10] = { 4, 1, 2, 3, 4, 4, 4, 7, 8, 9 };

int tiff_libdeflate_level_beside_card_image(int zlib_level)
{
    return level_beside_card_image[zlib_level >= 1 && zlib_level <= 9 ? zlib_level : 0];
}

typedef struct {
    struct libdeflate_compressor *c;     /* the level the strips are written at */
    struct libdeflate_compressor *asked; /* while the faster level is checked: the asked level */
    int level, asked_level;              /* c's, and the asked one */
    tiff_fast_check *check;
    tiff_strip_bytes sample;             /* the asked level's bytes of a sampled strip */
    ip_shape shape;
    unsigned char *scratch;   /* a row, for the floating-point predictor */
} deflate_state;

static void deflate_close(void *state)
{
    deflate_state *s = state;
    if (!s) return;
    if (s->c) libdeflate_free_compressor(s->c);
    if (s->asked) libdeflate_free_compressor(s->asked);
    free(s->sample.data);
    free(s->scratch);
    free(s);
}

static int deflate_open(const tiff_strip_codec *codec, const tiff_strip_format *f, void **state, char *err,
                        size_t errlen)
{
    (void)codec;
    deflate_state *s = calloc(1, sizeof *s);
    int level = tiff_libdeflate_level(f->level), fast = f->fast ? tiff_fast_check_level(f->fast, f->level) : level;
    if (s) {
        s->shape = f->shape;
        s->c = libdeflate_alloc_compressor(fast);
        s->level = fast;
        s->asked_level = level;
        s->asked = fast != level ? libdeflate_alloc_compressor(level) : NULL;
        s->check = fast != level ? f->fast : NULL;
        s->scratch = malloc(img_row_bytes(&f->shape));
    }
    if (!s || !s->c || !s->scratch || (fast != level && !s->asked)) {
        deflate_close(s);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    *state = s;
    return IP_OK;
}

/* The level the check now wants: a faster one, or the asked one from now on. */
static int take_level(deflate_state *s, int level, char *err, size_t errlen)
{
    struct libdeflate_compressor *next = s->asked;
    int asked = level == s->asked_level;
    if (!asked && !(next = libdeflate_alloc_compressor(level))) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    libdeflate_free_compressor(s->c);
    s->c = next;
    s->level = level;
    if (asked) s->asked = NULL;
    return IP_OK;
}

/* A sampled strip: deflated at the asked level too, both sizes counted, the smaller kept (both
 * buffers are the codec's realloc'd bytes). */
static int sample_asked_level(deflate_state *s, const unsigned char *rows, size_t len, tiff_strip_bytes *out,
                              char *err, size_t errlen)
{
    int rc = tiff_strip_bytes_grow(&s->sample, libdeflate_zlib_compress_bound(s->asked, len), err, errlen);
    if (rc != IP_OK) return rc;
    size_t asked_len = libdeflate_zlib_compress(s->asked, rows, len, s->sample.data, s->sample.cap);
    tiff_fast_check_add(s->check, s->level, out->len, asked_len);
    if (asked_len > 0 && asked_len < out->len) {
        tiff_strip_bytes fast = *out;
        *out = s->sample;
        out->len = asked_len;
        s->sample = fast;
    }
    return IP_OK;
}

/* A zlib stream (TIFF's Adobe deflate) of the predicted rows. */
static int deflate_compress(void *state, uint32_t index, unsigned char *rows, size_t len, tiff_strip_bytes *out,
                            char *err, size_t errlen)
{
    deflate_state *s = state;
    size_t row_bytes = img_row_bytes(&s->shape);
    tiff_predict_rows(rows, (uint32_t)(len / row_bytes), &s->shape, s->scratch);
    int level = s->level, sampled = s->asked && tiff_fast_check_next(s->check, &level);
    int rc = level != s->level ? take_level(s, level, err, errlen) : IP_OK;
    if (rc == IP_OK) rc = tiff_strip_bytes_grow(out, libdeflate_zlib_compress_bound(s->c, len), err, errlen);
    if (rc != IP_OK) return rc;
    out->len = libdeflate_zlib_compress(s->c, rows, len, out->data, out->cap);
    if (out->len == 0) {
        snprintf(err, errlen, "strip %u does not compress", index);
        return IP_EIO;
    }
    return sampled && s->asked ? sample_asked_level(s, rows, len, out, err, errlen) : IP_OK;
}

static int copy_open(const tiff_strip_codec *codec, const tiff_strip_format *f, void **state, char *err, size_t errlen)
{
    (void)codec;
    (void)f;
    (void)err;
    (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int copy_compress(void *state, uint32_t index, unsigned char *rows, size_t len, tiff_strip_bytes *out,
                         char *err, size_t errlen)
{
    (void)state;
    (void)index;
    int rc = tiff_strip_bytes_grow(out, len ? len : 1, err, errlen);
    if (rc == IP_OK) memcpy(out->data, rows, len);
    out->len = len;
    return rc;
}

static void copy_close(void *state) { (void)state; }

/* libtiff's encoder on a handle tagged like the output whose strip bytes land in memory. */
typedef struct {
    TIFF *tif;
    tiff_sink sink;
    tiff_log log;
} libtiff_state;

static void libtiff_close(void *state)
{
    libtiff_state *s = state;
    if (!s) return;
    if (s->tif) TIFFClose(s->tif);   /* its directory goes nowhere: the sink is not collecting */
    free(s->sink.data);
    free(s);
}

static int libtiff_open(const tiff_strip_codec *codec, const tiff_strip_format *f, void **state, char *err,
                        size_t errlen)
{
    (void)codec;
    libtiff_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int ok = (s->tif = tiff_open_sink(&s->sink, &s->log)) != NULL;
    if (!ok || !tiff_set_image_tags(s->tif, &f->shape, f->rows_per_strip, f->compression)) {
        snprintf(err, errlen, "%s", tiff_log_text(&s->log, ok ? "bad tags" : "out of memory"));
        libtiff_close(s);
        return ok ? IP_EIO : IP_ENOMEM;
    }
    *state = s;
    return IP_OK;
}

/* The sink's buffer becomes the strip's and the strip's old one the sink's: nothing is copied. */
static int libtiff_compress(void *state, uint32_t index, unsigned char *rows, size_t len, tiff_strip_bytes *out,
                            char *err, size_t errlen)
{
    libtiff_state *s = state;
    s->sink.len = 0;
    s->sink.collecting = 1;
    tmsize_t n = TIFFWriteEncodedStrip(s->tif, index, rows, (tmsize_t)len);
    s->sink.collecting = 0;
    if (n < 0) {
        snprintf(err, errlen, "%s", s->sink.out_of_memory ? "out of memory" : tiff_log_text(&s->log, "cannot compress"));
        return s->sink.out_of_memory ? IP_ENOMEM : IP_EIO;
    }
    tiff_strip_bytes done = { s->sink.data, s->sink.len, s->sink.cap };
    s->sink.data = out->data;
    s->sink.cap = out->cap;
    s->sink.len = 0;
    *out = done;
    return IP_OK;
}

static const tiff_strip_codec deflate_codec = { deflate_open, deflate_compress, deflate_close, NULL };
static const tiff_strip_codec copy_codec = { copy_open, copy_compress, copy_close, NULL };
static const tiff_strip_codec libtiff_codec = { libtiff_open, libtiff_compress, libtiff_close, NULL };

const tiff_strip_codec *tiff_strip_codec_cpu(io_tiff_compression c)
{
    return c == IO_TIFF_DEFLATE ? &deflate_codec : c == IO_TIFF_NONE ? &copy_codec : &libtiff_codec;
}

const tiff_strip_codec *tiff_strip_codec_for(const io_options *opt)
{
    return opt->tiff_strip_codec ? opt->tiff_strip_codec : tiff_strip_codec_cpu(opt->tiff_compression);
}
