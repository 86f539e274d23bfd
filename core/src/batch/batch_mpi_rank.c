/* A rank other than 0 in an MPI folder run: its main thread asks rank 0 for images (twice --jobs
 * at most, in flight and queued together), passes the results back and gives back what it has
 * not started when the run stops; its workers take from the local queue. Only the main thread
 * calls MPI. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "batch/batch_mpi_internal.h"

typedef struct job {
    batch_entry e;            /* first: a worker's entry pointer is its job */
    uint32_t index;
    struct job *next;
} job;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;   /* images came, an image finished, or the run ends */
    const batch_options *o;
    job *head, *tail;
    int queued, in_flight;
    int end, stop;            /* no more will come; stop after the images in flight */
    wire_result *results;     /* finished since the last request */
    uint32_t n_results, cap_results;
    int workers_ended;
    int final_sent;           /* nothing more to do: it waits to be told how to end */
    uint32_t release;         /* WIRE_RELEASE_*: how to end, once rank 0 says */
} rank_queue;

static int stopping(rank_queue *q)
{
    if (q->o->stop && *q->o->stop) q->stop = 1;
    return q->stop || q->workers_ended;
}

static void wait_changed(rank_queue *q, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&q->changed, &q->lock, &ts);
}

static const batch_entry *queue_take(void *user)
{
    rank_queue *q = user;
    job *j = NULL;
    pthread_mutex_lock(&q->lock);
    while (!stopping(q) && !(j = q->head) && !q->end) wait_changed(q, 0.05);
    if (j && !stopping(q)) {
        q->head = j->next;
        if (!q->head) q->tail = NULL;
        q->queued--;
        q->in_flight++;
        pthread_cond_broadcast(&q->changed);
    } else {
        j = NULL;
    }
    pthread_mutex_unlock(&q->lock);
    return j ? &j->e : NULL;
}

static void free_job(job *j)
{
    free(j->e.in);
    free(j->e.out);
    free(j);
}

static void queue_finished(void *user, const batch_entry *e, int rc, int resumed, const char *message)
{
    rank_queue *q = user;
    job *j = (job *)e;
    pthread_mutex_lock(&q->lock);
    if (q->n_results == q->cap_results) {
        uint32_t cap = q->cap_results ? q->cap_results * 2 : 32;
        wire_result *grown = realloc(q->results, cap * sizeof *grown);
        if (grown) {
            q->results = grown;
            q->cap_results = cap;
        }
    }
    if (q->n_results < q->cap_results) {
        /* a message that cannot be copied is sent empty: rank 0 then says "failed" */
        q->results[q->n_results++] = (wire_result){ j->index, rc, (uint32_t)resumed, message ? strdup(message) : NULL };
    }   /* else: kept nowhere (out of memory); rank 0 counts it failed when this rank ends */
    q->in_flight--;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
    free_job(j);
}

static int queue_push(rank_queue *q, const wire_item *it)
{
    job *j = calloc(1, sizeof *j);
    if (!j) return IP_ENOMEM;
    j->index = it->index;
    j->e.size = it->size;
    j->e.fmt = (io_format)it->format;
    j->e.in = strdup(it->in);
    j->e.out = strdup(it->out);
    if (!j->e.in || !j->e.out) {
        free_job(j);
        return IP_ENOMEM;
    }
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
    q->queued++;
    return IP_OK;
}

/* Under the lock: what to send now, if anything (*send). Takes the results and, when stopping,
 * the queued images as given back. */
