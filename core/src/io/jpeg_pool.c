#define _POSIX_C_SOURCE 200809L
#include "io/jpeg_pool.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu/gpu.h"
#include "base/mono_clock.h"

typedef struct request {
    const jpeg_gpu_ready *ready;   /* prepared by the caller (jpeg_pool_decode_ready), else item */
    jpeg_gpu_item item;
    const jpeg_gpu_memory *caller_mem;
    jpeg_gpu_memory mem;        /* caller_mem with index 0, whatever the file's place in its batch */
    int done;
    struct request *next;
} request;

typedef struct {
    jpeg_pool *pool;
    int device;
    unsigned uses;
    pthread_t opener;
    int opener_started;
    int opened;                 /* the opener has finished, with g or with why */
    jpeg_gpu *g;
    void *stream;
    char why[256];
    double open_ms;
    request *head, *tail;       /* files waiting for the decoder */
    int busy;                   /* a worker is decoding a batch */
    long batches, files;
    int largest_batch;
    double decode_ms;
    double wait_ms;             /* callers' time from handing a file in to its decode, summed */
} pool_gpu;

struct jpeg_pool {
    int n;
    pool_gpu *gpus;
    int max_batch;
    pthread_mutex_t lock;
    pthread_cond_t changed;     /* a handle opened or a batch finished */
};

static void *open_on_thread(void *arg)
{
    pool_gpu *pg = arg;
    double t0 = now_ms();
    char why[256] = "";
    void *stream = NULL;
    jpeg_gpu *g = NULL;
    int rc = gpu_select(pg->device, why, sizeof why);
    if (rc == IP_OK) rc = gpu_stream_create(&stream, why, sizeof why);
    if (rc == IP_OK) rc = jpeg_gpu_open_for(&g, pg->device, stream, pg->uses, why, sizeof why);
    pthread_mutex_lock(&pg->pool->lock);
    pg->g = rc == IP_OK ? g : NULL;
    pg->stream = stream;
    snprintf(pg->why, sizeof pg->why, "%s", why);
    pg->open_ms = now_ms() - t0;
    pg->opened = 1;
    pthread_cond_broadcast(&pg->pool->changed);
    pthread_mutex_unlock(&pg->pool->lock);
    return NULL;
}

int jpeg_pool_open(jpeg_pool **out, int n, const int *devices, unsigned uses, int max_batch, char *err,
                   size_t errlen)
{
    *out = NULL;
    jpeg_pool *pool = calloc(1, sizeof *pool);
    pool_gpu *gpus = n > 0 ? calloc((size_t)n, sizeof *gpus) : NULL;
    if (!pool || !gpus || pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        free(gpus);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    pthread_cond_init(&pool->changed, NULL);
    pool->n = n;
    pool->gpus = gpus;
    pool->max_batch = max_batch > 0 ? max_batch : 1;
    for (int i = 0; i < n; i++) {
        pool_gpu *pg = &gpus[i];
        pg->pool = pool;
        pg->device = devices[i];
        pg->uses = uses;
        pg->opener_started = pthread_create(&pg->opener, NULL, open_on_thread, pg) == 0;
        if (!pg->opener_started) {
            snprintf(pg->why, sizeof pg->why, "cannot start a thread");
            pg->opened = 1;
        }
    }
    *out = pool;
    return IP_OK;
}

static pool_gpu *find_gpu(jpeg_pool *pool, int device)
{
    for (int i = 0; pool && i < pool->n; i++)
        if (pool->gpus[i].device == device) return &pool->gpus[i];
    return NULL;
}

/* Called with the lock held; returns with it held. */
static jpeg_gpu *wait_opened(jpeg_pool *pool, pool_gpu *pg)
{
    while (!pg->opened) pthread_cond_wait(&pool->changed, &pool->lock);
    return pg->g;
}

jpeg_gpu *jpeg_pool_handle(jpeg_pool *pool, int device, const char **why)
{
    pool_gpu *pg = find_gpu(pool, device);
    if (!pg) {
        if (why) *why = "nvJPEG was not opened on this GPU";
        return NULL;
    }
    pthread_mutex_lock(&pool->lock);
    jpeg_gpu *g = wait_opened(pool, pg);
    pthread_mutex_unlock(&pool->lock);
    if (why) *why = pg->why;
    return g;
}

/* Takes up to max_batch waiting requests off the queue (lock held). */
static int take_batch(jpeg_pool *pool, pool_gpu *pg, request **batch)
{
    int n = 0;
    while (pg->head && n < pool->max_batch) {
        batch[n++] = pg->head;
        pg->head = pg->head->next;
    }
    if (!pg->head) pg->tail = NULL;
    return n;
}

/* The batch's prepared files go to the engine as they are; the others are prepared here too. */
static void decode_ready_part(pool_gpu *pg, request **batch, int n, jpeg_gpu_ready *ready, int *rcs)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (batch[i]->ready) ready[k++] = *batch[i]->ready;
    if (!k) return;
    char err[256] = "";
    jpeg_gpu_decode_ready(pg->g, k, ready, rcs, err, sizeof err);
    k = 0;
    for (int i = 0; i < n; i++) {
        if (!batch[i]->ready) continue;
        batch[i]->item.rc = rcs[k++];
        if (batch[i]->item.rc != IP_OK) snprintf(batch[i]->item.err, sizeof batch[i]->item.err, "%s", err);
    }
}

