/* Rank 0 of an MPI folder run: lists the input, hands images out as ranks ask (its own workers
 * take from the same list), records which rank holds which image, settles the results, and
 * counts the images of a rank that died or went silent as lost. Only this thread calls MPI. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "batch/batch_mpi_internal.h"

#define MAX_HANDOUT 64        /* images in one answer (a rank asks for twice its --jobs at most) */
#define CHECK_EVERY_S 0.1     /* how often the ranks are checked for death or silence */

enum { IMG_WAITING, IMG_HANDED, IMG_SETTLED };

typedef struct {
    int heard;                /* its identity is known */
    uint32_t pid;
    uint64_t pid_namespace;
    int finished, lost;
    int released;             /* told how to end */
    double last_heard;
} rank_record;

typedef struct {
    pthread_mutex_t lock;
    batch_mpi *m;
    const batch_options *o;
    const batch_callbacks *cb;
    batch_listing list;
    unsigned char *state;     /* per image: IMG_* */
    int *owner;               /* per image: the rank it was handed to */
    int next;                 /* the first image never handed out */
    int *requeue, n_requeue;  /* given back unstarted: handed out again first */
    rank_record *ranks;
    batch_progress prog;
    double t0;
    int stopping;
    int local_done;           /* rank 0's own workers have ended */
    wire_ask me;
} root;

static int stop_asked(const root *r) { return r->stopping || (r->o->stop && *r->o->stop); }

static int hand_out(root *r, int rank)
{
    if (stop_asked(r)) return -1;
    int i = r->n_requeue ? r->requeue[--r->n_requeue] : r->next < r->list.n ? r->next++ : -1;
    if (i >= 0) {
        r->state[i] = IMG_HANDED;
        r->owner[i] = rank;
    }
    return i;
}

static int nothing_left(const root *r) { return r->next >= r->list.n && r->n_requeue == 0; }

/* One image's result from the rank that holds it; anything else (a late or repeated report) is
 * ignored, so every image is counted once. */
static void settle(root *r, int rank, int i, int rc, int resumed, const char *msg)
{
    if (i < 0 || i >= r->list.n || r->state[i] != IMG_HANDED || r->owner[i] != rank) return;
    r->state[i] = IMG_SETTLED;
    batch_mpi_rank_stats *s = &r->m->stats[rank];
    const batch_entry *e = &r->list.items[i];
    double now = batch_mpi_now();
    if (resumed) {
        r->prog.resumed++;
        s->resumed++;
    } else {
        if (rc == IP_OK) {
            r->prog.done++;
            s->done++;
        } else {
            r->prog.failed++;
            s->failed++;
        }
        r->prog.bytes_in += e->size;
    }
    if (!r->ranks[rank].lost) s->seconds = now - r->t0;
    r->prog.elapsed_s = now - r->t0;
    if (!resumed && rc != IP_OK && r->cb->failure) r->cb->failure(r->cb->user, e->in, msg && *msg ? msg : "failed");
    if (r->cb->progress) r->cb->progress(r->cb->user, &r->prog);
}

/* Every image still handed to the rank fails with why. */
static void settle_all_of(root *r, int rank, const char *why)
{
    for (int i = 0; i < r->list.n; i++)
        if (r->state[i] == IMG_HANDED && r->owner[i] == rank) settle(r, rank, i, IP_EIO, 0, why);
}

/* Open MPI's finalize waits for every rank, a dead one too (even under --enable-recovery): once a
 * rank is lost, every rank ends without it. */
static void lose(root *r, int rank, const char *what)
{
    char why[256];
    r->m->skip_finalize = 1;
    r->ranks[rank].lost = 1;
    r->m->stats[rank].lost = 1;
    snprintf(why, sizeof why, "lost: rank %d (pid %u on %s) %s while it had this image; run again with --resume", rank,
             (unsigned)r->ranks[rank].pid, r->m->stats[rank].host[0] ? r->m->stats[rank].host : "?", what);
    settle_all_of(r, rank, why);
}