static int build_request(rank_queue *q, int jobs, double quiet_s, wire_ask *a, int *send)
{
    int stop = stopping(q);
    uint32_t *back = NULL;
    if (stop && q->queued && !(back = calloc((size_t)q->queued, sizeof *back))) return IP_ENOMEM;
    for (job *j; stop && (j = q->head);) {
        back[a->n_returned++] = j->index;
        q->head = j->next;
        free_job(j);
    }
    if (stop) {
        q->tail = NULL;
        q->queued = 0;
    }
    int room = 2 * jobs - q->queued - q->in_flight;
    int hungry = !stop && !q->end && q->queued < jobs && room > 0;
    int final = (stop || q->end) && q->in_flight == 0 && q->queued == 0;
    if (q->final_sent) *send = quiet_s >= MPI_RELEASE_POLL_S;
    else *send = final || hungry || q->n_results || a->n_returned || quiet_s >= MPI_HEARTBEAT_S;
    a->want = hungry ? (uint32_t)room : 0;
    a->final = (uint32_t)final;
    a->returned = back;
    a->results = q->results;
    a->n_results = q->n_results;
    q->results = NULL;
    q->n_results = q->cap_results = 0;
    return IP_OK;
}

typedef struct {
    rank_queue *q;
    const plan *p;
    const batch_callbacks *cb;
    pthread_t tid;
    int started;
    int rc;
    char err[256];
} workers;

static void *workers_main(void *arg)
{
    workers *w = arg;
    batch_feed feed = { queue_take, queue_finished, w->q };
    w->rc = batch_run_fed(w->q->o, w->p, &feed, w->cb, w->err, sizeof w->err);
    pthread_mutex_lock(&w->q->lock);
    w->q->workers_ended = 1;
    pthread_cond_broadcast(&w->q->changed);
    pthread_mutex_unlock(&w->q->lock);
    return NULL;
}

/* Rank 0's silence is taken as its end only after its first answer: before, it may be listing a
 * large folder. */
typedef struct {
    const batch_mpi *m;
    int answered_before;
    double since;
} root_wait;

static int root_silent(void *user)
{
    const root_wait *rw = user;
    return rw->answered_before && batch_mpi_now() - rw->since > rw->m->silence_s;
}

static int ask(batch_mpi *m, const wire_writer *out, root_wait *rw, char *err, size_t errlen)
{
    int abandoned = 0;
    rw->since = batch_mpi_now();
    int rc = mpi_lib_send(m->lib, 0, WIRE_TAG_ASK, out->data, out->len, root_silent, rw, &abandoned, err, errlen);
    if (rc == IP_OK && abandoned) {
        snprintf(err, errlen, "rank 0 stopped answering for %.0f s", m->silence_s);
        rc = IP_EIO;
    }
    return rc;
}

static int await_answer(batch_mpi *m, root_wait *rw, unsigned char **buf, size_t *len, char *err, size_t errlen)
{
    rw->since = batch_mpi_now();
    for (;;) {
        int ready = 0, src = 0, tag = 0;
        int rc = mpi_lib_probe(m->lib, &ready, &src, &tag, len, err, errlen);
        if (rc != IP_OK) return rc;
        if (ready) {
            unsigned char *data = malloc(*len ? *len : 1);
            if (!data) return IP_ENOMEM;
            if ((rc = mpi_lib_recv(m->lib, src, tag, data, *len, err, errlen)) != IP_OK || src != 0 ||
                tag != WIRE_TAG_WORK) {
                free(data);
                if (rc != IP_OK) return rc;
                continue;
            }
            *buf = data;
            return IP_OK;
        }
        if (root_silent(rw)) {
            snprintf(err, errlen, "rank 0 stopped answering for %.0f s", m->silence_s);
            return IP_EIO;
        }
        batch_mpi_nap(0.0005);
    }
}

