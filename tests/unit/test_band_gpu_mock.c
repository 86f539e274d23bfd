/* The GPU band executor's own logic (band_gpu.c: the rings of staging buffers, the output held
 * back one band, the streams and events, windows and workers, round trips, the peak count) run
 * on this machine against a mock of gpu.h whose "device" is host memory and whose copies are
 * deferred: each stream queues them and runs them only when the executor waits (stream sync,
 * event sync, or another stream waiting on an event), as a GPU would at the latest. A missing
 * wait then shows as wrong rows, and freeing memory a queued copy still uses fails the test.
 * The stages are stripped of run_gpu so every one makes a round trip (the kernels are tested by
 * tests/gpu); results must equal the CPU's whole-image run byte for byte. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "band_testutil.h"
#include "gpu/gpu.h"
#include "base/image.h"
#include "stream/stream_budget.h"
#include "testutil.h"

/* The mock device. */
typedef enum { OP_COPY, OP_RECORD, OP_WAIT } op_kind;
typedef struct mock_event mock_event;
typedef struct {
    op_kind kind;
    void *dst;
    const void *src;
    size_t dst_pitch, src_pitch, row, rows;
    mock_event *event;
    unsigned long mark;
} mock_op;
typedef struct mock_stream {
    mock_op *ops;
    size_t n, cap, done;
    struct mock_stream *next_stream;
} mock_stream;
struct mock_event {
    mock_stream *stream;
    unsigned long mark;        /* the op count on stream when recorded */
};

static pthread_mutex_t mock_mu = PTHREAD_MUTEX_INITIALIZER;
static mock_stream *mock_streams;
static int mock_bad;           /* memory freed while a queued copy used it */

static void run_stream_to(mock_stream *s, size_t upto);

static void run_op(mock_op *op)
{
    if (op->kind == OP_COPY)
        for (size_t y = 0; y < op->rows; y++)
            memcpy((char *)op->dst + y * op->dst_pitch, (const char *)op->src + y * op->src_pitch, op->row);
    else if (op->kind == OP_WAIT && op->event->stream)
        run_stream_to(op->event->stream, op->mark);
}

static void run_stream_to(mock_stream *s, size_t upto)
{
    while (s->done < upto && s->done < s->n) {
        mock_op op = s->ops[s->done++];
        run_op(&op);
    }
}

static void push_op(mock_stream *s, mock_op op)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->ops = realloc(s->ops, s->cap * sizeof *s->ops);
        if (!s->ops) abort();
    }
    s->ops[s->n++] = op;
}

/* Blocks carry their size before them, so a free can look for queued copies into them. */
static void *mock_alloc(size_t bytes)
{
    unsigned char *p = malloc(bytes + 64);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    memset(p + 64, 0xA5, bytes);
    return p + 64;
}

static int inside(const void *p, const unsigned char *lo, size_t n)
{
    return (const unsigned char *)p >= lo && (const unsigned char *)p < lo + n;
}

static void mock_release(void *ptr)
{
    if (!ptr) return;
    unsigned char *base = (unsigned char *)ptr - 64;
    size_t n;
    memcpy(&n, base, sizeof n);
    for (mock_stream *s = mock_streams; s; s = s->next_stream)
        for (size_t i = s->done; i < s->n; i++)
            if (s->ops[i].kind == OP_COPY && (inside(s->ops[i].dst, ptr, n) || inside(s->ops[i].src, ptr, n)))
                mock_bad = 1;
    free(base);
}

/* With tests/gpu_mock_basics.c: the device itself, and no graphs (bands never capture one). */

int gpu_stream_create(void **stream, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    mock_stream *s = calloc(1, sizeof *s);
    pthread_mutex_lock(&mock_mu);
    s->next_stream = mock_streams;
    mock_streams = s;
    pthread_mutex_unlock(&mock_mu);
    *stream = s;
    return IP_OK;
}
int gpu_stream_create_urgent(void **stream, char *err, size_t errlen) { return gpu_stream_create(stream, err, errlen); }

void gpu_stream_destroy(void *stream)
{
    if (!stream) return;
    pthread_mutex_lock(&mock_mu);
    mock_stream *s = stream;
    run_stream_to(s, s->n);
    for (mock_stream **p = &mock_streams; *p; p = &(*p)->next_stream)
        if (*p == s) {
            *p = s->next_stream;
            break;
        }
    pthread_mutex_unlock(&mock_mu);
    free(s->ops);
    free(s);
}

