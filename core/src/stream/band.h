/* The band executor: rows of an image flow through one segment of point, area and reduction
 * stages (band_plan.h) in order, each area stage keeping just the rows of context it needs from
 * one band to the next, so memory follows the band height, not the image. The segment runs on
 * the CPU or on a GPU (device row buffers, run_gpu), and over the whole image or over a window
 * of it (one worker's chunk of rows with the context its stages need). */
#ifndef IMGPIPE_BAND_H
#define IMGPIPE_BAND_H
#include "stream/band_plan.h"

/* Where a segment's output rows go, in order from the window's first output row, each row once. */
typedef struct {
    int (*rows)(void *user, const ip_image *rows, int y0, char *err, size_t errlen);
    void *user;
} band_sink;

/* Time spent in each step of the segment, summed over its bands (on a GPU: measured by events). */
typedef struct {
    double stage_ms[64];
} band_times;

typedef enum { BAND_ON_HOST, BAND_ON_GPU } band_place;

typedef struct {
    band_place place;
    int gpu_index;            /* BAND_ON_GPU: the device */
    int threads;              /* OpenMP threads per CPU stage call */
    const char *input_path;   /* for stages that name outputs after it (histogram) */
    int band_rows;            /* the most rows pushed at once, if known (0: not), so buffers are sized once */
} band_config;

/* The rows a segment is fed, [in_lo, in_hi), and the rows it makes and its reductions count,
 * [own_lo, own_hi). Context rows at an edge of the window that is not an edge of the image are
 * artificial: the rows an area stage gets wrong there are exactly the ones it does not pass on. */
typedef struct {
    int in_lo, in_hi, own_lo, own_hi;
} band_window;

band_window band_window_whole(int height);
/* Output rows [lo, hi) with halo_sum rows of context either side, clamped to the image. */
band_window band_window_of(int lo, int hi, int halo_sum, int height);

typedef struct band_segment band_segment;

/* For steps [seg->first, seg->last) of p (planned, none global), over the whole image. */
int band_segment_create(band_segment **out, const plan *p, const band_seg *seg, const band_config *cfg, char *err,
                        size_t errlen);
void band_segment_destroy(band_segment *s);

/* Starts the segment over window w (after the previous window's last row): buffers and the
 * reductions' totals are kept. w must lie in the image, own inside in. */
int band_segment_start(band_segment *s, const band_window *w, char *err, size_t errlen);

/* Feeds host rows [y0, y0 + rows->shape.height) of the window, following the rows fed before.
 * Every output row that can be made from what has arrived goes to sink, on the CPU before this
 * returns, on a GPU by the next push (the device works on this band while the caller decodes
 * the next); all of them once the window's last row has arrived. rows is only read during the
 * call. */
int band_segment_push(band_segment *s, const ip_image *rows, int y0, const band_sink *sink, char *err,
                      size_t errlen);

/* Adds from's reduction totals into into's (the same plan and segment). */
void band_segment_merge(band_segment *into, const band_segment *from);
/* The reductions finish on their totals (and write what they write). Once, after the last row. */
int band_segment_finish(band_segment *s, char *err, size_t errlen);

/* Per-step times so far (index: step - seg->first). */
const band_times *band_segment_times(const band_segment *s);
/* Peak device bytes the segment has held (0 on the CPU). */
size_t band_segment_device_peak(const band_segment *s);

/* Host bytes the segment holds for a band of band_rows input rows at a time, at most: on the CPU
 * each area stage's context and output, each point stage's output, the scratch planned; on a GPU
 * the pinned staging of rows in and out and the rows of round trips. */
size_t band_segment_bytes(const plan *p, const band_seg *seg, band_place place, int band_rows);
/* Device bytes a GPU segment holds for bands of band_rows rows: row buffers at the device pitch,
 * the ring of input bands, the stages' device scratch planned for a band. */
size_t band_segment_device_bytes(const plan *p, const band_seg *seg, int band_rows);
#endif
