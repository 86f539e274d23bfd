#define _GNU_SOURCE
#include "io/io_tiff_strips.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "base/image.h"
#include "io/io_tiff_strip_cpu.h"

/* A codec's state: libdeflate's at the default level allocates 652 KB, of which its hash tables
 * (320 KB) and the part of its sequence store a strip uses are touched; zlib's in a libtiff
 * handle about as much. */
#define CODEC_STATE_BYTES ((uint64_t)512 << 10)

/* A strip takes any free slot (`free_slots`): claimed by the caller, queued (`queue`, in strip
 * order), being compressed, compressed (`done`), then written and free again. Where a slot is in
 * that round is where its number is held, so a slot keeps no state of its own. */

typedef struct {
    unsigned char *rows;
    const unsigned char *src;   /* rows to copy into `rows` first, src_stride apart (NULL: none) */
    ptrdiff_t src_stride;
    size_t len;
    uint32_t index;
    tiff_strip_bytes out;
} slot;

typedef struct {
    struct tiff_strips *p;
    void *state;             /* the codec's */
    pthread_t tid;
    int started;
    char err[512];
} worker;

/* A batch codec's state on a thread of its own, with its batch's jobs and their slots. */
typedef struct {
    struct tiff_strips *p;
    void *state;
    tiff_strip_job *jobs;
    uint32_t *job_slots;
    pthread_t tid;
    int started;
    char err[512];
} batch_worker;

struct tiff_strips {
    const tiff_strip_codec *codec;
    tiff_strip_format f;
    tiff_strip_write_fn write;
    void *user;
    size_t strip_bytes;
    slot *slots;
    uint32_t n_slots;
    uint32_t *queue;         /* slots submitted, ring of n_slots from next_compress to submitted */
    uint32_t *free_slots, n_free;
    uint32_t *done, n_done;  /* compressed, to write: with a batch codec, in any order */
    uint32_t claimed;        /* the caller's slot */
    worker *workers;
    int n_workers;           /* threads compressing; 0: the caller compresses */
    int n_states;            /* codec states opened (one when the caller compresses) */
    const tiff_strip_batch_codec *batch;
    batch_worker *batchers;
    int n_batchers;          /* batch states opened */
    uint32_t batch_max, batch_min;   /* strips a batch takes at most, and waits for */
    pthread_mutex_t mu;
    /* each kind of waiter has its own, so a strip queued wakes one thread, not the 30-odd of a
     * 32-core host, each taking the lock in turn */
    pthread_cond_t queued;   /* a strip queued: a compressing thread */
    pthread_cond_t batch_ready;   /* batch_min strips queued: a batch state */
    pthread_cond_t compressed;    /* a strip compressed: the writing thread */
    pthread_cond_t slot_free;     /* a strip written and its slot free: the caller */
    uint32_t next_claim, submitted, next_compress, written;
    int any_order;           /* strips written as they are done (a batch's would hold the others) */
    pthread_t writer;        /* writes the compressed strips, where threads compress them */
    int writer_started;
    int quit;
    uint32_t failed_index;   /* the lowest failed strip, so the message does not depend on threads */
    int failed_rc;
    char failed_msg[512];
    char write_err[512];     /* the writing thread's message */
    tiff_fast_check fast;    /* the threads' faster level beside the batch codec */
};

int tiff_strip_bytes_grow(tiff_strip_bytes *out, size_t need, char *err, size_t errlen)
{
    if (need <= out->cap) return IP_OK;
    unsigned char *data = realloc(out->data, need);
    if (!data) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    out->data = data;
    out->cap = need;
    return IP_OK;
}

static void wake_all_locked(struct tiff_strips *p)
{
    pthread_cond_broadcast(&p->queued);
    pthread_cond_broadcast(&p->batch_ready);
    pthread_cond_broadcast(&p->compressed);
    pthread_cond_broadcast(&p->slot_free);
}

static void fail_locked(struct tiff_strips *p, uint32_t index, int rc, const char *msg)
{
    if (!p->failed_rc || index < p->failed_index) {
        p->failed_rc = rc;
        p->failed_index = index;
        snprintf(p->failed_msg, sizeof p->failed_msg, "%s", msg[0] ? msg : "failed without a message");
    }
    wake_all_locked(p);
}

static int failure_locked(const struct tiff_strips *p, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", p->failed_msg);
    return p->failed_rc;
}

/* The next compressed strip to write: in order, the lowest not yet written when it is done, else
 * any done; its place in `done` taken out. UINT32_MAX: none. */
