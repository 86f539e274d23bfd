/* A folder run. imgpipe_run_folder calls its progress function from worker threads, where
 * Python cannot see Ctrl-C (signal handlers run on the main thread only). So the run goes on a
 * thread of its own, the workers only count, and this thread waits for their counts: it calls
 * the Python callback and checks for signals with the GIL taken, and asks the run to stop when
 * either raises. A worker's count waits for the callback to have seen it, so the callback's
 * stop comes before the next image is taken however slowly this thread is scheduled. The
 * exception is raised once the images in flight are done. */
#include "ext.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_cond_t seen;        /* the callback has been called up to `reported` */
    imgpipe_pipeline *p;
    const char *src, *dst;
    const imgpipe_run_options *o;
    int total, done, failed;    /* the workers' counts */
    int reported;               /* images the callback has been told of */
    int waits;                  /* a callback is given: workers wait for it to see their counts */
    int stop;                   /* asked by this thread */
    int finished, status;
    imgpipe_error err;
} folder_run;

static int on_progress(void *user, const imgpipe_progress *progress)
{
    folder_run *r = user;
    int stop;
    pthread_mutex_lock(&r->lock);
    r->total = progress->total;
    r->done = progress->done;
    r->failed = progress->failed;
    pthread_cond_signal(&r->changed);
    while (r->waits && !r->stop && r->reported < progress->done + progress->failed)
        pthread_cond_wait(&r->seen, &r->lock);
    stop = r->stop;
    pthread_mutex_unlock(&r->lock);
    return stop;
}

static void *folder_thread(void *arg)
{
    folder_run *r = arg;
    int status = imgpipe_run_folder(r->p, r->src, r->dst, r->o, on_progress, r, &r->err);
    pthread_mutex_lock(&r->lock);
    r->status = status;
    r->finished = 1;
    pthread_cond_signal(&r->changed);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* Waits up to 100 ms for a change (so a signal is seen within that), without the GIL. */
static void wait_for_change(folder_run *r, int seen_done, int seen_failed)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->lock);
    while (!r->finished && r->done == seen_done && r->failed == seen_failed &&
           pthread_cond_timedwait(&r->changed, &r->lock, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&r->lock);
}

/* Calls progress(count, total) once for every image finished since the last call. */
static int report(PyObject *progress, int *reported, int finished, int total)
{
    while (progress != Py_None && *reported < finished) {
        PyObject *r = PyObject_CallFunction(progress, "ii", ++*reported, total);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    *reported = finished;
    return 0;
}

/* The waiting loop; returns with the GIL held, the first exception kept in *exc. */
static void pump(folder_run *r, PyObject *progress, PyObject *exc[3])
{
    int reported = 0, finished = 0, done = 0, failed = 0, total = 0;
    while (!finished) {
        Py_BEGIN_ALLOW_THREADS
        wait_for_change(r, done, failed);
        pthread_mutex_lock(&r->lock);
        done = r->done;
        failed = r->failed;
        total = r->total;
        finished = r->finished;
        pthread_mutex_unlock(&r->lock);
        Py_END_ALLOW_THREADS
        if (exc[0])
            continue;
        int raised = report(progress, &reported, done + failed, total) < 0 || PyErr_CheckSignals() < 0;
        if (raised)
            PyErr_Fetch(&exc[0], &exc[1], &exc[2]);
        pthread_mutex_lock(&r->lock);
        r->reported = reported;
        r->stop |= raised;
        pthread_cond_broadcast(&r->seen);
        pthread_mutex_unlock(&r->lock);
    }
}

static PyObject *summary(const folder_run *r)
{
    return Py_BuildValue("(iii)", r->total, r->done, r->failed);
}

PyObject *run_folder(ext_state *st, imgpipe_pipeline *p, const char *src, const char *dst,
                     const imgpipe_run_options *o, PyObject *progress)
{
    folder_run r;
    pthread_t thread;
    PyObject *exc[3] = {NULL, NULL, NULL};
    memset(&r, 0, sizeof r);
    r.p = p;
    r.src = src;
    r.dst = dst;
    r.o = o;
    r.waits = progress != Py_None;
    if (pthread_mutex_init(&r.lock, NULL) != 0 || pthread_cond_init(&r.changed, NULL) != 0 ||
        pthread_cond_init(&r.seen, NULL) != 0 || pthread_create(&thread, NULL, folder_thread, &r) != 0) {
        PyErr_SetString(st->error, "cannot start the folder run's thread");
        return NULL;
    }
    pump(&r, progress, exc);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(thread, NULL);
    Py_END_ALLOW_THREADS
    pthread_cond_destroy(&r.changed);
    pthread_cond_destroy(&r.seen);
    pthread_mutex_destroy(&r.lock);
    if (exc[0]) {
        PyErr_Restore(exc[0], exc[1], exc[2]);
        return NULL;
    }
    if (r.status == IMGPIPE_EFAILED)
        return Py_BuildValue("(NN)", summary(&r), PyUnicode_DecodeFSDefault(r.err.message));
    if (r.status != IMGPIPE_OK)
        return ext_raise(st, r.status, &r.err);
    return Py_BuildValue("(NO)", summary(&r), Py_None);
}
