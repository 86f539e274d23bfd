/* The band executor against the whole-image path: every stage, border, depth and channel count,
 * at band heights of 1, 2, 7 and 64 rows (halos taller than a band among them), by one executor
 * and by 2 and 3 workers sharing the image's rows, through chains with global stages between
 * segments, with the source and sink on the calling thread and on threads of their own;
 * histogram counts against the whole image's. The workers' chunks: their size for the memory
 * given, the next chunks read while one is emitted (and the waits counted), and a failing source
 * or sink stopping them with its own message. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "band_testutil.h"
#include "base/image.h"
#include "plan_testutil.h"
#include "stream/band_workers.h"
#include "stream/stream_budget.h"
#include "testutil.h"

static registry reg;
static const int band_heights[] = { 1, 2, 7, 64 };

/* Every run also varies the threads around the source and sink: none, or queues of 2 and 3 bands
 * with sink bands of one row or a whole band, so each band height meets each overlap. */
/* Three workers take chunks of three bands, two workers chunks of one. */
static int run_streamed(const char *text, const ip_image *in, int band_rows, int workers, ip_image *out)
{
    int turn = band_rows + workers;
    stream_options so = { band_rows, 1, "streamed.png", BAND_ON_HOST, workers, { 0 },
                          turn % 3 == 0 ? 0 : 2 + turn % 2, turn % 2 ? 1 : 0, workers == 3 ? 3 * band_rows : 0 };
    return bt_run_streamed(&reg, text, in, &so, out, NULL);
}

/* Whether a case runs bands of band_heights[i] with this many workers: all of them, or under
 * tu_quick() one worker count a band height, turning with the case's seed, so that every pair
 * of band height and worker count still comes up across the cases of each stage. */
static int runs_pair(size_t i, int workers, uint64_t seed)
{
    return !tu_quick() || (int)((i + seed) % 3) + 1 == workers;
}

/* The streamed run of text equals the whole-image run at every band height, by one executor
 * and with the rows dealt to 2 and 3 workers (chunks of one and three bands, each with its context). */
static void check_pipeline(const char *text, const ip_shape *shape, uint64_t seed, int max_value)
{
    ip_image in = bt_random_image(shape, seed, max_value), whole;
    if (!bt_run_whole(&reg, text, &in, EXEC_CPU, &whole)) {
        free(in.data);
        return;
    }
    for (size_t i = 0; i < sizeof band_heights / sizeof *band_heights; i++)
        for (int workers = 1; workers <= 3; workers++) {
            if (!runs_pair(i, workers, seed)) continue;
            ip_image streamed;
            if (!run_streamed(text, &in, band_heights[i], workers, &streamed)) continue;
            CHECK(bt_same_image(&whole, &streamed),
                  "%s on %dx%dx%d %s: bands of %d rows, %d workers, differ from the whole image", text, shape->width,
                  shape->height, shape->channels, img_dtype_name(shape->dtype), band_heights[i], workers);
            img_free(&streamed);
        }
    img_free(&whole);
    free(in.data);
}

static void test_window_stages(void)
{
    static const char *const borders[] = { "replicate", "reflect101", "zero", "shrink" };
    static const ip_dtype dtypes[] = { IP_U8, IP_U16, IP_F32 };
    static const int radii[] = { 1, 3, 9 };
    static const int channels[] = { 1, 3, 4 };
    char text[256];
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 3; d++)
            for (int c = 0; c < 3; c++)
                for (int r = 0; r < 3; r++) {
                    ip_shape s = { 23, 29, channels[c], dtypes[d] };
                    uint64_t seed = (uint64_t)(b * 100 + d * 10 + c) * 7 + (uint64_t)r;
                    snprintf(text, sizeof text, "median radius=%d border=%s", radii[r], borders[b]);
                    check_pipeline(text, &s, seed, 0);
                    snprintf(text, sizeof text, "mean radius=%d border=%s", radii[r], borders[b]);
                    check_pipeline(text, &s, seed + 1, 0);
                }
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 3; d++) {
            static const char *const kernels[] = { "gaussian5", "sobel-y", "\"1 2 3 4 5 6 7; 1 1 1 1 1 1 1; 0 0 0 0 0 0 0\"" };
            for (int k = 0; k < 3; k++) {
                ip_shape s = { 31, 23, 3, dtypes[d] };
                snprintf(text, sizeof text, "convolve kernel=%s border=%s", kernels[k], borders[b]);
                check_pipeline(text, &s, (uint64_t)(b * 3 + d + 500 + k), 0);
                snprintf(text, sizeof text, "convolve kernel=%s border=%s output=f32", kernels[k], borders[b]);
                check_pipeline(text, &s, (uint64_t)(b * 3 + d + 600 + k), 0);
            }
        }
}

