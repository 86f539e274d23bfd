#define _POSIX_C_SOURCE 200809L
#include "exec/fuse.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu/cuda_drv.h"
#include "exec/fuse_cache.h"
#include "gpu/gpu.h"
#include "gpu/nvrtc_lib.h"
#include "base/mono_clock.h"

/* Kernels stay loaded for the context's life, one per chain and channel count: the GPU test's
 * chains alone passed 32. Past this, a new group runs unfused and the run's notes say why. */
#define FUSE_MAX_KERNELS 256
#define FUSE_MAX_GRID_Y 65535u

typedef struct {
    char key[FUSE_KEY_CHARS];
    void *module, *function;
} loaded_kernel;

/* NVRTC for one device: what makes a source into the code a key names. */
typedef struct {
    nvrtc_lib *nvrtc;
    cuda_drv *drv;
    int arch;
    char identity[128];      /* architecture, NVRTC and driver versions: part of every key */
} fuse_compiler;

struct fuser {
    fuse_compiler c;
    loaded_kernel kernels[FUSE_MAX_KERNELS];
    int n_kernels;
};

static void compiler_close(fuse_compiler *c)
{
    cuda_drv_close(c->drv);
    nvrtc_close(c->nvrtc);
    memset(c, 0, sizeof *c);
}

static int compiler_open(fuse_compiler *c, int device, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    int rc = nvrtc_open(&c->nvrtc, err, errlen);
    if (rc == IP_OK) rc = cuda_drv_open(&c->drv, err, errlen);
    if (rc == IP_OK) rc = gpu_compute_capability(device, &c->arch, err, errlen);
    if (rc != IP_OK) {
        compiler_close(c);
        return rc == IP_ENOMEM ? rc : IP_EUNSUPPORTED;
    }
    char version[32];
    nvrtc_version_text(c->nvrtc, version, sizeof version);
    snprintf(c->identity, sizeof c->identity, "sm_%d nvrtc %s driver %d", c->arch, version, cuda_drv_version(c->drv));
    return IP_OK;
}

int fuser_create(fuser **out, int device, char *err, size_t errlen)
{
    *out = NULL;
    fuser *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = compiler_open(&f->c, device, err, errlen);
    if (rc != IP_OK) {
        free(f);
        return rc;
    }
    *out = f;
    return IP_OK;
}

void fuser_destroy(fuser *f)
{
    if (!f) return;
    for (int i = 0; i < f->n_kernels; i++) cuda_drv_unload(f->c.drv, f->kernels[i].module);
    compiler_close(&f->c);
    free(f);
}

static const char fuse_options_text[] = "-default-device";

static int compile(const fuse_compiler *c, const char *src, void **image, size_t *bytes, char *err, size_t errlen)
{
    const char *opts[] = { fuse_options_text };
    nvrtc_job job = { src, "imgpipe_fused.cu", fuse_header_count(), fuse_header_sources(), fuse_header_names(),
                      1, opts };
    return nvrtc_compile_cubin(c->nvrtc, &job, c->arch, image, bytes, err, errlen);
}

/* The headers' text is part of the key: a kernel header changed by an upgrade never meets a
 * CUBIN compiled from the old one. */
static void key_of(const fuse_compiler *c, const char *src, char key[FUSE_KEY_CHARS])
{
    const char *parts[3 + FUSE_MAX_HEADERS] = { src, fuse_options_text, c->identity };
    int n = 3, headers = fuse_header_count();
    for (int i = 0; i < headers && i < FUSE_MAX_HEADERS; i++) parts[n++] = fuse_header_sources()[i];
    fuse_cache_key(parts, n, key);
}