static uint32_t next_done_locked(struct tiff_strips *p)
{
    for (uint32_t i = 0; i < p->n_done; i++) {
        uint32_t id = p->done[i];
        if (p->any_order || p->slots[id].index == p->written) {
            p->done[i] = p->done[--p->n_done];
            return id;
        }
    }
    return UINT32_MAX;
}

/* Writes the compressed strips that may go out, the lock released while writing. */
static void write_ready_locked(struct tiff_strips *p)
{
    while (!p->failed_rc && !p->quit) {
        uint32_t id = next_done_locked(p);
        if (id == UINT32_MAX) break;
        slot *s = &p->slots[id];
        pthread_mutex_unlock(&p->mu);
        p->write_err[0] = '\0';
        int rc = p->write(p->user, s->index, s->out.data, s->out.len, p->write_err, sizeof p->write_err);
        pthread_mutex_lock(&p->mu);
        if (rc != IP_OK) {
            fail_locked(p, s->index, rc, p->write_err);
            break;
        }
        p->free_slots[p->n_free++] = id;
        p->written++;
        pthread_cond_broadcast(&p->slot_free);
    }
}

static void mark_done_locked(struct tiff_strips *p, uint32_t id) { p->done[p->n_done++] = id; }

/* Writing has a thread of its own at the caller's priority: the compressing threads beside a
 * batch codec run at nice 10, and the strips one of them wrote held their slots behind the
 * decoding threads (the 10-gigapixel run with the card given slack waited 3.8 s for slots, 0.3 s
 * with this thread: bench/RESULTS.md). */
static void *writer_main(void *arg)
{
    struct tiff_strips *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        write_ready_locked(p);
        if (p->quit || p->failed_rc) break;
        pthread_cond_wait(&p->compressed, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void copy_in(const struct tiff_strips *p, slot *s)
{
    size_t row = img_row_bytes(&p->f.shape);
    for (size_t y = 0; s->src && y < s->len / row; y++)
        memcpy(s->rows + y * row, s->src + (ptrdiff_t)y * s->src_stride, row);
    s->src = NULL;
}

/* Beside a batch codec the threads compress what the batches leave, so they give the cores to the
 * process's other threads first (a streamed run's readers, which otherwise wait on them): nice 10
 * took the 10-gigapixel run on the H200 from 13.2 s to 11.4 (bench/RESULTS.md).
 * IMGPIPE_TIFF_STRIP_NICE sets it (0: not), for the bench. */
#define STRIP_THREAD_NICE 10

static void yield_to_others(void)
{
    const char *v = getenv("IMGPIPE_TIFF_STRIP_NICE");
    long nice = v && *v ? strtol(v, NULL, 10) : STRIP_THREAD_NICE;
    if (nice < 1 || nice > 19) return;
    id_t self = (id_t)syscall(SYS_gettid);
    setpriority(PRIO_PROCESS, self, getpriority(PRIO_PROCESS, self) + (int)nice);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct tiff_strips *p = w->p;
    if (p->batch) yield_to_others();
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && !p->failed_rc && p->next_compress == p->submitted) pthread_cond_wait(&p->queued, &p->mu);
        if (p->quit || p->failed_rc) break;
        uint32_t id = p->queue[p->next_compress++ % p->n_slots];
        if (p->next_compress != p->submitted) pthread_cond_signal(&p->queued);
        slot *s = &p->slots[id];
        pthread_mutex_unlock(&p->mu);
        w->err[0] = '\0';
        copy_in(p, s);
        int rc = p->codec->compress(w->state, s->index, s->rows, s->len, &s->out, w->err, sizeof w->err);
        pthread_mutex_lock(&p->mu);
        if (rc != IP_OK) {
            fail_locked(p, s->index, rc, w->err);
            continue;
        }
        mark_done_locked(p, id);
        pthread_cond_signal(&p->compressed);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* A batch takes consecutive queued strips once batch_min of them wait: fewer would hold the
 * strips behind them for a whole batch's time to save the threads a little work. */
static void *batch_main(void *arg)
{
    batch_worker *b = arg;
    struct tiff_strips *p = b->p;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && !p->failed_rc && p->submitted - p->next_compress < p->batch_min)
            pthread_cond_wait(&p->batch_ready, &p->mu);
        if (p->quit || p->failed_rc) break;
        uint32_t n = p->submitted - p->next_compress < p->batch_max ? p->submitted - p->next_compress : p->batch_max;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t id = p->queue[p->next_compress++ % p->n_slots];
            slot *s = &p->slots[id];
            b->job_slots[i] = id;
            b->jobs[i] = (tiff_strip_job){ s->index, s->rows, s->len, &s->out };
        }
        if (p->submitted - p->next_compress >= p->batch_min) pthread_cond_signal(&p->batch_ready);
        pthread_mutex_unlock(&p->mu);
        for (uint32_t i = 0; i < n; i++) copy_in(p, &p->slots[b->job_slots[i]]);
        b->err[0] = '\0';
        int rc = p->batch->compress(b->state, b->jobs, n, b->err, sizeof b->err);
        pthread_mutex_lock(&p->mu);
        if (rc != IP_OK) {
            fail_locked(p, b->jobs[0].index, rc, b->err);
            continue;
        }
        for (uint32_t i = 0; i < n; i++) mark_done_locked(p, b->job_slots[i]);
        pthread_cond_signal(&p->compressed);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* The batch codec's states, up to the first that does not open (declining the format, a GPU out
 * of memory): the batches are a help, so the threads go on with the states opened, or alone. */
