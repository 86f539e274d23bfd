/* The run layer: one image, file or memory to file or memory, through a planned pipeline. It
 * probes the input once, chooses stream or whole and the device, starts the GPU beside decoding,
 * decodes, runs, falls back to the CPU under auto, writes atomically, and says what it did in a
 * run_result. It never prints and never exits: the command line, the folder runner and (next) the
 * C API all drive it. */
#ifndef IMGPIPE_RUN_H
#define IMGPIPE_RUN_H
#include <stdint.h>
#include "exec/exec.h"
#include "io/io.h"
#include "io/jpeg_gpu.h"
#include "io/jpeg_pool.h"
#include "io/meta.h"
#include "plan/plan.h"
#include "stream/run_stream.h"

typedef enum { RUN_DEVICE_AUTO = 0, RUN_DEVICE_CPU, RUN_DEVICE_GPU } run_device;
typedef enum { RUN_STREAM_AUTO = 0, RUN_STREAM_ON, RUN_STREAM_OFF } run_stream_mode;
/* --codecs: auto uses the GPU codecs (nvCOMP; nvJPEG as --jpeg-decoder says) when the run is on
 * the GPU and they open; cpu keeps every output bit-identical to the CPU path; gpu requires them. */
typedef enum { RUN_CODECS_AUTO = 0, RUN_CODECS_CPU, RUN_CODECS_GPU } run_codecs;

#define RUN_MAX_GPUS 64

typedef struct {
    run_device device;
    int threads;                 /* CPU threads for stages and codecs; 0: all cores */
    exec_transfer transfer;
    int profile;                 /* record per-stage times (and fusion notes) */
    int no_fuse;
    int strip;                   /* no metadata carried to the output */
    int jpeg_gpu_required;       /* --jpeg-decoder gpu: nvJPEG on the GPU */
    run_codecs codecs;
    run_stream_mode stream;
    uint64_t memory;             /* host bytes a run may hold; 0: half the machine */
    uint64_t gpu_memory;         /* device bytes; 0: half the GPU's free memory for streamed runs */
    int gpu_ids[RUN_MAX_GPUS];   /* a streamed image's bands are dealt to these (n_gpus 0: GPU 0) */
    int n_gpus;
    io_options io;
} run_options;

void run_default_options(run_options *o);

/* An image to read: a file, or pixels in host memory (path NULL). decoded, with a path: the file's
 * pixels already decoded on the worker's GPU (a folder's read-ahead), used in place of reading it;
 * the file still gives its metadata, and is read again if the image falls back to the CPU.
 * jpeg_on_cpu: a JPEG file decoded by libjpeg-turbo whatever the JPEG decoder (the read-ahead
 * handed it over while its engine was busy or not yet open). on_decoded, when set, is told when a
 * worker's whole-image decoding has ended (ok 0: it failed), before the stages; streamed images and
 * runs without a worker do not tell it. */
typedef struct {
    const char *path;
    const ip_image *image;
    const ip_image *decoded;
    int jpeg_on_cpu;
    void (*on_decoded)(void *user, int ok, double ms);
    void *on_decoded_user;
} run_source;

/* Where the result goes: a file (written atomically), or host memory (path NULL): *image then
 * receives a malloc'd packed copy, freed with img_free. With into set, the result is written into
 * *image's own memory instead (its data and stride; device memory when on_device, left there on
 * the worker's stream, see run_worker_stream), which must have the final shape. */
typedef struct {
    const char *path;
    ip_image *image;
    int into;
    /* A folder worker on the GPU may then write the file behind its next image's decoding: run_image
     * returns with res->write_behind set, and on_written is called once the file is written (on
     * another thread) with the write's outcome, time and message. NULL: written before returning. */
    void (*on_written)(void *user, int rc, double encode_ms, const char *err);
    void *on_written_user;
} run_sink;

#define RUN_NOTES_LEN 2048

typedef struct {
    double decode_ms, encode_ms, startup_ms, startup_wait_ms;
    double stages_ms;            /* a worker's exec_run: uploads, stages, waits, download */
    double fuse_ms;              /* NVRTC compiling beside decoding */
    double write_wait_ms;        /* a folder worker's wait for its last image's write behind */
    int fuse_compiled;           /* kernels it compiled */
} run_times;

typedef struct {
    exec_device device;          /* where the stages ran */
    int decoded;                 /* whole-image runs: the input was decoded (the stages were reached) */
    int gpu;                     /* the (first) GPU used */
    char why[1024];              /* why auto chose it ("" when it was not auto's choice) */
    int streamed;                /* ran in bands */
    run_stream_options stream_options;   /* streamed: where and within what */
    run_stream_report stream_report;
    exec_profile prof;           /* whole-image runs */
    run_times times;
    int has_jpeg_times;          /* nvJPEG was opened for this run */
    jpeg_gpu_open_times jpeg_times;
    char jpeg_description[128];
    io_warnings warnings;        /* what the decoder went on past */
    char fallback[1024];         /* "" or the GPU failure that sent the image to the CPU */
    char notes[RUN_NOTES_LEN];   /* lines worth telling once (newline-separated) */
    char stream_why[256];        /* why the image ran whole, for -v ("" when streamed) */
    /* On failure: the path the message is about (NULL: the message says it all), and whether
     * the pipeline or the options cannot take the image (a usage error) rather than the file. */
    const char *failed_path;
    int usage_error;
    int write_behind;            /* the write was handed on: the sink's on_written tells its outcome */
} run_result;

/* What a caller keeps from image to image (a folder's worker thread): an exec context on its
 * device, a CPU one for fallbacks, nvJPEG on the folder's pool. */
typedef struct run_worker run_worker;

typedef struct {
    exec_device device;
    int gpu;                     /* EXEC_GPU: the worker's device */
    jpeg_pool *jpeg;             /* nvJPEG shared by the workers of each GPU, or NULL */
    int cpu_fallback;            /* a GPU failure retries the image on the CPU */
    int pin_host;                /* decode into pinned buffers kept between images */
} run_worker_options;

int run_worker_create(run_worker **w, const run_options *o, const run_worker_options *wo, char *err, size_t errlen);
void run_worker_destroy(run_worker *w);
/* The worker's CUDA stream (NULL on the CPU): device results written into the caller's memory
 * are queued there, not waited for. */
void *run_worker_stream(run_worker *w);
/* Notes of the worker's context (a stage without a GPU path, say), then cleared; "" when none. */
const char *run_worker_notes(run_worker *w);
/* IP_OK when the worker's device context was made; else its error (every image would fail with it). */
int run_worker_ready(const run_worker *w, char *err, size_t errlen);

/* One image through p. w: NULL for a run of its own (the device chosen per o->device, the GPU
 * started beside decoding), or a worker whose contexts it reuses. IP_OK, or an error with err
 * saying what (without res->failed_path). p is planned for the image's shape. */
int run_image(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
              run_result *res, char *err, size_t errlen);

/* auto's device for an image of this shape in memory, as run_image would choose it (the cost
 * estimate); why says the reason in words. */
run_device run_choose_device(const plan *p, const ip_shape *shape, const run_options *o, char *why, size_t whylen);

/* The host memory a run may use by default: half the machine. */
uint64_t run_default_memory(void);
/* Threads the CPU path uses for o. */
int run_cpu_threads(const run_options *o);
/* Appends a line to res->notes. */
void run_note(run_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
