/* Memory for a streamed run: the band height that keeps it under a limit, and whether a global
 * stage (which holds the image whole) can fit at all. Decided before any pixel is decoded. */
#ifndef IMGPIPE_STREAM_BUDGET_H
#define IMGPIPE_STREAM_BUDGET_H
#include "stream/band.h"

#define STREAM_MAX_BAND_ROWS 256

/* Host memory a whole-image run of p needs (input, two stage buffers, scratch), roughly. */
uint64_t stream_whole_image_bytes(const plan *p);

/* The tallest band (1 .. STREAM_MAX_BAND_ROWS rows) whose buffers, with fixed_bytes the codecs
 * hold and row_bytes for each row of a band held besides the stages (bands queued for the
 * encoder), fit limit_bytes; IP_ELIMIT with a message when even one row does not, or when a global
 * stage's whole images do not (naming the stage, its line and the memory it needs). */
int stream_band_rows(const plan *p, const band_layout *l, uint64_t limit_bytes, uint64_t fixed_bytes, uint64_t row_bytes,
                     int *band_rows, char *err, size_t errlen);
/* What a streamed run may hold, and where its bands run. */
typedef struct {
    uint64_t limit_bytes;         /* host (--memory) */
    uint64_t fixed_bytes;         /* what the codecs hold besides the bands */
    uint64_t row_bytes;           /* held besides the stages for each row of a band (bands queued for the encoder) */
    band_place place;
    uint64_t device_limit_bytes;  /* BAND_ON_GPU: --gpu-memory, all workers together; 0: not bounded */
    int n_workers;                /* executors at once (0, 1: one) */
} stream_budget;

/* stream_band_rows for a budget: the band height (also each worker's chunk of rows) within both
 * limits; IP_ELIMIT naming the limit (and the global stage) that cannot be kept. */
int stream_band_rows_for(const plan *p, const band_layout *l, const stream_budget *b, int *band_rows, char *err,
                         size_t errlen);
/* Several workers: the rows of a worker's chunk, a multiple of band_rows up to STREAM_MAX_CHUNK_BANDS
 * bands that fits the budget and leaves each worker STREAM_CHUNKS_PER_WORKER chunks or more. A
 * chunk recomputes its halos (the segment's context rows above and below), so taller chunks waste
 * less: eight median radius=7 stages redo 112 rows for each chunk. band_rows with one worker. */
#define STREAM_MAX_CHUNK_BANDS 16
#define STREAM_CHUNKS_PER_WORKER 4
int stream_chunk_rows_for(const plan *p, const band_layout *l, const stream_budget *b, int band_rows);
/* Device bytes of the tallest bands stream_band_rows_for allows, for a report: what the
 * executors are sized to hold at once for band_rows. */
uint64_t stream_device_bytes(const plan *p, const band_layout *l, int n_workers, int band_rows);
/* "1.5 GiB", "256 MiB", "12 KiB". */
void stream_bytes_text(uint64_t bytes, char *buf, size_t len);
/* Parses SIZE: a number with an optional K, M, G or T (powers of 1024, B allowed after). */
int stream_parse_size(const char *text, uint64_t *bytes);
#endif
