#define _DEFAULT_SOURCE
#include "gpu/nvrtc_lib.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"

/* NVRTC's C ABI, declared here so that the core builds without the toolkit's nvrtc.h. */
typedef int nvrtc_result;
typedef struct nvrtc_program_s *nvrtc_program;

struct nvrtc_lib {
    void *handle;
    int major, minor;
    nvrtc_result (*version)(int *, int *);
    const char *(*error_string)(nvrtc_result);
    nvrtc_result (*create)(nvrtc_program *, const char *, const char *, int, const char *const *,
                           const char *const *);
    nvrtc_result (*destroy)(nvrtc_program *);
    nvrtc_result (*compile)(nvrtc_program, int, const char *const *);
    nvrtc_result (*log_size)(nvrtc_program, size_t *);
    nvrtc_result (*log)(nvrtc_program, char *);
    nvrtc_result (*cubin_size)(nvrtc_program, size_t *);
    nvrtc_result (*cubin)(nvrtc_program, char *);
};

static void *open_first(const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        /* never unmapped: NVRTC's own static memory (its C++ runtime's) stays reachable, not a leak */
        void *h = names[i] ? dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) : NULL;
        if (h) return h;
    }
    return NULL;
}

static int resolve(nvrtc_lib *l)
{
    void *h = l->handle;
    *(void **)&l->version = dlsym(h, "nvrtcVersion");
    *(void **)&l->error_string = dlsym(h, "nvrtcGetErrorString");
    *(void **)&l->create = dlsym(h, "nvrtcCreateProgram");
    *(void **)&l->destroy = dlsym(h, "nvrtcDestroyProgram");
    *(void **)&l->compile = dlsym(h, "nvrtcCompileProgram");
    *(void **)&l->log_size = dlsym(h, "nvrtcGetProgramLogSize");
    *(void **)&l->log = dlsym(h, "nvrtcGetProgramLog");
    *(void **)&l->cubin_size = dlsym(h, "nvrtcGetCUBINSize");
    *(void **)&l->cubin = dlsym(h, "nvrtcGetCUBIN");
    return l->version && l->error_string && l->create && l->destroy && l->compile && l->log_size && l->log &&
           l->cubin_size && l->cubin;
}

int nvrtc_open(nvrtc_lib **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *chosen = getenv("IMGPIPE_NVRTC");
    const char *names[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so" };
    nvrtc_lib *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    if (chosen && chosen[0]) l->handle = open_first(&chosen, 1);
    else l->handle = open_first(names, (int)(sizeof names / sizeof *names));
    if (!l->handle) {
        if (chosen && chosen[0]) snprintf(err, errlen, "NVRTC not found at IMGPIPE_NVRTC=%s", chosen);
        else snprintf(err, errlen, "NVRTC not found (libnvrtc.so.13, .so.12 or .so; IMGPIPE_NVRTC may name it)");
        free(l);
        return IP_EUNSUPPORTED;
    }
    if (!resolve(l) || l->version(&l->major, &l->minor) != 0) {
        snprintf(err, errlen, "the NVRTC library found lacks functions imgpipe needs");
        nvrtc_close(l);
        return IP_EUNSUPPORTED;
    }
    *out = l;
    return IP_OK;
}

void nvrtc_close(nvrtc_lib *lib)
{
    if (!lib) return;
    if (lib->handle) dlclose(lib->handle);
    free(lib);
}

void nvrtc_version_text(const nvrtc_lib *lib, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", lib->major, lib->minor);
}

/* The compiler's log, trimmed to what err holds. */
static void copy_log(const nvrtc_lib *l, nvrtc_program prog, const char *what, char *err, size_t errlen)
{
    size_t n = 0;
    char *log = NULL;
    if (l->log_size(prog, &n) == 0 && n > 0 && n < ((size_t)1 << 24) && (log = malloc(n)) && l->log(prog, log) == 0)
        snprintf(err, errlen, "%s: %s", what, log);
    else
        snprintf(err, errlen, "%s", what);
    free(log);
}

static int take_cubin(const nvrtc_lib *l, nvrtc_program prog, void **image, size_t *bytes, char *err, size_t errlen)
{
    size_t n = 0;
    if (l->cubin_size(prog, &n) != 0 || n == 0) {
        snprintf(err, errlen, "NVRTC made no CUBIN");
        return IP_EINVAL;
    }
    char *data = malloc(n);
    if (!data) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    if (l->cubin(prog, data) != 0) {
        free(data);
        snprintf(err, errlen, "NVRTC could not hand over the CUBIN");
        return IP_EINVAL;
    }
    *image = data;
    *bytes = n;
    return IP_OK;
}

int nvrtc_compile_cubin(const nvrtc_lib *l, const nvrtc_job *job, int arch, void **image, size_t *bytes,
                        char *err, size_t errlen)
{
    enum { MAX_OPTIONS = 16 };
    if (job->n_options < 0 || job->n_options > MAX_OPTIONS - 1 || arch < 10 || arch > 999) {
        snprintf(err, errlen, "NVRTC: bad compile request");
        return IP_EINVAL;
    }
    char arch_opt[40];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=sm_%d", arch);
    const char *opts[MAX_OPTIONS];
    opts[0] = arch_opt;
    for (int i = 0; i < job->n_options; i++) opts[i + 1] = job->options[i];
    nvrtc_program prog = NULL;
    nvrtc_result r = l->create(&prog, job->source, job->name, job->n_headers, job->header_sources, job->header_names);
    if (r != 0) {
        snprintf(err, errlen, "NVRTC: %s", l->error_string(r));
        return IP_EINVAL;
    }
    int rc = IP_OK;
    r = l->compile(prog, job->n_options + 1, opts);
    if (r != 0) {
        copy_log(l, prog, l->error_string(r), err, errlen);
        rc = IP_EINVAL;
    }
    if (rc == IP_OK) rc = take_cubin(l, prog, image, bytes, err, errlen);
    l->destroy(&prog);
    return rc;
}
