#include "io/codec_gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include "gpu/gpu.h"
#include "io/io_tiff_strip_cpu.h"
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
    int fast = tiff_fast_wanted();
    c->scratch = calloc(1, sizeof *c->scratch);
    c->tiff_fast = fast ? malloc(sizeof *c->tiff_fast) : NULL;
    if (!c->scratch || (fast && !c->tiff_fast)) {
        free(c->scratch);
        free(c->tiff_fast);
        free(c);
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    if (c->tiff_fast) tiff_fast_check_init(c->tiff_fast, tiff_libdeflate_level_beside_card_image);
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
    if (c->tiff_fast) tiff_fast_check_destroy(c->tiff_fast);
    free(c->tiff_fast);
    free(c);
}

int io_gpu_nvcomp_usable(char *why, size_t whylen)
{
    nvcomp_lib *lib = NULL;
    int rc = nvcomp_open(&lib, why, whylen);
    nvcomp_close(lib);
    return rc;
}

long io_gpu_env_long(const char *name, long fallback, long lo, long hi)
{
    const char *v = getenv(name);
    long n = v && *v ? strtol(v, NULL, 10) : fallback;
    return n < lo ? lo : n > hi ? hi : n;
}

int io_gpu_kernel_rc(int status, const char *what, char *err, size_t errlen)
{
    if (status == 0) return IP_OK;
    snprintf(err, errlen, "GPU %s failed (ipk status %d)", what, status);
    return IP_ECUDA;
}

int io_gpu_codecs_open_own(io_gpu_codecs **c, void **stream, int device, int urgent, char *why, size_t whylen)
{
    *c = NULL;
    *stream = NULL;
    int rc = gpu_select(device, why, whylen);
    if (!rc) rc = urgent ? gpu_stream_create_urgent(stream, why, whylen) : gpu_stream_create(stream, why, whylen);
    if (!rc) rc = io_gpu_codecs_open(c, device, *stream, why, whylen);
    return rc;
}

void io_gpu_codecs_close_own(io_gpu_codecs *c, void *stream, int device)
{
    if (c || stream) gpu_select(device, NULL, 0);
    if (stream) gpu_stream_sync(stream, NULL, 0);
    io_gpu_codecs_close(c);
    gpu_stream_destroy(stream);
}

/* Grows by a quarter more than asked, so images a little larger than the last do not reallocate. */
static size_t grown(size_t bytes) { return bytes > SIZE_MAX / 5 * 4 ? bytes : bytes + bytes / 4; }

/* A slot's buffer (device or pinned) grown to bytes when smaller, its old one freed. */
static int grow_slot(void **slot, size_t *have, size_t bytes, int pinned, char *err, size_t errlen)
{
    if (*slot && *have >= bytes) return IP_OK;
    if (pinned) gpu_host_free(*slot);
    else gpu_free(*slot);
    *slot = NULL;
    *have = 0;
    size_t want = grown(bytes ? bytes : 1);
    int rc = pinned ? gpu_host_alloc(slot, want, 0, err, errlen) : gpu_malloc(slot, want, err, errlen);
    if (rc == IP_OK) *have = want;
    return rc;
}

int io_gpu_scratch_device(const io_gpu_codecs *c, io_gpu_scratch_slot slot, size_t bytes, void **ptr, char *err,
                          size_t errlen)
{
    io_gpu_scratch *s = c->scratch;
    int rc = grow_slot(&s->device[slot], &s->device_bytes[slot], bytes, 0, err, errlen);
    *ptr = s->device[slot];
    return rc;
}

int io_gpu_scratch_pinned(const io_gpu_codecs *c, io_gpu_scratch_slot slot, size_t bytes, void **ptr, char *err,
                          size_t errlen)
{
    io_gpu_scratch *s = c->scratch;
    int rc = grow_slot(&s->pinned[slot], &s->pinned_bytes[slot], bytes, 1, err, errlen);
    *ptr = s->pinned[slot];
    return rc;
}
