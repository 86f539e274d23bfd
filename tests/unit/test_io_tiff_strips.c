/* io: TIFF strips compressed in parallel (io_tiff_strips.h). The CPU's deflate strips inflate
 * (zlib) to the rows with the predictor undone by a reference loop here, and at the levels where
 * libtiff gives libdeflate the same level they are the bytes libtiff's own encoder writes; strips
 * reach the writer in order (with a batch codec, as they are done), at most the plan's number in
 * flight, the same bytes for any thread count; the lowest failing strip's message whatever the
 * thread count; a failing compressor leaves no file from either writer; the streamed writer's
 * file is the whole-image writer's, byte for byte, at 1 and 4 threads; an image with a stride
 * wider than its rows writes the packed image's bytes; beside a batch codec every strip is written
 * at the caller's priority, though the compressing threads run at a lower one; the threads beside
 * a batch codec that opened (and only then) deflate at the faster level under one check: sampled
 * strips also at the asked one, keeping the smaller, and after 4 samples more than 5% larger level
 * 5, sampled afresh, then the asked level alone, also for a folder worker's images sharing a check:
 * their bytes libdeflate's own at the level a reference model picks. */
#define _GNU_SOURCE
#include "test_io_helpers.h"
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <tiffio.h>
#include <time.h>
#include <libdeflate.h>
#include <zlib.h>
#include "io/io_stream.h"
#include "io/io_tiff_handle.h"
#include "io/io_tiff_strip_cpu.h"
#include "io/io_tiff_strips.h"

static char err[512];

/* Strips written by a thread with a higher nice value than the test's (the lock taken). */
static int caller_nice;
static uint32_t written_nicer;

static int thread_nice(void) { return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)); }

/* A gradient (the predictor has work) plus seeded noise (a misplaced sample shows). */
static ip_image test_image(int w, int h, int c, ip_dtype t, uint64_t seed)
{
    ip_image img = { 0 };
    ip_shape s = { w, h, c, t };
    CHECK(img_alloc(&img, &s, UINT64_MAX, err, sizeof err) == IP_OK, "alloc: %s", err);
    tu_rng rng;
    tu_seed(&rng, seed);
    for (int y = 0; y < h; y++) {
        unsigned char *row = (unsigned char *)img.data + (size_t)y * (size_t)img.stride;
        for (size_t i = 0; i < (size_t)w * (size_t)c; i++) {
            uint32_t noise = tu_next(&rng);
            if (t == IP_U8) row[i] = (unsigned char)(i / 3 + 5 * y + noise % 7);
            else if (t == IP_U16) ((uint16_t *)(void *)row)[i] = (uint16_t)(131 * i + 307 * y + noise % 400);
            else ((float *)(void *)row)[i] = sinf((float)i * 0.03f) * (float)y + (float)(noise % 1000) * 1e-4f;
        }
    }
    return img;
}

/* Undoes the predictor the reference way: a running sum per sample (8, 16 bits), for floats the
 * byte-plane sums then each value's bytes gathered back from its plane, most significant first. */
static void unpredict_row(unsigned char *row, const ip_shape *s)
{
    size_t n = img_row_bytes(s), c = (size_t)s->channels;
    if (s->dtype == IP_U16) {
        uint16_t *w = (uint16_t *)(void *)row;
        for (size_t i = c; i < n / 2; i++) w[i] = (uint16_t)(w[i] + w[i - c]);
        return;
    }
    for (size_t i = c; i < n; i++) row[i] = (unsigned char)(row[i] + row[i - c]);
    if (s->dtype != IP_F32) return;
    unsigned char *planes = malloc(n);
    memcpy(planes, row, n);
    size_t words = n / 4;
    for (size_t k = 0; k < words; k++) {
        uint32_t v = (uint32_t)planes[k] << 24 | (uint32_t)planes[words + k] << 16 | (uint32_t)planes[2 * words + k] << 8 |
                     planes[3 * words + k];
        memcpy(row + 4 * k, &v, 4);
    }
    free(planes);
}

static const char *type_name(ip_dtype t) { return t == IP_U8 ? "u8" : t == IP_U16 ? "u16" : "f32"; }

/* libtiff writes the image itself (its encoder, its predictor) at zlib's level `level`; the strips
 * it stored. *libdeflate: it compressed them with libdeflate, at the same level from 1 to 5. */
static int libtiff_strips(const ip_image *img, uint32_t rps, int level, unsigned char ***strips, size_t **lens,
                          int *libdeflate)
{
    const char *path = tio_path("libtiff.tif");
    TIFF *tif = TIFFOpen(path, "w");
    if (!tif || !tiff_set_image_tags(tif, &img->shape, rps, IO_TIFF_DEFLATE)) return -1;
    if (level > 0) TIFFSetField(tif, TIFFTAG_ZIPQUALITY, level);
    uint16_t sub = 0;
    *libdeflate = TIFFGetField(tif, TIFFTAG_DEFLATE_SUBCODEC, &sub) && sub == DEFLATE_SUBCODEC_LIBDEFLATE;
    size_t row = img_row_bytes(&img->shape);
    uint32_t h = (uint32_t)img->shape.height, n = (h + rps - 1) / rps;
    unsigned char *buf = malloc(row * rps);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t rows = h - k * rps < rps ? h - k * rps : rps;
        for (uint32_t y = 0; y < rows; y++)
            memcpy(buf + y * row, (const char *)img->data + (size_t)(k * rps + y) * (size_t)img->stride, row);
        TIFFWriteEncodedStrip(tif, k, buf, (tmsize_t)(rows * row));
    }
    free(buf);
    TIFFClose(tif);
    tif = TIFFOpen(path, "r");
    if (!tif) return -1;
    *strips = calloc(n, sizeof **strips);
    *lens = calloc(n, sizeof **lens);
    for (uint32_t k = 0; k < n; k++) {
        (*lens)[k] = (size_t)TIFFGetStrileByteCount(tif, k);
        (*strips)[k] = malloc((*lens)[k] + 1);
        TIFFReadRawStrip(tif, k, (*strips)[k], (tmsize_t)(*lens)[k]);
    }
    TIFFClose(tif);
    return (int)n;
}

/* level 0 (the writers' default): zlib's inflate and the reference loop give the rows back;
 * levels 1 to 5, where libtiff gives libdeflate the same level: libtiff's own bytes too. */
