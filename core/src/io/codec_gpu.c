#include "io/codec_gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include "gpu/gpu.h"
#include "imgpipe/plugin.h"

int io_gpu_codecs_open(io_gpu_codecs **out, int device, void *stream, char *why, size_t whylen)
{
    *out = NULL;
    io_gpu_codecs *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    c->stream = stream;
    c->device = device;
    c->scratch = calloc(1, sizeof *c->scratch);
    if (!c->scratch) {
        free(c);
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = nvcomp_open(&c->nvcomp, why, whylen);
    if (!rc) rc = nvcomp_batch_create(&c->batch, c->nvcomp, device, stream, why, whylen);
    if (rc) {
        io_gpu_codecs_close(c);
        return rc;
    }
    *out = c;
    return IP_OK;
}

void io_gpu_codecs_close(io_gpu_codecs *c)
{
    if (!c) return;
    nvcomp_batch_destroy(c->batch);
    nvcomp_close(c->nvcomp);
    if (c->scratch) {
        for (int i = 0; i < IO_GPU_SCRATCH_N; i++) {
            gpu_free(c->scratch->device[i]);
            gpu_host_free(c->scratch->pinned[i]);
        }
        free(c->scratch);
    }
    free(c);
}

/* Grows by a quarter more than asked, so images a little larger than the last do not reallocate. */
static size_t grown(size_t bytes) { return bytes > SIZE_MAX / 5 * 4 ? bytes : bytes + bytes / 4; }

int io_gpu_scratch_device(const io_gpu_codecs *c, io_gpu_scratch_slot slot, size_t bytes, void **ptr, char *err,
                          size_t errlen)
{
    io_gpu_scratch *s = c->scratch;
    if (s->device_bytes[slot] < bytes || !s->device[slot]) {
        gpu_free(s->device[slot]);
        s->device[slot] = NULL;
        s->device_bytes[slot] = 0;
        size_t want = grown(bytes ? bytes : 1);
        int rc = gpu_malloc(&s->device[slot], want, err, errlen);
        if (rc) return rc;
        s->device_bytes[slot] = want;
    }
    *ptr = s->device[slot];
    return IP_OK;
}

int io_gpu_scratch_pinned(const io_gpu_codecs *c, io_gpu_scratch_slot slot, size_t bytes, void **ptr, char *err,
                          size_t errlen)
{
    io_gpu_scratch *s = c->scratch;
    if (s->pinned_bytes[slot] < bytes || !s->pinned[slot]) {
        gpu_host_free(s->pinned[slot]);
        s->pinned[slot] = NULL;
        s->pinned_bytes[slot] = 0;
        size_t want = grown(bytes ? bytes : 1);
        int rc = gpu_host_alloc(&s->pinned[slot], want, 0, err, errlen);
        if (rc) return rc;
        s->pinned_bytes[slot] = want;
    }
    *ptr = s->pinned[slot];
    return IP_OK;
}