int gpu_stream_sync(void *stream, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    pthread_mutex_lock(&mock_mu);
    mock_stream *s = stream;
    if (s) run_stream_to(s, s->n);
    pthread_mutex_unlock(&mock_mu);
    return IP_OK;
}

int gpu_malloc(void **ptr, size_t bytes, char *err, size_t errlen)
{
    *ptr = mock_alloc(bytes);
    if (*ptr) return IP_OK;
    snprintf(err, errlen, "mock out of memory");
    return IP_ENOMEM;
}

void gpu_free(void *ptr)
{
    pthread_mutex_lock(&mock_mu);
    mock_release(ptr);
    pthread_mutex_unlock(&mock_mu);
}

int gpu_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes, size_t rows,
               gpu_copy_kind kind, void *stream, char *err, size_t errlen)
{
    (void)kind; (void)err; (void)errlen;
    pthread_mutex_lock(&mock_mu);
    push_op(stream, (mock_op){ OP_COPY, dst, src, dst_pitch, src_pitch, row_bytes, rows, NULL, 0 });
    pthread_mutex_unlock(&mock_mu);
    return IP_OK;
}

/* Only fused histograms zero device memory, and band runs never fuse: done at once. */
int gpu_event_create(void **event, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    *event = calloc(1, sizeof(mock_event));
    return *event ? IP_OK : IP_ENOMEM;
}

void gpu_event_destroy(void *event) { free(event); }

int gpu_event_record(void *event, void *stream)
{
    pthread_mutex_lock(&mock_mu);
    mock_event *e = event;
    mock_stream *s = stream;
    e->stream = s;
    e->mark = s->n;
    pthread_mutex_unlock(&mock_mu);
    return IP_OK;
}

int gpu_stream_wait_event(void *stream, void *event, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    pthread_mutex_lock(&mock_mu);
    mock_event *e = event;
    push_op(stream, (mock_op){ OP_WAIT, NULL, NULL, 0, 0, 0, 0, e, e->mark });
    pthread_mutex_unlock(&mock_mu);
    return IP_OK;
}

int gpu_event_sync(void *event, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    pthread_mutex_lock(&mock_mu);
    mock_event *e = event;
    if (e->stream) run_stream_to(e->stream, e->mark);
    pthread_mutex_unlock(&mock_mu);
    return IP_OK;
}

float gpu_event_ms(void *start, void *stop)
{
    gpu_event_sync(stop, NULL, 0);
    (void)start;
    return 0.0f;
}


/* The tests. */
static registry reg;
static ip_stage stripped[64];
static const int band_heights[] = { 1, 2, 7, 64 };

/* Every stage without its GPU path: the mock device cannot run kernels. */
static void strip_gpu_paths(void)
{
    for (int i = 0; i < reg.n && i < 64; i++) {
        stripped[i] = *reg.plugins[i].stage;
        stripped[i].run_gpu = NULL;
        reg.plugins[i].stage = &stripped[i];
    }
}

static void check_pipeline(const char *text, const ip_shape *shape, uint64_t seed)
{
    ip_image in = bt_random_image(shape, seed, 0), whole;
    if (!bt_run_whole(&reg, text, &in, EXEC_CPU, &whole)) {
        free(in.data);
        return;
    }
    for (size_t i = 0; i < sizeof band_heights / sizeof *band_heights; i++)
        for (int workers = 1; workers <= 3; workers++) {
            stream_options so = { band_heights[i], 1, "mock.png", BAND_ON_GPU, workers, { 0 }, 0, 0, 0 };
            ip_image got;
            if (!bt_run_streamed(&reg, text, &in, &so, &got, NULL)) continue;
            CHECK(bt_same_image(&whole, &got), "%s on %dx%dx%d %s: mock GPU bands of %d, %d workers differ", text,
                  shape->width, shape->height, shape->channels, img_dtype_name(shape->dtype), band_heights[i], workers);
            img_free(&got);
        }
    CHECK(!mock_bad, "%s: device memory freed while a queued copy used it", text);
    mock_bad = 0;
    img_free(&whole);
    free(in.data);
}

