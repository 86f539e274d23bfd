#define _POSIX_C_SOURCE 200809L
#include "io/jpeg_ahead.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/mono_clock.h"
#include "gpu/gpu.h"
#include "io/meta.h"

enum { AH_QUEUED, AH_READING, AH_PREPARED, AH_DECODING, AH_READY, AH_TAKEN, AH_NOT, AH_DONE, AH_CPU };
#define FILE_MAX ((size_t)256 << 20)          /* larger files are left to the workers */
#define DEVICE_BUDGET_MAX ((size_t)8 << 30)   /* device memory for images read ahead, at most */
#define HOST_BUDGET_MAX ((size_t)2 << 30)     /* pinned memory for the files read, at most */
#define ENGINE_MS_PER_BYTE 1e-6               /* the engine's time a compressed byte until measured (H100: 1 GB/s) */

/* A file on its way: its bytes in pinned memory, then its decoded image in device memory. */
typedef struct {
    unsigned char *host;
    size_t host_bytes, len;
    jpeg_gpu_buffer dev;
    jpeg_gpu_ready ready;
    ip_image img;
} ah_slot;

struct jpeg_ahead {
    jpeg_pool *pool;
    int device, n, batch, n_slots;
    const char *const *paths;
    io_options opt;
    unsigned char *state;    /* per entry */
    int *slot_of;            /* per entry, while it holds a slot */
    ah_slot *slots;
    int *free_slots, n_free;
    int next_read;           /* the next entry a reader claims */
    int reading, prepared;   /* entries in those states */
    int decode_from;         /* entries before it are past decoding */
    int urgent;              /* a worker waits for a prepared entry */
    int broken;              /* nvJPEG is not there: nothing is read ahead */
    int decoder_done;        /* the decoder thread has ended: nothing more is decoded */
    int stop;
    int cpu_help;            /* workers may decode entries on the CPU */
    int whole_parse;         /* readers parse whole files, not headers */
    int on_cpu, cpu_max;     /* entries being decoded on the CPU; the most at once once the engine runs */
    int engine_ready;        /* the decoder thread has its handle and batch states */
    size_t inflight_bytes;   /* compressed bytes of the batch being decoded (0: none) */
    double inflight_since;   /* when that batch began, ms */
    double engine_bytes;     /* compressed bytes decoded by the engine, summed */
    double started_at;       /* jpeg_ahead_start's time, ms */
    size_t dev_bytes, dev_budget;
    size_t host_bytes, host_budget;   /* pinned memory of the files read */
    uint64_t image_cap;               /* a decoded image this large or larger is left to its worker */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t readers[JPEG_AHEAD_READERS], decoder;
    int n_readers, decoder_started;
    jpeg_ahead_stats stats;
};

/* A handle of the thread's own on the pool's, with a stream of its own (the pool's opens on its
 * own thread: this waits for it); *handle_at, unless NULL: when the pool's was there, ms from the
 * start. */
static jpeg_gpu *open_own(jpeg_ahead *a, unsigned uses, void **stream, double *handle_at)
{
    *stream = NULL;
    char why[256];
    jpeg_gpu *shared = jpeg_pool_handle(a->pool, a->device, NULL), *g = NULL;
    if (handle_at) *handle_at = now_ms() - a->started_at;
    if (!shared || !jpeg_gpu_has_hardware(shared) || gpu_select(a->device, why, sizeof why) != IP_OK) return NULL;
    if (gpu_stream_create(stream, why, sizeof why) != IP_OK) return NULL;
    if (jpeg_gpu_open_shared(&g, shared, *stream, uses, why, sizeof why) != IP_OK) {
        gpu_stream_destroy(*stream);
        *stream = NULL;
        return NULL;
    }
    pthread_mutex_lock(&a->lock);
    a->stats.states_at_open += jpeg_gpu_times(g).decoder_made;
    pthread_mutex_unlock(&a->lock);
    return g;
}

static void close_own(jpeg_gpu *g, void *stream)
{
    jpeg_gpu_close(g);
    if (stream) gpu_stream_destroy(stream);
}

/* Lock held. */
static void give_back_slot(jpeg_ahead *a, int entry)
{
    a->free_slots[a->n_free++] = a->slot_of[entry];
    a->slot_of[entry] = -1;
}

