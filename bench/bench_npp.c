#define _POSIX_C_SOURCE 200809L
#include "bench_npp.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPP_LIBS 5
static void *npp_handles[NPP_LIBS];

/* The default search path first, then CUDA's usual folders (not always in ld.so.conf). */
static void *open_npp_lib(const char *stem)
{
    static const char *dirs[] = { "", "/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/" };
    static const char *versions[] = { ".so.13", ".so.12", ".so" };
    char path[512];
    const char *env_dir = getenv("IMGPIPE_NPP_DIR");
    if (env_dir) {
        snprintf(path, sizeof path, "%s/%s.so.13", env_dir, stem);
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (h) return h;
    }
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++)
        for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
            snprintf(path, sizeof path, "%s%s%s", dirs[d], stem, versions[v]);
            void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
            if (h) return h;
        }
    return NULL;
}

static void note_missing(npp_api *api, const char *what)
{
    size_t used = strlen(api->missing);
    snprintf(api->missing + used, sizeof api->missing - used, "%s%s", used ? ", " : "", what);
}

static void *find_symbol(npp_api *api, const char *name)
{
    for (int i = 0; i < NPP_LIBS; i++) {
        void *f = npp_handles[i] ? dlsym(npp_handles[i], name) : NULL;
        if (f) return f;
    }
    note_missing(api, name);
    return NULL;
}

static void fill_context(npp_ctx *ctx, cudaStream_t stream)
{
    struct cudaDeviceProp prop;
    int dev = 0;
    memset(ctx, 0, sizeof *ctx);
    ctx->hStream = stream;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return;
    ctx->nCudaDeviceId = dev;
    ctx->nMultiProcessorCount = prop.multiProcessorCount;
    ctx->nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
    ctx->nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
    ctx->nSharedMemPerBlock = prop.sharedMemPerBlock;
    ctx->nCudaDevAttrComputeCapabilityMajor = prop.major;
    ctx->nCudaDevAttrComputeCapabilityMinor = prop.minor;
    unsigned int flags = 0;
    if (cudaStreamGetFlags(stream, &flags) == cudaSuccess) ctx->nStreamFlags = flags;
}

/* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
#define LOAD(member, name) (*(void **)&api->member = find_symbol(api, name))

void npp_load(npp_api *api, cudaStream_t stream)
{
    static const char *stems[NPP_LIBS] = { "libnppc", "libnppicc", "libnppif", "libnppist", "libnppidei" };
    memset(api, 0, sizeof *api);
    for (int i = 0; i < NPP_LIBS; i++) {
        npp_handles[i] = open_npp_lib(stems[i]);
        if (!npp_handles[i]) note_missing(api, stems[i]);
    }
    LOAD(rgb_to_gray, "nppiRGBToGray_8u_C3C1R_Ctx");
    LOAD(median, "nppiFilterMedian_8u_C1R_Ctx");
    LOAD(median_buffer_size, "nppiFilterMedianGetBufferSize_8u_C1R_Ctx");
    LOAD(box, "nppiFilterBoxBorder_8u_C1R_Ctx");
    LOAD(filter32f, "nppiFilterBorder32f_8u_C1R_Ctx");
    LOAD(histogram_even, "nppiHistogramEven_8u_C1R_Ctx");
    LOAD(histogram_buffer_size, "nppiHistogramEvenGetBufferSize_8u_C1R_Ctx");
    LOAD(transpose, "nppiTranspose_8u_C1R_Ctx");
    fill_context(&api->ctx, stream);
}
