/* imgpipe plugin ABI: the one header a plugin author includes.
 * Plain C, no CUDA types: a CUDA stream travels as void *. */
#ifndef IMGPIPE_PLUGIN_H
#define IMGPIPE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* What a stage reads to make its output, so that the core can stream an image through it in
 * bands of whole rows (docs/PLUGINS.md, "Stage classes"). */
typedef enum {
    IP_CLASS_GLOBAL = 0,     /* needs the whole image (transpose); the class of a descriptor without one */
    IP_CLASS_POINT = 1,      /* output row y from input row y alone; same width and height */
    IP_CLASS_AREA = 2,       /* output row y from input rows y-halo .. y+halo (needs.halo from plan) */
    IP_CLASS_REDUCTION = 3   /* reads every pixel, passes the image on unchanged, combines per-band results */
} ip_stage_class;

/* Filled by cost_of: what one use of the stage costs per byte of its input (one channel value of
 * a pixel, deeper samples counted by their bytes), for --device auto's estimate. */
typedef struct {
    double cpu_ns;   /* core-nanoseconds of run_cpu: its time times the cores it used */
    double gpu_ns;   /* nanoseconds of the card running run_gpu */
} ip_cost;

/* The borders of the in-tree window stages, in the order of their "border" choices. */
typedef enum { IP_BORDER_REPLICATE = 0, IP_BORDER_REFLECT101 = 1, IP_BORDER_ZERO = 2, IP_BORDER_SHRINK = 3 } ip_border;

/* The core's own kernels that run-time fusion can end a chain of point stages with (docs/PLUGINS.md,
 * "Hints"). A stage that computes exactly what one of them computes names it. */
typedef enum {
    IP_WINDOW_NONE = 0,
    IP_WINDOW_MEDIAN = 1,     /* per channel, the median of the (2*radius+1)^2 window (OpenCV medianBlur) */
    IP_WINDOW_MEAN = 2,       /* per channel, the window's average rounded half up (OpenCV blur) */
    IP_WINDOW_CONVOLVE = 3,   /* weights / divisor + offset, rounded and saturated (OpenCV filter2D) */
    IP_WINDOW_ENTROPY = 4,    /* Shannon entropy of the window's bins (scikit-image rank.entropy) */
    IP_WINDOW_HISTOGRAM = 5   /* a reduction whose partial is uint64 counts[channel * bins + bin] */
} ip_window_kind;