/* The next entry to read and a slot for it (lock held); entries not read ahead are passed over. */
static int claim(jpeg_ahead *a, int *entry, int *slot)
{
    while (a->next_read < a->n && (a->broken || !a->paths[a->next_read] || a->state[a->next_read] != AH_QUEUED)) {
        if (a->state[a->next_read] == AH_QUEUED) a->state[a->next_read] = AH_NOT;
        a->next_read++;
        pthread_cond_broadcast(&a->changed);
    }
    if (a->next_read >= a->n || a->n_free == 0) return 0;
    *entry = a->next_read++;
    *slot = a->free_slots[--a->n_free];
    a->slot_of[*entry] = *slot;
    a->state[*entry] = AH_READING;
    a->reading++;
    return 1;
}

/* Counts a buffer of had bytes grown to want into *used, if that stays within budget. */
static int reserve(jpeg_ahead *a, size_t *used, size_t budget, size_t had, size_t want)
{
    pthread_mutex_lock(&a->lock);
    int fits = *used - had + want <= budget;
    if (fits) *used = *used - had + want;
    pthread_mutex_unlock(&a->lock);
    return fits;
}

/* A reserved buffer that could not be made: the old one was freed first, so neither is held. */
static void unreserve(jpeg_ahead *a, size_t *used, size_t want)
{
    pthread_mutex_lock(&a->lock);
    *used -= want;
    pthread_mutex_unlock(&a->lock);
}

/* The slot's pinned buffer grown to hold size bytes, within the pinned budget. */
static int grow_host(jpeg_ahead *a, ah_slot *s, size_t size)
{
    if (s->host_bytes >= size) return 1;
    size_t want = size + size / 4;
    if (!reserve(a, &a->host_bytes, a->host_budget, s->host_bytes, want)) return 0;
    gpu_host_free(s->host);
    s->host = NULL;
    s->host_bytes = 0;
    if (gpu_host_alloc((void **)&s->host, want, 0, NULL, 0) != IP_OK) {
        unreserve(a, &a->host_bytes, want);
        return 0;
    }
    s->host_bytes = want;
    return 1;
}

/* Reads the whole file into the slot's pinned buffer (grown as needed). */
static int read_file(jpeg_ahead *a, ah_slot *s, const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (size_t)st.st_size <= FILE_MAX;
    size_t size = ok ? (size_t)st.st_size : 0;
    if (ok) ok = grow_host(a, s, size);
    size_t got = 0;
    while (ok && got < size) {
        ssize_t r = read(fd, s->host + got, size - got);
        if (r <= 0) ok = 0;
        else got += (size_t)r;
    }
    close(fd);
    s->len = got;
    return ok;
}

typedef struct {
    jpeg_ahead *a;
    ah_slot *s;
} slot_memory;

/* The slot's device buffer, grown within the budget (a file that does not fit is left to its
 * worker). */
static int slot_alloc(void *user, int index, size_t bytes, void **dev, char *err, size_t errlen)
{
    (void)index;
    slot_memory *m = user;
    jpeg_ahead *a = m->a;
    if (bytes >= a->image_cap) {   /* its worker decides whether to stream it */
        snprintf(err, errlen, "a large image: left to its worker");
        return IP_ENOMEM;
    }
    size_t had = m->s->dev.bytes;
    if (had < bytes && !reserve(a, &a->dev_bytes, a->dev_budget, had, bytes)) {
        snprintf(err, errlen, "over the read-ahead's device memory");
        return IP_ENOMEM;
    }
    int rc = jpeg_gpu_buffer_alloc(&m->s->dev, 0, bytes, dev, err, errlen);
    if (rc != IP_OK && had < bytes) unreserve(a, &a->dev_bytes, bytes);
    return rc;
}

/* Whether the file goes to the engine: read, its EXIF orientation upright (nothing turns pixels
 * on the device), checked and given its device memory. */