static void codec_case(int w, int h, int c, ip_dtype t, int level)
{
    char name[80];
    snprintf(name, sizeof name, "%dx%dx%d %s level %d", w, h, c, type_name(t), level);
    ip_image img = test_image(w, h, c, t, (uint64_t)(w * 31 + h * 7 + c + t));
    tiff_strip_format f = { img.shape, tiff_rows_per_strip(&img.shape), IO_TIFF_DEFLATE, level, 0 };
    unsigned char **theirs = NULL;
    size_t *their_len = NULL;
    int libdeflate = 0, n = libtiff_strips(&img, f.rows_per_strip, level, &theirs, &their_len, &libdeflate);
    CHECK(n > 0, "%s: libtiff cannot write", name);
    const tiff_strip_codec *codec = tiff_strip_codec_cpu(IO_TIFF_DEFLATE);
    void *state = NULL;
    CHECK(codec->open(codec, &f, &state, err, sizeof err) == IP_OK, "%s: open: %s", name, err);
    size_t row = img_row_bytes(&img.shape);
    unsigned char *rows = malloc(row * f.rows_per_strip), *back = malloc(row * f.rows_per_strip);
    tiff_strip_bytes out = { 0 };
    int bad_bytes = 0, bad_pixels = 0;
    for (int k = 0; k < n; k++) {
        uint32_t y0 = (uint32_t)k * f.rows_per_strip, left = (uint32_t)h - y0;
        uint32_t nr = left < f.rows_per_strip ? left : f.rows_per_strip;
        const unsigned char *src = (const unsigned char *)img.data + (size_t)y0 * (size_t)img.stride;
        for (uint32_t y = 0; y < nr; y++) memcpy(rows + y * row, src + (size_t)y * (size_t)img.stride, row);
        CHECK(codec->compress(state, (uint32_t)k, rows, nr * row, &out, err, sizeof err) == IP_OK, "%s: %s", name, err);
        uLongf got = (uLongf)(row * nr);
        int z = uncompress(back, &got, out.data, (uLong)out.len);
        for (uint32_t y = 0; z == Z_OK && y < nr; y++) unpredict_row(back + y * row, &img.shape);
        for (uint32_t y = 0; z == Z_OK && y < nr && !bad_pixels; y++)
            bad_pixels = memcmp(back + y * row, src + (size_t)y * (size_t)img.stride, row) != 0;
        bad_pixels |= z != Z_OK || got != row * nr;
        bad_bytes |= out.len != their_len[k] || memcmp(out.data, theirs[k], out.len) != 0;
        free(theirs[k]);
    }
    CHECK(!bad_pixels, "%s: zlib and the reference predictor do not give the rows back", name);
    if (libdeflate && level >= 1 && level <= 5) CHECK(!bad_bytes, "%s: strips differ from libtiff's own", name);
    codec->close(state);
    free(out.data);
    free(rows);
    free(back);
    free(theirs);
    free(their_len);
    img_free(&img);
}

static void test_deflate_codec(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 37, 1 }, { 131, 97 }, { 1021, 257 }, { 70001, 3 } };
    static const ip_dtype types[] = { IP_U8, IP_U16, IP_F32 };
    for (int ti = 0; ti < 3; ti++)
        for (int c = 1; c <= 4; c++)
            for (int si = 0; si < 6; si++)
                for (int level = 0; level <= 5; level += 5) codec_case(sizes[si][0], sizes[si][1], c, types[ti], level);
    codec_case(1021, 257, 3, IP_U8, 1);
}

/* libdeflate's zlib stream of rows at level. */
static size_t reference_deflate(int level, const unsigned char *rows, size_t len, unsigned char *out, size_t cap)
{
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    size_t n = c ? libdeflate_zlib_compress(c, rows, len, out, cap) : 0;
    if (c) libdeflate_free_compressor(c);
    return n;
}

/* The check's rules restated: strip g (counted over every state sharing the check) is sampled
 * while a faster level is kept, every 4th of the level's first 16 and then every 32nd; a sample
 * keeps the smaller bytes (the faster level's when equal); from the level's 4th sample on, sums of
 * its samples more than 5% over the asked level's step it up from the next strip: to 5 from below,
 * from 5 to the asked level 6 for good; the sums are halved every 16 samples from the 32nd. */
typedef struct {
    uint32_t total, strips, samples;   /* strips: since the level's start */
    uint32_t middle_at, given_up_at;   /* the first strip at 5, at 6 (UINT32_MAX: none) */
    int level;
    uint64_t sum_fast, sum_asked;
} fast_model;

/* Which bytes strip g is written with: 0 the level's (m->level before the call), 1 the asked level's. */
static int model_strip(fast_model *m, size_t fast_len, size_t asked_len)
{
    uint32_t g = m->total++, n = m->strips++;
    if (m->level == 6) return 1;
    if (n < 16 ? n % 4 != 0 : n % 32 != 0) return 0;
    m->samples++;
    m->sum_fast += fast_len;
    m->sum_asked += asked_len;
    if (m->samples >= 4 && m->sum_fast * 100 > m->sum_asked * 105) {
        if (m->level < 5) m->middle_at = g + 1;
        else m->given_up_at = g + 1;
        m->level = m->level < 5 ? 5 : 6;
        m->strips = m->samples = 0;
        m->sum_fast = m->sum_asked = 0;
    } else if (m->samples >= 32 && m->samples % 16 == 0) {
        m->sum_fast /= 2;
        m->sum_asked /= 2;
    }
    return asked_len < fast_len;
}

typedef enum { ROWS_PHOTO, ROWS_PERIODIC, ROWS_SMOOTH } row_kind;

/* Row k of a run: photograph-like (a ramp and small noise), periodic (a 37-byte pattern with rare
 * noise, on which libdeflate's 2 loses about 22% to 6 and 5 about 11%) or smooth (plateaus that
 * step by one, as eight medians leave a photograph: 2 loses about 13%, 5 about 2%). */
static void beside_row(unsigned char *row, uint32_t width, uint32_t k, row_kind kind, tu_rng *rng)
{
    int v = 128;
    for (uint32_t x = 0; x < width; x++) {
        uint32_t noise = tu_next(rng);
        if (kind == ROWS_SMOOTH && noise % 4 == 0) v += (int)((noise >> 8) % 3) - 1;
        row[x] = kind == ROWS_PERIODIC ? (unsigned char)((x % 37) * 7 + (noise % 64 == 0))
                 : kind == ROWS_SMOOTH ? (unsigned char)v
                                       : (unsigned char)(x / 16 + k + noise % 12);
    }
}