static int take_answer(rank_queue *q, workers *w, const unsigned char *data, size_t len, int *got, char *err,
                       size_t errlen)
{
    wire_work k;
    int rc = wire_decode_work(data, len, &k);
    if (rc != IP_OK) {
        snprintf(err, errlen, "rank 0 sent a malformed answer");
        return rc;
    }
    pthread_mutex_lock(&q->lock);
    for (uint32_t i = 0; i < k.n && rc == IP_OK; i++) rc = queue_push(q, &k.items[i]);
    q->end |= (int)k.end;
    q->stop |= (int)k.stop;
    q->release = k.release;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
    *got = (int)k.n;
    wire_work_free(&k);
    if (rc != IP_OK) {
        snprintf(err, errlen, "out of memory for the images handed out");
        return rc;
    }
    if (!*got || w->started || w->rc != IP_OK) return IP_OK;
    /* the workers (and their GPU contexts) start with the first images, not for an empty folder */
    w->started = pthread_create(&w->tid, NULL, workers_main, w) == 0;
    if (!w->started) {
        snprintf(w->err, sizeof w->err, "cannot start the worker threads");
        w->rc = IP_EINVAL;
        pthread_mutex_lock(&q->lock);
        q->workers_ended = 1;   /* what it was given goes back */
        pthread_mutex_unlock(&q->lock);
    }
    return IP_OK;
}

/* Until rank 0 says how to end. */
static int exchange(batch_mpi *m, rank_queue *q, workers *w, char *err, size_t errlen)
{
    wire_writer out = { 0 };
    double last_sent = -1e9;
    root_wait rw = { m, 0, 0 };
    int rc = IP_OK, got = 1;
    while (rc == IP_OK && q->release == WIRE_RELEASE_WAIT) {
        wire_ask a;
        memset(&a, 0, sizeof a);
        batch_mpi_identity(&a);
        int send = 0;
        pthread_mutex_lock(&q->lock);
        double quiet = batch_mpi_now() - last_sent;
        rc = build_request(q, q->o->jobs > 0 ? q->o->jobs : 1, quiet, &a, &send);
        /* an empty answer to a request for images means wait a little before asking again */
        if (rc == IP_OK && send && !a.final && !a.n_results && !a.n_returned && !got && quiet < 0.05) send = 0;
        if (rc == IP_OK && send && a.final) q->final_sent = 1;
        if (rc == IP_OK && !send) wait_changed(q, q->final_sent ? MPI_RELEASE_POLL_S : 0.05);
        pthread_mutex_unlock(&q->lock);
        unsigned char *answer = NULL;
        size_t len = 0;
        if (rc == IP_OK && send && (rc = wire_encode_ask(&out, &a)) != IP_OK) snprintf(err, errlen, "out of memory");
        if (rc == IP_OK && send) rc = ask(m, &out, &rw, err, errlen);
        if (rc == IP_OK && send) rc = await_answer(m, &rw, &answer, &len, err, errlen);
        if (rc == IP_OK && send) {
            rw.answered_before = 1;
            last_sent = batch_mpi_now();
            rc = take_answer(q, w, answer, len, &got, err, errlen);
        }
        free(answer);
        wire_ask_free(&a);
    }
    wire_writer_free(&out);
    return rc;
}

int batch_mpi_rank_run(batch_mpi *m, const batch_options *o, const plan *p, const batch_callbacks *cb,
                       char *err, size_t errlen)
{
    rank_queue q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.lock, NULL);
    pthread_cond_init(&q.changed, NULL);
    q.o = o;
    workers w = { &q, p, cb, 0, 0, IP_OK, "" };
    int rc = exchange(m, &q, &w, err, errlen);
    if (rc != IP_OK) {
        pthread_mutex_lock(&q.lock);
        q.stop = 1;   /* the workers finish the images in flight, which are written whole */
        pthread_cond_broadcast(&q.changed);
        pthread_mutex_unlock(&q.lock);
    }
    m->skip_finalize = rc != IP_OK || q.release != WIRE_RELEASE_FINALIZE;
    if (w.started) pthread_join(w.tid, NULL);
    for (job *j = q.head, *next; j; j = next) {
        next = j->next;
        free_job(j);
    }
    for (uint32_t i = 0; i < q.n_results; i++) free(q.results[i].message);
    free(q.results);
    pthread_cond_destroy(&q.changed);
    pthread_mutex_destroy(&q.lock);
    if (rc == IP_OK && w.rc != IP_OK) snprintf(err, errlen, "%s", w.err);
    return rc != IP_OK ? rc : w.rc;
}