static int read_and_prepare(jpeg_ahead *a, jpeg_gpu *g, const char *path, ah_slot *s, double *prepare_ms)
{
    if (!read_file(a, s, path)) return 0;
    double t0 = now_ms();
    if (a->opt.autorotate) {
        io_meta m;
        meta_init(&m);
        int upright = meta_read_jpeg_bytes(s->host, s->len, &m) == IP_OK && m.orientation == 1;
        meta_clear(&m);
        if (!upright) return 0;
    }
    slot_memory mem_user = { a, s };
    jpeg_gpu_memory mem = { slot_alloc, &mem_user };
    char err[256];
    int rc = a->whole_parse ? jpeg_gpu_prepare(g, s->host, s->len, &a->opt, &mem, &s->img, &s->ready, err, sizeof err)
                            : jpeg_gpu_prepare_header(g, s->host, s->len, &a->opt, &mem, &s->img, &s->ready, err,
                                                      sizeof err);
    *prepare_ms = now_ms() - t0;
    return rc == IP_OK && s->ready.hardware;
}

static void *reader_main(void *arg)
{
    jpeg_ahead *a = arg;
    void *stream;
    /* a reader only parses: its parser is made at its first file, and no decoder state, which
     * nvJPEG makes one at a time (0.1-0.25 s each) while the engine's waits behind them */
    jpeg_gpu *g = open_own(a, 0, &stream, NULL);
    pthread_mutex_lock(&a->lock);
    if (!g) a->broken = 1;
    for (;;) {
        int entry = -1, slot = -1;
        while (!a->stop && a->next_read < a->n && !claim(a, &entry, &slot)) pthread_cond_wait(&a->changed, &a->lock);
        if (entry < 0) break;   /* stopped, or every entry claimed */
        pthread_mutex_unlock(&a->lock);
        double t0 = now_ms(), prepare_ms = 0;
        int ok = read_and_prepare(a, g, a->paths[entry], &a->slots[slot], &prepare_ms);
        double took = now_ms() - t0;
        pthread_mutex_lock(&a->lock);
        a->reading--;
        a->stats.read_ms += took;
        if (entry < a->batch) {
            a->stats.first_read_ms += took;
            a->stats.first_prepare_ms += prepare_ms;
            a->stats.first_prepared_at = now_ms() - a->started_at;
        }
        if (ok && !a->decoder_done) {
            a->state[entry] = AH_PREPARED;
            a->prepared++;
        } else {
            a->state[entry] = AH_NOT;
            a->stats.not_ahead++;
            give_back_slot(a, entry);
        }
        pthread_cond_broadcast(&a->changed);
    }
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
    close_own(g, stream);
    return NULL;
}

/* Whether the decoder should run what is prepared now (lock held): a full batch, or all there will
 * be for a while (the readers are done or out of slots), or a worker waiting for one of them. */
static int batch_due(const jpeg_ahead *a)
{
    if (a->prepared >= a->batch) return 1;
    int readers_done = a->next_read >= a->n && a->reading == 0;
    return a->prepared > 0 && (readers_done || a->n_free == 0 || a->urgent);
}

static int nothing_left(const jpeg_ahead *a)
{
    return a->broken || (a->next_read >= a->n && a->reading == 0 && a->prepared == 0);
}

/* A full batch, else 8 or 1 files: the engine keeps a state, with its own device memory, for each
 * batch size it sees, so only these three are used, each made once (the full one before the first
 * batch): device memory then stays flat over a folder. */
enum { SMALL_BATCH = 8 };
static int batch_size(const jpeg_ahead *a)
{
    int k = a->prepared < a->batch ? a->prepared : a->batch;
    return k == a->batch ? k : k >= SMALL_BATCH ? SMALL_BATCH : 1;
}

/* The k lowest prepared entries, marked as decoding (lock held). */
static int collect(jpeg_ahead *a, int k, int *entries, jpeg_gpu_ready *ready)
{
    int got = 0;
    for (int i = a->decode_from; i < a->next_read && got < k; i++) {
        if (a->state[i] != AH_PREPARED) continue;
        a->state[i] = AH_DECODING;
        entries[got] = i;
        ready[got++] = a->slots[a->slot_of[i]].ready;
    }
    a->prepared -= got;
    a->urgent = 0;
    while (a->decode_from < a->next_read && a->state[a->decode_from] >= AH_DECODING) a->decode_from++;
    return got;
}