static void decode_item_part(pool_gpu *pg, request **batch, int n, jpeg_gpu_item *items)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!batch[i]->ready) items[k++] = batch[i]->item;
    if (!k) return;
    char err[256] = "";
    int rc = jpeg_gpu_decode_items(pg->g, k, items, err, sizeof err);
    k = 0;
    for (int i = 0; i < n; i++) {
        if (batch[i]->ready) continue;
        batch[i]->item = items[k++];
        if (rc != IP_OK && batch[i]->item.rc == IP_OK) {
            batch[i]->item.rc = rc;
            snprintf(batch[i]->item.err, sizeof batch[i]->item.err, "%s", err);
        }
    }
}

typedef struct {
    request **batch;
    jpeg_gpu_item *items;
    jpeg_gpu_ready *ready;
    int *rcs;
} batch_room;

static void room_free(batch_room *r)
{
    free(r->batch);
    free(r->items);
    free(r->ready);
    free(r->rcs);
}

static int room_alloc(batch_room *r, int n)
{
    r->batch = malloc((size_t)n * sizeof *r->batch);
    r->items = malloc((size_t)n * sizeof *r->items);
    r->ready = malloc((size_t)n * sizeof *r->ready);
    r->rcs = malloc((size_t)n * sizeof *r->rcs);
    if (r->batch && r->items && r->ready && r->rcs) return IP_OK;
    room_free(r);
    return IP_ENOMEM;
}

/* Decodes one batch without the lock; a batch-wide failure (the GPU is broken) goes to each file. */
static void decode_batch(pool_gpu *pg, batch_room *room, int n)
{
    decode_ready_part(pg, room->batch, n, room->ready, room->rcs);
    decode_item_part(pg, room->batch, n, room->items);
}

/* The calling worker decodes batches (its own file among them) while the decoder is free and its
 * file is not done; otherwise it waits for whoever holds the decoder. Lock held throughout,
 * released while decoding. */
static int serve_until_done(jpeg_pool *pool, pool_gpu *pg, request *mine)
{
    batch_room room;
    if (room_alloc(&room, pool->max_batch) != IP_OK) return IP_ENOMEM;
    request **batch = room.batch;
    while (!mine->done) {
        if (pg->busy) {
            pthread_cond_wait(&pool->changed, &pool->lock);
            continue;
        }
        int n = take_batch(pool, pg, batch);
        pg->busy = 1;
        pthread_mutex_unlock(&pool->lock);
        double t0 = now_ms();
        decode_batch(pg, &room, n);
        double took = now_ms() - t0;
        pthread_mutex_lock(&pool->lock);
        pg->busy = 0;
        pg->batches++;
        pg->decode_ms += took;
        if (n > pg->largest_batch) pg->largest_batch = n;
        for (int i = 0; i < n; i++) {
            batch[i]->done = 1;
            if (batch[i]->item.rc == IP_OK) pg->files++;
        }
        pthread_cond_broadcast(&pool->changed);
    }
    room_free(&room);
    return IP_OK;
}

