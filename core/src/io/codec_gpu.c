#include "io/codec_gpu.h"
#include <stdio.h>
#include <stdlib.h>
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
    free(c);
}