static void finish_batch(jpeg_ahead *a, int k, const int *entries, const int *rcs, double took)
{
    for (int j = 0; j < k; j++) {
        if (rcs[j] == IP_OK) {
            a->state[entries[j]] = AH_READY;
            a->stats.files++;
        } else {
            a->state[entries[j]] = AH_NOT;
            a->stats.not_ahead++;
            give_back_slot(a, entries[j]);
        }
    }
    double end = now_ms() - a->started_at;
    if (a->stats.batches == 0) {
        a->stats.first_batch_at = end - took;
        a->stats.first_batch_ms = took;
    }
    a->stats.last_batch_end_at = end;
    a->stats.batches++;
    a->stats.engine_ms += took;
    if (k > a->stats.largest_batch) a->stats.largest_batch = k;
    pthread_cond_broadcast(&a->changed);
}

static void *decoder_main(void *arg)
{
    jpeg_ahead *a = arg;
    void *stream;
    double handle_at;
    jpeg_gpu *g = open_own(a, JPEG_GPU_DECODE, &stream, &handle_at);
    int *entries = malloc((size_t)a->batch * sizeof *entries), *rcs = malloc((size_t)a->batch * sizeof *rcs);
    jpeg_gpu_ready *ready = malloc((size_t)a->batch * sizeof *ready);
    int usable = g && entries && rcs && ready;
    double open_at = now_ms() - a->started_at;
    if (usable) jpeg_gpu_batch_warm(g, a->batch);   /* while the readers read the first files */
    /* the small batches' states are made the first time the engine would wait: made before the
     * first batch, beside 16 starting workers, they held it back by 0.8 s */
    int small_made = !usable;
    pthread_mutex_lock(&a->lock);
    if (!usable) a->broken = 1;
    a->engine_ready = usable;
    a->stats.engine_handle_at = handle_at;
    a->stats.engine_open_at = open_at;
    a->stats.engine_ready_at = now_ms() - a->started_at;
    pthread_cond_broadcast(&a->changed);
    for (;;) {
        while (!a->stop && !batch_due(a) && !nothing_left(a)) {
            if (small_made) {
                pthread_cond_wait(&a->changed, &a->lock);
            } else {
                pthread_mutex_unlock(&a->lock);
                if (a->batch > SMALL_BATCH) jpeg_gpu_batch_warm(g, SMALL_BATCH);
                if (a->batch > 1) jpeg_gpu_batch_warm(g, 1);
                pthread_mutex_lock(&a->lock);
                small_made = 1;
            }
        }
        if (a->stop || a->broken || !batch_due(a)) break;
        int k = collect(a, batch_size(a), entries, ready);
        a->inflight_since = now_ms();
        a->inflight_bytes = 0;
        for (int j = 0; j < k; j++) a->inflight_bytes += a->slots[a->slot_of[entries[j]]].len;
        pthread_mutex_unlock(&a->lock);
        char err[256];
        double t0 = now_ms();
        jpeg_gpu_decode_ready(g, k, ready, rcs, err, sizeof err);
        double took = now_ms() - t0;
        pthread_mutex_lock(&a->lock);
        a->engine_bytes += (double)a->inflight_bytes;
        a->inflight_bytes = 0;
        finish_batch(a, k, entries, rcs, took);
    }
    /* whatever is still prepared goes to its worker */
    for (int i = a->decode_from; i < a->next_read; i++)
        if (a->state[i] == AH_PREPARED) {
            give_back_slot(a, i);
            a->state[i] = AH_NOT;
        }
    a->prepared = 0;
    a->decoder_done = 1;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
    free(entries);
    free(rcs);
    free(ready);
    close_own(g, stream);
    return NULL;
}

/* When the engine would have entry index decoded, in ms from now (lock held; it is prepared, or
 * not yet read and so behind every prepared file): the batch in flight, then the prepared files
 * before it up to the end of its own batch (a batch ends all at once), by the engine's measured
 * time a compressed byte. */
