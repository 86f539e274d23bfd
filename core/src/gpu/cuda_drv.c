#define _DEFAULT_SOURCE
#include "gpu/cuda_drv.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "imgpipe/plugin.h"

/* The driver's C ABI, declared here so that the core needs no cuda.h. */
typedef int cu_result;

struct cuda_drv {
    void *handle;
    int version;
    cu_result (*driver_version)(int *);
    cu_result (*error_string)(cu_result, const char **);
    cu_result (*module_load_data)(void **, const void *);
    cu_result (*module_unload)(void *);
    cu_result (*module_get_function)(void **, void *, const char *);
    cu_result (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
};

static int resolve(cuda_drv *d)
{
    *(void **)&d->driver_version = dlsym(d->handle, "cuDriverGetVersion");
    *(void **)&d->error_string = dlsym(d->handle, "cuGetErrorString");
    *(void **)&d->module_load_data = dlsym(d->handle, "cuModuleLoadData");
    *(void **)&d->module_unload = dlsym(d->handle, "cuModuleUnload");
    *(void **)&d->module_get_function = dlsym(d->handle, "cuModuleGetFunction");
    *(void **)&d->launch = dlsym(d->handle, "cuLaunchKernel");
    return d->driver_version && d->error_string && d->module_load_data && d->module_unload &&
           d->module_get_function && d->launch;
}

int cuda_drv_open(cuda_drv **out, char *err, size_t errlen)
{
    *out = NULL;
    cuda_drv *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    d->handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);   /* as NVRTC: never unmapped */
    if (!d->handle || !resolve(d) || d->driver_version(&d->version) != 0) {
        snprintf(err, errlen, "the CUDA driver library (libcuda.so.1) cannot be used");
        cuda_drv_close(d);
        return IP_EUNSUPPORTED;
    }
    *out = d;
    return IP_OK;
}

void cuda_drv_close(cuda_drv *drv)
{
    if (!drv) return;
    if (drv->handle) dlclose(drv->handle);
    free(drv);
}

int cuda_drv_version(const cuda_drv *drv) { return drv->version; }

static int drv_fail(const cuda_drv *d, cu_result r, const char *what, char *err, size_t errlen)
{
    const char *text = NULL;
    if (d->error_string(r, &text) != 0 || !text) text = "unknown error";
    snprintf(err, errlen, "%s: %s", what, text);
    return IP_ECUDA;
}

int cuda_drv_load(const cuda_drv *drv, const void *image, const char *name, void **module, void **function,
                  char *err, size_t errlen)
{
    cu_result r = drv->module_load_data(module, image);
    if (r != 0) return drv_fail(drv, r, "loading a fused kernel", err, errlen);
    r = drv->module_get_function(function, *module, name);
    if (r != 0) {
        drv->module_unload(*module);
        *module = NULL;
        return drv_fail(drv, r, "finding a fused kernel", err, errlen);
    }
    return IP_OK;
}

void cuda_drv_unload(const cuda_drv *drv, void *module)
{
    if (module) drv->module_unload(module);
}

int cuda_drv_launch(const cuda_drv *drv, void *function, const unsigned grid[3], const unsigned block[3],
                    void *stream, void **params, char *err, size_t errlen)
{
    cu_result r = drv->launch(function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream, params,
                              NULL);
    return r == 0 ? IP_OK : drv_fail(drv, r, "launching a fused kernel", err, errlen);
}
