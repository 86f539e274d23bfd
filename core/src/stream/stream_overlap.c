#define _POSIX_C_SOURCE 200809L
#include "stream/stream_overlap.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/image.h"

typedef struct {
    ip_image rows;   /* rows.shape.height: the rows it holds */
    int cap, y0;     /* rows allocated; the image row of its first */
} slot;

/* count full slots from head; a producer fills the one after them, a consumer uses head. */
typedef struct {
    slot *slots;
    int n, head, count;
    int ended, end_y0;   /* the producer has put its last slot; the row after it */
} ring;

struct stream_overlap {
    pthread_mutex_t lock;
    pthread_cond_t changed;    /* any change below: every waiter looks again */
    ring in, out;
    int closing;               /* the caller is done with the source */
    int failed_rc;             /* the first error of any thread: everyone stops */
    char failed_msg[1024];
    int in_held;               /* the caller holds in's head slot */
    slot *filling;             /* the slot after out's full ones, while the caller fills it */
    stream_source src;
    band_sink sink;
    stream_overlap_options o;
    pthread_t decoder, encoder;
    int decoder_started, encoder_started;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* With the lock held: the first failure is the run's; the others stop after the call they are in. */
static void fail_locked(stream_overlap *ov, int rc, const char *msg)
{
    if (!ov->failed_rc) {
        ov->failed_rc = rc;
        snprintf(ov->failed_msg, sizeof ov->failed_msg, "%s", msg[0] ? msg : "failed without a message");
    }
    pthread_cond_broadcast(&ov->changed);
}

static int failure_locked(const stream_overlap *ov, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", ov->failed_msg);
    return ov->failed_rc;
}

static int slot_alloc(slot *s, const ip_shape *row_shape, int rows, char *err, size_t errlen)
{
    ip_shape shape = *row_shape;
    shape.height = rows;
    img_free(&s->rows);
    s->cap = 0;
    int rc = img_alloc(&s->rows, &shape, UINT64_MAX, err, errlen);
    if (rc == IP_OK) s->cap = rows;
    return rc;
}

/* Copies n rows from the start of rows to s's row at, growing s (empty) when they do not fit. */
static int slot_copy(slot *s, const ip_image *rows, int n, int at, char *err, size_t errlen)
{
    size_t row = img_row_bytes(&rows->shape);
    int rc = IP_OK;
    if (at + n > s->cap || !s->rows.data) rc = slot_alloc(s, &rows->shape, at + n, err, errlen);
    for (int y = 0; rc == IP_OK && y < n; y++)
        memcpy((char *)s->rows.data + (size_t)(at + y) * s->rows.stride,
               (const char *)rows->data + (ptrdiff_t)y * rows->stride, row);
    if (rc == IP_OK) {
        s->rows.shape = rows->shape;
        s->rows.shape.height = at + n;
    }
    return rc;
}

static void ring_free_rows(ring *r)
{
    for (int i = 0; r->slots && i < r->n; i++) {
        img_free(&r->slots[i].rows);
        r->slots[i].cap = 0;
    }
}

/* The source's next rows into s through its own band: copied, as the source reuses it. */
static int read_copied(stream_overlap *ov, slot *s, int *y0, int *got, char *err, size_t errlen)
{
    ip_image rows;
    int rc = ov->src.next(ov->src.user, &rows, y0, err, errlen);
    *got = rc == IP_OK ? rows.shape.height : 0;
    if (*got > 0) rc = slot_copy(s, &rows, rows.shape.height, 0, err, errlen);
    return rc;
}

/* The source's next rows decoded into s itself: no copy on the decoding thread, which is the
 * slower side of a streamed run whose output is cheap to write. */
static int read_into(stream_overlap *ov, slot *s, int *y0, int *got, char *err, size_t errlen)
{
    int rc = IP_OK;
    if (!s->rows.data || s->cap < ov->src.band.height || img_row_bytes(&s->rows.shape) != img_row_bytes(&ov->src.band))
        rc = slot_alloc(s, &ov->src.band, ov->src.band.height, err, errlen);
    ip_image dst = s->rows;
    dst.shape = ov->src.band;
    dst.shape.height = s->cap;
    if (rc == IP_OK) rc = ov->src.next_into(ov->src.user, &dst, y0, err, errlen);
    *got = rc == IP_OK ? dst.shape.height : 0;
    if (*got > 0) s->rows.shape = dst.shape;
    return rc;
}

/* The decoding thread: the source's bands into free slots of in, until its end, an error or the
 * caller's close. */
static void *decode_main(void *arg)
{
    stream_overlap *ov = arg;
    char err[1024];
    for (int done = 0; !done;) {
        pthread_mutex_lock(&ov->lock);
        while (!ov->failed_rc && !ov->closing && ov->in.count == ov->in.n) pthread_cond_wait(&ov->changed, &ov->lock);
        done = ov->failed_rc || ov->closing;
        slot *s = &ov->in.slots[(ov->in.head + ov->in.count) % ov->in.n];   /* stays free until put */
        pthread_mutex_unlock(&ov->lock);
        if (done) break;
        double t0 = now_ms();
        int y0 = 0, got = 0;
        err[0] = '\0';
        int rc = ov->src.next_into ? read_into(ov, s, &y0, &got, err, sizeof err)
                                   : read_copied(ov, s, &y0, &got, err, sizeof err);
        s->y0 = y0;
        *ov->o.source_ms += now_ms() - t0;
        pthread_mutex_lock(&ov->lock);
        if (rc != IP_OK) {
            fail_locked(ov, rc, err);
        } else if (got == 0) {
            ov->in.ended = 1;
            ov->in.end_y0 = y0;
        } else {
            ov->in.count++;
        }
        done = rc != IP_OK || got == 0;
        pthread_cond_broadcast(&ov->changed);
        pthread_mutex_unlock(&ov->lock);
    }
    return NULL;
}

/* The encoding thread: full slots of out to the sink in order, until out ends or a failure. */
static void *encode_main(void *arg)
{
    stream_overlap *ov = arg;
    char err[1024];
    for (;;) {
        pthread_mutex_lock(&ov->lock);
        while (!ov->failed_rc && ov->out.count == 0 && !ov->out.ended) pthread_cond_wait(&ov->changed, &ov->lock);
        int done = ov->failed_rc || ov->out.count == 0;
        slot *s = &ov->out.slots[ov->out.head];
        pthread_mutex_unlock(&ov->lock);
        if (done) break;
        double t0 = now_ms();
        err[0] = '\0';
        int rc = ov->sink.rows(ov->sink.user, &s->rows, s->y0, err, sizeof err);
        *ov->o.sink_ms += now_ms() - t0;
        pthread_mutex_lock(&ov->lock);
        if (rc != IP_OK) {
            fail_locked(ov, rc, err);
        } else {
            ov->out.head = (ov->out.head + 1) % ov->out.n;
            ov->out.count--;
            pthread_cond_broadcast(&ov->changed);
        }
        pthread_mutex_unlock(&ov->lock);
        if (rc != IP_OK) break;
    }
    return NULL;
}

static int queued_next(void *user, ip_image *rows, int *y0, char *err, size_t errlen)
{
    stream_overlap *ov = user;
    pthread_mutex_lock(&ov->lock);
    if (ov->in_held) {
        ov->in.head = (ov->in.head + 1) % ov->in.n;
        ov->in.count--;
        ov->in_held = 0;
        pthread_cond_broadcast(&ov->changed);
    }
    while (!ov->failed_rc && ov->in.count == 0 && !ov->in.ended) pthread_cond_wait(&ov->changed, &ov->lock);
    int rc = ov->failed_rc ? failure_locked(ov, err, errlen) : IP_OK;
    if (rc == IP_OK && ov->in.count > 0) {
        const slot *s = &ov->in.slots[ov->in.head];
        *rows = s->rows;
        *y0 = s->y0;
        ov->in_held = 1;
    } else if (rc == IP_OK) {
        *rows = (ip_image){ 0 };
        *y0 = ov->in.end_y0;
        ring_free_rows(&ov->in);   /* the decoder is done with them: freed before later segments run */
    }
    pthread_mutex_unlock(&ov->lock);
    return rc;
}

/* The slot after out's full ones, for the caller to fill from image row y0. */
static int take_out_slot(stream_overlap *ov, int y0, char *err, size_t errlen)
{
    pthread_mutex_lock(&ov->lock);
    while (!ov->failed_rc && ov->out.count == ov->out.n) pthread_cond_wait(&ov->changed, &ov->lock);
    int rc = ov->failed_rc ? failure_locked(ov, err, errlen) : IP_OK;
    if (rc == IP_OK) {
        ov->filling = &ov->out.slots[(ov->out.head + ov->out.count) % ov->out.n];
        ov->filling->rows.shape.height = 0;
        ov->filling->y0 = y0;
    }
    pthread_mutex_unlock(&ov->lock);
    return rc;
}

static void put_out_slot_locked(stream_overlap *ov)
{
    ov->out.count++;   /* the encoder's head and count move together: the filled slot is next */
    ov->filling = NULL;
    pthread_cond_broadcast(&ov->changed);
}

/* Rows gather in a slot of sink_rows; a full slot goes to the encoder. */
static int queued_rows(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    stream_overlap *ov = user;
    if (img_row_bytes(&rows->shape) != img_row_bytes(&ov->o.sink_shape)) {
        snprintf(err, errlen, "rows %d.. do not match the output's width", y0);
        return IP_EINVAL;
    }
    pthread_mutex_lock(&ov->lock);
    int rc = ov->failed_rc ? failure_locked(ov, err, errlen) : IP_OK;
    if (rc == IP_OK && ov->filling && y0 != ov->filling->y0 + ov->filling->rows.shape.height)
        put_out_slot_locked(ov);   /* not the rows that follow: the sink will say so */
    pthread_mutex_unlock(&ov->lock);
    for (int done = 0; rc == IP_OK && done < rows->shape.height;) {
        if (!ov->filling && (rc = take_out_slot(ov, y0 + done, err, errlen)) != IP_OK) break;
        slot *s = ov->filling;
        int left = rows->shape.height - done, room = s->cap - s->rows.shape.height, n = left < room ? left : room;
        ip_image part = *rows;
        part.data = (char *)rows->data + (ptrdiff_t)done * rows->stride;
        rc = slot_copy(s, &part, n, s->rows.shape.height, err, errlen);
        done += n;
        if (rc == IP_OK && s->rows.shape.height == s->cap) {
            pthread_mutex_lock(&ov->lock);
            put_out_slot_locked(ov);
            pthread_mutex_unlock(&ov->lock);
        }
    }
    return rc;
}

stream_source stream_overlap_source(stream_overlap *ov) { return (stream_source){ .next = queued_next, .user = ov }; }
band_sink stream_overlap_sink(stream_overlap *ov) { return (band_sink){ queued_rows, ov }; }

static void overlap_free(stream_overlap *ov)
{
    ring_free_rows(&ov->in);
    ring_free_rows(&ov->out);
    free(ov->in.slots);
    free(ov->out.slots);
    pthread_cond_destroy(&ov->changed);
    pthread_mutex_destroy(&ov->lock);
    free(ov);
}

static int alloc_rings(stream_overlap *ov, char *err, size_t errlen)
{
    int n = ov->o.slots;
    ov->in = (ring){ .slots = calloc((size_t)n, sizeof(slot)), .n = n };
    ov->out = (ring){ .slots = calloc((size_t)n, sizeof(slot)), .n = n };
    if (!ov->in.slots || !ov->out.slots) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = IP_OK;
    for (int i = 0; rc == IP_OK && i < n; i++)
        rc = slot_alloc(&ov->out.slots[i], &ov->o.sink_shape, ov->o.sink_rows, err, errlen);
    return rc;
}

/* The helpers leave the signals a user sends to the main thread, as before they existed. */
static int start_threads(stream_overlap *ov)
{
    sigset_t block, old;
    sigemptyset(&block);
    static const int user_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof user_signals / sizeof *user_signals; i++) sigaddset(&block, user_signals[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    ov->decoder_started = pthread_create(&ov->decoder, NULL, decode_main, ov) == 0;
    ov->encoder_started = ov->decoder_started && pthread_create(&ov->encoder, NULL, encode_main, ov) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ov->encoder_started;
}

int stream_overlap_start(stream_overlap **out, const stream_source *src, const band_sink *sink,
                         const stream_overlap_options *o, char *err, size_t errlen)
{
    *out = NULL;
    if (o->slots < 2 || o->sink_rows < 1) {
        snprintf(err, errlen, "a queue needs 2 slots or more of 1 row or more");
        return IP_EINVAL;
    }
    stream_overlap *ov = calloc(1, sizeof *ov);
    if (!ov) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    ov->src = *src;
    ov->sink = *sink;
    ov->o = *o;
    pthread_mutex_init(&ov->lock, NULL);
    pthread_cond_init(&ov->changed, NULL);
    int rc = alloc_rings(ov, err, errlen);
    if (rc == IP_OK && !start_threads(ov)) {
        snprintf(err, errlen, "cannot start the decoding and encoding threads");
        rc = stream_overlap_finish(ov, IP_ENOMEM, err, errlen);
        return rc;
    }
    if (rc != IP_OK) {
        overlap_free(ov);
        return rc;
    }
    *out = ov;
    return IP_OK;
}

int stream_overlap_finish(stream_overlap *ov, int rc, char *err, size_t errlen)
{
    pthread_mutex_lock(&ov->lock);
    ov->closing = 1;
    if (rc != IP_OK) fail_locked(ov, rc, err);
    else if (ov->filling && ov->filling->rows.shape.height > 0) put_out_slot_locked(ov);
    ov->out.ended = 1;
    pthread_cond_broadcast(&ov->changed);
    pthread_mutex_unlock(&ov->lock);
    if (ov->decoder_started) pthread_join(ov->decoder, NULL);
    if (ov->encoder_started) pthread_join(ov->encoder, NULL);
    rc = ov->failed_rc ? failure_locked(ov, err, errlen) : IP_OK;
    overlap_free(ov);
    return rc;
}
