/* Decoding and encoding on threads of their own (stream_overlap.h): every row reaches the sink once,
 * in order and intact, whatever the band heights, slots and sink bands; the buffers the source
 * and the stages reuse may change as soon as a call returns; the first error of any thread is
 * the run's, and the others stop within the queues' few bands. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "base/image.h"
#include "stream/stream_overlap.h"
#include "testutil.h"

static uint8_t pattern(int x, int y, int c) { return (uint8_t)(x * 7 + y * 13 + c * 3 + 1); }

/* An image of the pattern in bands of the heights listed (in turn), from one buffer with a padded
 * stride that is scribbled over at each call; fails at call fail_at (counting from 0). */
typedef struct {
    ip_shape shape;
    const int *heights;
    int n_heights, next_row, calls, fail_at;
    uint8_t *buf;
    ptrdiff_t stride;
    int most;                 /* the tallest band */
    int into_calls;           /* calls through source_next_into */
} pattern_source;

static int source_next(void *user, ip_image *rows, int *y0, char *err, size_t errlen)
{
    pattern_source *s = user;
    int call = s->calls++;
    if (call == s->fail_at) {
        snprintf(err, errlen, "source failed at band %d", call);
        return IP_EFORMAT;
    }
    int left = s->shape.height - s->next_row, want = s->heights[call % s->n_heights];
    int n = left < want ? left : want;
    memset(s->buf, 0xA5, (size_t)s->stride * 16);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < s->shape.width; x++)
            for (int c = 0; c < s->shape.channels; c++)
                s->buf[(ptrdiff_t)y * s->stride + x * s->shape.channels + c] = pattern(x, s->next_row + y, c);
    *rows = (ip_image){ s->buf, s->stride, s->shape, 0 };
    rows->shape.height = n;
    *y0 = s->next_row;
    s->next_row += n;
    return IP_OK;
}

/* The same bands written straight into the queue's rows, which must be packed with room for the
 * tallest band. */
static int source_next_into(void *user, ip_image *dst, int *y0, char *err, size_t errlen)
{
    pattern_source *s = user;
    s->into_calls++;
    size_t row = img_row_bytes(&s->shape);
    if (dst->stride != (ptrdiff_t)row || dst->shape.height < s->most) {
        snprintf(err, errlen, "rows given with a stride of %td and room for %d", dst->stride, dst->shape.height);
        return IP_EINVAL;
    }
    ip_image band;
    int rc = source_next(user, &band, y0, err, errlen);
    for (int y = 0; rc == IP_OK && y < band.shape.height; y++)
        memcpy((uint8_t *)dst->data + (size_t)y * row, s->buf + (ptrdiff_t)y * s->stride, row);
    if (rc == IP_OK) dst->shape.height = band.shape.height;
    return rc;
}

/* Checks each row against the pattern, in order; fails at call fail_at. */
typedef struct {
    ip_shape shape;
    int rows_in, calls, most_rows, bad_rows, fail_at;
} pattern_sink;

static int sink_rows(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    pattern_sink *s = user;
    int call = s->calls++;
    if (call == s->fail_at) {
        snprintf(err, errlen, "sink failed at call %d", call);
        return IP_EIO;
    }
    if (y0 != s->rows_in) {
        snprintf(err, errlen, "rows %d.. arrived out of order", y0);
        return IP_EINVAL;
    }
    for (int y = 0; y < rows->shape.height; y++) {
        const uint8_t *row = (const uint8_t *)rows->data + (ptrdiff_t)y * rows->stride;
        for (int x = 0; x < s->shape.width * s->shape.channels; x++)
            if (row[x] != pattern(x / s->shape.channels, y0 + y, x % s->shape.channels)) {
                s->bad_rows++;
                break;
            }
    }
    s->rows_in += rows->shape.height;
    s->most_rows = rows->shape.height > s->most_rows ? rows->shape.height : s->most_rows;
    return IP_OK;
}

typedef struct {
    int slots, sink_rows;
    const int *pieces;      /* the stages' thread hands rows on in pieces of these heights, in turn */
    int n_pieces;
    int stop_after_bands;   /* > 0: the stages' thread fails after this many bands */
} driver;

typedef struct {
    int rc, source_calls, into_calls;
    char err[256];
    pattern_sink sink;
} outcome;

static const int one[] = { 1 };