static int open_batchers(struct tiff_strips *p, const tiff_strips_plan *plan, char *err, size_t errlen)
{
    if (!plan->batch || plan->batch->states < 1 || plan->batch_strips < 1) return IP_OK;
    p->batchers = calloc((size_t)plan->batch->states, sizeof *p->batchers);
    if (!p->batchers) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    p->batch = plan->batch;
    p->batch_max = plan->batch_strips < p->n_slots ? plan->batch_strips : p->n_slots;
    p->batch_min = p->batch_max / 2 > 0 ? p->batch_max / 2 : 1;
    for (int i = 0; i < plan->batch->states; i++) {
        batch_worker *b = &p->batchers[i];
        b->p = p;
        char why[512];
        if (p->batch->open(p->batch, i, &p->f, p->batch_max, &b->state, why, sizeof why) != IP_OK) {
            if (i == 0) p->batch = NULL;
            return IP_OK;
        }
        p->n_batchers++;
        b->job_slots = calloc(p->batch_max, sizeof *b->job_slots);
        if (!(b->jobs = calloc(p->batch_max, sizeof *b->jobs)) || !b->job_slots) {
            snprintf(err, errlen, "out of memory");
            return IP_ENOMEM;
        }
    }
    return IP_OK;
}

static int start_batchers(struct tiff_strips *p, char *err, size_t errlen)
{
    for (int i = 0; p->batch && i < p->n_batchers; i++) {
        if (pthread_create(&p->batchers[i].tid, NULL, batch_main, &p->batchers[i]) != 0) {
            snprintf(err, errlen, "cannot start a compressing thread");
            return IP_ENOMEM;
        }
        p->batchers[i].started = 1;
    }
    return IP_OK;
}

static int alloc_slots(struct tiff_strips *p)
{
    p->slots = calloc(p->n_slots, sizeof *p->slots);
    p->queue = calloc(p->n_slots, sizeof *p->queue);
    p->free_slots = calloc(p->n_slots, sizeof *p->free_slots);
    p->done = calloc(p->n_slots, sizeof *p->done);
    if (!p->slots || !p->queue || !p->free_slots || !p->done) return IP_ENOMEM;
    for (uint32_t i = 0; i < p->n_slots; i++) {
        if (!(p->slots[i].rows = img_big_malloc(p->strip_bytes))) return IP_ENOMEM;
        p->free_slots[p->n_free++] = p->n_slots - 1 - i;   /* slot 0 first */
    }
    return IP_OK;
}

static int start(struct tiff_strips *p, int threads, char *err, size_t errlen)
{
    p->workers = calloc((size_t)threads, sizeof *p->workers);
    if (!p->workers || alloc_slots(p) != IP_OK) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    for (; p->n_states < threads; p->n_states++) {
        worker *w = &p->workers[p->n_states];
        w->p = p;
        int rc = p->codec->open(p->codec, &p->f, &w->state, err, errlen);
        if (rc != IP_OK) return rc;
    }
    for (int i = 0; p->n_workers > 0 && i < threads; i++) {
        if (pthread_create(&p->workers[i].tid, NULL, worker_main, &p->workers[i]) != 0) {
            snprintf(err, errlen, "cannot start a compressing thread");
            return IP_ENOMEM;
        }
        p->workers[i].started = 1;
    }
    if (p->n_workers > 0) {
        if (pthread_create(&p->writer, NULL, writer_main, p) != 0) {
            snprintf(err, errlen, "cannot start the strips' writing thread");
            return IP_ENOMEM;
        }
        p->writer_started = 1;
    }
    return start_batchers(p, err, errlen);
}