/* One image of n one-row strips of width bytes through a deflate state at level 6 beside the card
 * under check (shared with the images before it, as a folder worker's are), the rows of kind from
 * strip turn_at on (photograph-like before), each strip against libdeflate at the model's level
 * and 6 on the rows predicted here and the model's pick. */
static void beside_image(const char *name, tiff_fast_check *check, fast_model *m, uint32_t width, uint32_t n,
                         row_kind kind, uint32_t turn_at, tu_rng *rng)
{
    ip_shape shape = { (int32_t)width, (int32_t)n, 1, IP_U8 };
    tiff_strip_format f = { shape, 1, IO_TIFF_DEFLATE, 6, check };
    const tiff_strip_codec *codec = tiff_strip_codec_cpu(IO_TIFF_DEFLATE);
    void *state = NULL;
    CHECK(codec->open(codec, &f, &state, err, sizeof err) == IP_OK, "%s: open: %s", name, err);
    size_t cap = 2 * (size_t)width + 1024;
    unsigned char *rows = malloc(width), *predicted = malloc(width), *fast = malloc(cap), *asked = malloc(cap);
    tiff_strip_bytes out = { 0 };
    uint32_t bad = UINT32_MAX, first = m->total;
    for (uint32_t k = 0; k < n && state; k++) {
        beside_row(rows, width, first + k, first + k >= turn_at ? kind : ROWS_PHOTO, rng);
        predicted[0] = rows[0];
        for (uint32_t x = 1; x < width; x++) predicted[x] = (unsigned char)(rows[x] - rows[x - 1]);
        size_t fast_len = reference_deflate(m->level, predicted, width, fast, cap);
        size_t asked_len = reference_deflate(6, predicted, width, asked, cap);
        int take_asked = model_strip(m, fast_len, asked_len);
        const unsigned char *want = take_asked ? asked : fast;
        size_t want_len = take_asked ? asked_len : fast_len;
        CHECK(codec->compress(state, k, rows, width, &out, err, sizeof err) == IP_OK, "%s: %s", name, err);
        if (bad == UINT32_MAX && (out.len != want_len || memcmp(out.data, want, want_len) != 0)) bad = first + k;
    }
    CHECK(bad == UINT32_MAX, "%s: strip %u is not libdeflate's at the level the model picks (5 from %u, 6 from %u)",
          name, bad, m->middle_at, m->given_up_at);
    codec->close(state);
    free(out.data);
    free(rows);
    free(predicted);
    free(fast);
    free(asked);
}

/* images of n strips each under one check, the rows of kind from strip turn_at on; *m the model
 * after them (its middle_at and given_up_at: where the check stepped). */
static void beside_run(const char *name, int (*level_for)(int), int images, uint32_t n, row_kind kind,
                       uint32_t turn_at, fast_model *m)
{
    tiff_fast_check check;
    tiff_fast_check_init(&check, level_for);
    *m = (fast_model){ .middle_at = UINT32_MAX, .given_up_at = UINT32_MAX, .level = level_for(6) };
    tu_rng rng;
    tu_seed(&rng, 71 + (uint64_t)turn_at + (uint64_t)kind);
    for (int i = 0; i < images; i++) beside_image(name, &check, m, 4001, n, kind, turn_at, &rng);
    CHECK(check.samples == m->samples, "%s: the check counted %u samples at its level, the model %u", name,
          check.samples, m->samples);
    CHECK(check.level == m->level, "%s: the check is at level %d, the model at %d", name, check.level, m->level);
    tiff_fast_check_destroy(&check);
}

/* Beside a card: photograph-like rows keep the faster level throughout; smooth ones step to 5
 * after the 4th sample (from strip 13) and keep it; periodic ones step to 5 there and to 6 after
 * 5's 4th sample (from strip 26). A folder worker's images of 6 strips share one check, so that it
 * decides within the fifth image, and later images open at the level reached; rows turning
 * periodic after 60 samples give the faster levels up within 112 more: the halved sums forget the
 * first rows (whose bytes, four times the periodic rows', would hold the sums under 5% for good). */
static void test_deflate_beside_card(void)
{
    CHECK(tiff_libdeflate_level_beside_card(0) == 2 && tiff_libdeflate_level_beside_card(6) == 2 &&
              tiff_libdeflate_level_beside_card(1) == 1 && tiff_libdeflate_level_beside_card(9) == 9,
          "the levels beside the card");
    CHECK(tiff_libdeflate_level_beside_card_image(0) == 4 && tiff_libdeflate_level_beside_card_image(6) == 4 &&
              tiff_libdeflate_level_beside_card_image(5) == 4 && tiff_libdeflate_level_beside_card_image(3) == 3 &&
              tiff_libdeflate_level_beside_card_image(9) == 9,
          "the levels beside the card, a whole image's writer");
    static const struct {
        const char *name;
        int image_writer, images;
        uint32_t n;
        row_kind kind;
        uint32_t middle_at, given_up_at;
    } runs[] = {
        { "photograph-like rows", 0, 1, 200, ROWS_PHOTO, UINT32_MAX, UINT32_MAX },
        { "smooth rows", 0, 1, 200, ROWS_SMOOTH, 13, UINT32_MAX },
        { "periodic rows", 0, 1, 200, ROWS_PERIODIC, 13, 26 },
        { "a folder's photograph-like images", 1, 10, 6, ROWS_PHOTO, UINT32_MAX, UINT32_MAX },
        { "a folder's smooth images", 1, 10, 6, ROWS_SMOOTH, UINT32_MAX, UINT32_MAX },
        { "a folder's periodic images", 1, 10, 6, ROWS_PERIODIC, 13, 26 },
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        fast_model m;
        beside_run(runs[i].name, runs[i].image_writer ? tiff_libdeflate_level_beside_card_image
                                                      : tiff_libdeflate_level_beside_card,
                   runs[i].images, runs[i].n, runs[i].kind, 0, &m);
        CHECK(m.middle_at == runs[i].middle_at && m.given_up_at == runs[i].given_up_at,
              "%s: level 5 from strip %u and 6 from %u, not %u and %u", runs[i].name, m.middle_at, m.given_up_at,
              runs[i].middle_at, runs[i].given_up_at);
    }
    uint32_t turn = 16 + 32 * 56;   /* the 60th sample */
    fast_model m;
    beside_run("rows turning periodic", tiff_libdeflate_level_beside_card_image, 100, 64, ROWS_PERIODIC, turn, &m);
    CHECK(m.given_up_at > turn && m.given_up_at <= turn + 32 * 112, "rows turning periodic at strip %u: 6 from %u, not within 112 samples",
          turn, m.given_up_at);
}

