/* Inside the band executor: the state band.c drives, and the table of what differs between
 * host and device memory (band.c holds the host table, band_gpu.c the device one), so the
 * algorithm is written once. */
#ifndef IMGPIPE_BAND_INTERNAL_H
#define IMGPIPE_BAND_INTERNAL_H
#include "stream/band.h"
#include "exec/stage_call.h"

/* Rows of one shape at a fixed pitch, grown as needed; rows [lo, hi) of the image are held. */
typedef struct {
    unsigned char *data;
    size_t cap_rows, pitch;
    size_t hint_rows;          /* what a band of band_config.band_rows rows needs: allocated at once */
    int lo, hi;
} row_buf;

typedef struct {
    const plan_step *st;
    ip_stage_class cls;
    int halo;
    size_t in_row, out_row;
    int in_lo, in_hi;          /* the rows this step is fed in the current window */
    int out_lo, out_hi;        /* the rows it passes on: its input less halo rows at artificial edges */
    row_buf ctx;               /* area: input rows kept for context, and the new ones */
    row_buf out;               /* point, area: the stage's output for one call */
    int done;                  /* area: output rows made up to; point, reduction: input rows taken up to */
    void *total, *partial;     /* reduction, host memory */
    size_t partial_bytes;
} band_step;

typedef struct band_ops band_ops;

struct band_segment {
    const band_ops *ops;
    void *dev;                 /* the device table's state (band_gpu.c) */
    band_step *steps;
    int n, height;
    band_config cfg;
    stage_env env;             /* cfg's threads and input, and the device table's compute stream */
    band_window win;
    int fed;                   /* input rows pushed so far (up to win.in_hi) */
    void *scratch;             /* host table: run_cpu's scratch */
    size_t scratch_bytes;
    band_times times;
};

struct band_ops {
    size_t pitch_align;        /* rows of the segment's buffers start this many bytes apart at least */
    int (*alloc)(band_segment *s, void **ptr, size_t bytes, char *err, size_t errlen);
    void (*release)(band_segment *s, void *ptr, size_t bytes);
    /* Rows from src to dst in the segment's memory, in order with the stage work; they never overlap. */
    int (*copy)(band_segment *s, void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
                size_t rows, char *err, size_t errlen);
    /* One stage on rows in the segment's memory; needs as planned for this band. k: the step's index. */
    int (*run)(band_segment *s, int k, const ip_image *in, ip_image *out, const ip_needs *needs, char *msg,
               size_t msglen);
    /* reduce_band on rows in the segment's memory, adding into the zeroed host partial. */
    int (*reduce)(band_segment *s, int k, const ip_image *rows, void *partial, const ip_needs *needs, char *msg,
                  size_t msglen);
    /* Host rows in: a view of them in the segment's memory, valid through this push. */
    int (*feed)(band_segment *s, const ip_image *host_rows, ip_image *rows, char *err, size_t errlen);
    /* After step 0 has taken the fed rows: their buffer may be reused. */
    int (*fed_done)(band_segment *s, char *err, size_t errlen);
    /* The last step's rows out to the sink (the device table may hold them back one band). */
    int (*emit)(band_segment *s, const ip_image *rows, int y0, const band_sink *sink, char *err, size_t errlen);
    /* Everything held back goes to the sink. */
    int (*drain)(band_segment *s, const band_sink *sink, char *err, size_t errlen);
    void (*destroy)(band_segment *s);
};

/* The device table: its state made for cfg->gpu_index, timing up to n_steps steps. */
int band_gpu_attach(band_segment *s, int n_steps, char *err, size_t errlen);
/* Peak device bytes the device table has held (0 on the host). */
size_t band_gpu_peak(const band_segment *s);

/* Plans step k's stage for a band of rows input rows (a band is not the image it planned). */
int band_plan_rows(const band_step *b, int rows, ip_needs *needs, char *err, size_t errlen);
/* The segment's host scratch (run_cpu's, round trips' on a GPU), grown to bytes. */
int band_host_scratch(band_segment *s, size_t bytes, char *msg, size_t msglen);
#endif