/* The stages' side: bands from the queue, copied into a reused buffer, handed on in pieces. */
static int drive(stream_overlap *ov, const driver *d, const ip_shape *shape, char *err, size_t errlen)
{
    stream_source from = stream_overlap_source(ov);
    band_sink to = stream_overlap_sink(ov);
    size_t row = img_row_bytes(shape);
    int piece = 0, rc = IP_OK;
    for (int band = 0; rc == IP_OK; band++) {
        ip_image rows;
        int y0;
        if ((rc = from.next(from.user, &rows, &y0, err, errlen)) != IP_OK || rows.shape.height == 0) break;
        if (d->stop_after_bands > 0 && band == d->stop_after_bands) {
            snprintf(err, errlen, "stage failed");
            return IP_EINVAL;
        }
        uint8_t *out = malloc(row * (size_t)rows.shape.height);
        if (!out) return IP_ENOMEM;
        for (int y = 0; y < rows.shape.height; y++) memcpy(out + row * (size_t)y, (char *)rows.data + y * rows.stride, row);
        for (int done = 0; rc == IP_OK && done < rows.shape.height; piece++) {
            int want = d->pieces[piece % d->n_pieces], left = rows.shape.height - done, n = left < want ? left : want;
            ip_image part = { out + row * (size_t)done, (ptrdiff_t)row, rows.shape, 0 };
            part.shape.height = n;
            rc = to.rows(to.user, &part, y0 + done, err, errlen);
            memset(out + row * (size_t)done, 0x5A, row * (size_t)n);   /* reused at once, as the stages' buffers are */
            done += n;
        }
        free(out);
    }
    return rc;
}

/* into: the source also decodes into the queue's rows (stream_source.next_into). */
static outcome run_overlap_with(const ip_shape *shape, const int *heights, int n_heights, int source_fail_at,
                                int sink_fail_at, const driver *d, int into)
{
    outcome o = { 0 };
    pattern_source src = { *shape, heights, n_heights, 0, 0, source_fail_at, NULL, 0, 0, 0 };
    src.stride = (ptrdiff_t)img_row_bytes(shape) + 5;
    for (int i = 0; i < n_heights; i++) src.most = heights[i] > src.most ? heights[i] : src.most;
    src.buf = malloc((size_t)src.stride * (size_t)(src.most > 16 ? src.most : 16));
    o.sink = (pattern_sink){ *shape, 0, 0, 0, 0, sink_fail_at };
    stream_source s = { .next = source_next, .user = &src };
    if (into) {
        s.next_into = source_next_into;
        s.band = *shape;
        s.band.height = src.most;
    }
    band_sink k = { sink_rows, &o.sink };
    double source_ms = 0, sink_ms = 0;
    stream_overlap_options oo = { d->slots, *shape, d->sink_rows, &source_ms, &sink_ms };
    stream_overlap *ov;
    o.rc = src.buf ? stream_overlap_start(&ov, &s, &k, &oo, o.err, sizeof o.err) : IP_ENOMEM;
    if (o.rc == IP_OK) {
        o.rc = drive(ov, d, shape, o.err, sizeof o.err);
        o.rc = stream_overlap_finish(ov, o.rc, o.err, sizeof o.err);
    }
    o.source_calls = src.calls;
    o.into_calls = src.into_calls;
    free(src.buf);
    return o;
}

static outcome run_overlap(const ip_shape *shape, const int *heights, int n_heights, int source_fail_at,
                           int sink_fail_at, const driver *d)
{
    return run_overlap_with(shape, heights, n_heights, source_fail_at, sink_fail_at, d, 0);
}

static void test_every_row_once(void)
{
    static const ip_shape shapes[] = { { 1, 1, 1, IP_U8 }, { 13, 37, 3, IP_U8 }, { 7, 100, 1, IP_U8 }, { 31, 5, 4, IP_U8 } };
    static const int heights[] = { 3, 1, 7, 2 }, pieces[] = { 2, 5, 1 };
    static const int configs[][2] = { { 2, 1 }, { 2, 4 }, { 3, 16 }, { 2, 1000 }, { 5, 3 } };
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 5; c++) {
            driver d = { configs[c][0], configs[c][1], pieces, 3, 0 };
            outcome o = run_overlap(&shapes[s], heights, 4, -1, -1, &d);
            CHECK(o.rc == IP_OK, "%dx%d, %d slots of %d rows: %s", shapes[s].width, shapes[s].height, d.slots,
                  d.sink_rows, o.err);
            CHECK(o.sink.rows_in == shapes[s].height && o.sink.bad_rows == 0,
                  "%dx%d, %d slots of %d rows: %d of %d rows arrived, %d wrong", shapes[s].width, shapes[s].height,
                  d.slots, d.sink_rows, o.sink.rows_in, shapes[s].height, o.sink.bad_rows);
            CHECK(o.sink.most_rows <= d.sink_rows, "a sink call of %d rows, more than the %d of a slot", o.sink.most_rows,
                  d.sink_rows);
        }
}

/* A source that decodes into the queue's rows is only called that way, and every row arrives once
 * and intact, from bands of every height up to the tallest and slots that are reused. */
