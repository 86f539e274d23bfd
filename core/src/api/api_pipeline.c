/* Pipelines: opened from text or a file and checked, closed, asked their output's shape; and
 * their pools of workers. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api_internal.h"
#include "api/api_image.h"
#include "gpu/gpu.h"

/* The source name of text not read from a file, in messages and err->file. */
static const char text_source[] = "<text>";

static int open_parsed(imgpipe_pipeline **out, pl_pipeline *pl, imgpipe_error *err)
{
    const registry *reg;
    int rc = api_registry(&reg, err);
    imgpipe_pipeline *p = rc == IP_OK ? calloc(1, sizeof *p) : NULL;
    if (rc == IP_OK && !p) rc = api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    char msg[1024];
    if (rc == IP_OK && (rc = plan_build(reg, pl, &p->p, msg, sizeof msg)) != IP_OK)
        rc = rc == IP_ENOMEM ? api_fail(err, IMGPIPE_ENOMEM, "%s", msg) : api_fail_pipeline(err, pl->source, msg);
    if (rc == IP_OK && pthread_mutex_init(&p->lock, NULL) != 0) {
        plan_free(&p->p);
        rc = api_fail(err, IMGPIPE_ENOMEM, "cannot make a mutex");
    }
    pl_free(pl);
    if (rc != IP_OK) {
        free(p);
        return rc;
    }
    *out = p;
    api_ok(err);
    return IMGPIPE_OK;
}

int imgpipe_pipeline_from_text(imgpipe_pipeline **p, const char *text, imgpipe_error *err)
{
    if (!p || !text) return api_fail(err, IMGPIPE_EINVAL, "imgpipe_pipeline_from_text: %s is NULL", p ? "text" : "p");
    *p = NULL;
    pl_pipeline pl;
    char msg[1024];
    int rc = pl_parse(text, text_source, &pl, msg, sizeof msg);
    if (rc != IP_OK) return rc == IP_ENOMEM ? api_fail(err, IMGPIPE_ENOMEM, "%s", msg) : api_fail_pipeline(err, text_source, msg);
    return open_parsed(p, &pl, err);
}

int imgpipe_pipeline_from_file(imgpipe_pipeline **p, const char *path, imgpipe_error *err)
{
    if (!p || !path) return api_fail(err, IMGPIPE_EINVAL, "imgpipe_pipeline_from_file: %s is NULL", p ? "path" : "p");
    *p = NULL;
    pl_pipeline pl;
    char msg[1024];
    int rc = pl_parse_file(path, &pl, msg, sizeof msg);
    if (rc == IP_EIO) {   /* the message names the file already */
        api_fail_from(err, IP_EIO, msg, NULL);
        if (err) snprintf(err->path, sizeof err->path, "%s", path);
        return IMGPIPE_EIO;
    }
    if (rc != IP_OK) return rc == IP_ENOMEM ? api_fail(err, IMGPIPE_ENOMEM, "%s", msg) : api_fail_pipeline(err, path, msg);
    return open_parsed(p, &pl, err);
}

static void slot_free(api_slot *s)
{
    if (!s) return;
    run_worker_destroy(s->worker);
    for (int i = 0; i < 2; i++) gpu_event_destroy(s->events[i]);
    plan_unshare(&s->own);
    free(s);
}

void imgpipe_pipeline_close(imgpipe_pipeline *p)
{
    if (!p) return;
    for (api_slot *s = p->idle, *next; s; s = next) {
        next = s->next;
        slot_free(s);
    }
    pthread_mutex_destroy(&p->lock);
    plan_free(&p->p);
    free(p);
}

int api_take(imgpipe_pipeline *p, exec_device dev, int gpu, const run_options *ro, int cpu_fallback, api_slot **slot,
             imgpipe_error *err)
{
    pthread_mutex_lock(&p->lock);
    api_slot **at = &p->idle;
    while (*at && ((*at)->device != dev || (*at)->gpu != gpu || (*at)->threads != ro->threads ||
                   (*at)->cpu_fallback != cpu_fallback))
        at = &(*at)->next;
    api_slot *s = *at;
    if (s) *at = s->next;
    pthread_mutex_unlock(&p->lock);
    if (s) {
        *slot = s;
        return IP_OK;
    }
    s = calloc(1, sizeof *s);
    if (!s || plan_share(&p->p, &s->own) != IP_OK) {
        free(s);
        return api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    }
    s->device = dev;
    s->gpu = gpu;
    s->threads = ro->threads;
    s->cpu_fallback = cpu_fallback;
    run_worker_options wo = { dev, gpu, NULL, cpu_fallback, 0 };
    char msg[1024];
    int rc = run_worker_create(&s->worker, ro, &wo, msg, sizeof msg);
    if (rc != IP_OK) {
        slot_free(s);
        return api_fail_from(err, rc, msg, NULL);
    }
    *slot = s;
    return IP_OK;
}

void api_give_back(imgpipe_pipeline *p, api_slot *slot)
{
    pthread_mutex_lock(&p->lock);
    slot->next = p->idle;
    p->idle = slot;
    pthread_mutex_unlock(&p->lock);
}

int imgpipe_output_shape(imgpipe_pipeline *p, const imgpipe_image *in, imgpipe_image *out, imgpipe_error *err)
{
    if (!p || !in || !out)
        return api_fail(err, IMGPIPE_EINVAL, "imgpipe_output_shape: %s is NULL", !p ? "p" : !in ? "in" : "out");
    ip_shape shape, final;
    int rc = api_image_shape(in, "in", &shape, err);
    if (rc != IP_OK) return rc;
    plan own;
    if (plan_share(&p->p, &own) != IP_OK) return api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    char msg[1024];
    rc = plan_shapes(&own, &shape, &final, msg, sizeof msg);
    plan_unshare(&own);
    if (rc != IP_OK) return api_fail_from(err, rc, msg, NULL);
    api_image_set_shape(out, &final);
    api_ok(err);
    return IMGPIPE_OK;
}

int imgpipe_gpu_available(void)
{
    char why[256];
    return gpu_built() && gpu_device_count(why, sizeof why) > 0;
}
