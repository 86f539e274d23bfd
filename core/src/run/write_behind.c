#define _POSIX_C_SOURCE 200809L
#include "run/write_behind.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "base/mono_clock.h"
#include "gpu/gpu.h"
#include "run/run_output.h"

struct write_behind {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int device;
    int pending;                 /* a job handed over and not yet written */
    int stopping;
    write_behind_job job;
};

int write_behind_wanted(void)
{
    const char *v = getenv("IMGPIPE_WRITE_BEHIND");
    return !(v && v[0] == '0' && !v[1]);
}

static void write_job(int device, write_behind_job *job)
{
    char err[1024] = "";
    double t0 = now_ms();
    run_sink out = { job->path, NULL, 0, NULL, NULL };
    int rc = job->result.on_device ? gpu_select(device, err, sizeof err) : IP_OK;   /* chosen per thread */
    if (rc == IP_OK) rc = run_output_write(job->jpeg, job->codecs, &job->result, &out, &job->o, &job->meta, err, sizeof err);
    job->on_written(job->on_written_user, rc, now_ms() - t0, err);
    free(job->path);
    meta_clear(&job->meta);
}

static void *writer_main(void *arg)
{
    write_behind *wb = arg;
    pthread_mutex_lock(&wb->lock);
    for (;;) {
        while (!wb->pending && !wb->stopping) pthread_cond_wait(&wb->changed, &wb->lock);
        if (!wb->pending) break;
        write_behind_job job = wb->job;
        pthread_mutex_unlock(&wb->lock);
        write_job(wb->device, &job);
        pthread_mutex_lock(&wb->lock);
        wb->pending = 0;
        pthread_cond_broadcast(&wb->changed);
    }
    pthread_mutex_unlock(&wb->lock);
    return NULL;
}

int write_behind_create(write_behind **out, int device, char *err, size_t errlen)
{
    *out = NULL;
    write_behind *wb = calloc(1, sizeof *wb);
    if (!wb) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    wb->device = device;
    if (pthread_mutex_init(&wb->lock, NULL) != 0) {
        free(wb);
        snprintf(err, errlen, "cannot make the writer's lock");
        return IP_EINVAL;
    }
    int cond = pthread_cond_init(&wb->changed, NULL) == 0;
    if (!cond || pthread_create(&wb->thread, NULL, writer_main, wb) != 0) {
        if (cond) pthread_cond_destroy(&wb->changed);   /* never destroyed where its init failed */
        pthread_mutex_destroy(&wb->lock);
        free(wb);
        snprintf(err, errlen, "cannot start the writer's thread");
        return IP_EINVAL;
    }
    *out = wb;
    return IP_OK;
}

/* With the lock held: returns once no write is pending. */
static void wait_idle_locked(write_behind *wb)
{
    while (wb->pending) pthread_cond_wait(&wb->changed, &wb->lock);
}

double write_behind_wait(write_behind *wb)
{
    if (!wb) return 0.0;
    pthread_mutex_lock(&wb->lock);
    int pending = wb->pending;
    double t0 = now_ms();
    wait_idle_locked(wb);
    double waited = pending ? now_ms() - t0 : 0.0;
    pthread_mutex_unlock(&wb->lock);
    return waited;
}

void write_behind_submit(write_behind *wb, write_behind_job *job)
{
    pthread_mutex_lock(&wb->lock);
    wait_idle_locked(wb);
    wb->job = *job;
    wb->pending = 1;
    pthread_cond_broadcast(&wb->changed);
    pthread_mutex_unlock(&wb->lock);
}

void write_behind_destroy(write_behind *wb)
{
    if (!wb) return;
    pthread_mutex_lock(&wb->lock);
    wb->stopping = 1;
    pthread_cond_broadcast(&wb->changed);
    pthread_mutex_unlock(&wb->lock);
    pthread_join(wb->thread, NULL);
    pthread_cond_destroy(&wb->changed);
    pthread_mutex_destroy(&wb->lock);
    free(wb);
}
