/* imgpipe's public C API: open a pipeline once, run it on images in memory (host or CUDA device
 * memory), on files and on folders. Link libimgpipe (CMake: find_package(imgpipe) and
 * imgpipe::imgpipe; pkg-config: imgpipe-api). docs/API.md explains it with a complete example.
 *
 * Every call returns IMGPIPE_OK or an error code, and fills *err (when err is not NULL) with a
 * message; nothing prints and nothing exits. A pipeline may be run from several threads at once.
 * Plain C11; no C++ needed. */
#ifndef IMGPIPE_IMGPIPE_H
#define IMGPIPE_IMGPIPE_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define IMGPIPE_API __attribute__((visibility("default")))
#else
#define IMGPIPE_API
#endif

/* The version this header describes; imgpipe_version_number() is the library's at run time.
 * Programs built against 0.X run with libraries of the same 0.X (0.x: a minor version may
 * change the API). */
#define IMGPIPE_VERSION_MAJOR 0
#define IMGPIPE_VERSION_MINOR 1
#define IMGPIPE_VERSION_PATCH 0
#define IMGPIPE_VERSION (IMGPIPE_VERSION_MAJOR * 10000 + IMGPIPE_VERSION_MINOR * 100 + IMGPIPE_VERSION_PATCH)

IMGPIPE_API int imgpipe_version_number(void);   /* IMGPIPE_VERSION of the library */
IMGPIPE_API const char *imgpipe_version(void);  /* "0.1.0" */

/* The first values are the plugin ABI's ip_status. */
typedef enum {
    IMGPIPE_OK = 0,
    IMGPIPE_EINVAL = 1,        /* a bad argument: an image the pipeline cannot take, an option */
    IMGPIPE_ENOMEM = 2,
    IMGPIPE_EIO = 3,           /* a file could not be read or written */
    IMGPIPE_EFORMAT = 4,       /* a file is damaged or not an image */
    IMGPIPE_EUNSUPPORTED = 5,  /* asked for what this build or machine lacks (a GPU, say) */
    IMGPIPE_ECUDA = 6,         /* a CUDA call failed */
    IMGPIPE_ELIMIT = 7,        /* an input over a limit (pixels, ratio, ...) */
    IMGPIPE_EPIPELINE = 20,    /* the pipeline text: err->file, line, column say where */
    IMGPIPE_ECANCELED = 21,    /* the progress callback asked to stop */
    IMGPIPE_EFAILED = 22       /* a folder ran, but some images failed (counted in progress) */
} imgpipe_status;

typedef struct {
    int code;                  /* the call's imgpipe_status */
    char message[1024];        /* one line, as the command line would print it after "imgpipe: " */
    /* IMGPIPE_EPIPELINE: where ("-" or "<text>" for text not read from a file), 1-based; 0 elsewhere */
    char file[512];
    int line, column;
    char suggestion[64];       /* a misspelt name's likely meaning ("median"), or "" */
    char path[1024];           /* the file a file error is about, or "" */
} imgpipe_error;

/* Returns a message for a code alone ("out of memory"). */
IMGPIPE_API const char *imgpipe_status_text(int code);

typedef enum { IMGPIPE_U8 = 1, IMGPIPE_U16 = 2, IMGPIPE_F32 = 3 } imgpipe_sample;
typedef enum { IMGPIPE_HOST = 0, IMGPIPE_CUDA_DEVICE = 1 } imgpipe_memory;

/* An image: rows of width * channels samples, interleaved. */
typedef struct {
    void *data;
    int width, height, channels;   /* channels 1..4 */
    imgpipe_sample sample;
    size_t stride;                 /* bytes from one row to the next, a multiple of the sample's size
                                    * (data aligned to it too); 0: packed */
    imgpipe_memory memory;         /* where data lies */
    int device;                    /* IMGPIPE_CUDA_DEVICE: the CUDA device number */
} imgpipe_image;

/* Memory the library allocated for a result (imgpipe_run with out->data NULL). Device results
 * come from a memory pool the library keeps on each device for the process, so that a warm call
 * asks the driver for nothing; freed results go back to it (up to 2 GiB a device stays there for
 * the next calls, the rest is given back to the driver). A result may outlive its pipeline.
 * imgpipe_image_free waits for the device first, as cudaFree does. */
IMGPIPE_API void imgpipe_image_free(imgpipe_image *img);
/* The same without waiting, in the order of cuda_stream (a cudaStream_t; NULL: the legacy default
 * stream): work queued on cuda_stream after this call may reuse the memory, so every use of it
 * must already be queued there (or on a stream cuda_stream waits for). Host memory is freed at
 * once. IMGPIPE_OK or an error (the memory is then not freed). */
IMGPIPE_API int imgpipe_image_free_async(imgpipe_image *img, void *cuda_stream, imgpipe_error *err);

typedef enum { IMGPIPE_DEVICE_AUTO = 0, IMGPIPE_DEVICE_CPU = 1, IMGPIPE_DEVICE_GPU = 2 } imgpipe_device;

/* Options of a run, as the command line's. Fill with imgpipe_run_options_init, then set fields:
 * struct_size lets a newer library read an older program's struct. */
typedef struct {
    size_t struct_size;
    imgpipe_device device;         /* AUTO: as the command line decides (the cost estimate) */
    int gpu;                       /* which GPU for host images and folders (default 0) */
    int threads;                   /* CPU threads; 0: all cores */
    int png_level;                 /* files: 0..9, default as the CLI */
    int jpeg_quality;              /* files: 1..100 */
    const char *tiff_compression;  /* files: "deflate", "lzw", "zstd", "none"; NULL: default */
    const char *output_format;     /* folders: "png", "jpg", "tif"; NULL: each input's own */
    int recursive;                 /* folders: descend into subfolders */
    int jobs;                      /* folders: images in flight; 0: as the CLI */
    uint64_t memory;               /* host bytes a run may hold; 0: half the machine */
} imgpipe_run_options;

