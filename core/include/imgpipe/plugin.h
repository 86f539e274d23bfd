/* imgpipe plugin ABI: the one header a plugin author includes.
 * Plain C, no CUDA types: a CUDA stream travels as void *. */
#ifndef IMGPIPE_PLUGIN_H
#define IMGPIPE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change that breaks a compiled plugin (see docs/PLUGINS.md). */
#define IP_ABI_VERSION 1

typedef enum { IP_OK = 0, IP_EINVAL, IP_ENOMEM, IP_EIO, IP_EFORMAT, IP_EUNSUPPORTED, IP_ECUDA, IP_ELIMIT } ip_status;

typedef enum { IP_U8 = 1, IP_U16 = 2, IP_F32 = 3 } ip_dtype;

/* Pixels are interleaved: channels values per pixel, rows stride bytes apart. */
typedef struct { int32_t width, height, channels; ip_dtype dtype; } ip_shape;
typedef struct { void *data; ptrdiff_t stride; ip_shape shape; int on_device; } ip_image;

typedef enum { IP_INT, IP_FLOAT, IP_BOOL, IP_ENUM, IP_STRING, IP_MATRIX, IP_PATH } ip_type;

/* choices: '|'-separated words. For IP_ENUM the allowed values; for IP_INT, IP_FLOAT
 * and IP_MATRIX words accepted besides a number or matrix (divisor=auto, kernel=sobel-x).
 * min/max bound IP_INT and IP_FLOAT values when min < max. */
typedef struct {
    const char *name;
    ip_type type;
    const char *default_text;
    double min, max;
    const char *choices;
    const char *help;
} ip_param;

typedef struct { const double *v; int rows, cols; } ip_matrix;   /* row-major */

/* One per ip_param, in table order; the core owns the memory for the stage's lifetime. */
typedef struct {
    int64_t i;        /* IP_INT, IP_BOOL (0 or 1), IP_ENUM (index of the choice) */
    double f;         /* IP_FLOAT, and IP_INT as a double */
    const char *s;    /* IP_STRING, IP_PATH, IP_ENUM's word, or the word given from choices */
    int choice;       /* index into choices when a word was given, else -1 */
    ip_matrix m;      /* IP_MATRIX given literally (v is NULL when a word was given) */
} ip_value;

/* Filled by plan(): rows/columns of context a stage reads around each output pixel,
 * and temporary memory it needs per run (host for run_cpu, device for run_gpu). */
typedef struct { int halo; size_t scratch_bytes; size_t gpu_scratch_bytes; } ip_needs;

typedef struct {
    void *stream;             /* cudaStream_t for run_gpu, NULL for run_cpu */
    int threads;              /* OpenMP threads run_cpu may use */
    const char *input_path;   /* the image's file, or NULL */
    void *scratch;            /* needs.scratch_bytes (cpu) or gpu_scratch_bytes (gpu) */
    size_t scratch_bytes;
    char *err;                /* message buffer for a failed run */
    size_t errlen;
} ip_exec;

typedef struct ip_stage {
    uint32_t abi_version;     /* IP_ABI_VERSION */
    uint32_t struct_size;     /* sizeof(ip_stage) when built: lets the descriptor grow */
    const char *name;
    const char *summary;
    const ip_param *params;
    int n_params;
    int (*create)(const ip_value *args, void **state, char *err, size_t errlen);
    int (*plan)(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                char *err, size_t errlen);
    int (*run_cpu)(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex);
    int (*run_gpu)(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex);
    void (*destroy)(void *state);
} ip_stage;

#if defined(_WIN32)
#define IP_EXPORT __declspec(dllexport)
#else
#define IP_EXPORT __attribute__((visibility("default")))
#endif

/* The one symbol every plugin exports. */
IP_EXPORT const ip_stage *imgpipe_stage(void);

static inline size_t ip_dtype_size(ip_dtype t) { return t == IP_U8 ? 1 : t == IP_U16 ? 2 : 4; }

#ifdef __cplusplus
}
#endif
#endif