static int process_gone(pid_t pid)
{
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *after_name = strrchr(text, ')');
    return after_name && after_name[1] == ' ' && (after_name[2] == 'Z' || after_name[2] == 'X');
}

/* Why rank k is gone, or NULL. A rank on this host (same pid namespace) is checked by its pid, at
 * once; any other only by its silence, since it sends at least every MPI_HEARTBEAT_S. */
static const char *gone_reason(const root *r, int k, double now)
{
    const rank_record *rr = &r->ranks[k];
    int here = rr->heard && rr->pid_namespace && rr->pid_namespace == r->me.pid_namespace &&
               strcmp(r->m->stats[k].host, r->me.host) == 0;
    if (here && process_gone((pid_t)rr->pid)) return "died";
    return now - rr->last_heard > r->m->silence_s ? "stopped answering" : NULL;
}


static void check_ranks(root *r, double now)
{
    for (int k = 1; k < r->m->place.size; k++) {
        const char *why = r->ranks[k].released || r->ranks[k].lost ? NULL : gone_reason(r, k, now);
        if (why) lose(r, k, why);
    }
}

typedef struct {
    const root *r;
    int rank;
} peer;

static int peer_gone(void *user)
{
    const peer *p = user;
    return gone_reason(p->r, p->rank, batch_mpi_now()) != NULL;
}

/* Every rank has finished or is lost, and rank 0's own workers are done. */
static int job_over(const root *r)
{
    int over = r->local_done;
    for (int k = 1; k < r->m->place.size && over; k++) over = r->ranks[k].finished || r->ranks[k].lost;
    return over;
}

/* A finished rank waits (asking again) until the job is over, so none is inside a finalize when
 * another dies: then none may finalize. */
static void release(root *r, int src, wire_work *k)
{
    k->end = 1;
    if (!r->ranks[src].lost && !job_over(r)) return;
    k->release = r->m->skip_finalize ? WIRE_RELEASE_EXIT : WIRE_RELEASE_FINALIZE;
    r->ranks[src].released = 1;
}

static void take_request(root *r, int src, const wire_ask *a, wire_work *k)
{
    rank_record *rr = &r->ranks[src];
    if (!rr->heard) {
        rr->heard = 1;
        rr->pid = a->pid;
        rr->pid_namespace = a->pid_namespace;
        snprintf(r->m->stats[src].host, sizeof r->m->stats[src].host, "%s", a->host);
    }
    if (rr->lost || rr->finished) {   /* its images are counted: it is only told how to end */
        k->stop = (uint32_t)rr->lost;
        release(r, src, k);
        return;
    }
    for (uint32_t i = 0; i < a->n_results; i++)
        settle(r, src, (int)a->results[i].index, a->results[i].rc, (int)a->results[i].resumed, a->results[i].message);
    for (uint32_t i = 0; i < a->n_returned; i++) {
        int j = (int)a->returned[i];
        if (j < 0 || j >= r->list.n || r->state[j] != IMG_HANDED || r->owner[j] != src) continue;
        r->state[j] = IMG_WAITING;
        r->requeue[r->n_requeue++] = j;
    }
    if (a->final) {
        rr->finished = 1;
        settle_all_of(r, src, "its rank ended without a result for it; run again with --resume");
        release(r, src, k);
        return;
    }
    uint32_t want = a->want < MAX_HANDOUT ? a->want : MAX_HANDOUT;
    for (int i; k->n < want && (i = hand_out(r, src)) >= 0; k->n++) {
        const batch_entry *e = &r->list.items[i];
        k->items[k->n] = (wire_item){ (uint32_t)i, e->size, (uint32_t)e->fmt, e->in, e->out };
    }
    k->stop = (uint32_t)stop_asked(r);
    k->end = k->stop || nothing_left(r);
}