static void test_entropy_and_point(void)
{
    ip_shape gray8 = { 41, 19, 1, IP_U8 }, gray16 = { 23, 31, 1, IP_U16 };
    check_pipeline("entropy radius=2", &gray8, 71, 0);
    check_pipeline("entropy radius=5 bins=256 output=u8", &gray8, 72, 0);
    check_pipeline("entropy radius=3 levels=4096 bins=64", &gray16, 73, 4095);
    ip_shape rgb = { 29, 17, 3, IP_U8 }, rgba16 = { 13, 11, 4, IP_U16 }, rgbf = { 19, 13, 3, IP_F32 };
    check_pipeline("grayscale", &rgb, 74, 0);
    check_pipeline("grayscale weights=bt709", &rgba16, 75, 0);
    check_pipeline("grayscale", &rgbf, 76, 0);
}

/* Chains: halos adding up over stages, global stages splitting segments, an image of one row, an
 * image shorter than the halo, and a plugin built before stage classes (it marks its output's
 * first value with the height it was given: the whole image's, if it ran as global). */
static void test_chains(void)
{
    ip_shape rgb = { 53, 47, 3, IP_U8 }, one_row = { 17, 1, 3, IP_U8 }, short_img = { 11, 3, 1, IP_U16 };
    const char *chains[] = {
        "grayscale | median radius=1 | convolve kernel=gaussian3",
        "median radius=2 | transpose | mean radius=3 border=shrink",
        "mean radius=4 | median radius=5 border=reflect101 | convolve kernel=sharpen border=zero",
        "transpose | grayscale | transpose",
        "grayscale | median radius=6 | entropy radius=4",
        "convolve kernel=box3 | transpose",
    };
    for (size_t i = 0; i < sizeof chains / sizeof *chains; i++) check_pipeline(chains[i], &rgb, 80 + i, 0);
    check_pipeline("median radius=3 | mean radius=2", &one_row, 90, 0);
    check_pipeline("median radius=4 border=reflect101 | mean radius=7 border=reflect101", &short_img, 91, 0);
    if (registry_find(&reg, "oldinvert")) {
        ip_shape tall = { 9, 300, 1, IP_U8 };
        check_pipeline("median radius=1 | oldinvert | mean radius=1", &tall, 92, 0);
        ip_image in = bt_random_image(&tall, 93, 0), out;
        if (run_streamed("grayscale | oldinvert", &in, 7, 2, &out)) {
            CHECK(*(uint8_t *)out.data == (uint8_t)300, "oldinvert saw %d rows, not the whole image",
                  *(uint8_t *)out.data);
            img_free(&out);
        }
        free(in.data);
    } else {
        CHECK(0, "the oldinvert test plugin was not found");
    }
}

/* The streamed histogram's CSV equals the whole image's, by one executor and by 2 and 3 workers,
 * first in the chain and between area stages (where the rows it sees include context rows that
 * only the worker owning them may count); and its counts add up to the pixels. */