/* A stand-in codec: each byte xor the strip's number, after a delay that varies by strip, so the
 * threads finish out of order; it counts the strips being compressed at once, and fails at the
 * strips listed. */
typedef struct {
    pthread_mutex_t mu;
    int busy, most_busy;
    int overlap_wanted;   /* a strip waits (bounded) for a second one compressing: a thread that starts late can't hide it */
    uint32_t fail_at[2], done;
} fake_codec;

static int threads_beside_card = -1;   /* whether the last fake_open was given a check (-1: not opened) */

static int fake_open(const tiff_strip_codec *codec, const tiff_strip_format *f, void **state, char *e, size_t elen)
{
    threads_beside_card = f->fast != NULL;
    (void)e;
    (void)elen;
    *state = codec->user;
    return IP_OK;
}

static int fake_compress(void *state, uint32_t index, unsigned char *rows, size_t len, tiff_strip_bytes *out, char *e,
                         size_t elen)
{
    fake_codec *fc = state;
    pthread_mutex_lock(&fc->mu);
    if (++fc->busy > fc->most_busy) fc->most_busy = fc->busy;
    pthread_mutex_unlock(&fc->mu);
    for (int waited_ms = 0; fc->overlap_wanted && waited_ms < 10000; waited_ms++) {
        pthread_mutex_lock(&fc->mu);
        int overlapped = fc->most_busy > 1;
        pthread_mutex_unlock(&fc->mu);
        if (overlapped) break;
        struct timespec ms = { 0, 1000000L };
        nanosleep(&ms, NULL);
    }
    struct timespec nap = { 0, (long)((index * 7919u) % 5) * 200000L };
    nanosleep(&nap, NULL);
    pthread_mutex_lock(&fc->mu);
    fc->busy--;
    fc->done++;
    pthread_mutex_unlock(&fc->mu);
    if (index == fc->fail_at[0] || index == fc->fail_at[1]) {
        snprintf(e, elen, "strip %u broke", index);
        return IP_EIO;
    }
    unsigned char *data = realloc(out->data, len + 4);
    if (!data) return IP_ENOMEM;
    out->data = data;
    out->cap = len + 4;
    memcpy(data, &index, 4);
    for (size_t i = 0; i < len; i++) data[4 + i] = (unsigned char)(rows[i] ^ index);
    out->len = len + 4;
    return IP_OK;
}

static void fake_close(void *state) { (void)state; }

/* What the writer callback saw: strips in order, in flight counted against the plan; where each
 * one went, and whether one came twice. */
typedef struct {
    unsigned char *file;
    size_t len, cap;
    uint32_t next;
    int out_of_order, twice;
    uint32_t fail_write_at;
    uint32_t written, highest;  /* read by other threads under the lock */
    size_t *where;              /* strip k at where[k] - 1 (0: not written) */
    uint32_t where_len;
    pthread_mutex_t mu;
} sink;

static int sink_write(void *user, uint32_t index, const unsigned char *data, size_t len, char *e, size_t elen)
{
    sink *s = user;
    if (index == s->fail_write_at) {
        snprintf(e, elen, "disk full at strip %u", index);
        return IP_EIO;
    }
    s->out_of_order |= index != s->next++;
    if (s->len + len > s->cap) {
        s->cap = (s->len + len) * 2;
        s->file = realloc(s->file, s->cap);
    }
    if (index >= s->where_len) {
        uint32_t grown = 2 * index + 16;
        s->where = realloc(s->where, grown * sizeof *s->where);
        memset(s->where + s->where_len, 0, (grown - s->where_len) * sizeof *s->where);
        s->where_len = grown;
    }
    s->twice |= s->where[index] != 0;
    s->where[index] = s->len + 1;
    memcpy(s->file + s->len, data, len);
    s->len += len;
    int nicer = thread_nice() > caller_nice;
    pthread_mutex_lock(&s->mu);
    written_nicer += nicer;
    s->written++;
    s->highest = index > s->highest ? index : s->highest;
    pthread_mutex_unlock(&s->mu);
    return IP_OK;
}

/* Runs n strips of `strip` bytes through the pipeline; the rc of the first call that failed. */
static int run_fake(int threads, uint32_t n, size_t strip, fake_codec *fc, sink *s, int *most_in_flight, char *msg,
                    size_t msglen)
{
    tiff_strip_codec codec = { fake_open, fake_compress, fake_close, fc };
    ip_shape shape = { (int32_t)strip, (int32_t)n, 1, IP_U8 };
    tiff_strip_format f = { shape, 1, IO_TIFF_DEFLATE, 0, 0 };
    tiff_strips_plan plan = tiff_strips_plan_for(&f, threads, 0);
    tiff_strips *p = NULL;
    int rc = tiff_strips_open(&p, &codec, &f, &plan, sink_write, s, msg, msglen);
    *most_in_flight = 0;
    for (uint32_t k = 0; rc == IP_OK && k < n; k++) {
        unsigned char *rows = NULL;
        rc = tiff_strips_claim(p, &rows, msg, msglen);
        pthread_mutex_lock(&s->mu);
        int in_flight = (int)(k + 1 - s->written);
        pthread_mutex_unlock(&s->mu);
        if (rc == IP_OK && in_flight > *most_in_flight) *most_in_flight = in_flight;
        for (size_t i = 0; rc == IP_OK && i < strip; i++) rows[i] = (unsigned char)(k * 13 + i);
        if (rc == IP_OK) rc = tiff_strips_submit(p, strip, msg, msglen);
    }
    if (rc == IP_OK) rc = tiff_strips_finish(p, msg, msglen);
    CHECK(plan.slots <= (uint32_t)(2 * (threads > 1 ? threads : 1)), "%d threads: %u slots", threads, plan.slots);
    CHECK(*most_in_flight <= (int)plan.slots, "%d threads: %d strips in flight, plan %u", threads, *most_in_flight,
          plan.slots);
    tiff_strips_close(p);
    return rc;
}

