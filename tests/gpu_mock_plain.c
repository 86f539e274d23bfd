/* A mock device's memory from malloc and events that are done as soon as they are recorded, for
 * the mock tests that do not model streams (test_band_gpu_mock does). */
#include <stdio.h>
#include <stdlib.h>
#include "gpu/gpu.h"
#include "imgpipe/plugin.h"

int gpu_malloc(void **ptr, size_t bytes, char *err, size_t errlen)
{
    *ptr = malloc(bytes ? bytes : 1);
    if (*ptr) return IP_OK;
    snprintf(err, errlen, "mock: out of memory");
    return IP_ENOMEM;
}
void gpu_free(void *ptr) { free(ptr); }
int gpu_event_create(void **event, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    *event = malloc(1);
    return *event ? IP_OK : IP_ENOMEM;
}
void gpu_event_destroy(void *event) { free(event); }
int gpu_event_record(void *event, void *stream) { (void)event; (void)stream; return IP_OK; }
int gpu_stream_wait_event(void *stream, void *event, char *err, size_t errlen)
{
    (void)stream; (void)event; (void)err; (void)errlen;
    return IP_OK;
}
int gpu_event_sync(void *event, char *err, size_t errlen) { (void)event; (void)err; (void)errlen; return IP_OK; }
float gpu_event_ms(void *start, void *stop) { (void)start; (void)stop; return 0.0f; }
