#define _POSIX_C_SOURCE 200809L
#include "io/task_pool.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    task_pool *pool;
    int index;
} helper;

struct task_pool {
    pthread_mutex_t mu;
    pthread_cond_t posted;     /* a new loop, or quit */
    pthread_cond_t finished;   /* a helper left the loop */
    pthread_t *tids;
    helper *helpers;
    int n_threads;
    int started;               /* threads started: all but the caller's once made */
    uint64_t loop;             /* the current loop's number; helpers remember the last they ran */
    int joined;                /* helpers in the current loop */
    int busy;                  /* helpers still in it */
    int quit;
    uint64_t count;
    uint64_t next;             /* the next item, taken atomically */
    task_pool_fn fn;
    void *user;
};

static void take_items(task_pool *p, int thread)
{
    for (;;) {
        uint64_t item = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (item >= p->count) return;
        p->fn(p->user, thread, item);
    }
}

static void *helper_main(void *arg)
{
    helper *h = arg;
    task_pool *p = h->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && (p->loop == seen || p->joined == 0)) pthread_cond_wait(&p->posted, &p->mu);
        if (p->quit) break;
        seen = p->loop;
        if (h->index > p->joined) continue;
        pthread_mutex_unlock(&p->mu);
        take_items(p, h->index);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->finished);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int task_pool_create(task_pool **out, int threads, char *err, size_t errlen)
{
    *out = NULL;
    task_pool *p = calloc(1, sizeof *p);
    int n = threads > 1 ? threads : 1;
    if (p) {
        p->tids = calloc((size_t)n, sizeof *p->tids);
        p->helpers = calloc((size_t)n, sizeof *p->helpers);
    }
    if (!p || !p->tids || !p->helpers) {
        if (p) free(p->tids), free(p->helpers);
        free(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->n_threads = n;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->posted, NULL);
    pthread_cond_init(&p->finished, NULL);
    for (int i = 1; i < n; i++) {
        p->helpers[i] = (helper){ p, i };
        if (pthread_create(&p->tids[i], NULL, helper_main, &p->helpers[i]) != 0) {
            task_pool_destroy(p);
            snprintf(err, errlen, "cannot start a thread");
            return -1;
        }
        p->started = i;
    }
    *out = p;
    return 0;
}

void task_pool_run(task_pool *p, uint64_t count, int threads, task_pool_fn fn, void *user)
{
    int n = threads < 1 ? 1 : threads > p->n_threads ? p->n_threads : threads;
    if ((uint64_t)n > count) n = count > 0 ? (int)count : 1;
    pthread_mutex_lock(&p->mu);
    p->count = count;
    p->next = 0;
    p->fn = fn;
    p->user = user;
    p->joined = n - 1;
    p->busy = p->joined;
    p->loop++;
    if (p->joined) pthread_cond_broadcast(&p->posted);
    pthread_mutex_unlock(&p->mu);
    take_items(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->finished, &p->mu);
    p->joined = 0;
    pthread_mutex_unlock(&p->mu);
}

void task_pool_destroy(task_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->posted);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i <= p->started; i++) pthread_join(p->tids[i], NULL);
    pthread_cond_destroy(&p->posted);
    pthread_cond_destroy(&p->finished);
    pthread_mutex_destroy(&p->mu);
    free(p->tids);
    free(p->helpers);
    free(p);
}