static void test_order_and_threads(void)
{
    static const int thread_counts[] = { 1, 2, 4, 8 };
    unsigned char *first = NULL;
    size_t first_len = 0;
    for (int i = 0; i < 4; i++) {
        fake_codec fc = { .mu = PTHREAD_MUTEX_INITIALIZER, .overlap_wanted = thread_counts[i] > 1,
                          .fail_at = { UINT32_MAX, UINT32_MAX } };
        sink s = { .fail_write_at = UINT32_MAX, .mu = PTHREAD_MUTEX_INITIALIZER };
        int most = 0;
        char msg[256];
        int rc = run_fake(thread_counts[i], 61, 1000, &fc, &s, &most, msg, sizeof msg);
        CHECK(rc == IP_OK, "%d threads: %s", thread_counts[i], msg);
        CHECK(!s.out_of_order && s.next == 61, "%d threads: strips out of order (%u written)", thread_counts[i], s.next);
        CHECK(fc.most_busy <= thread_counts[i], "%d threads: %d compressing at once", thread_counts[i], fc.most_busy);
        if (thread_counts[i] > 1) CHECK(fc.most_busy > 1, "%d threads: never more than one compressing", thread_counts[i]);
        CHECK(s.len == 61 * 1004, "%d threads: %zu bytes written", thread_counts[i], s.len);
        for (uint32_t k = 0; k < 61 && s.len == 61 * 1004; k++) {
            const unsigned char *got = s.file + k * 1004;
            uint32_t index;
            memcpy(&index, got, 4);
            int ok = index == k;
            for (size_t j = 0; ok && j < 1000; j++) ok = got[4 + j] == (unsigned char)((k * 13 + j) ^ k);
            CHECK(ok, "%d threads: strip %u holds other bytes", thread_counts[i], k);
        }
        free(s.where);
        if (i == 0) {
            first = s.file, first_len = s.len;
            continue;
        }
        CHECK(s.len == first_len && memcmp(s.file, first, s.len) == 0, "%d threads: other bytes", thread_counts[i]);
        free(s.file);
    }
    free(first);
}

/* Strips 9 and 23 fail (or the write of 9): the message is strip 9's at any thread count, and no
 * strip from 9 on is written. */
static void test_failures(void)
{
    static const int thread_counts[] = { 1, 2, 4, 8 };
    for (int i = 0; i < 4; i++)
        for (int writes = 0; writes < 2; writes++) {
            fake_codec fc = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_at = { 23, 9 } };
            if (writes) fc.fail_at[0] = fc.fail_at[1] = UINT32_MAX;
            sink s = { .fail_write_at = writes ? 9 : UINT32_MAX, .mu = PTHREAD_MUTEX_INITIALIZER };
            int most = 0;
            char msg[256] = "";
            int rc = run_fake(thread_counts[i], 40, 100, &fc, &s, &most, msg, sizeof msg);
            const char *want = writes ? "disk full at strip 9" : "strip 9 broke";
            CHECK(rc == IP_EIO && strcmp(msg, want) == 0, "%d threads: rc %d, '%s', want '%s'", thread_counts[i], rc, msg,
                  want);
            CHECK(s.next <= 9 && !s.out_of_order, "%d threads: %u strips written past a failure", thread_counts[i], s.next);
            free(s.file);
            free(s.where);
        }
}

/* Both writers with a compressor that fails at its third strip: one line, no file, no temporary. */
static void test_writers_leave_nothing(void)
{
    fake_codec fc = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_at = { 2, UINT32_MAX } };
    tiff_strip_codec codec = { fake_open, fake_compress, fake_close, &fc };
    ip_image img = test_image(1021, 400, 3, IP_U8, 5);   /* 85 rows a strip: 5 strips */
    for (int threads = 1; threads <= 4; threads += 3) {
        io_options opt;
        io_default_options(&opt);
        opt.threads = threads;
        opt.tiff_strip_codec = &codec;
        const char *path = tio_path("never.tif");
        int rc = io_write(path, &img, &opt, err, sizeof err);
        CHECK(rc == IP_EIO && strcmp(err, "cannot write TIFF: strip 2 broke") == 0, "whole, %d threads: %d '%s'", threads,
              rc, err);
        CHECK(!tio_exists(path) && tio_leftover_temps() == 0, "whole, %d threads: a file was left", threads);
        io_stream_writer *w = NULL;
        rc = io_stream_create(path, &img.shape, &opt, &w, err, sizeof err);
        CHECK(rc == IP_OK, "streamed, %d threads: create: %s", threads, err);
        for (int y0 = 0; rc == IP_OK && y0 < img.shape.height; y0 += 50) {
            ip_image rows = img;
            rows.data = (char *)img.data + (size_t)y0 * img.stride;
            rows.shape.height = 50;
            rc = io_stream_write(w, &rows, y0, err, sizeof err);
        }
        if (rc == IP_OK) rc = io_stream_finish(w, err, sizeof err);
        else io_stream_abort(w);
        CHECK(rc == IP_EIO && strcmp(err, "cannot write TIFF: strip 2 broke") == 0, "streamed, %d threads: %d '%s'",
              threads, rc, err);
        CHECK(!tio_exists(path) && tio_leftover_temps() == 0, "streamed, %d threads: a file was left", threads);
    }
    img_free(&img);
}

/* The streamed writer, bands of `band` rows, against the whole-image writer's bytes. */
static void streamed_case(int w, int h, int c, ip_dtype t, io_tiff_compression comp, int band)
{
    if (!TIFFIsCODECConfigured(tiff_scheme(comp))) return;
    char name[96];
    snprintf(name, sizeof name, "%dx%dx%d %s, compression %d, bands of %d", w, h, c, type_name(t), (int)comp, band);
    ip_image img = test_image(w, h, c, t, (uint64_t)(w + h + c + t + comp));
    unsigned char *whole = NULL;
    size_t whole_len = 0;
    for (int threads = 1; threads <= 4; threads += 3) {
        io_options opt;
        io_default_options(&opt);
        opt.threads = threads;
        opt.tiff_compression = comp;
        if (threads == 1) {
            CHECK(io_write(tio_path("whole.tif"), &img, &opt, err, sizeof err) == IP_OK, "%s: %s", name, err);
            whole = tio_slurp(tio_path("whole.tif"), &whole_len);
        }
        io_stream_writer *sw = NULL;
        int rc = io_stream_create(tio_path("streamed.tif"), &img.shape, &opt, &sw, err, sizeof err);
        for (int y0 = 0; rc == IP_OK && y0 < h; y0 += band) {
            ip_image rows = img;
            rows.data = (char *)img.data + (size_t)y0 * img.stride;
            rows.shape.height = h - y0 < band ? h - y0 : band;
            rc = io_stream_write(sw, &rows, y0, err, sizeof err);
        }
        if (rc == IP_OK) rc = io_stream_finish(sw, err, sizeof err);
        else if (sw) io_stream_abort(sw);
        CHECK(rc == IP_OK, "%s, %d threads: %s", name, threads, err);
        size_t n = 0;
        unsigned char *got = tio_slurp(tio_path("streamed.tif"), &n);
        CHECK(got && whole && n == whole_len && memcmp(got, whole, n) == 0, "%s, %d threads: not the whole writer's bytes",
              name, threads);
        free(got);
        ip_image back = { 0 };
        rc = io_read(tio_path("streamed.tif"), &opt, &back, err, sizeof err);
        int same = rc == IP_OK && back.shape.width == w && back.shape.height == h;
        for (int y = 0; same && y < h; y++)
            same = memcmp((char *)back.data + (size_t)y * back.stride, (char *)img.data + (size_t)y * img.stride,
                          img_row_bytes(&img.shape)) == 0;
        CHECK(same, "%s, %d threads: read back differs", name, threads);
        img_free(&back);
    }
    free(whole);
    img_free(&img);
}