/* The CUBIN from the disk cache, or compiled now and stored there. */
static int find_image(const fuse_compiler *f, const char *src, const char *key, fuse_kernel *k, void **image,
                      char *err, size_t errlen)
{
    char dir[4200], why[sizeof k->cache_note];
    size_t bytes = 0;
    int have_dir = fuse_cache_dir(dir, sizeof dir, why, sizeof why) == IP_OK;
    if (!have_dir) snprintf(k->cache_note, sizeof k->cache_note, "%s", why);
    if (have_dir && fuse_cache_load(dir, key, image, &bytes) == IP_OK) {
        k->from_disk = 1;
        return IP_OK;
    }
    int lock = -1;
    if (have_dir) fuse_cache_lock(dir, key, &lock);
    if (lock >= 0 && fuse_cache_load(dir, key, image, &bytes) == IP_OK) {   /* another maker's, made meanwhile */
        fuse_cache_unlock(lock);
        k->from_disk = 1;
        return IP_OK;
    }
    double t0 = now_ms();
    int rc = compile(f, src, image, &bytes, err, errlen);
    k->compile_ms = now_ms() - t0;
    k->compiled = rc == IP_OK;
    if (rc == IP_OK && have_dir && fuse_cache_store(dir, key, *image, bytes, why, sizeof why) != IP_OK)
        snprintf(k->cache_note, sizeof k->cache_note, "%s", why);
    fuse_cache_unlock(lock);
    return rc;
}

int fuser_prepare(fuser *f, const plan *p, const fuse_group *g, fuse_kernel *k, char *err, size_t errlen)
{
    memset(k, 0, sizeof *k);
    char *src = NULL;
    int rc = fuse_source(p, g, &src, err, errlen);
    if (rc != IP_OK) return rc;
    char key[FUSE_KEY_CHARS];
    key_of(&f->c, src, key);
    for (int i = 0; i < f->n_kernels; i++) {
        if (strcmp(f->kernels[i].key, key) == 0) {
            k->function = f->kernels[i].function;
            free(src);
            return IP_OK;
        }
    }
    if (f->n_kernels == FUSE_MAX_KERNELS) {
        free(src);
        snprintf(err, errlen, "more than %d fused kernels in one run", FUSE_MAX_KERNELS);
        return IP_ELIMIT;
    }
    void *image = NULL;
    rc = find_image(&f->c, src, key, k, &image, err, errlen);
    free(src);
    loaded_kernel *slot = &f->kernels[f->n_kernels];
    if (rc == IP_OK) rc = cuda_drv_load(f->c.drv, image, fuse_kernel_name(g->kind), &slot->module, &slot->function,
                                        err, errlen);
    free(image);
    if (rc != IP_OK) return rc;
    snprintf(slot->key, sizeof slot->key, "%s", key);
    f->n_kernels++;
    k->function = slot->function;
    return IP_OK;
}

static unsigned div_up(unsigned long long a, unsigned long long b) { return (unsigned)((a + b - 1) / b); }

/* Threads per block and the outputs a block makes (tile_h 0: the kernel loops over rows);
 * max_blocks: the most blocks of a kernel that loops over rows (0: no limit but the grid's). */
typedef struct { unsigned block_x, block_y, tile_w, tile_h, max_blocks; } launch_shape;

static launch_shape shape_of(fuse_kind kind)
{
    /* fused_median3.cu: 16 columns x IPF_ROWS (4) rows a thread, IPF_WARPS (4) warps stacked */
    if (kind == FUSE_MEDIAN3) return (launch_shape){ 32, 4, 16 * 32, 4 * 4, 0 };
    /* fused_load.cuh's IPF_TW by the window kernels' IPF_TH */
    if (kind == FUSE_MEAN || kind == FUSE_CONVOLVE) return (launch_shape){ 256, 1, 128, 64, 0 };
    /* entropy_fast.cuh: ENTF_THREADS threads, ENTF_BW = 8 * 128 columns, ENTF_STRIP rows */
    if (kind == FUSE_ENTROPY) return (launch_shape){ 128, 1, 8 * 128, 32, 0 };
    /* each block merges its counts once: enough blocks to fill the device, not one per row */
    if (kind == FUSE_HISTOGRAM) return (launch_shape){ 256, 1, 256, 0, 2048 };
    return (launch_shape){ 128, 1, 128, 0, 0 };
}

/* A kernel with six parameters (src, ss, dst, ds, width, height) takes only those: the driver reads as
 * many as the kernel has, so counts_dev is passed to a fused histogram only. */
