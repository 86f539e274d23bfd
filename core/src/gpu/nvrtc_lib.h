/* NVRTC, opened with dlopen when a run wants to fuse stages (the library is ~100 MB and the
 * GPU machine has its own): without it the stages run unfused. Needs no GPU. */
#ifndef IMGPIPE_NVRTC_LIB_H
#define IMGPIPE_NVRTC_LIB_H
#include <stddef.h>

typedef struct nvrtc_lib nvrtc_lib;

/* IP_EUNSUPPORTED with the reason when no libnvrtc can be opened ($IMGPIPE_NVRTC, when set, names
 * the only one tried). */
int nvrtc_open(nvrtc_lib **lib, char *err, size_t errlen);
void nvrtc_close(nvrtc_lib *lib);
/* "13.0": part of the cache key, since another compiler may make other code. */
void nvrtc_version_text(const nvrtc_lib *lib, char *buf, size_t len);

typedef struct {
    const char *source, *name;          /* the program and the name its errors carry */
    int n_headers;                      /* files it may #include, by name */
    const char *const *header_sources, *const *header_names;
    int n_options;
    const char *const *options;
} nvrtc_job;

/* Compiles to a CUBIN for sm_<arch> (e.g. 90); *image is malloc'd. The compiler's log goes
 * into err on failure (its first lines). */
int nvrtc_compile_cubin(const nvrtc_lib *lib, const nvrtc_job *job, int arch, void **image, size_t *bytes,
                        char *err, size_t errlen);
#endif
