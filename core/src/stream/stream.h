/* A streamed run of a whole pipeline: rows come from a source (a decoder reading the file band by
 * band, or an image in memory), flow through the band segments (on the CPU or a GPU, by one
 * worker or dealt to several), are held whole only before a global stage, and go to a sink (an
 * encoder writing band by band, or memory). */
#ifndef IMGPIPE_STREAM_H
#define IMGPIPE_STREAM_H
#include "stream/band.h"
#include "stream/band_workers.h"
#include "exec/exec.h"

typedef struct {
    /* The next rows of the image in order: *rows valid until the next call, *y0 its first row;
     * a height of 0 at the end. */
    int (*next)(void *user, ip_image *rows, int *y0, char *err, size_t errlen);
    void *user;
    /* Optional (NULL: next, then a copy where the rows must be kept): the next rows decoded
     * straight into dst, packed rows with room for band.height of them; dst's height then says
     * how many came. */
    int (*next_into)(void *user, ip_image *dst, int *y0, char *err, size_t errlen);
    ip_shape band;            /* next_into's rows: a row's shape, and the most rows one call gives */
} stream_source;

typedef struct {
    int band_rows;            /* rows pushed through the stages at a time (>= 1) */
    int threads;              /* OpenMP threads per stage call */
    const char *input_path;
    band_place place;         /* where segments (and global stages) run; BAND_ON_HOST: the CPU */
    int n_workers;            /* > 1: each segment's rows dealt to that many workers (0, 1: one) */
    int gpu_ids[BAND_MAX_WORKERS];   /* BAND_ON_GPU: worker i's device */
    /* > 0: the source and the sink run on threads of their own (stream_overlap.h), with this many
     * bands queued on each side, the one in use included (>= 2); 0: all on the calling thread */
    int overlap_slots;
    int sink_rows;            /* rows of a queued band on the sink's side (0: band_rows) */
    int chunk_rows;           /* several workers: the rows dealt to one at a time (0: band_rows) */
} stream_options;

typedef struct {
    double source_ms, sink_ms, wall_ms;   /* time in the source (decoding), the sink (encoding), all */
    double stage_ms[EXEC_MAX_STAGES];
    int stage_on_gpu[EXEC_MAX_STAGES];   /* 1: run_gpu; 0: run_cpu (a round trip in a GPU run) */
    /* With the source and sink on threads of their own: the time the stages' thread waited for
     * decoded bands, and spent handing rows to the encoder (waiting for a free slot included). */
    double source_wait_ms, sink_wait_ms;
    int overlapped;
    int n_stages;
    int segments;
    size_t gpu_peak_bytes;    /* the most device memory the executors held at once (workers summed) */
    int n_workers;            /* > 1: the rows were dealt to workers, whose shares (summed over the
                               * segments) follow */
    band_worker_stat workers[BAND_MAX_WORKERS];
    band_workers_waits chunk_waits;   /* the workers' chunks: where they stood still (summed) */
} stream_profile;

/* Runs p (planned for the source's image) from src to sink. prof may be NULL. */
int stream_run(const plan *p, const stream_source *src, const band_sink *sink, const stream_options *o,
               stream_profile *prof, char *err, size_t errlen);

/* A source over an image in memory, band_rows rows at a time (views, no copy). */
typedef struct {
    const ip_image *img;
    int band_rows, next_row;
} stream_image_source;
stream_source stream_source_of_image(stream_image_source *s, const ip_image *img, int band_rows);

/* A sink that collects the rows into an image allocated for shape (packed); img_free it. */
typedef struct {
    ip_image img;
    int rows_in;
} stream_image_sink;
int stream_image_sink_init(stream_image_sink *s, const ip_shape *shape, char *err, size_t errlen);
band_sink stream_sink_of_image(stream_image_sink *s);
#endif
