/* What the C API's files share: the pipeline object, its pool of workers, errors, and the two
 * process-wide states: the plugin registry (plugins are opened once) and the device memory pools
 * results come from. */
#ifndef IMGPIPE_API_INTERNAL_H
#define IMGPIPE_API_INTERNAL_H
#include <pthread.h>
#include "imgpipe/imgpipe.h"
#include "plan/plan.h"
#include "plan/registry.h"
#include "run/run.h"

/* A worker and the plan steps it shapes, taken by one call at a time and kept for the next, so a
 * warm call allocates nothing. */
typedef struct api_slot {
    struct api_slot *next;
    plan own;                    /* the pipeline's steps, copied: shapes are written per run */
    run_worker *worker;
    exec_device device;
    int gpu, threads;
    int cpu_fallback;            /* auto's GPU worker for host images: a GPU failure retries on the CPU */
    void *events[2];             /* device images: the caller's stream to the worker's, and back */
} api_slot;

struct imgpipe_pipeline {
    plan p;                      /* read-only after open; its plugin states are shared */
    pthread_mutex_t lock;
    api_slot *idle;
};

/* Fills err (when not NULL) with code and the message; returns code. */
int api_fail(imgpipe_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An ip_status from a layer below with its message; path: the file it is about (put before the
 * message, as the command line does), or NULL. */
int api_fail_from(imgpipe_error *err, int rc, const char *message, const char *path);
void api_ok(imgpipe_error *err);
/* A pipeline text error ("SOURCE:LINE:COL: message"): IMGPIPE_EPIPELINE with where and the
 * suggestion ("did you mean 'X'") taken apart. */
int api_fail_pipeline(imgpipe_error *err, const char *source, const char *message);

/* The registry, loaded on first use (IP_OK or an error in err). */
int api_registry(const registry **reg, imgpipe_error *err);

/* A worker for this device, from the pipeline's idle ones or made; api_give_back returns it. */
int api_take(imgpipe_pipeline *p, exec_device dev, int gpu, const run_options *ro, int cpu_fallback, api_slot **slot,
             imgpipe_error *err);
void api_give_back(imgpipe_pipeline *p, api_slot *slot);
/* The pool device results are allocated from on device (api_pools.c). */
int api_result_pool(int device, void **pool, imgpipe_error *err);

/* o checked and read as far as its struct_size (NULL: the defaults) into *v, and the run layer's
 * options for it. */
int api_run_options(const imgpipe_run_options *o, imgpipe_run_options *v, run_options *ro, imgpipe_error *err);
#endif