static double engine_wait_ms(const jpeg_ahead *a, int index)
{
    double per_byte = a->engine_bytes > 0 ? a->stats.engine_ms / a->engine_bytes : ENGINE_MS_PER_BYTE;
    double left = a->inflight_bytes ? (double)a->inflight_bytes * per_byte - (now_ms() - a->inflight_since) : 0.0;
    int rank = 0, queued = a->state[index] == AH_QUEUED;
    for (int i = a->decode_from; i < (queued ? a->next_read : index); i++) rank += a->state[i] == AH_PREPARED;
    int batch_end = (rank / a->batch + 1) * a->batch;
    double bytes = 0;
    int r = 0;
    for (int i = a->decode_from; i < a->next_read && r < batch_end; i++)
        if (a->state[i] == AH_PREPARED) {
            bytes += (double)a->slots[a->slot_of[i]].len;
            r++;
        }
    if (queued && r > 0) bytes += bytes / r;   /* its own file, as large as those */
    return (left > 0 ? left : 0.0) + bytes * per_byte;
}

/* Whether the worker waiting for entry index decodes it sooner on the CPU (lock held), while fewer
 * than cpu_max decode on the CPU (the readers, the decoder's thread and the handle's opening need
 * cores of their own: measured, CPU decoding on every core slowed reading 30-fold and starved the
 * engine, and the handle opened in 1.7 s rather than 1.2): any entry not yet decoded before the
 * engine is ready (the handle's opening is hidden so), then one not yet decoded where the engine's
 * queue is longer than the workers' CPU decodes have taken. */
static int cpu_sooner(const jpeg_ahead *a, int index)
{
    int st = a->state[index];
    if (!a->cpu_help || a->broken || (st != AH_QUEUED && st != AH_PREPARED) || a->on_cpu >= a->cpu_max) return 0;
    if (!a->engine_ready) return 1;
    if (a->stats.cpu_files == 0) return 0;
    return engine_wait_ms(a, index) > a->stats.cpu_ms / (double)a->stats.cpu_files;
}

/* Entry index handed to its worker's CPU decoder (lock held). */
static void hand_to_cpu(jpeg_ahead *a, int index)
{
    if (a->state[index] == AH_PREPARED) {
        a->prepared--;
        give_back_slot(a, index);
    }
    a->state[index] = AH_CPU;
    a->on_cpu++;
    pthread_cond_broadcast(&a->changed);
}

jpeg_ahead_got jpeg_ahead_take(jpeg_ahead *a, int index, ip_image *img)
{
    if (!a || index < 0 || index >= a->n || !a->paths[index]) return JPEG_AHEAD_USUAL;
    double t0 = now_ms();
    pthread_mutex_lock(&a->lock);
    jpeg_ahead_got got = JPEG_AHEAD_USUAL;
    while (a->state[index] < AH_READY && !a->stop) {
        if (cpu_sooner(a, index)) {
            hand_to_cpu(a, index);
            got = JPEG_AHEAD_ON_CPU;
            break;
        }
        if (a->state[index] == AH_PREPARED && !a->urgent) {
            a->urgent = 1;
            pthread_cond_broadcast(&a->changed);
        }
        pthread_cond_wait(&a->changed, &a->lock);
    }
    if (a->state[index] == AH_READY) {
        *img = a->slots[a->slot_of[index]].img;
        a->state[index] = AH_TAKEN;
        got = JPEG_AHEAD_TAKEN;
    }
    a->stats.take_wait_ms += now_ms() - t0;
    pthread_mutex_unlock(&a->lock);
    return got;
}

void jpeg_ahead_cpu_took(jpeg_ahead *a, double ms)
{
    if (!a) return;
    pthread_mutex_lock(&a->lock);
    if (ms >= 0) {
        a->stats.cpu_files++;
        a->stats.cpu_ms += ms;
    }
    if (a->on_cpu > 0) a->on_cpu--;
    pthread_cond_broadcast(&a->changed);   /* waiting workers weigh their entries again */
    pthread_mutex_unlock(&a->lock);
}

void jpeg_ahead_release(jpeg_ahead *a, int index)
{
    if (!a || index < 0 || index >= a->n) return;
    pthread_mutex_lock(&a->lock);
    if (a->state[index] == AH_TAKEN || a->state[index] == AH_READY) {
        give_back_slot(a, index);
        a->state[index] = AH_DONE;
        pthread_cond_broadcast(&a->changed);
    }
    pthread_mutex_unlock(&a->lock);
}