static void test_streamed_writer(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 131, 97 }, { 1021, 257 } };
    static const io_tiff_compression comps[] = { IO_TIFF_DEFLATE, IO_TIFF_LZW, IO_TIFF_ZSTD, IO_TIFF_NONE };
    for (int ti = 0; ti < 3; ti++)
        for (int c = 1; c <= 4; c += tu_quick() ? 3 : 1)
            for (int ci = 0; ci < 4; ci++)
                for (int si = 0; si < 4; si++)
                    streamed_case(sizes[si][0], sizes[si][1], c, (ip_dtype)(ti + 1), comps[ci], si == 3 ? 64 : 7);
}

/* An image whose rows are further apart than its width (a view into a wider one): the whole-image
 * writer, whose compressing threads copy the rows, writes the packed image's bytes. */
static void test_whole_writer_stride(void)
{
    ip_image wide = test_image(1021 + 13, 257, 3, IP_U8, 77), view = wide, packed = { 0 };
    view.shape.width = 1021;
    CHECK(img_alloc(&packed, &view.shape, UINT64_MAX, err, sizeof err) == IP_OK, "alloc: %s", err);
    for (int y = 0; y < 257; y++)
        memcpy((char *)packed.data + (size_t)y * packed.stride, (char *)wide.data + (size_t)y * wide.stride,
               img_row_bytes(&view.shape));
    io_options opt;
    io_default_options(&opt);
    opt.threads = 1;
    CHECK(io_write(tio_path("packed.tif"), &packed, &opt, err, sizeof err) == IP_OK, "packed: %s", err);
    size_t want_len = 0, got_len = 0;
    unsigned char *want = tio_slurp(tio_path("packed.tif"), &want_len);
    for (int threads = 1; threads <= 4; threads += 3) {
        opt.threads = threads;
        CHECK(io_write(tio_path("view.tif"), &view, &opt, err, sizeof err) == IP_OK, "view: %s", err);
        unsigned char *got = tio_slurp(tio_path("view.tif"), &got_len);
        CHECK(got && want && got_len == want_len && memcmp(got, want, got_len) == 0,
              "%d threads: a strided image writes other bytes", threads);
        free(got);
    }
    free(want);
    img_free(&packed);
    img_free(&wide);
}

/* A stand-in batch codec: strip k's bytes are k with the top bit set, then each row byte xor k,
 * so the sink tells which side compressed it; it records its batches' sizes, can decline the
 * format, and fails at fail_at. real: libdeflate's strips (the CPU codec) for a readable file. */
typedef struct {
    pthread_mutex_t mu;
    int decline, real, fail_any, opened;
    int fail_open_from;         /* states from this one fail to open (out of memory); 0: none do */
    uint32_t fail_at, strips, batches, smallest, largest, max_strips;
    fake_codec *threads_side;   /* set: a batch waits for the threads' first strip, so both sides take some */
    sink *overtake;             /* set: a batch waits for a strip after its own to be written */
    int overtaken;              /* that happened */
} fake_batch;

static int batch_open(const tiff_strip_batch_codec *codec, int which, const tiff_strip_format *f, uint32_t max_strips,
                      void **state, char *e, size_t elen)
{
    (void)which;
    fake_batch *fb = codec->user;
    if (fb->fail_open_from && which + 1 >= fb->fail_open_from) {
        snprintf(e, elen, "no room on the card");
        return IP_ENOMEM;
    }
    if (fb->decline) {
        snprintf(e, elen, "not this format");
        return IP_EUNSUPPORTED;
    }
    pthread_mutex_lock(&fb->mu);
    fb->opened++;
    fb->max_strips = max_strips;
    pthread_mutex_unlock(&fb->mu);
    if (!fb->real) {
        *state = fb;
        return IP_OK;
    }
    const tiff_strip_codec *cpu = tiff_strip_codec_cpu(IO_TIFF_DEFLATE);
    return cpu->open(cpu, f, state, e, elen);
}

/* A loaded machine may start the thread late; the wait keeps the test's split from depending on
 * when it does. Bounded, so a pool that never gives the threads a strip fails the split's check. */
static void wait_for_threads_side(fake_codec *fc)
{
    for (int waited_ms = 0; waited_ms < 10000; waited_ms++) {
        pthread_mutex_lock(&fc->mu);
        uint32_t done = fc->done;
        pthread_mutex_unlock(&fc->mu);
        if (done > 0) return;
        struct timespec nap = { 0, 1000000L };
        nanosleep(&nap, NULL);
    }
}

/* Bounded as wait_for_threads_side: a pool that writes strictly in order never lets it happen. */
static void wait_for_overtaking(fake_batch *fb, uint32_t first)
{
    for (int waited_ms = 0; waited_ms < 10000; waited_ms++) {
        pthread_mutex_lock(&fb->overtake->mu);
        int past = fb->overtake->written > 0 && fb->overtake->highest > first;
        pthread_mutex_unlock(&fb->overtake->mu);
        if (past) {
            fb->overtaken = 1;
            return;
        }
        struct timespec nap = { 0, 1000000L };
        nanosleep(&nap, NULL);
    }
}

static int batch_compress_fake(fake_batch *fb, tiff_strip_job *jobs, uint32_t n, char *e, size_t elen)
{
    if (fb->threads_side && !fb->fail_any) wait_for_threads_side(fb->threads_side);
    if (fb->overtake && !fb->overtaken) wait_for_overtaking(fb, jobs[0].index);
    for (uint32_t j = 0; j < n; j++) {
        if (fb->fail_any || jobs[j].index == fb->fail_at) {
            snprintf(e, elen, "batch broke at %u", jobs[j].index);
            return IP_EIO;
        }
        tiff_strip_bytes *out = jobs[j].out;
        unsigned char *data = realloc(out->data, jobs[j].len + 4);
        if (!data) return IP_ENOMEM;
        out->data = data;
        out->cap = out->len = jobs[j].len + 4;
        uint32_t tag = jobs[j].index | 0x80000000u;
        memcpy(data, &tag, 4);
        for (size_t i = 0; i < jobs[j].len; i++) data[4 + i] = (unsigned char)(jobs[j].rows[i] ^ jobs[j].index);
    }
    return IP_OK;
}