static void test_pipelines(void)
{
    ip_shape rgb = { 37, 29, 3, IP_U8 }, g16 = { 23, 31, 1, IP_U16 }, f4 = { 19, 13, 4, IP_F32 }, row = { 17, 1, 3, IP_U8 };
    const char *chains[] = {
        "median radius=1 border=reflect101",
        "grayscale | median radius=1 | convolve kernel=gaussian3",
        "mean radius=4 | median radius=5 border=zero | convolve kernel=sharpen border=shrink",
        "median radius=2 | transpose | mean radius=3 border=shrink",
        "median radius=9 | mean radius=1",
        "convolve kernel=box3 | transpose",
    };
    for (size_t i = 0; i < sizeof chains / sizeof *chains; i++) {
        check_pipeline(chains[i], &rgb, 10 + i);
        if (i != 1) check_pipeline(chains[i], &g16, 20 + i);
        if (i != 1) check_pipeline(chains[i], &f4, 30 + i);
    }
    check_pipeline("median radius=3 | mean radius=2", &row, 40);
}

static void test_histogram(void)
{
    const char *dir = tu_tmpdir();
    ip_shape s = { 61, 43, 3, IP_U8 };
    ip_image in = bt_random_image(&s, 50, 0), out;
    char text[512], path[400], whole_path[400];
    snprintf(whole_path, sizeof whole_path, "%s/mwhole.csv", dir);
    snprintf(text, sizeof text, "median radius=2 | histogram bins=64 out=%s | mean radius=3", whole_path);
    if (bt_run_whole(&reg, text, &in, EXEC_CPU, &out)) img_free(&out);
    char *want = bt_slurp(whole_path);
    CHECK(want != NULL, "no whole-image CSV");
    for (size_t i = 0; want && i < sizeof band_heights / sizeof *band_heights; i++)
        for (int workers = 1; workers <= 3; workers++) {
            snprintf(path, sizeof path, "%s/mband_%d_%d.csv", dir, band_heights[i], workers);
            snprintf(text, sizeof text, "median radius=2 | histogram bins=64 out=%s | mean radius=3", path);
            stream_options so = { band_heights[i], 1, "mock.png", BAND_ON_GPU, workers, { 0 }, 0, 0, 0 };
            if (bt_run_streamed(&reg, text, &in, &so, &out, NULL)) img_free(&out);
            char *got = bt_slurp(path);
            CHECK(got && strcmp(got, want) == 0, "mock GPU histogram, bands of %d, %d workers: counts differ",
                  band_heights[i], workers);
            free(got);
        }
    free(want);
    free(in.data);
}

/* The executors' counted device bytes stay within what the budget sized the bands for. */
static void test_peak(void)
{
    static const char *const texts[] = { "median radius=3 | mean radius=2 | convolve kernel=gaussian5",
                                         "grayscale | median radius=7 | mean radius=15" };
    ip_shape rgb = { 1001, 300, 3, IP_U8 };
    for (int t = 0; t < 2; t++)
        for (int workers = 1; workers <= 2; workers++) {
            plan p;
            if (!tu_build_plan(&reg, texts[t], &rgb, &p)) continue;
            band_layout l;
            char err[512] = "";
            int rows = 0;
            uint64_t limit = (uint64_t)workers << 20;
            stream_budget b = { (uint64_t)1 << 34, 0, 0, BAND_ON_GPU, limit, workers };
            int rc = band_layout_make(&p, &l, err, sizeof err);
            if (rc == IP_OK) {
                rc = stream_band_rows_for(&p, &l, &b, &rows, err, sizeof err);
                band_layout_free(&l);
            }
            plan_free(&p);
            CHECK(rc == IP_OK, "%s: %s", texts[t], err);
            if (rc != IP_OK) continue;
            ip_image in = bt_random_image(&rgb, 60, 0), out;
            stream_options so = { rows, 1, "mock.png", BAND_ON_GPU, workers, { 0 }, 0, 0, 0 };
            stream_profile prof;
            if (bt_run_streamed(&reg, texts[t], &in, &so, &out, &prof)) {
                CHECK(prof.gpu_peak_bytes > 0 && prof.gpu_peak_bytes <= limit,
                      "%s, %d workers, bands of %d: peak %zu device bytes over the limit %llu", texts[t], workers,
                      rows, prof.gpu_peak_bytes, (unsigned long long)limit);
                img_free(&out);
            }
            free(in.data);
        }
}

int main(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR");
    if (!build) tu_skip("IMGPIPE_BUILD_DIR is not set (run through ctest)");
    char dirs[1200], err[256];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins", build);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    strip_gpu_paths();
    test_pipelines();
    test_histogram();
    test_peak();
    registry_free(&reg);
    return tu_finish();
}
