#define _POSIX_C_SOURCE 200809L
#include "exec/startup.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "gpu/gpu.h"
#include "base/mono_clock.h"

struct startup {
    pthread_t thread;
    exec_options opt;
    exec_ctx *ctx;
    unsigned jpeg_uses;
    jpeg_gpu *jpeg;
    char jpeg_why[256];
    int want_codecs;
    io_gpu_codecs *codecs;
    char codecs_why[256];
    int rc;
    char err[512];
    double began_ms, took_ms;
};

static void *start_gpu(void *arg)
{
    startup *s = arg;
    s->rc = gpu_start(s->opt.gpu_index, s->err, sizeof s->err);
    if (s->rc == IP_OK) s->rc = exec_create(&s->ctx, &s->opt, s->err, sizeof s->err);
    if (s->rc == IP_OK && s->jpeg_uses &&
        jpeg_gpu_open_for(&s->jpeg, s->opt.gpu_index, exec_stream(s->ctx), s->jpeg_uses, s->jpeg_why,
                          sizeof s->jpeg_why) != IP_OK)
        s->jpeg = NULL;
    if (s->rc == IP_OK && s->want_codecs &&
        io_gpu_codecs_open(&s->codecs, s->opt.gpu_index, exec_stream(s->ctx), s->codecs_why,
                           sizeof s->codecs_why) != IP_OK)
        s->codecs = NULL;
    s->took_ms = now_ms() - s->began_ms;
    return NULL;
}

int startup_begin(startup **out, const exec_options *opt, unsigned jpeg_uses, int nvcomp, char *err, size_t errlen)
{
    startup *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->opt = *opt;
    s->jpeg_uses = jpeg_uses;
    s->want_codecs = nvcomp;
    s->began_ms = now_ms();
    if (pthread_create(&s->thread, NULL, start_gpu, s) != 0) {
        free(s);
        snprintf(err, errlen, "cannot start the GPU start-up thread");
        return IP_ENOMEM;
    }
    *out = s;
    return IP_OK;
}

int startup_finish(startup *s, exec_ctx **ctx, double *took_ms, double *waited_ms, char *err, size_t errlen)
{
    double t0 = now_ms();
    pthread_join(s->thread, NULL);
    if (waited_ms) *waited_ms = now_ms() - t0;
    if (took_ms) *took_ms = s->took_ms;
    int rc = s->rc;
    *ctx = s->ctx;
    s->ctx = NULL;
    if (rc != IP_OK) snprintf(err, errlen, "%s", s->err);
    return rc;
}

jpeg_gpu *startup_take_jpeg(startup *s, const char **why)
{
    jpeg_gpu *g = s->jpeg;
    s->jpeg = NULL;
    if (why) *why = s->jpeg_why;
    return g;
}

io_gpu_codecs *startup_take_codecs(startup *s, const char **why)
{
    io_gpu_codecs *c = s->codecs;
    s->codecs = NULL;
    if (why) *why = s->codecs_why;
    return c;
}

void startup_free(startup *s)
{
    if (!s) return;
    jpeg_gpu_close(s->jpeg);
    io_gpu_codecs_close(s->codecs);
    free(s);
}