static int dequeue(pool_gpu *pg, request *r)
{
    for (request **p = &pg->head, *prev = NULL; *p; prev = *p, p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            if (pg->tail == r) pg->tail = prev;
            return 1;
        }
    return 0;
}

static int alloc_as_one(void *user, int index, size_t bytes, void **dev, char *err, size_t errlen)
{
    (void)index;
    const request *r = user;
    return r->caller_mem->alloc(r->caller_mem->user, 0, bytes, dev, err, errlen);
}

/* Queues r, decodes or waits until it is done; the file's status, with its message. */
static int hand_in(jpeg_pool *pool, pool_gpu *pg, request *r, char *err, size_t errlen)
{
    pthread_mutex_lock(&pool->lock);
    if (!wait_opened(pool, pg)) {
        snprintf(err, errlen, "%s", pg->why);
        pthread_mutex_unlock(&pool->lock);
        return IP_EUNSUPPORTED;
    }
    double t0 = now_ms();
    if (pg->tail) pg->tail->next = r;
    else pg->head = r;
    pg->tail = r;
    int rc = serve_until_done(pool, pg, r);
    if (rc != IP_OK) dequeue(pg, r);
    pg->wait_ms += now_ms() - t0;
    pthread_mutex_unlock(&pool->lock);
    if (rc != IP_OK) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    if (r->item.rc != IP_OK) snprintf(err, errlen, "%s", r->item.err);
    return r->item.rc;
}

int jpeg_pool_decode(jpeg_pool *pool, int device, const unsigned char *data, size_t len, const io_options *opt,
                     const jpeg_gpu_memory *mem, ip_image *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    pool_gpu *pg = find_gpu(pool, device);
    if (!pg) {
        snprintf(err, errlen, "nvJPEG was not opened on GPU %d", device);
        return IP_EUNSUPPORTED;
    }
    request r = { .item = { .data = data, .len = len, .opt = opt }, .caller_mem = mem };
    r.mem = (jpeg_gpu_memory){ alloc_as_one, &r };
    r.item.mem = &r.mem;
    int rc = hand_in(pool, pg, &r, err, errlen);
    if (rc == IP_OK) *out = r.item.out;
    return rc;
}

int jpeg_pool_decode_ready(jpeg_pool *pool, int device, const jpeg_gpu_ready *ready, char *err, size_t errlen)
{
    pool_gpu *pg = find_gpu(pool, device);
    if (!pg) {
        snprintf(err, errlen, "nvJPEG was not opened on GPU %d", device);
        return IP_EUNSUPPORTED;
    }
    request r = { .ready = ready };
    return hand_in(pool, pg, &r, err, errlen);
}

jpeg_pool_stats jpeg_pool_totals(jpeg_pool *pool)
{
    jpeg_pool_stats t = { 0 };
    if (!pool) return t;
    pthread_mutex_lock(&pool->lock);
    for (int i = 0; i < pool->n; i++) {
        const pool_gpu *pg = &pool->gpus[i];
        t.batches += pg->batches;
        t.files += pg->files;
        if (pg->largest_batch > t.largest_batch) t.largest_batch = pg->largest_batch;
        if (pg->open_ms > t.open_ms) t.open_ms = pg->open_ms;
        t.decode_ms += pg->decode_ms;
        t.wait_ms += pg->wait_ms;
        jpeg_gpu_batch_times b = jpeg_gpu_batch_totals(pg->g);
        t.inits += b.inits;
        t.init_ms += b.init_ms;
        t.engine_ms += b.decode_ms;
    }
    pthread_mutex_unlock(&pool->lock);
    return t;
}

void jpeg_pool_close(jpeg_pool *pool)
{
    if (!pool) return;
    for (int i = 0; i < pool->n; i++) {
        pool_gpu *pg = &pool->gpus[i];
        if (pg->opener_started) pthread_join(pg->opener, NULL);
        jpeg_gpu_close(pg->g);
        if (pg->stream) {
            gpu_select(pg->device, NULL, 0);
            gpu_stream_destroy(pg->stream);
        }
    }
    pthread_cond_destroy(&pool->changed);
    pthread_mutex_destroy(&pool->lock);
    free(pool->gpus);
    free(pool);
}
