/* One image file to another, streamed in bands of rows on the CPU or a GPU: the streaming reader,
 * the band executor and the streaming writer (or the whole-image writer for a format not written
 * in bands), within memory limits decided before any pixel is decoded. */
#ifndef IMGPIPE_RUN_STREAM_H
#define IMGPIPE_RUN_STREAM_H
#include "io/io.h"
#include "io/tiff_band_decode.h"
#include "io/tiff_gpu_strips.h"
#include "stream/stream.h"

typedef struct {
    io_options io;
    int threads;              /* stage threads */
    uint64_t memory_limit;    /* host bytes */
    band_place place;         /* where the bands run */
    uint64_t gpu_memory_limit;   /* BAND_ON_GPU: device bytes, all workers together; 0: not bounded */
    int n_workers;            /* > 1: one image's rows dealt to that many workers */
    int gpu_ids[BAND_MAX_WORKERS];   /* BAND_ON_GPU: worker i's device */
} run_stream_options;

typedef struct {
    stream_profile prof;
    int band_rows;
    int chunk_rows;           /* several workers: the rows dealt to one at a time; 0: one worker */
    uint64_t planned_bytes;   /* what the band buffers, codecs and held images were sized to */
    uint64_t planned_device_bytes;   /* BAND_ON_GPU: what the band executors were sized to */
    tiff_gpu_strips_stat gpu_strips;  /* TIFF strips the GPUs compressed (the run layer's) */
    tiff_band_decode_stat gpu_bands;  /* the input's bands given to a band decoder */
    int output_failed;        /* the run failed making, writing or finishing the output file */
} run_stream_report;

/* Opens in (in_path's file, opened once by the caller) for streaming and plans p on its shape: IP_EUNSUPPORTED (nothing read beyond the
 * header, nothing written) when the file is not read in bands, so the caller can take the
 * whole-image path; IP_EINVAL when the pipeline cannot take the image or the output cannot hold
 * the result; the reader's errors otherwise, as io_read's. */
typedef struct run_stream run_stream;
int run_stream_open(run_stream **rs, plan *p, io_input *in, const char *in_path, const char *out_path,
                    const run_stream_options *o, ip_shape *in_shape, char *err, size_t errlen);
/* Where the bands run and on how many workers (o's place, n_workers, gpu_ids, gpu_memory_limit
 * and threads, and io's tiff_strip_batch), decided once the shape is known; before
 * run_stream_budget. */
void run_stream_set_placement(run_stream *rs, const run_stream_options *o);
/* The input's bands decoded by d before libtiff (io_stream_set_band_decoder); call before
 * run_stream_budget, and keep d until the stream ends. */
int run_stream_set_band_decoder(run_stream *rs, const tiff_band_decoder *d, char *why, size_t whylen);
/* What a whole-image run of the planned pipeline would hold in host memory. */
uint64_t run_stream_whole_bytes(const run_stream *rs);
/* Chooses the band height for o->memory_limit (and o->gpu_memory_limit on a GPU): IP_ELIMIT, saying why, when the run cannot fit
 * (a global stage's whole image, say), still before any pixel is decoded. */
int run_stream_budget(run_stream *rs, char *err, size_t errlen);
/* Runs it to the end (after run_stream_budget); the output exists only when this succeeds. Frees rs. */
int run_stream_finish(run_stream *rs, run_stream_report *rep, char *err, size_t errlen);
void run_stream_cancel(run_stream *rs);
#endif