jpeg_ahead_stats jpeg_ahead_totals(jpeg_ahead *a)
{
    jpeg_ahead_stats t = { 0 };
    if (!a) return t;
    pthread_mutex_lock(&a->lock);
    t = a->stats;
    pthread_mutex_unlock(&a->lock);
    return t;
}

int jpeg_ahead_slots(const jpeg_ahead *a) { return a ? a->n_slots : 0; }

/* Half the device's free memory at most, up to DEVICE_BUDGET_MAX. */
static size_t device_budget(int device)
{
    size_t free_bytes = 0, total = 0;
    if (gpu_select(device, NULL, 0) != IP_OK || gpu_memory_info(&free_bytes, &total, NULL, 0) != IP_OK) return 0;
    return free_bytes / 2 < DEVICE_BUDGET_MAX ? free_bytes / 2 : DEVICE_BUDGET_MAX;
}

static int alloc_ahead(jpeg_ahead *a, int n, int batch, int held)
{
    a->n = n;
    a->batch = batch > 0 ? batch : 1;
    a->n_slots = 2 * a->batch + (held > 0 ? held : 1);
    a->state = calloc(n > 0 ? (size_t)n : 1, 1);
    a->slot_of = malloc((n > 0 ? (size_t)n : 1) * sizeof *a->slot_of);
    a->slots = calloc((size_t)a->n_slots, sizeof *a->slots);
    a->free_slots = malloc((size_t)a->n_slots * sizeof *a->free_slots);
    if (!a->state || !a->slot_of || !a->slots || !a->free_slots) return IP_ENOMEM;
    for (int i = 0; i < n; i++) a->slot_of[i] = -1;
    for (int s = 0; s < a->n_slots; s++) a->free_slots[a->n_free++] = a->n_slots - 1 - s;
    return IP_OK;
}

static void free_ahead(jpeg_ahead *a)
{
    for (int s = 0; a->slots && s < a->n_slots; s++) {
        gpu_host_free(a->slots[s].host);
        jpeg_gpu_buffer_free(&a->slots[s].dev);
    }
    free(a->state);
    free(a->slot_of);
    free(a->slots);
    free(a->free_slots);
    pthread_cond_destroy(&a->changed);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int jpeg_ahead_start(jpeg_ahead **out, jpeg_pool *pool, int device, int n, const char *const *paths,
                     const io_options *opt, const jpeg_ahead_limits *lim, char *err, size_t errlen)
{
    *out = NULL;
    jpeg_ahead *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    if (alloc_ahead(a, n, lim->batch, lim->held) != IP_OK) {
        free_ahead(a);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    a->started_at = now_ms();
    a->pool = pool;
    a->device = device;
    a->paths = paths;
    a->opt = *opt;
    a->opt.on_shape = NULL;
    a->opt.meta = NULL;
    a->opt.meta_known = 0;
    a->opt.warnings = NULL;
    a->cpu_help = lim->cpu_help;
    a->whole_parse = lim->whole_parse;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    a->cpu_max = cores > JPEG_AHEAD_READERS + 3 ? (int)cores / 2 : 1;
    a->dev_budget = device_budget(device);
    a->image_cap = lim->memory / 4;
    a->host_budget = lim->memory / 4 < HOST_BUDGET_MAX ? (size_t)(lim->memory / 4) : HOST_BUDGET_MAX;
    a->decoder_started = pthread_create(&a->decoder, NULL, decoder_main, a) == 0;
    for (int r = 0; a->decoder_started && r < JPEG_AHEAD_READERS; r++)
        if (pthread_create(&a->readers[a->n_readers], NULL, reader_main, a) == 0) a->n_readers++;
    if (!a->decoder_started || !a->n_readers) {
        jpeg_ahead_stop(a);
        snprintf(err, errlen, "cannot start the read-ahead's threads");
        return IP_ENOMEM;
    }
    *out = a;
    return IP_OK;
}

void jpeg_ahead_stop(jpeg_ahead *a)
{
    if (!a) return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
    for (int r = 0; r < a->n_readers; r++) pthread_join(a->readers[r], NULL);
    if (a->decoder_started) pthread_join(a->decoder, NULL);
    gpu_select(a->device, NULL, 0);
    free_ahead(a);
}
