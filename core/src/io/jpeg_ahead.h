/* A folder's JPEGs read and decoded ahead of its workers on one GPU: reader threads read each file
 * into pinned memory and check it, one decoder thread hands the engine batches of up to `batch`
 * files (the hardware decoder reaches its rate only on large batches, which a worker-fed decoder
 * never gathers), and the workers take the decoded images in the listing's order. A file the
 * engine does not take (progressive, damaged, turned by EXIF, too large) is left to the worker,
 * which reads it the usual way (nvJPEG's CUDA decoder or libjpeg-turbo), beside the batches.
 *
 * With cpu_help, a worker also decodes on the CPU (libjpeg-turbo) an entry the engine would make
 * it wait for longer than the workers' CPU decodes take, and every entry it reaches before the
 * engine is ready (the handle and its first state take 0.85 to 1.5 s): both decoders work at
 * once, at most half the cores' workers decoding on the CPU at a time.
 *
 * Memory is bounded: at most `batch` * 2 + `held` files are read, decoded or held at once, and
 * their device buffers are reused (grown to the largest image, within a device budget). */
#ifndef IMGPIPE_JPEG_AHEAD_H
#define IMGPIPE_JPEG_AHEAD_H
#include <stdint.h>
#include "io/jpeg_pool.h"

typedef struct jpeg_ahead jpeg_ahead;

enum { JPEG_AHEAD_READERS = 3 };   /* reader threads */

/* batch: the most files in one engine batch; held: how many images the workers may hold at once;
 * memory: the host bytes an image may hold in the run (--memory): an image a quarter of that or
 * more is left to its worker, which may stream it, and the pinned memory of the files read ahead
 * is kept within a quarter too. */
typedef struct {
    int batch, held;
    uint64_t memory;
    int cpu_help;   /* workers may take entries to decode on the CPU (jpeg_ahead_take's JPEG_AHEAD_ON_CPU) */
    int whole_parse;   /* readers parse whole files, not headers alone (to compare) */
} jpeg_ahead_limits;

/* paths[i] NULL: entry i is not read ahead. opt: the run's reading options (limits, autorotate;
 * its callbacks are not used). The threads wait for pool's handle on device; nothing is read
 * ahead when it cannot be opened. */
int jpeg_ahead_start(jpeg_ahead **out, jpeg_pool *pool, int device, int n, const char *const *paths,
                     const io_options *opt, const jpeg_ahead_limits *lim, char *err, size_t errlen);

typedef enum {
    JPEG_AHEAD_TAKEN,    /* *img: on the device (packed rows, the ahead's memory until jpeg_ahead_release) */
    JPEG_AHEAD_USUAL,    /* not read ahead: read the file the usual way */
    JPEG_AHEAD_ON_CPU    /* the worker decodes it on the CPU, then says how long with jpeg_ahead_cpu_took */
} jpeg_ahead_got;

/* Entry index's image, waiting for it unless the CPU is sooner (cpu_help). */
jpeg_ahead_got jpeg_ahead_take(jpeg_ahead *a, int index, ip_image *img);
/* A file handed over with JPEG_AHEAD_ON_CPU was decoded in ms (what later entries are weighed by),
 * or not (ms < 0); every such file is reported once. */
void jpeg_ahead_cpu_took(jpeg_ahead *a, double ms);
/* The worker is done with index's image (its stream has finished reading it). */
void jpeg_ahead_release(jpeg_ahead *a, int index);

typedef struct {
    long files, batches, not_ahead;   /* decoded ahead, in this many batches; left to the workers */
    long cpu_files;          /* handed to the workers' CPU decoders (cpu_help) */
    double cpu_ms;           /* their decoding time, summed */
    int largest_batch;
    double engine_ms;        /* the decoder thread's time in batches (their wait included) */
    double read_ms;          /* the readers' time reading and checking files, summed */
    double take_wait_ms;     /* the workers' time waiting for an image, summed */
    int states_at_open;      /* decoder states its threads made at their start (the engine's one) */
    /* the timeline, ms from jpeg_ahead_start (0: not reached) */
    double engine_handle_at; /* the shared handle there for the decoder thread */
    double engine_open_at;   /* the decoder thread's own stream and state made */
    double engine_ready_at;  /* and the full batch's state */
    double first_batch_at, first_batch_ms;   /* the first batch's start and length */
    double last_batch_end_at;
    /* the first batch's files: reading and checking them, of which their device memory and header */
    double first_read_ms, first_prepare_ms, first_prepared_at;
} jpeg_ahead_stats;
jpeg_ahead_stats jpeg_ahead_totals(jpeg_ahead *a);

/* How many images it may hold at once (each with its device buffer, kept for the next). */
int jpeg_ahead_slots(const jpeg_ahead *a);

/* Stops the threads (the workers must have released every image) and frees everything. */
void jpeg_ahead_stop(jpeg_ahead *a);
#endif