/* Filled by window_of (the core zeroes it first); each kind reads only the fields it names. */
typedef struct {
    uint32_t kind;            /* an ip_window_kind */
    int radius;               /* median, mean, entropy: the window is (2*radius+1) pixels square */
    uint32_t border;          /* median, mean, convolve: an ip_border */
    const double *weights;    /* convolve: kh rows of kw weights (odd sides), memory of the state */
    int kw, kh;               /* convolve */
    double divisor, offset;   /* convolve: the divisor used (never "auto"), the offset added after */
    int levels;               /* entropy: possible input values; bin = value * bins / levels */
    int bins;                 /* entropy, histogram: bins (per channel for histogram) */
    double log_scale;         /* entropy: what the entropy in nats is multiplied by (1, 1/ln 2, 1/ln 10) */
} ip_window;

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

    /* Added with stage classes: the core reads them only when struct_size covers them, so a
     * plugin built before has IP_CLASS_GLOBAL and no reduction functions. */
    uint32_t stage_class;     /* an ip_stage_class */
    /* Optional: the class of one use of the stage, when its arguments decide it (a threshold
     * that is a point stage for a given level and global for Otsu's); NULL: stage_class. It may
     * only be more demanding than stage_class (global for any class). */
    uint32_t (*class_of)(const void *state);
    /* IP_CLASS_REDUCTION, all four required. The core streams bands (exactly the band's rows,
     * host or device as for run_cpu / run_gpu, ex->stream telling which) through reduce_band,
     * each adding into a partial result of partial_bytes zeroed host bytes (complete when it
     * returns, also for device bands); ex->scratch is needs.gpu_scratch_bytes of device memory
     * for device bands (a stage with run_gpu gets them), needs.scratch_bytes of host memory
     * otherwise, planned for the band. Partials of bands run apart are added with reduce_merge,
     * and reduce_finish gets the whole image's result (and writes whatever the stage writes).
     * The pixels pass on untouched, by the core. */
    size_t (*partial_bytes)(const void *state, const ip_shape *in);
    int (*reduce_band)(const void *state, const ip_image *band, void *partial, const ip_exec *ex);
    void (*reduce_merge)(const void *state, const ip_shape *in, void *total, const void *partial);
    int (*reduce_finish)(const void *state, const ip_shape *in, const void *total, const ip_exec *ex);

    /* Added with run-time fusion, read only when struct_size covers it (NULL: never fused).
     * An IP_CLASS_POINT stage writes into src (cap bytes, NUL included) the CUDA source of its
     * per-pixel function for this use and input shape, defining
     *     __device__ void IP_POINT_FN(const IP_T *in, IP_T *out)
     * (in: in->channels values of one pixel, out: the planned output's channels; IP_T the element
     * type of in->dtype, which must not change), computing bit for bit what run_gpu computes.
     * The core compiles it with NVRTC into the load of the next stage (docs/PLUGINS.md, "Point
     * functions"). Returns IP_OK, IP_EUNSUPPORTED for a use it does not offer, IP_ELIMIT when
     * cap is too small. */
    int (*point_cuda)(const void *state, const ip_shape *in, char *src, size_t cap);

    /* Added with descriptor hints, read only when struct_size covers them, so that the core never
     * tells a stage by its name or the order of its parameters (docs/PLUGINS.md, "Hints").
     * Optional: what this use costs on each device for this input shape; IP_OK, or any other
     * status for "unknown" (NULL too), which the core estimates as a light window stage. */
    int (*cost_of)(const void *state, const ip_shape *in, ip_cost *cost);
    /* Optional: which of the core's fused kernels computes this use, bit for bit, on this input
     * shape; IP_OK with w->kind set, or IP_EUNSUPPORTED (NULL too): never fused as a window. */
    int (*window_of)(const void *state, const ip_shape *in, ip_window *w);
} ip_stage;

#if defined(_WIN32)
#define IP_EXPORT __declspec(dllexport)
#else
#define IP_EXPORT __attribute__((visibility("default")))
#endif

/* The one symbol every plugin exports. */
IP_EXPORT const ip_stage *imgpipe_stage(void);

/* The number of entries of a table (an array, not a pointer): .n_params = IP_COUNT(params). */
#define IP_COUNT(table) ((int)(sizeof(table) / sizeof((table)[0])))

/* create()'s argument for the parameter called name, from args in the order of params (n_params
 * of them); NULL when params has no such name. IP_ARG looks it up in a table of IP_COUNT entries. */
static inline const ip_value *ip_arg(const ip_param *params, int n_params, const ip_value *args, const char *name)
{
    for (int k = 0; params && args && name && k < n_params; k++)
        if (params[k].name && strcmp(params[k].name, name) == 0) return &args[k];
    return NULL;
}
#define IP_ARG(params, args, name) ip_arg((params), IP_COUNT(params), (args), (name))

/* A GPU entry of the descriptor (.run_gpu = IP_GPU_ENTRY(my_run_gpu)): the function when the plugin
 * is built with CUDA (IMGPIPE_HAVE_CUDA defined, as imgpipe_add_plugin does for a .cu source), else
 * NULL, so that the function may be defined under #ifdef IMGPIPE_HAVE_CUDA alone. */
#ifdef IMGPIPE_HAVE_CUDA
#define IP_GPU_ENTRY(fn) (fn)
#else
#define IP_GPU_ENTRY(fn) NULL
#endif

static inline size_t ip_dtype_size(ip_dtype t) { return t == IP_U8 ? 1 : t == IP_U16 ? 2 : 4; }

#ifdef __cplusplus
}
#endif
#endif
