/* The few CUDA runtime calls the package needs between streams, looked up in the runtime that is
 * already loaded (libimgpipe's, or CuPy's or PyTorch's: one soname), so the extension builds
 * and loads without CUDA. */
#include "arrays.h"
#include <dlfcn.h>
#include <stdio.h>

typedef int (*get_device_fn)(int *);
typedef int (*set_device_fn)(int);
typedef int (*event_create_fn)(void **, unsigned);
typedef int (*event_record_fn)(void *, void *);
typedef int (*stream_wait_fn)(void *, void *, unsigned);
typedef int (*event_destroy_fn)(void *);
typedef const char *(*error_string_fn)(int);

/* cudaPointerAttributes' first fields, as CUDA 11 to 13 lay them out; CUDA 13 appends eight
 * reserved longs, so the runtime gets room to spare for whatever a version adds. */
typedef union {
    struct {
        int type;
        int device;
        void *device_pointer;
        void *host_pointer;
    } f;
    unsigned char room[512];
} pointer_attributes;
typedef int (*pointer_attributes_fn)(pointer_attributes *, const void *);

enum { EVENT_DISABLE_TIMING = 2, MEMORY_DEVICE = 2, MEMORY_MANAGED = 3 };

static void *runtime(void)
{
    static const char *names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    return NULL;
}

static const char *error_text(void *rt, int code)
{
    error_string_fn f = (error_string_fn)dlsym(rt, "cudaGetErrorString");
    return f ? f(code) : "unknown CUDA error";
}

static int record_and_wait(void *rt, void *waiter, void *producer, char *err, size_t errlen)
{
    event_create_fn create = (event_create_fn)dlsym(rt, "cudaEventCreateWithFlags");
    event_record_fn record = (event_record_fn)dlsym(rt, "cudaEventRecord");
    stream_wait_fn wait = (stream_wait_fn)dlsym(rt, "cudaStreamWaitEvent");
    event_destroy_fn destroy = (event_destroy_fn)dlsym(rt, "cudaEventDestroy");
    void *event = NULL;
    int code;
    if (!create || !record || !wait || !destroy) {
        snprintf(err, errlen, "the CUDA runtime lacks the event calls");
        return -1;
    }
    code = create(&event, EVENT_DISABLE_TIMING);
    if (code == 0)
        code = record(event, producer);
    if (code == 0)
        code = wait(waiter, event, 0);
    if (event)
        destroy(event);   /* destroying a recorded event waited on is allowed */
    if (code != 0)
        snprintf(err, errlen, "ordering the streams: %s", error_text(rt, code));
    return code == 0 ? 0 : -1;
}

/* NULL and cudaStreamLegacy (1) are one stream. */
static int same_stream(void *a, void *b)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x == y || (x <= 1 && y <= 1);
}

int cuda_stream_wait(void *waiter, void *producer, int device, char *err, size_t errlen)
{
    void *rt;
    get_device_fn get;
    set_device_fn set;
    int current = -1, status;
    if (same_stream(waiter, producer))
        return 0;
    rt = runtime();
    if (!rt) {
        snprintf(err, errlen, "no CUDA runtime is loaded");
        return -1;
    }
    get = (get_device_fn)dlsym(rt, "cudaGetDevice");
    set = (set_device_fn)dlsym(rt, "cudaSetDevice");
    if (get && set && get(&current) == 0 && current != device)
        set(device);
    status = record_and_wait(rt, waiter, producer, err, errlen);
    if (current >= 0 && current != device && set)
        set(current);
    dlclose(rt);
    return status;
}

int cuda_pointer_device(const void *ptr, int *device)
{
    void *rt = runtime();
    pointer_attributes_fn f;
    pointer_attributes a = {0};
    int ok = 0;
    if (!rt)
        return -1;
    f = (pointer_attributes_fn)dlsym(rt, "cudaPointerGetAttributes");
    if (f && f(&a, ptr) == 0 && (a.f.type == MEMORY_DEVICE || a.f.type == MEMORY_MANAGED)) {
        *device = a.f.device;
        ok = 1;
    }
    dlclose(rt);
    return ok ? 0 : -1;
}