static int launch_group(const fuser *f, const fuse_kernel *k, const fuse_group *g, const void *in,
                        ptrdiff_t in_stride, void *out, ptrdiff_t out_stride, int width, int height,
                        unsigned *counts_dev, void *stream, char *err, size_t errlen)
{
    if ((g->kind == FUSE_HISTOGRAM) != (counts_dev != NULL)) {
        snprintf(err, errlen, "a fused histogram, and only one, takes counts (fuser_launch_counts)");
        return IP_EINVAL;
    }
    launch_shape ls = shape_of(g->kind);
    unsigned block[3] = { ls.block_x, ls.block_y, 1 };
    unsigned long long gx = div_up((unsigned long long)width, ls.tile_w);
    unsigned long long gy = ls.tile_h ? div_up((unsigned long long)height, ls.tile_h)
                                      : (height < (int)FUSE_MAX_GRID_Y ? (unsigned)height : FUSE_MAX_GRID_Y);
    if (!ls.tile_h && ls.max_blocks && gy * gx > ls.max_blocks) gy = gx < ls.max_blocks ? ls.max_blocks / gx : 1;
    if (gy > FUSE_MAX_GRID_Y) {
        snprintf(err, errlen, "the image is too tall for the fused kernel");
        return IP_EUNSUPPORTED;
    }
    unsigned grid[3] = { (unsigned)gx, (unsigned)gy, 1 };
    const char *src = in;
    char *dst = out;
    long long ss = in_stride, ds = out_stride;
    int w = width, h = height;
    void *params[] = { &src, &ss, &dst, &ds, &w, &h, &counts_dev };
    return cuda_drv_launch(f->c.drv, k->function, grid, block, stream, params, err, errlen);
}

int fuser_launch(const fuser *f, const fuse_kernel *k, const fuse_group *g, const void *in, ptrdiff_t in_stride,
                 void *out, ptrdiff_t out_stride, int width, int height, void *stream, char *err, size_t errlen)
{
    return launch_group(f, k, g, in, in_stride, out, out_stride, width, height, NULL, stream, err, errlen);
}

int fuser_launch_counts(const fuser *f, const fuse_kernel *k, const fuse_group *g, const void *in,
                        ptrdiff_t in_stride, void *out, ptrdiff_t out_stride, int width, int height,
                        unsigned *counts_dev, void *stream, char *err, size_t errlen)
{
    if (!counts_dev) {
        snprintf(err, errlen, "no counts for the fused histogram");
        return IP_EINVAL;
    }
    return launch_group(f, k, g, in, in_stride, out, out_stride, width, height, counts_dev, stream, err, errlen);
}

struct fuse_warm {
    pthread_t thread;
    int device, n_sources, compiled;
    char *sources[FUSE_WARM_MAX_SOURCES];
    double ms;
};

/* Each source not in the disk cache is compiled and stored there. */
static void *warm_main(void *arg)
{
    fuse_warm *w = arg;
    fuse_compiler c;
    char err[512];
    double t0 = now_ms();
    if (compiler_open(&c, w->device, err, sizeof err) != IP_OK) return NULL;
    for (int i = 0; i < w->n_sources; i++) {
        char key[FUSE_KEY_CHARS];
        fuse_kernel k;
        void *image = NULL;
        memset(&k, 0, sizeof k);
        key_of(&c, w->sources[i], key);
        if (find_image(&c, w->sources[i], key, &k, &image, err, sizeof err) == IP_OK && k.compiled) w->compiled++;
        free(image);
    }
    compiler_close(&c);
    w->ms = now_ms() - t0;
    return NULL;
}

static void warm_free(fuse_warm *w)
{
    for (int i = 0; i < w->n_sources; i++) free(w->sources[i]);
    free(w);
}

fuse_warm *fuse_warm_begin(const plan *p, int device)
{
    fuse_warm *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->device = device;
    char err[256];
    for (int i = 0; i < p->n && w->n_sources < FUSE_WARM_MAX_SOURCES;) {
        fuse_group g = fuse_group_at(p, i);
        if (g.kind == FUSE_NONE) {
            i++;
            continue;
        }
        if (fuse_source(p, &g, &w->sources[w->n_sources], err, sizeof err) == IP_OK) w->n_sources++;
        i += g.n_steps;
    }
    if (w->n_sources == 0 || pthread_create(&w->thread, NULL, warm_main, w) != 0) {
        warm_free(w);
        return NULL;
    }
    return w;
}

int fuse_warm_end(fuse_warm *w, double *ms)
{
    if (!w) return 0;
    pthread_join(w->thread, NULL);
    int compiled = w->compiled;
    if (ms) *ms = w->ms;
    warm_free(w);
    return compiled;
}