/* Every request is answered at once, so a rank never waits on another's. */
static int answer(root *r, int src, const void *data, size_t len, wire_writer *w, char *err, size_t errlen)
{
    wire_ask a;
    int rc = wire_decode_ask(data, len, &a);
    if (rc != IP_OK) {
        snprintf(err, errlen, "rank %d sent a malformed request", src);
        return rc;
    }
    wire_item items[MAX_HANDOUT];
    wire_work k = { 0, 0, WIRE_RELEASE_WAIT, items, 0 };
    pthread_mutex_lock(&r->lock);
    r->ranks[src].last_heard = batch_mpi_now();
    take_request(r, src, &a, &k);
    rc = wire_encode_work(w, &k);
    pthread_mutex_unlock(&r->lock);
    wire_ask_free(&a);
    if (rc != IP_OK) {
        snprintf(err, errlen, "out of memory answering rank %d", src);
        return rc;
    }
    peer dest = { r, src };
    int abandoned = 0;
    rc = mpi_lib_send(r->m->lib, src, WIRE_TAG_WORK, w->data, w->len, peer_gone, &dest, &abandoned, err, errlen);
    if (rc == IP_OK && abandoned) {   /* it died between asking and taking the answer */
        pthread_mutex_lock(&r->lock);
        const char *why = gone_reason(r, src, batch_mpi_now());
        lose(r, src, why ? why : "died");
        pthread_mutex_unlock(&r->lock);
    }
    return rc;
}

/* The job is over and every rank still there has been told how to end. */
static int all_released(root *r)
{
    pthread_mutex_lock(&r->lock);
    if (r->o->stop && *r->o->stop) r->stopping = 1;
    check_ranks(r, batch_mpi_now());
    int done = job_over(r);
    for (int k = 1; k < r->m->place.size && done; k++) done = r->ranks[k].released || r->ranks[k].lost;
    pthread_mutex_unlock(&r->lock);
    return done;
}

static int serve(root *r, char *err, size_t errlen)
{
    wire_writer w = { 0 };
    unsigned char *buf = NULL;
    size_t cap = 0;
    double last_check = 0;
    int rc = IP_OK;
    for (;;) {
        int ready = 0, src = 0, tag = 0;
        size_t len = 0;
        if ((rc = mpi_lib_probe(r->m->lib, &ready, &src, &tag, &len, err, errlen)) != IP_OK) break;
        if (ready) {
            if (len > cap) {
                unsigned char *grown = realloc(buf, len);
                if (!grown) {
                    snprintf(err, errlen, "out of memory for a message of %zu bytes", len);
                    rc = IP_ENOMEM;
                    break;
                }
                buf = grown;
                cap = len;
            }
            if ((rc = mpi_lib_recv(r->m->lib, src, tag, buf, len, err, errlen)) != IP_OK) break;
            if (tag == WIRE_TAG_ASK && src > 0 && src < r->m->place.size &&
                (rc = answer(r, src, buf, len, &w, err, errlen)) != IP_OK)
                break;
            continue;
        }
        double now = batch_mpi_now();
        if (now - last_check >= CHECK_EVERY_S) {
            last_check = now;
            if (all_released(r)) break;
        }
        batch_mpi_nap(0.001);
    }
    free(buf);
    wire_writer_free(&w);
    return rc;
}

static const batch_entry *local_take(void *user)
{
    root *r = user;
    pthread_mutex_lock(&r->lock);
    int i = hand_out(r, 0);
    pthread_mutex_unlock(&r->lock);
    return i >= 0 ? &r->list.items[i] : NULL;
}

static void local_finished(void *user, const batch_entry *e, int rc, int resumed, const char *message)
{
    root *r = user;
    pthread_mutex_lock(&r->lock);
    settle(r, 0, (int)(e - r->list.items), rc, resumed, message);
    pthread_mutex_unlock(&r->lock);
}

typedef struct {
    root *r;
    const plan *p;
    batch_callbacks notes;    /* the caller's note, under the root's lock */
    int rc;
    char err[256];
} local_run;