static fake_batch *the_batch;   /* the real codec's state is libdeflate's: the counts go here */

static int batch_compress(void *state, tiff_strip_job *jobs, uint32_t n, char *e, size_t elen)
{
    fake_batch *fb = the_batch;
    pthread_mutex_lock(&fb->mu);
    fb->strips += n;
    fb->batches++;
    fb->smallest = fb->batches == 1 || n < fb->smallest ? n : fb->smallest;
    fb->largest = n > fb->largest ? n : fb->largest;
    pthread_mutex_unlock(&fb->mu);
    if (!fb->real) return batch_compress_fake(fb, jobs, n, e, elen);
    const tiff_strip_codec *cpu = tiff_strip_codec_cpu(IO_TIFF_DEFLATE);
    for (uint32_t j = 0; j < n; j++) {
        int rc = cpu->compress(state, jobs[j].index, jobs[j].rows, jobs[j].len, jobs[j].out, e, elen);
        if (rc != IP_OK) return rc;
    }
    return IP_OK;
}

static void batch_close(void *state)
{
    if (state != the_batch) tiff_strip_codec_cpu(IO_TIFF_DEFLATE)->close(state);
}

/* n strips of `strip` bytes through slow threads and a batch codec of batch_strips a call; each
 * strip's bytes checked whichever side compressed it. The rc of the first failing call. */
static int run_batched(int threads, uint32_t n, size_t strip, uint32_t batch_strips, fake_batch *fb, uint32_t *by_batch,
                       char *msg, size_t msglen)
{
    fake_codec fc = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_at = { UINT32_MAX, UINT32_MAX } };
    tiff_strip_codec codec = { fake_open, fake_compress, fake_close, &fc };
    tiff_strip_batch_codec batch = { batch_open, batch_compress, batch_close, 1, (uint64_t)batch_strips * strip, 4096, 0,
                                     fb };
    the_batch = fb;
    fb->threads_side = &fc;
    ip_shape shape = { (int32_t)strip, (int32_t)n, 1, IP_U8 };
    tiff_strip_format f = { shape, 1, IO_TIFF_DEFLATE, 0, 0 };
    tiff_strips_plan plan = tiff_strips_plan_with(&f, threads, 0, &batch);
    CHECK(plan.batch == &batch && plan.batch_strips == batch_strips &&
              plan.slots == (uint32_t)(2 * threads) + 2 * batch_strips,
          "%d threads: plan %u slots, batch %u", threads, plan.slots, plan.batch_strips);
    sink s = { .fail_write_at = UINT32_MAX, .mu = PTHREAD_MUTEX_INITIALIZER };
    if (fb->overtaken < 0) fb->overtake = &s, fb->overtaken = 0;
    tiff_strips *p = NULL;
    int rc = tiff_strips_open(&p, &codec, &f, &plan, sink_write, &s, msg, msglen);
    for (uint32_t k = 0; rc == IP_OK && k < n; k++) {
        unsigned char *rows = NULL;
        rc = tiff_strips_claim(p, &rows, msg, msglen);
        for (size_t i = 0; rc == IP_OK && i < strip; i++) rows[i] = (unsigned char)(k * 13 + i);
        if (rc == IP_OK) rc = tiff_strips_submit(p, strip, msg, msglen);
    }
    if (rc == IP_OK) rc = tiff_strips_finish(p, msg, msglen);
    tiff_strips_close(p);
    *by_batch = 0;
    CHECK(!s.twice, "%d threads, batches: a strip written twice", threads);
    for (uint32_t k = 0; rc == IP_OK && k < n && s.len == (size_t)n * (strip + 4); k++) {
        CHECK(k < s.where_len && s.where[k], "%d threads, batches: strip %u not written", threads, k);
        if (k >= s.where_len || !s.where[k]) continue;
        const unsigned char *got = s.file + s.where[k] - 1;
        uint32_t tag;
        memcpy(&tag, got, 4);
        *by_batch += (tag & 0x80000000u) != 0;
        int ok = (tag & 0x7fffffffu) == k;
        for (size_t j = 0; ok && j < strip; j++) ok = got[4 + j] == (unsigned char)((k * 13 + j) ^ k);
        CHECK(ok, "%d threads, batches: strip %u holds other bytes", threads, k);
    }
    if (rc == IP_OK) CHECK(s.len == (size_t)n * (strip + 4), "%d threads, batches: %zu bytes written", threads, s.len);
    free(s.file);
    free(s.where);
    fb->overtake = NULL;
    return rc;
}

/* Threads slower than the rows arrive: the batch codec takes strips, never fewer than half its
 * batch at once, every strip written once, the threads' not waiting for a batch's earlier ones;
 * declined, the threads take them all; its failure is the run's. */
