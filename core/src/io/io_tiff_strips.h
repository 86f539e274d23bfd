/* TIFF strips compressed by several threads and handed to a writer in strip order (beside a batch
 * codec, as they are done: TIFF's strip offsets let them lie in any order), with a bounded number
 * in flight (two a thread), so that memory stays the same for any image height.
 * A strip's compressed bytes come from a codec's function pointers: libdeflate or libtiff's own
 * encoders on the CPU (io_tiff_strip_cpu.c); a GPU compressor can take their place. The output
 * never depends on the thread count: every strip is compressed on its own. */
#ifndef IMGPIPE_IO_TIFF_STRIPS_H
#define IMGPIPE_IO_TIFF_STRIPS_H
#include <stddef.h>
#include <stdint.h>
#include "io/io.h"

/* The strips' layout: the whole image's shape, cut every rows_per_strip rows. */
typedef struct {
    ip_shape shape;
    uint32_t rows_per_strip;
    io_tiff_compression compression;
    int level;                   /* deflate: zlib's scale, 1-9 (--tiff-level); 0: the default (6) */
    struct tiff_fast_check *fast;   /* NULL: deflate at the asked level; else beside a card at a faster
                                       one, checked there (tiff_fast_check.h). tiff_strips_open sets
                                       its own where a batch codec's states opened */
} tiff_strip_format;

/* A compressed strip: data[0, len), cap allocated; a codec grows it with realloc as it needs. */
typedef struct {
    unsigned char *data;
    size_t len, cap;
} tiff_strip_bytes;

/* Grows out to hold need bytes (its bytes kept); IP_ENOMEM, saying so. */
int tiff_strip_bytes_grow(tiff_strip_bytes *out, size_t need, char *err, size_t errlen);

/* A strip compressor. open makes one thread's state (called once a thread, on the caller's
 * thread); compress turns strip `index`, len bytes of packed rows, into out's bytes and may
 * overwrite rows (the predictor works in place); several states compress at once. */
typedef struct tiff_strip_codec {
    int (*open)(const struct tiff_strip_codec *codec, const tiff_strip_format *f, void **state, char *err,
                size_t errlen);
    int (*compress)(void *state, uint32_t index, unsigned char *rows, size_t len, tiff_strip_bytes *out, char *err,
                    size_t errlen);
    void (*close)(void *state);
    void *user;   /* the codec's own */
} tiff_strip_codec;

/* One strip of a batch: len bytes of packed rows (the codec may overwrite them) into out. */
typedef struct {
    uint32_t index;
    unsigned char *rows;
    size_t len;
    tiff_strip_bytes *out;
} tiff_strip_job;

/* A compressor that takes many strips in one call (a GPU's), beside the threads' codec: each of
 * its states runs on a thread of its own and takes up to batch_bytes of consecutive queued strips
 * at once, once at least half that many are queued, so that it only takes on what the threads
 * leave waiting, and the threads then run at a lower priority (nice 10, IMGPIPE_TIFF_STRIP_NICE),
 * leaving the cores to the process's other threads first. open may decline the format
 * (IP_EUNSUPPORTED) or fail (a GPU out of memory): the states opened before it run, and with none
 * the threads compress every strip. With states open the threads' deflate runs at a faster level,
 * under a check of the writer's own (tiff_strip_format.fast). A strip's bytes depend on which side
 * took it (the pixels never do). */
typedef struct tiff_strip_batch_codec {
    int (*open)(const struct tiff_strip_batch_codec *codec, int which, const tiff_strip_format *f,
                uint32_t max_strips, void **state, char *err, size_t errlen);
    int (*compress)(void *state, tiff_strip_job *jobs, uint32_t n, char *err, size_t errlen);
    void (*close)(void *state);
    int states;             /* how many compress at once */
    uint64_t batch_bytes;   /* rows a call takes at most (whole strips, one at least) */
    uint64_t state_bytes;   /* host memory a state holds for batches of batch_bytes */
    uint64_t strip_bytes;   /* the strips it compresses fastest, which a writer may cut (0: any) */
    void *user;             /* the codec's own */
} tiff_strip_batch_codec;

/* Called in strip order, or beside a batch codec as strips are done (a batch would otherwise hold
 * the threads' later strips in their slots for its whole time): on a writing thread of the
 * strips' own where threads compress, else on the caller's. */
typedef int (*tiff_strip_write_fn)(void *user, uint32_t index, const unsigned char *data, size_t len, char *err,
                                   size_t errlen);

typedef struct tiff_strips tiff_strips;

/* Threads compressing, and strips in flight (each one's rows and compressed bytes held). */
typedef struct {
    int threads;
    uint32_t slots;
    const tiff_strip_batch_codec *batch;   /* NULL: the threads alone */
    uint32_t batch_strips;                 /* the most strips a batch call takes */
} tiff_strips_plan;

/* Two strips in flight a thread, fewer where that would hold more than `hold` bytes (0: no
 * bound; one strip at least), no more than the image has; no more threads than strips. */
tiff_strips_plan tiff_strips_plan_for(const tiff_strip_format *f, int threads, uint64_t hold);
/* As tiff_strips_plan_for, with batch's states beside the threads (batch NULL: the same): room
 * for a batch a state and one more queued besides the threads' strips. Without room for batches of 16
 * strips within hold, or an image of fewer than two batches, the threads alone. */
tiff_strips_plan tiff_strips_plan_with(const tiff_strip_format *f, int threads, uint64_t hold,
                                       const tiff_strip_batch_codec *batch);
/* Rows a strip where batch (NULL: none) may take part: the strips it prefers where the image holds
 * two of its batches, the same rule as tiff_strips_plan_with's; else `rows`. */
uint32_t tiff_strips_rows_with(const ip_shape *shape, uint32_t rows, const tiff_strip_batch_codec *batch);
/* What tiff_strips_open holds for f with this plan: the strips in flight and the codec states. */
uint64_t tiff_strips_held_bytes(const tiff_strip_format *f, const tiff_strips_plan *plan);

/* plan.threads <= 1 and no batch codec: every strip compressed and written on the caller's
 * thread, as it is submitted. */
int tiff_strips_open(tiff_strips **out, const tiff_strip_codec *codec, const tiff_strip_format *f,
                     const tiff_strips_plan *plan, tiff_strip_write_fn write, void *user, char *err, size_t errlen);
/* The next strip's buffer (rows_per_strip packed rows), waiting while every buffer is in flight.
 * Fails with the first failure of any strip once there is one. */
int tiff_strips_claim(tiff_strips *p, unsigned char **rows, char *err, size_t errlen);
/* The claimed buffer, holding len bytes of rows, goes to be compressed as the next strip. */
int tiff_strips_submit(tiff_strips *p, size_t len, char *err, size_t errlen);
/* As submit, the claimed buffer filled from `rows` rows at src, stride bytes apart, by the thread
 * that compresses it (the caller's own copy is not serial): src must stay until finish. */
int tiff_strips_submit_from(tiff_strips *p, const unsigned char *src, ptrdiff_t stride, uint32_t rows, char *err,
                            size_t errlen);
/* Waits until every submitted strip is written; the first failure (the lowest strip's) if any. */
int tiff_strips_finish(tiff_strips *p, char *err, size_t errlen);
/* Stops the threads (strips not yet written are dropped) and frees everything; NULL is fine. */
void tiff_strips_close(tiff_strips *p);
#endif