static void local_note(void *user, const char *message)
{
    local_run *l = user;
    pthread_mutex_lock(&l->r->lock);
    if (l->r->cb->note) l->r->cb->note(l->r->cb->user, message);
    pthread_mutex_unlock(&l->r->lock);
}

static void *local_main(void *arg)
{
    local_run *l = arg;
    batch_feed feed = { local_take, local_finished, l->r };
    l->rc = batch_run_fed(l->r->o, l->p, &feed, &l->notes, l->err, sizeof l->err);
    pthread_mutex_lock(&l->r->lock);
    l->r->local_done = 1;
    pthread_mutex_unlock(&l->r->lock);
    return NULL;
}

static int allocate(root *r, char *err, size_t errlen)
{
    size_t n = (size_t)r->list.n + 1;
    r->state = calloc(n, 1);
    r->owner = calloc(n, sizeof *r->owner);
    r->requeue = calloc(n, sizeof *r->requeue);
    if (r->state && r->owner && r->requeue) return IP_OK;
    snprintf(err, errlen, "out of memory for %d images", r->list.n);
    return IP_ENOMEM;
}

static void release_root(root *r)
{
    free(r->state);
    free(r->owner);
    free(r->requeue);
    free(r->ranks);
    batch_listing_free(&r->list);
    pthread_mutex_destroy(&r->lock);
}

int batch_mpi_root_run(batch_mpi *m, const batch_options *o, const plan *p, const batch_callbacks *cb,
                       batch_progress *result, char *err, size_t errlen)
{
    root r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.lock, NULL);
    r.m = m;
    r.o = o;
    r.cb = cb;
    m->stats = calloc((size_t)m->place.size, sizeof *m->stats);
    r.ranks = calloc((size_t)m->place.size, sizeof *r.ranks);
    int rc = m->stats && r.ranks ? batch_list(o, &r.list, err, errlen) : IP_ENOMEM;
    if (rc == IP_OK) rc = allocate(&r, err, errlen);
    if (rc != IP_OK && (!m->stats || !r.ranks)) {
        snprintf(err, errlen, "out of memory");
        m->skip_finalize = 1;   /* the other ranks wait for answers that will not come */
        release_root(&r);
        return rc;
    }
    if (rc != IP_OK) r.stopping = 1;   /* nothing to hand out: every rank is told to end */
    batch_mpi_identity(&r.me);
    snprintf(m->stats[0].host, sizeof m->stats[0].host, "%s", r.me.host);
    r.prog.total = r.list.n;
    r.prog.not_images = r.list.not_images;
    r.t0 = batch_mpi_now();
    for (int k = 0; k < m->place.size; k++) r.ranks[k].last_heard = r.t0;
    local_run local = { &r, p, { NULL, NULL, local_note, NULL, NULL }, IP_OK, "" };
    local.notes.user = &local;
    pthread_t tid;
    int started = rc == IP_OK && r.list.n > 0 && pthread_create(&tid, NULL, local_main, &local) == 0;
    if (!started) r.local_done = 1;
    char serve_err[512] = "";
    int serve_rc = serve(&r, serve_err, sizeof serve_err);
    if (serve_rc != IP_OK) {
        pthread_mutex_lock(&r.lock);
        r.stopping = 1;
        pthread_mutex_unlock(&r.lock);
        m->skip_finalize = 1;
    }
    if (started) pthread_join(tid, NULL);
    r.prog.elapsed_s = batch_mpi_now() - r.t0;
    r.prog.stopped = r.prog.done + r.prog.failed + r.prog.resumed < r.prog.total;
    *result = r.prog;
    if (rc == IP_OK && serve_rc != IP_OK) snprintf(err, errlen, "%s", serve_err);
    else if (rc == IP_OK && local.rc != IP_OK) snprintf(err, errlen, "rank 0: %s", local.err);
    release_root(&r);
    return rc != IP_OK ? rc : serve_rc != IP_OK ? serve_rc : local.rc;
}