static void test_batch_codec(void)
{
    caller_nice = thread_nice();
    written_nicer = 0;
    for (int threads = 1; threads <= 4; threads += 3) {
        char msg[256] = "";
        uint32_t by_batch = 0;
        fake_batch fb = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_at = UINT32_MAX };
        CHECK(run_batched(threads, 400, 300, 32, &fb, &by_batch, msg, sizeof msg) == IP_OK, "%d threads: %s", threads,
              msg);
        CHECK(fb.opened == 1 && fb.max_strips == 32, "%d threads: %d states, batches of %u", threads, fb.opened,
              fb.max_strips);
        CHECK(threads_beside_card == 1, "%d threads: the threads not told of the batch codec beside them", threads);
        CHECK(by_batch > 0 && by_batch == fb.strips && by_batch < 400, "%d threads: %u strips by the batch codec, %u counted",
              threads, by_batch, fb.strips);
        CHECK(fb.smallest >= 16 && fb.largest <= 32, "%d threads: batches of %u to %u strips", threads, fb.smallest,
              fb.largest);
        if (caller_nice <= 9) CHECK(written_nicer == 0, "%d threads: %u strips written at a lower priority", threads,
                                    written_nicer);
        fake_batch held = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_at = UINT32_MAX, .overtaken = -1 };
        CHECK(run_batched(threads, 400, 300, 32, &held, &by_batch, msg, sizeof msg) == IP_OK, "%d threads: %s", threads,
              msg);
        CHECK(held.overtaken == 1, "%d threads: no strip written while a batch held earlier ones", threads);
        fake_batch declining = { .mu = PTHREAD_MUTEX_INITIALIZER, .decline = 1, .fail_at = UINT32_MAX };
        CHECK(run_batched(threads, 100, 50, 16, &declining, &by_batch, msg, sizeof msg) == IP_OK, "%d threads: %s",
              threads, msg);
        CHECK(by_batch == 0 && declining.strips == 0, "%d threads: a declining batch codec took %u", threads, by_batch);
        CHECK(threads_beside_card == 0, "%d threads: told of a batch codec that declined", threads);
        fake_batch no_room = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_open_from = 1, .fail_at = UINT32_MAX };
        CHECK(run_batched(threads, 100, 50, 16, &no_room, &by_batch, msg, sizeof msg) == IP_OK,
              "%d threads: a batch codec out of memory failed the strips: %s", threads, msg);
        CHECK(by_batch == 0 && no_room.opened == 0, "%d threads: a batch codec that did not open took %u", threads,
              by_batch);
        CHECK(threads_beside_card == 0, "%d threads: told of a batch codec that did not open", threads);
        fake_batch failing = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_any = 1, .fail_at = UINT32_MAX };
        int rc = run_batched(threads, 400, 300, 32, &failing, &by_batch, msg, sizeof msg);
        CHECK(rc == IP_EIO && strstr(msg, "batch broke at"), "%d threads: a failing batch: rc %d '%s'", threads, rc, msg);
    }
    ip_shape shape = { 1000, 4000, 1, IP_U8 };
    tiff_strip_format f = { shape, 1, IO_TIFF_DEFLATE, 0, 0 };
    tiff_strip_batch_codec batch = { batch_open, batch_compress, batch_close, 2, 64 * 1000, 1 << 20, 0, NULL };
    tiff_strips_plan roomy = tiff_strips_plan_with(&f, 4, 0, &batch), tight = tiff_strips_plan_with(&f, 4, 3 << 20, &batch);
    CHECK(roomy.batch == &batch && roomy.batch_strips == 64 && roomy.slots == 8 + 3 * 64, "plan: %u slots, batch %u",
          roomy.slots, roomy.batch_strips);
    CHECK(tiff_strips_held_bytes(&f, &roomy) >= (uint64_t)roomy.slots * 2000 + (2u << 20), "plan: held bytes too few");
    CHECK(tight.batch == NULL, "plan: batches past the 3 MB hold");
}

/* The streamed writer with a batch codec cuts strips to its size and writes a file read back
 * equal to the image; from state fail_open_from on (1-based; 0: none) its states do not open, and
 * the others (or the threads alone) write the same pixels. */
static void streamed_batch_case(int fail_open_from, int want_opened)
{
    ip_image img = test_image(1021, 3001, 1, IP_U8, 91);
    fake_batch fb = { .mu = PTHREAD_MUTEX_INITIALIZER, .real = 1, .fail_at = UINT32_MAX, .fail_open_from = fail_open_from };
    the_batch = &fb;
    tiff_strip_batch_codec batch = { batch_open, batch_compress, batch_close, 2, 40 * 1021 * 3, 1 << 20, 3 * 1021, &fb };
    io_options opt;
    io_default_options(&opt);
    opt.threads = 2;
    opt.tiff_strip_batch = &batch;
    io_stream_writer *sw = NULL;
    int rc = io_stream_create(tio_path("batched.tif"), &img.shape, &opt, &sw, err, sizeof err);
    for (int y0 = 0; rc == IP_OK && y0 < 3001; y0 += 100) {
        ip_image rows = img;
        rows.data = (char *)img.data + (size_t)y0 * img.stride;
        rows.shape.height = 3001 - y0 < 100 ? 3001 - y0 : 100;
        rc = io_stream_write(sw, &rows, y0, err, sizeof err);
    }
    if (rc == IP_OK) rc = io_stream_finish(sw, err, sizeof err);
    else if (sw) io_stream_abort(sw);
    CHECK(rc == IP_OK, "streamed with a batch codec (states fail from %d): %s", fail_open_from, err);
    TIFF *tif = TIFFOpen(tio_path("batched.tif"), "r");
    uint32_t rps = 0;
    CHECK(tif && TIFFGetField(tif, TIFFTAG_ROWSPERSTRIP, &rps) && rps == 3, "streamed with a batch codec: %u rows a strip",
          rps);
    if (tif) TIFFClose(tif);
    ip_image back = { 0 };
    rc = io_read(tio_path("batched.tif"), &opt, &back, err, sizeof err);
    int same = rc == IP_OK && back.shape.width == 1021 && back.shape.height == 3001;
    for (int y = 0; same && y < 3001; y++)
        same = memcmp((char *)back.data + (size_t)y * back.stride, (char *)img.data + (size_t)y * img.stride, 1021) == 0;
    CHECK(same, "streamed with a batch codec (states fail from %d): read back differs", fail_open_from);
    CHECK(fb.opened == want_opened, "streamed with a batch codec (states fail from %d): %d states opened, want %d",
          fail_open_from, fb.opened, want_opened);
    img_free(&back);
    img_free(&img);
}

static void test_streamed_batch(void)
{
    ip_shape shape = { 1021, 3001, 1, IP_U8 };
    tiff_strip_batch_codec batch = { batch_open, batch_compress, batch_close, 2, 40 * 1021 * 3, 1 << 20, 3 * 1021, NULL };
    io_options opt;
    io_default_options(&opt);
    opt.threads = 2;
    opt.tiff_strip_batch = &batch;
    /* 3-row strips of 3063 bytes, batches of 40: slots for 2 a thread, 40 a state and 40 queued,
     * each strip's rows and bytes held; and the two states' own megabyte */
    uint64_t with = io_stream_write_bytes("x.tif", &shape, &opt), least = (2u << 20) + (4 + 3 * 40) * 2 * 3063;
    CHECK(with >= least, "the writer's budget with 2 batch states: %llu, at least %llu", (unsigned long long)with,
          (unsigned long long)least);
    streamed_batch_case(0, 2);
    streamed_batch_case(2, 1);
    streamed_batch_case(1, 0);
}

int main(void)
{
    test_deflate_codec();
    test_deflate_beside_card();
    test_order_and_threads();
    test_failures();
    test_writers_leave_nothing();
    test_whole_writer_stride();
    test_streamed_writer();
    test_batch_codec();
    test_streamed_batch();
    return tu_finish();
}