int tiff_strips_open(tiff_strips **out, const tiff_strip_codec *codec, const tiff_strip_format *f,
                     const tiff_strips_plan *plan, tiff_strip_write_fn write, void *user, char *err, size_t errlen)
{
    *out = NULL;
    struct tiff_strips *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    *p = (struct tiff_strips){ .codec = codec, .f = *f, .write = write, .user = user };
    p->strip_bytes = img_row_bytes(&f->shape) * f->rows_per_strip;
    p->n_slots = plan->slots > 1 ? plan->slots : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->queued, NULL);
    pthread_cond_init(&p->batch_ready, NULL);
    pthread_cond_init(&p->compressed, NULL);
    pthread_cond_init(&p->slot_free, NULL);
    tiff_fast_check_init(&p->fast, tiff_libdeflate_level_beside_card);
    int rc = open_batchers(p, plan, err, errlen);
    p->any_order = p->batch != NULL;
    if (p->batch && tiff_fast_wanted()) p->f.fast = &p->fast;   /* the threads' states open after the batches' */
    /* the caller compresses alone only without threads or batches */
    p->n_workers = plan->threads > 1 || p->batch ? (plan->threads > 1 ? plan->threads : 1) : 0;
    if (!p->n_workers) p->n_slots = 1;
    if (rc == IP_OK) rc = start(p, plan->threads > 1 ? plan->threads : 1, err, errlen);
    if (rc != IP_OK) {
        tiff_strips_close(p);
        return rc;
    }
    *out = p;
    return IP_OK;
}

int tiff_strips_claim(tiff_strips *p, unsigned char **rows, char *err, size_t errlen)
{
    pthread_mutex_lock(&p->mu);
    while (!p->failed_rc && p->n_free == 0) pthread_cond_wait(&p->slot_free, &p->mu);
    int rc = p->failed_rc ? failure_locked(p, err, errlen) : IP_OK;
    if (rc == IP_OK) p->claimed = p->free_slots[--p->n_free];
    pthread_mutex_unlock(&p->mu);
    *rows = rc == IP_OK ? p->slots[p->claimed].rows : NULL;
    return rc;
}