IMGPIPE_API void imgpipe_run_options_init(imgpipe_run_options *o);

/* Where plugins are looked for: a ':'-separated list searched before $IMGPIPE_PLUGIN_PATH and the
 * default folder, imgpipe/plugins beside libimgpipe.so (as --plugin-path). Call before the first
 * pipeline is opened or stage listed (IMGPIPE_EINVAL after); NULL: the defaults only. */
IMGPIPE_API int imgpipe_set_plugin_path(const char *dirs, imgpipe_error *err);

typedef struct imgpipe_pipeline imgpipe_pipeline;

/* Parses and checks a pipeline (every stage found, every parameter valid). Errors are
 * IMGPIPE_EPIPELINE with file, line, column and the suggestion, as `imgpipe check` prints them. */
IMGPIPE_API int imgpipe_pipeline_from_text(imgpipe_pipeline **p, const char *text, imgpipe_error *err);
IMGPIPE_API int imgpipe_pipeline_from_file(imgpipe_pipeline **p, const char *path, imgpipe_error *err);
IMGPIPE_API void imgpipe_pipeline_close(imgpipe_pipeline *p);

/* The result's shape for an input of in's shape (data unread): width, height, channels and
 * sample are set in *out; data, stride and memory are left as they were. */
IMGPIPE_API int imgpipe_output_shape(imgpipe_pipeline *p, const imgpipe_image *in, imgpipe_image *out,
                                     imgpipe_error *err);

/* Runs p on in. out->data NULL: the library allocates the result in out->memory (on the input's
 * device for IMGPIPE_CUDA_DEVICE, else on out->device), packed; free it with imgpipe_image_free.
 * out->data set: the caller's memory, of the shape imgpipe_output_shape gives, with out->stride
 * (0: packed), not overlapping in. The result is written there directly, without a copy.
 * Device images: cuda_stream (a cudaStream_t; NULL: the legacy default stream) orders the work
 * after what the caller queued there, and the result is ready for work queued on it after the
 * call returns; input and output stay on the device (no copy through the host), and the call does
 * not wait for the GPU (a failure of queued work shows at the caller's next synchronisation, as
 * in CUDA). Any memory on a device runs on the GPU: with IMGPIPE_DEVICE_CPU it is refused
 * (IMGPIPE_EINVAL); without CUDA in the build, IMGPIPE_EUNSUPPORTED. Host input with device output
 * and the reverse work too (one transfer). */
IMGPIPE_API int imgpipe_run(imgpipe_pipeline *p, const imgpipe_image *in, imgpipe_image *out,
                            const imgpipe_run_options *o, void *cuda_stream, imgpipe_error *err);

/* One file to another, as `imgpipe run`: the output format from dst's extension, written
 * atomically. */
IMGPIPE_API int imgpipe_run_file(imgpipe_pipeline *p, const char *src, const char *dst,
                                 const imgpipe_run_options *o, imgpipe_error *err);

typedef struct {
    int total;                     /* images found */
    int done, failed;              /* so far */
    const char *path;              /* the image just finished (valid during the call), or NULL */
    const char *message;           /* why it failed, or NULL */
} imgpipe_progress;

/* Called after each image (from worker threads, one call at a time). Nonzero: stop taking
 * images; the run then returns IMGPIPE_ECANCELED once those in flight are done. */
typedef int (*imgpipe_progress_fn)(void *user, const imgpipe_progress *progress);

/* Every image in src_dir (PNG, JPEG, TIFF) to dst_dir, as `imgpipe run PIPE SRC_DIR DST_DIR`.
 * IMGPIPE_EFAILED when some images failed (the last failure's message in err). */
IMGPIPE_API int imgpipe_run_folder(imgpipe_pipeline *p, const char *src_dir, const char *dst_dir,
                                   const imgpipe_run_options *o, imgpipe_progress_fn progress, void *user,
                                   imgpipe_error *err);

/* Whether a GPU can run stages here (the driver, a device, this build's CUDA path). */
IMGPIPE_API int imgpipe_gpu_available(void);

/* Introspection: the stages the plugins offer and their parameters, as `imgpipe plugins`. */
typedef struct {
    const char *name;
    const char *type;              /* "int", "float", "bool", "enum", "string", "matrix", "path" */
    const char *default_value;     /* as text; "" when required */
    const char *choices;           /* enum: "a|b|c"; numbers: "MIN..MAX" (then "|word" for words also
                                      allowed); others: the words they take ("box3|..."), or "" */
    const char *help;
} imgpipe_param_info;

typedef struct {
    const char *name;
    const char *summary;
    int has_gpu;                   /* the stage has a CUDA path */
    int n_params;
    const imgpipe_param_info *params;
} imgpipe_stage_info;

/* Strings stay valid until the process ends. imgpipe_stage_count returns the count, or a negative
 * imgpipe_status (-IMGPIPE_ENOMEM) when the plugins cannot be listed. */
IMGPIPE_API int imgpipe_stage_count(imgpipe_error *err);
IMGPIPE_API int imgpipe_stage_at(int index, imgpipe_stage_info *info, imgpipe_error *err);
IMGPIPE_API int imgpipe_stage_find(const char *name, imgpipe_stage_info *info, imgpipe_error *err);

#ifdef __cplusplus
}
#endif
#endif