static void check_histogram(const char *pattern, const ip_shape *s, int k, uint64_t seed)
{
    const char *dir = tu_tmpdir();
    ip_image in = bt_random_image(s, seed, 0), out;
    char text[512], path[400], whole_path[400];
    snprintf(whole_path, sizeof whole_path, "%s/whole%d.csv", dir, k);
    snprintf(text, sizeof text, pattern, whole_path);
    if (bt_run_whole(&reg, text, &in, EXEC_CPU, &out)) img_free(&out);
    char *want = bt_slurp(whole_path);
    CHECK(want != NULL, "no whole-image CSV");
    for (size_t i = 0; want && i < sizeof band_heights / sizeof *band_heights; i++)
        for (int workers = 1; workers <= 3; workers++) {
            if (!runs_pair(i, workers, seed)) continue;
            snprintf(path, sizeof path, "%s/band%d_%d_%d.csv", dir, k, band_heights[i], workers);
            snprintf(text, sizeof text, pattern, path);
            if (run_streamed(text, &in, band_heights[i], workers, &out)) img_free(&out);
            char *got = bt_slurp(path);
            CHECK(got && strcmp(got, want) == 0, "%s on %s: bands of %d, %d workers: counts differ from the whole image's",
                  pattern, img_dtype_name(s->dtype), band_heights[i], workers);
            free(got);
        }
    /* independent: every channel's counts sum to the pixel count */
    unsigned long long sum[4] = { 0 };
    for (char *line = want ? strchr(want, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        char *p = strchr(line + 1, ',');
        for (int c = 0; c < s->channels && p; c++, p = strchr(p + 1, ',')) sum[c] += strtoull(p + 1, NULL, 10);
    }
    for (int c = 0; c < s->channels; c++)
        CHECK(sum[c] == (unsigned long long)s->width * s->height, "channel %d counts %llu", c, sum[c]);
    free(want);
    free(in.data);
}

static void test_histogram(void)
{
    static const ip_shape shapes[] = { { 61, 43, 3, IP_U8 }, { 17, 29, 1, IP_U16 }, { 13, 7, 4, IP_F32 } };
    for (int k = 0; k < 3; k++) {
        check_histogram("histogram bins=64 out=%s | median radius=2", &shapes[k], 2 * k, 200 + (uint64_t)k);
        check_histogram("median radius=2 | histogram bins=64 out=%s | mean radius=9", &shapes[k], 2 * k + 1,
                        210 + (uint64_t)k);
    }
}

/* p planned on shape and its layout; 0 (a check failed, nothing to free) when either cannot be made. */
static int plan_and_layout(const char *text, const ip_shape *shape, plan *p, band_layout *l)
{
    char err[512] = "";
    if (!tu_build_plan(&reg, text, shape, p)) return 0;
    if (band_layout_make(p, l, err, sizeof err) == IP_OK) return 1;
    CHECK(0, "%s: layout: %s", text, err);
    plan_free(p);
    return 0;
}

/* Several workers get chunks of several bands when memory allows (fewer halos recomputed), never
 * fewer than STREAM_CHUNKS_PER_WORKER chunks each, and one band when memory is tight or there is
 * one worker. */
static void test_chunk_rows(void)
{
    ip_shape gray = { 1001, 5000, 1, IP_U8 };
    plan p;
    band_layout l;
    char err[512] = "";
    if (!plan_and_layout("median radius=7 | mean radius=3", &gray, &p, &l)) return;
    stream_budget roomy = { (uint64_t)1 << 34, 0, 0, BAND_ON_HOST, 0, 2 };
    int rows = 0;
    CHECK(stream_band_rows_for(&p, &l, &roomy, &rows, err, sizeof err) == IP_OK && rows == STREAM_MAX_BAND_ROWS,
          "roomy budget: bands of %d rows (%s)", rows, err);
    int chunk = stream_chunk_rows_for(&p, &l, &roomy, rows);
    CHECK(chunk == 2 * rows, "2 workers on 5000 rows: chunks of %d rows, want %d (5000 / 8 rounded down to bands)",
          chunk, 2 * rows);
    stream_budget one = roomy;
    one.n_workers = 1;
    CHECK(stream_chunk_rows_for(&p, &l, &one, rows) == rows, "one worker: chunks of more than a band");
    /* the least memory that gives bands of STREAM_MAX_BAND_ROWS: no room for a taller chunk */
    stream_budget tight = roomy;
    int tight_rows = 0;
    for (tight.limit_bytes = 1 << 20; tight.limit_bytes < ((uint64_t)1 << 34); tight.limit_bytes += 1 << 16)
        if (stream_band_rows_for(&p, &l, &tight, &tight_rows, err, sizeof err) == IP_OK &&
            tight_rows == STREAM_MAX_BAND_ROWS)
            break;
    CHECK(tight_rows == STREAM_MAX_BAND_ROWS && stream_chunk_rows_for(&p, &l, &tight, tight_rows) == tight_rows,
          "tight budget (%llu bytes): chunks of more than a band", (unsigned long long)tight.limit_bytes);
    band_layout_free(&l);
    plan_free(&p);
}

/* The next block of up to `block` rows of img from *next_row, as a view. */
static void rows_from(const ip_image *img, int block, int *next_row, ip_image *rows, int *y0)
{
    int n = img->shape.height - *next_row < block ? img->shape.height - *next_row : block;
    *rows = *img;
    rows->data = (char *)img->data + (ptrdiff_t)*next_row * img->stride;
    rows->shape.height = n;
    *y0 = *next_row;
    *next_row += n;
}

/* Workers' source and sink: the source hands out an image's rows in blocks and tells how far it
 * was read; the sink holds the first chunk until the source has reached `wait_for` (or 5 s pass),
 * then 50 ms more, which the dealer spends waiting for a free slot. */
typedef struct {
    const ip_image *img;
    int block, next_row, rows_out, in_order, wait_for, reached;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} held_sink;

static int held_next(void *user, ip_image *rows, int *y0, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    held_sink *h = user;
    pthread_mutex_lock(&h->mu);
    rows_from(h->img, h->block, &h->next_row, rows, y0);
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return IP_OK;
}

static int held_rows(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    held_sink *h = user;
    pthread_mutex_lock(&h->mu);
    h->in_order &= y0 == h->rows_out;
    h->rows_out += rows->shape.height;
    if (y0 == 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 5;
        while (h->next_row < h->wait_for && pthread_cond_timedwait(&h->cv, &h->mu, &until) != ETIMEDOUT) {}
        h->reached = h->next_row;
        struct timespec pause = { 0, 50 * 1000 * 1000 };
        pthread_mutex_unlock(&h->mu);
        nanosleep(&pause, NULL);
        return IP_OK;
    }
    pthread_mutex_unlock(&h->mu);
    return IP_OK;
}

/* While the first chunk is emitted (its sink call held), the dealer fills the chunk after every
 * worker's: chunk n's window is read from the source, so decoding does not wait on encoding. */
static void test_fill_while_emitting(void)
{
    ip_shape gray = { 64, 400, 1, IP_U8 };
    plan p;
    band_layout l;
    char err[512] = "";
    if (!plan_and_layout("median radius=1", &gray, &p, &l)) return;
    ip_image in = bt_random_image(&gray, 5, 255);
    for (int n = 2; n <= 3; n++) {
        int chunk = 20;
        held_sink h = { &in, 10, 0, 0, 1, n * chunk + chunk + 1, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };
        band_workers_options o = { { BAND_ON_HOST, 0, 1, "held.png", 10 }, n, { 0 }, chunk };
        band_sink sink = { held_rows, &h };
        band_times times;
        band_workers_waits waits = { 0 };
        size_t peak = 0;
        int rc = band_workers_run(&p, &l.segs[0], &o, held_next, &h, &sink, &times, &peak, NULL, &waits, err, sizeof err);
        CHECK(rc == IP_OK, "%d workers: %s", n, err);
        CHECK(h.reached >= h.wait_for, "%d workers: the source stood at row %d while chunk 0 was emitted, want %d "
              "(chunk %d filled)", n, h.reached, h.wait_for, n);
        CHECK(h.in_order && h.rows_out == gray.height, "%d workers: %d rows out, in order %d", n, h.rows_out, h.in_order);
        CHECK(waits.fill_wait_ms >= 40 && waits.fill_wait_ms < 5000, "%d workers: filling waited %.1f ms for a free slot, "
              "want the 50 ms chunk 0 was held", n, waits.fill_wait_ms);
    }
    img_free(&in);
    band_layout_free(&l);
    plan_free(&p);
}

/* A source that fails at row fail_row, a sink that fails on the chunk from row fail_y0. */
typedef struct {
    const ip_image *img;
    int next_row, fail_row, fail_y0, rows_out;
} failing;

static int failing_next(void *user, ip_image *rows, int *y0, char *err, size_t errlen)
{
    failing *f = user;
    if (f->next_row >= f->fail_row) {
        snprintf(err, errlen, "source broke at row %d", f->next_row);
        return IP_EIO;
    }
    rows_from(f->img, 10, &f->next_row, rows, y0);
    return IP_OK;
}

static int failing_rows(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    failing *f = user;
    if (y0 == f->fail_y0) {
        snprintf(err, errlen, "sink broke at row %d", y0);
        return IP_EIO;
    }
    f->rows_out += rows->shape.height;
    return IP_OK;
}

/* n workers in chunks of 20 rows from f's source to f's sink: IP_EIO with the message want, else
 * 0 with a check failed. */
static int fails_with(const plan *p, const band_seg *seg, int n, failing *f, const char *want)
{
    band_workers_options o = { { BAND_ON_HOST, 0, 1, "failing.png", 10 }, n, { 0 }, 20 };
    band_sink sink = { failing_rows, f };
    band_times times;
    size_t peak = 0;
    char err[512] = "";
    int rc = band_workers_run(p, seg, &o, failing_next, f, &sink, &times, &peak, NULL, NULL, err, sizeof err);
    int ok = rc == IP_EIO && strstr(err, want);
    CHECK(ok, "%d workers, %s: rc %d, '%s'", n, want, rc, err);
    return ok;
}

/* A failing source or sink stops the workers with its message, whatever chunk it hits. */
static void test_worker_failures(void)
{
    ip_shape gray = { 48, 300, 1, IP_U8 };
    plan p;
    band_layout l;
    if (!plan_and_layout("median radius=2 | histogram", &gray, &p, &l)) return;
    ip_image in = bt_random_image(&gray, 9, 255);
    for (int n = 2; n <= 3; n++)
        for (int k = 0; k < 4; k++) {
            int at = 20 * (k * 3 + 1);   /* rows 20, 80, 140, 200: a chunk's first row for fail_y0 */
            failing src_fails = { &in, 0, at, -1, 0 }, sink_fails = { &in, 0, INT32_MAX, at, 0 };
            char want[64];
            snprintf(want, sizeof want, "source broke at row %d", at);
            fails_with(&p, &l.segs[0], n, &src_fails, want);
            snprintf(want, sizeof want, "sink broke at row %d", at);
            if (fails_with(&p, &l.segs[0], n, &sink_fails, want))
                CHECK(sink_fails.rows_out == at, "%d workers, sink failing at row %d: %d rows out before", n, at,
                      sink_fails.rows_out);
        }
    img_free(&in);
    band_layout_free(&l);
    plan_free(&p);
}

/* Band workers with the decoding and encoding threads: the last segment's rows go to the sink from
 * the workers' own emitting thread (the time in the sink counted as encoding, none handing rows to
 * the encoder's queue), the same rows as one worker's, which goes through the queue; a sink that
 * fails stops the run with its message. */
static void test_workers_sink_directly(void)
{
    ip_shape gray = { 40, 300, 1, IP_U8 };
    ip_image in = bt_random_image(&gray, 13, 255), one, two;
    stream_options so = { 10, 1, "direct.png", BAND_ON_HOST, 1, { 0 }, 2, 1, 30 };
    stream_profile p1, p2;
    int ran = bt_run_streamed(&reg, "median radius=1", &in, &so, &one, &p1);
    so.n_workers = 2;
    ran = ran && bt_run_streamed(&reg, "median radius=1", &in, &so, &two, &p2);
    if (ran) {
        CHECK(bt_same_image(&one, &two), "two workers' rows differ from one's");
        CHECK(p1.sink_wait_ms > 0 && p1.sink_ms > 0, "one worker: %.3f ms handing rows to the encoder, %.3f encoding",
              p1.sink_wait_ms, p1.sink_ms);
        CHECK(p2.n_workers == 2 && p2.sink_wait_ms == 0 && p2.sink_ms > 0,
              "two workers: %d workers, %.3f ms handing rows to the encoder's queue (want none), %.3f encoding",
              p2.n_workers, p2.sink_wait_ms, p2.sink_ms);
        img_free(&one);
        img_free(&two);
    }
    plan p;
    if (tu_build_plan(&reg, "median radius=1", &gray, &p)) {
        stream_image_source src_state;
        stream_source src = stream_source_of_image(&src_state, &in, 10);
        failing f = { &in, 0, INT32_MAX, 120, 0 };
        band_sink sink = { failing_rows, &f };
        char err[512] = "";
        int rc = stream_run(&p, &src, &sink, &so, NULL, err, sizeof err);
        CHECK(rc == IP_EIO && strstr(err, "sink broke at row 120") && f.rows_out == 120,
              "two workers, a sink failing at row 120: rc %d, '%s', %d rows out", rc, err, f.rows_out);
        plan_free(&p);
    }
    img_free(&in);
}

int main(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR"), *tp = getenv("IMGPIPE_TEST_PLUGINS");
    if (!build || !tp) tu_skip("IMGPIPE_BUILD_DIR or IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    char dirs[1200], err[256];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins:%s/oldsize", build, tp);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    test_window_stages();
    test_entropy_and_point();
    test_chains();
    test_histogram();
    test_chunk_rows();
    test_fill_while_emitting();
    test_worker_failures();
    test_workers_sink_directly();
    registry_free(&reg);
    return tu_finish();
}
