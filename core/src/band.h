/* The band executor on the CPU: rows of an image flow through one segment of point, area and
 * reduction stages (band_plan.h) in order, each area stage keeping just the rows of context it
 * needs from one band to the next, so memory follows the band height, not the image. */
#ifndef IMGPIPE_BAND_H
#define IMGPIPE_BAND_H
#include "band_plan.h"

/* Where a segment's output rows go, in order from row 0, each row once. */
typedef struct {
    int (*rows)(void *user, const ip_image *rows, int y0, char *err, size_t errlen);
    void *user;
} band_sink;

/* Time spent in each step of the segment, summed over its bands. */
typedef struct {
    double stage_ms[64];
} band_times;

typedef struct band_segment band_segment;

/* For steps [seg->first, seg->last) of p (planned, none global). threads: OpenMP threads per
 * stage call; input_path: for stages that name outputs after it (histogram). */
int band_segment_create(band_segment **out, const plan *p, const band_seg *seg, int threads,
                        const char *input_path, char *err, size_t errlen);
void band_segment_destroy(band_segment *s);

/* Feeds the segment's input rows [y0, y0 + rows->shape.height), which must follow the rows fed
 * before. Every output row that can be made from what has arrived goes to sink before this
 * returns; once the last row has arrived, the reductions finish (and write what they write).
 * rows is only read during the call. */
int band_segment_push(band_segment *s, const ip_image *rows, int y0, const band_sink *sink, char *err,
                      size_t errlen);

/* Per-step times so far (index: step - seg->first). */
const band_times *band_segment_times(const band_segment *s);

/* Host bytes the segment holds for a band of band_rows input rows at a time, at most: each
 * area stage's context and output, each point stage's output, the scratch planned. */
size_t band_segment_bytes(const plan *p, const band_seg *seg, int band_rows);
#endif
