/* Folders and file lists: a work queue of images run by worker threads, each with its own
 * buffers (and GPU stream), so decoding, GPU work and encoding of different images overlap. */
#ifndef IMGPIPE_BATCH_H
#define IMGPIPE_BATCH_H
#include <signal.h>
#include <stdint.h>
#include "exec/exec.h"
#include "io/io.h"
#include "plan/plan.h"
#include "run/run.h"

#define BATCH_MAX_GPUS 64

typedef struct {
    const char *input;          /* a folder, or @FILE listing one path a line */
    const char *output_dir;
    int recursive;              /* descend into subfolders, recreating them under output_dir */
    io_format format;           /* IO_FMT_UNKNOWN: each input's own format */
    int jobs;                   /* images in flight */
    int resume;                 /* skip inputs whose output exists */
    exec_device device;
    /* EXEC_GPU: of the jobs workers, those on the GPU (0: all); the rest are CPU workers taking
     * images from the same queue, each with `threads` OpenMP threads. */
    int gpu_workers;
    int arrange_by_rates;       /* measure the arrangements on the first images, keep the fastest */
    const char *arrangement_why;   /* the estimate, said with the arrangement chosen */
    int gpu_ids[BATCH_MAX_GPUS];
    int n_gpus;
    int threads;                /* OpenMP threads per image; 0: the cores shared among jobs */
    exec_transfer transfer;
    int cpu_fallback;           /* a GPU failure retries the image on the CPU */
    int jpeg_on_gpu;            /* JPEG decoded and encoded by nvJPEG on the GPU where it can */
    run_codecs codecs;          /* --codecs: nvCOMP for TIFF and PNG on GPU workers (auto) or not (cpu) */
    int verbose;                /* -v or --profile: notes on how the codecs ran */
    int no_fuse;                /* --no-fuse: no run-time fusion of GPU stages */
    int shard_index, shard_count;   /* --shard I/N (count 0 or 1: every image) */
    int all_pages;              /* each page of a multi-page TIFF to OUT/STEM-pN.EXT (else io.page) */
    int strip;                  /* carry no metadata from the inputs to the outputs */
    run_stream_mode stream;     /* an image streams as run_image decides for one image */
    uint64_t memory;            /* host bytes an image may hold (0: half the machine) */
    io_options io;
    volatile sig_atomic_t *stop;   /* set (by a signal handler) to stop taking new images */
} batch_options;

typedef struct {
    int total;                  /* images to process */
    int done, failed, resumed;  /* resumed: skipped because their output existed */
    int not_images;             /* files skipped as not PNG, JPEG or TIFF */
    int warned;                 /* of those done, decoded past damage with a warning */
    int on_gpu, on_cpu;         /* images run (done or failed) by GPU workers and by CPU workers */
    uint64_t bytes_in;          /* input bytes of the images done */
    double elapsed_s;
    int stopped;                /* interrupted before the queue was empty */
    const char *last;           /* in a progress call: the image just reported (and page); else NULL */
} batch_progress;

typedef struct {
    /* Called with a lock held, after each image, from worker threads. */
    void (*progress)(void *user, const batch_progress *p);
    void (*failure)(void *user, const char *path, const char *message);
    void (*note)(void *user, const char *message);
    void (*warning)(void *user, const char *path, const io_warnings *w);   /* decoded with warnings */
    void *user;
} batch_callbacks;

/* One image of a run: its input, its path below the input folder, and its output. */
typedef struct {
    char *in, *rel, *out;       /* rel: the input's path below the input folder */
    uint64_t size;              /* of a multi-page file, counted with its first page */
    io_format fmt;
    uint32_t page;              /* --all-pages: the page to read */
    int paged;                  /* one of several pages: the output is named STEM-pN */
} batch_entry;

typedef struct {
    batch_entry *items;
    int n;
    int not_images;             /* files skipped as not PNG, JPEG or TIFF */
} batch_listing;

/* Where workers take their images from when not from a listing of their own (the ranks of an MPI
 * run): take blocks until an image is there and returns NULL when none will come or the run
 * stops; finished is called once for every image taken. Both are called from worker threads. */
typedef struct {
    const batch_entry *(*take)(void *user);
    void (*finished)(void *user, const batch_entry *e, int rc, int resumed, const char *message);
    void *user;
} batch_feed;

/* Whether the argument names a batch input (a folder or @list) rather than one image. */
int batch_is_batch_input(const char *input);

/* Runs every image; returns IP_OK when the run could start (individual failures are counted in
 * *result and reported through cb), or an error with a message (nothing processed) when the
 * input cannot be listed, the output folder cannot be made, or an output would overwrite an
 * input. */
int batch_run(const batch_options *o, const plan *p, const batch_callbacks *cb, batch_progress *result,
              char *err, size_t errlen);

/* The first half of batch_run: lists the input (with --shard) and prepares the output folders. */
int batch_list(const batch_options *o, batch_listing *l, char *err, size_t errlen);
void batch_listing_free(batch_listing *l);

/* Runs o->jobs workers over the images feed hands out, until it has none; only cb->note is used. */
int batch_run_fed(const batch_options *o, const plan *p, const batch_feed *feed, const batch_callbacks *cb,
                  char *err, size_t errlen);
#endif