/* One thread: the strip is compressed and written here and now. */
static int compress_here(struct tiff_strips *p, slot *s)
{
    char msg[512] = "";
    copy_in(p, s);
    int rc = p->codec->compress(p->workers[0].state, s->index, s->rows, s->len, &s->out, msg, sizeof msg);
    if (rc == IP_OK) rc = p->write(p->user, s->index, s->out.data, s->out.len, msg, sizeof msg);
    pthread_mutex_lock(&p->mu);
    if (rc != IP_OK) fail_locked(p, s->index, rc, msg);
    p->free_slots[p->n_free++] = p->claimed;
    p->next_compress = p->written = p->submitted;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int tiff_strips_submit(tiff_strips *p, size_t len, char *err, size_t errlen)
{
    slot *s = &p->slots[p->claimed];
    s->len = len;
    s->index = p->next_claim++;
    pthread_mutex_lock(&p->mu);
    p->queue[p->submitted++ % p->n_slots] = p->claimed;
    pthread_cond_signal(&p->queued);
    if (p->batch && p->submitted - p->next_compress >= p->batch_min) pthread_cond_signal(&p->batch_ready);
    pthread_mutex_unlock(&p->mu);
    int rc = p->n_workers ? IP_OK : compress_here(p, s);
    pthread_mutex_lock(&p->mu);
    rc = p->failed_rc ? failure_locked(p, err, errlen) : rc;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int tiff_strips_submit_from(tiff_strips *p, const unsigned char *src, ptrdiff_t stride, uint32_t rows, char *err,
                            size_t errlen)
{
    slot *s = &p->slots[p->claimed];
    s->src = src;
    s->src_stride = stride;
    return tiff_strips_submit(p, (size_t)rows * img_row_bytes(&p->f.shape), err, errlen);
}

int tiff_strips_finish(tiff_strips *p, char *err, size_t errlen)
{
    pthread_mutex_lock(&p->mu);
    while (!p->failed_rc && p->written < p->submitted) pthread_cond_wait(&p->slot_free, &p->mu);
    int rc = p->failed_rc ? failure_locked(p, err, errlen) : IP_OK;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void tiff_strips_close(tiff_strips *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    wake_all_locked(p);
    pthread_mutex_unlock(&p->mu);
    if (p->writer_started) pthread_join(p->writer, NULL);
    for (int i = 0; p->workers && i < p->n_states; i++) {
        if (p->workers[i].started) pthread_join(p->workers[i].tid, NULL);
        p->codec->close(p->workers[i].state);
    }
    for (int i = 0; p->batchers && i < p->n_batchers; i++) {
        if (p->batchers[i].started) pthread_join(p->batchers[i].tid, NULL);
        p->batch->close(p->batchers[i].state);
        free(p->batchers[i].jobs);
        free(p->batchers[i].job_slots);
    }
    free(p->batchers);
    for (uint32_t i = 0; p->slots && i < p->n_slots; i++) {
        free(p->slots[i].rows);
        free(p->slots[i].out.data);
    }
    free(p->slots);
    tiff_fast_check_destroy(&p->fast);
    free(p->queue);
    free(p->free_slots);
    free(p->done);
    free(p->workers);
    pthread_cond_destroy(&p->queued);
    pthread_cond_destroy(&p->batch_ready);
    pthread_cond_destroy(&p->compressed);
    pthread_cond_destroy(&p->slot_free);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static uint64_t strip_bytes(const tiff_strip_format *f)
{
    return (uint64_t)img_row_bytes(&f->shape) * f->rows_per_strip;
}

tiff_strips_plan tiff_strips_plan_for(const tiff_strip_format *f, int threads, uint64_t hold)
{
    uint64_t strips = ((uint64_t)f->shape.height + f->rows_per_strip - 1) / f->rows_per_strip;
    uint64_t t = threads > 1 ? (uint64_t)threads : 1, slots = 2 * t;
    /* a strip in flight holds its rows and its compressed bytes, at worst a little more */
    uint64_t per_thread = 2 * (2 * strip_bytes(f) + 1024) + CODEC_STATE_BYTES;
    if (hold && hold / per_thread < t) slots = 2 * (hold / per_thread);
    if (slots > strips) slots = strips;
    if (slots < 1) slots = 1;
    if (t > slots) t = slots;
    return (tiff_strips_plan){ (int)t, t > 1 ? (uint32_t)slots : 1, NULL, 0 };
}

uint32_t tiff_strips_rows_with(const ip_shape *shape, uint32_t rows, const tiff_strip_batch_codec *batch)
{
    uint64_t row = img_row_bytes(shape);
    if (!batch || !batch->strip_bytes || row * (uint64_t)shape->height < 2 * batch->batch_bytes) return rows;
    uint64_t cut = batch->strip_bytes / row > 0 ? batch->strip_bytes / row : 1;
    return cut > (uint64_t)shape->height ? (uint32_t)shape->height : (uint32_t)cut;
}

tiff_strips_plan tiff_strips_plan_with(const tiff_strip_format *f, int threads, uint64_t hold,
                                       const tiff_strip_batch_codec *batch)
{
    tiff_strips_plan plan = tiff_strips_plan_for(f, threads, hold);
    if (!batch || batch->states < 1) return plan;
    uint64_t bytes = strip_bytes(f), per_strip = 2 * bytes + 1024, states = (uint64_t)batch->states;
    uint64_t strips = ((uint64_t)f->shape.height + f->rows_per_strip - 1) / f->rows_per_strip;
    uint64_t t = threads > 1 ? (uint64_t)threads : 1;
    uint64_t k = batch->batch_bytes / bytes > 0 ? batch->batch_bytes / bytes : 1;
    uint64_t fixed = t * CODEC_STATE_BYTES + states * batch->state_bytes;
    if (hold) {
        uint64_t room = hold > fixed ? (hold - fixed) / per_strip : 0;
        if (room < 2 * t + k * (states + 1)) k = room > 2 * t ? (room - 2 * t) / (states + 1) : 0;
    }
    if (k < 16 || strips < 2 * k) return plan;
    uint64_t slots = 2 * t + k * (states + 1);
    if (slots > strips) slots = strips;
    if (t > strips) t = strips;
    return (tiff_strips_plan){ (int)t, (uint32_t)slots, batch, (uint32_t)k };
}

uint64_t tiff_strips_held_bytes(const tiff_strip_format *f, const tiff_strips_plan *plan)
{
    uint64_t t = plan->threads > 1 ? (uint64_t)plan->threads : 1;
    uint64_t batch = plan->batch ? (uint64_t)plan->batch->states * plan->batch->state_bytes : 0;
    return plan->slots * (2 * strip_bytes(f) + 1024) + t * CODEC_STATE_BYTES + batch;
}