static void test_decoded_into_slots(void)
{
    static const ip_shape shapes[] = { { 1, 1, 1, IP_U8 }, { 13, 37, 3, IP_U8 }, { 7, 100, 1, IP_U8 } };
    static const int heights[] = { 3, 1, 7, 2 }, pieces[] = { 2, 5, 1 };
    for (int s = 0; s < 3; s++)
        for (int slots = 2; slots <= 3; slots++) {
            driver d = { slots, 4, pieces, 3, 0 };
            outcome o = run_overlap_with(&shapes[s], heights, 4, -1, -1, &d, 1);
            CHECK(o.rc == IP_OK, "%dx%d into %d slots: %s", shapes[s].width, shapes[s].height, slots, o.err);
            CHECK(o.sink.rows_in == shapes[s].height && o.sink.bad_rows == 0, "%dx%d into %d slots: %d of %d rows, %d wrong",
                  shapes[s].width, shapes[s].height, slots, o.sink.rows_in, shapes[s].height, o.sink.bad_rows);
            CHECK(o.into_calls == o.source_calls && o.into_calls > 0, "%d of %d calls decoded into the slots",
                  o.into_calls, o.source_calls);
        }
    ip_shape shape = { 9, 60, 1, IP_U8 };
    static const int five[] = { 5 };
    driver d = { 2, 3, one, 1, 0 };
    outcome o = run_overlap_with(&shape, five, 1, 3, -1, &d, 1);
    CHECK(o.rc == IP_EFORMAT && strcmp(o.err, "source failed at band 3") == 0, "decoding into slots, got %d: %s", o.rc,
          o.err);
    CHECK(o.source_calls == 4, "the source was called %d times, not stopped at its failure", o.source_calls);
}

/* The source fails at its fourth band: its error, no call after it, no row of a later band written. */
static void test_source_failure(void)
{
    ip_shape shape = { 9, 60, 1, IP_U8 };
    static const int heights[] = { 5 };
    driver d = { 2, 3, one, 1, 0 };
    outcome o = run_overlap(&shape, heights, 1, 3, -1, &d);
    CHECK(o.rc == IP_EFORMAT && strcmp(o.err, "source failed at band 3") == 0, "got %d: %s", o.rc, o.err);
    CHECK(o.source_calls == 4, "the source was called %d times, not stopped at its failure", o.source_calls);
    CHECK(o.sink.rows_in <= 15 && o.sink.bad_rows == 0, "%d rows written (%d wrong)", o.sink.rows_in, o.sink.bad_rows);
}

/* The sink fails at its third call of 1000 rows: its error, and decoding stops within the queues. */
static void test_sink_failure(void)
{
    ip_shape shape = { 11, 1000, 2, IP_U8 };
    for (int slots = 2; slots <= 3; slots++) {
        driver d = { slots, 1, one, 1, 0 };
        outcome o = run_overlap(&shape, one, 1, -1, 2, &d);
        CHECK(o.rc == IP_EIO && strcmp(o.err, "sink failed at call 2") == 0, "got %d: %s", o.rc, o.err);
        /* rows written 2, in the encoder's queue and the slot filling slots + 1, the stages' band 1,
         * decoded ahead slots, and the call in progress 1 */
        CHECK(o.source_calls <= 2 + 2 * slots + 3, "%d slots: %d bands decoded after the sink failed at row 2", slots,
              o.source_calls);
    }
}

/* Both fail: the sink first (the source is held back by the queues before its band 60). */
static void test_first_error_wins(void)
{
    ip_shape shape = { 3, 1000, 1, IP_U8 };
    driver d = { 2, 1, one, 1, 0 };
    outcome o = run_overlap(&shape, one, 1, 60, 0, &d);
    CHECK(o.rc == IP_EIO && strcmp(o.err, "sink failed at call 0") == 0, "got %d: %s", o.rc, o.err);
}

/* The stages' thread fails after two bands: its error, and both threads stop though the source
 * has rows left and the encoder is waiting. */
static void test_stage_failure(void)
{
    ip_shape shape = { 5, 500, 3, IP_U8 };
    static const int heights[] = { 4 };
    driver d = { 2, 2, one, 1, 2 };
    outcome o = run_overlap(&shape, heights, 1, -1, -1, &d);
    CHECK(o.rc == IP_EINVAL && strcmp(o.err, "stage failed") == 0, "got %d: %s", o.rc, o.err);
    CHECK(o.source_calls <= 2 + 2 + 1, "%d bands decoded after the stages failed at band 2", o.source_calls);
    CHECK(o.sink.rows_in <= 8 && o.sink.bad_rows == 0, "%d rows written (%d wrong)", o.sink.rows_in, o.sink.bad_rows);
}

static void test_bad_options(void)
{
    ip_shape shape = { 2, 2, 1, IP_U8 };
    driver d = { 1, 1, one, 1, 0 };
    outcome o = run_overlap(&shape, one, 1, -1, -1, &d);
    CHECK(o.rc == IP_EINVAL, "one slot accepted: %d", o.rc);
}

int main(void)
{
    test_every_row_once();
    test_decoded_into_slots();
    test_source_failure();
    test_sink_failure();
    test_first_error_wins();
    test_stage_failure();
    test_bad_options();
    return tu_finish();
}
