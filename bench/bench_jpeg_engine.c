/* The hardware JPEG engine's rate through imgpipe's own decoder (io/jpeg_gpu.h): a folder's JPEGs
 * read into pinned memory and planned once, then decoded to device RGB in batches by 1 to 4
 * threads, each with its own state and stream, taking the next batch as they finish (the
 * read-ahead's decoder is one such thread). Best of ROUNDS after a warm-up round; prints files/s
 * and where a batch's time went: nvJPEG's work on the calling thread (submit) and the wait for the
 * stream. With ENCODERS, that many threads encode a 12-MP gray device image to JPEG q90 (alone for
 * 2 s first, then beside the decoding), as a folder's workers do, on the decoders' nvJPEG handle
 * ("shared") or each on its own ("own"). BENCH_BLOCKING_SYNC=1: threads sleep in their waits, as in
 * a folder's run; BENCH_URGENT=1: the decoders' streams at the highest priority. The peer on the
 * same files: bench/nvimgcodec.sh.
 * usage: bench_jpeg_engine DIR [BATCH [ROUNDS [MAX_FILES [ENCODERS [shared|own]]]]] */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/mono_clock.h"
#include "gpu/gpu.h"
#include "io/io.h"
#include "io/jpeg_gpu.h"

typedef struct {
    int n;
    unsigned char **bytes;
    size_t *len;
    jpeg_gpu_buffer *dev;
    jpeg_gpu_ready *ready;
} folder;

typedef struct {
    const folder *f;
    jpeg_gpu *g;
    void *stream;
    int batch;
    int *next;               /* the next file to take, shared */
    pthread_mutex_t *lock;
    int failed;
} taker;

/* An encoding thread: the same image again and again until stop. */
typedef struct {
    jpeg_gpu *parent;
    int own_handle;
    void *image;             /* 4000x3000 gray, on the device */
    int *stop;
    long encodes;
    pthread_t tid;
} encoder;

static void *encode_loop(void *arg)
{
    encoder *en = arg;
    char err[256];
    void *stream = NULL;
    jpeg_gpu *g = NULL;
    int rc = gpu_select(0, err, sizeof err);
    if (!rc) rc = gpu_stream_create(&stream, err, sizeof err);
    if (!rc) rc = en->own_handle ? jpeg_gpu_open_for(&g, 0, stream, JPEG_GPU_ENCODE, err, sizeof err)
                                 : jpeg_gpu_open_shared(&g, en->parent, stream, JPEG_GPU_ENCODE, err, sizeof err);
    ip_image img = { en->image, 4000, { 4000, 3000, 1, IP_U8 }, 1 };
    while (!rc && !__atomic_load_n(en->stop, __ATOMIC_RELAXED)) {
        unsigned char *bytes;
        size_t len;
        rc = jpeg_gpu_encode(g, &img, 90, &bytes, &len, err, sizeof err);
        if (rc) break;
        free(bytes);
        __atomic_add_fetch(&en->encodes, 1, __ATOMIC_RELAXED);
    }
    if (rc) fprintf(stderr, "bench_jpeg_engine: encoder: %s\n", err);
    jpeg_gpu_close(g);
    if (stream) gpu_stream_destroy(stream);
    return NULL;
}

/* A photograph-like gray image on the device: gradients and a little noise, never flat. */
static void *device_photo(void)
{
    unsigned char *px = malloc((size_t)4000 * 3000);
    void *dev = NULL;
    if (!px) return NULL;
    unsigned r = 12345;
    for (size_t i = 0; i < (size_t)4000 * 3000; i++) {
        r = r * 1103515245u + 12345u;
        px[i] = (unsigned char)((i % 4000) / 20 + (i / 4000) / 15 + ((r >> 16) & 15));
    }
    if (gpu_malloc(&dev, (size_t)4000 * 3000, NULL, 0) ||
        gpu_copy2d(dev, 4000, px, 4000, 4000, 3000, GPU_H2D, NULL, NULL, 0)) dev = NULL;
    free(px);
    return dev;
}

static long encoders_done(const encoder *encoders, int n)
{
    long done = 0;
    for (int i = 0; i < n; i++) done += __atomic_load_n(&encoders[i].encodes, __ATOMIC_RELAXED);
    return done;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The first max_files *.jpg names of dir in name order (*names malloc'd, each name too). */
static int list_jpegs(const char *dir, char ***names, int max_files)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0, cap = 0;
    *names = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".jpg")) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(*names, (size_t)cap * sizeof *grown);
            if (!grown) break;
            *names = grown;
        }
        if (!((*names)[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    if (n) qsort(*names, (size_t)n, sizeof **names, by_name);
    for (int i = max_files; i < n; i++) free((*names)[i]);
    return n < max_files ? n : max_files;
}

static int read_pinned(const char *path, unsigned char **bytes, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    int ok = fseek(fp, 0, SEEK_END) == 0;
    long size = ok ? ftell(fp) : -1;
    ok = size > 0 && fseek(fp, 0, SEEK_SET) == 0 && gpu_host_alloc((void **)bytes, (size_t)size, 0, NULL, 0) == IP_OK;
    ok = ok && fread(*bytes, 1, (size_t)size, fp) == (size_t)size;
    fclose(fp);
    *len = ok ? (size_t)size : 0;
    return ok ? 0 : -1;
}

/* Reads and plans every file with g's parser; each gets its own device image. */
static int load_folder(folder *f, const char *dir, int max_files, jpeg_gpu *g)
{
    char **names = NULL;
    f->n = list_jpegs(dir, &names, max_files);
    if (f->n <= 0) {
        fprintf(stderr, "bench_jpeg_engine: no .jpg files in %s\n", dir);
        free(names);
        return -1;
    }
    f->bytes = calloc((size_t)f->n, sizeof *f->bytes);
    f->len = calloc((size_t)f->n, sizeof *f->len);
    f->dev = calloc((size_t)f->n, sizeof *f->dev);
    f->ready = calloc((size_t)f->n, sizeof *f->ready);
    int rc = f->bytes && f->len && f->dev && f->ready ? 0 : -1;
    for (int i = 0; i < f->n && !rc; i++) {
        char path[4096], err[256] = "cannot read it into pinned memory";
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ip_image out;
        jpeg_gpu_memory mem = { jpeg_gpu_buffer_alloc, &f->dev[i] };
        rc = read_pinned(path, &f->bytes[i], &f->len[i]);
        if (!rc && jpeg_gpu_prepare_header(g, f->bytes[i], f->len[i], NULL, &mem, &out, &f->ready[i], err, sizeof err))
            rc = -1;
        if (!rc && !f->ready[i].hardware) {
            snprintf(err, sizeof err, "the hardware engine does not take it");
            rc = -1;
        }
        if (rc) fprintf(stderr, "bench_jpeg_engine: %s: %s\n", path, err);
    }
    for (int i = 0; i < f->n; i++) free(names[i]);
    free(names);
    return rc;
}

static void *take_batches(void *arg)
{
    taker *t = arg;
    int rcs[512];
    char err[256];
    for (;;) {
        pthread_mutex_lock(t->lock);
        int first = *t->next;
        int k = t->f->n - first < t->batch ? t->f->n - first : t->batch;
        *t->next += k;
        pthread_mutex_unlock(t->lock);
        if (k <= 0) break;
        if (jpeg_gpu_decode_ready(t->g, k, &t->f->ready[first], rcs, err, sizeof err) != IP_OK) t->failed++;
        for (int j = 0; j < k; j++) t->failed += rcs[j] != IP_OK;
    }
    return NULL;
}

/* One round: every file once, by n_threads takers; its seconds, or < 0 on a failure. */
static double round_s(taker *takers, int n_threads)
{
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int next = 0, failed = 0;
    pthread_t tid[4];
    double t0 = now_s();
    for (int i = 0; i < n_threads; i++) {
        takers[i].next = &next;
        takers[i].lock = &lock;
        takers[i].failed = 0;
        pthread_create(&tid[i], NULL, take_batches, &takers[i]);
    }
    for (int i = 0; i < n_threads; i++) {
        pthread_join(tid[i], NULL);
        failed += takers[i].failed;
    }
    return failed ? -1.0 : now_s() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_jpeg_engine DIR [BATCH [ROUNDS [MAX_FILES [ENCODERS [shared|own]]]]]\n");
        return 2;
    }
    int batch = argc > 2 ? atoi(argv[2]) : 64, rounds = argc > 3 ? atoi(argv[3]) : 3;
    int max_files = argc > 4 ? atoi(argv[4]) : 200, n_encoders = argc > 5 ? atoi(argv[5]) : 0;
    int own_handles = argc > 6 && !strcmp(argv[6], "own");
    if (batch < 1 || batch > 512 || rounds < 1 || max_files < 1 || n_encoders < 0 || n_encoders > 64) return 2;
    char err[256];
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *blocking = getenv("BENCH_BLOCKING_SYNC"), *urgent = getenv("BENCH_URGENT");
    int urgent_streams = urgent && !strcmp(urgent, "1");
    if (blocking && !strcmp(blocking, "1")) gpu_prefer_blocking_sync(0);   /* as a folder's run does */
    double t0 = now_ms();
    jpeg_gpu *parent;
    if (gpu_start(0, err, sizeof err) || jpeg_gpu_open_for(&parent, 0, NULL, JPEG_GPU_DECODE, err, sizeof err)) {
        fprintf(stderr, "bench_jpeg_engine: %s\n", err);
        return 1;
    }
    double open_ms = now_ms() - t0;
    folder f;
    if (load_folder(&f, argv[1], max_files, parent)) return 1;
    size_t bytes = 0;
    for (int i = 0; i < f.n; i++) bytes += f.len[i];
    printf("bench_jpeg_engine: %d files, %.2f MB a file, batches of %d; context and handle %.0f ms (%s); %d encoding "
           "threads on %s; %s waits; decoders' streams %s\n", f.n, (double)bytes / f.n / 1e6, batch, open_ms,
           jpeg_gpu_description(parent), n_encoders, own_handles ? "handles of their own" : "the decoders' handle",
           blocking && !strcmp(blocking, "1") ? "blocking" : "default", urgent_streams ? "urgent" : "plain");
    static encoder encoders[64];
    int stop = 0;
    void *image = n_encoders ? device_photo() : NULL;
    if (n_encoders && !image) return 1;
    for (int i = 0; i < n_encoders; i++) {
        encoders[i] = (encoder){ parent, own_handles, image, &stop, 0, 0 };
        pthread_create(&encoders[i].tid, NULL, encode_loop, &encoders[i]);
    }
    if (n_encoders) {
        struct timespec two_s = { 2, 0 };
        nanosleep(&two_s, NULL);   /* their opening, then their rate alone */
        long before = encoders_done(encoders, n_encoders);
        nanosleep(&two_s, NULL);
        printf("encoders alone: %.1f images/s\n", (encoders_done(encoders, n_encoders) - before) / 2.0);
    }
    long enc_before = encoders_done(encoders, n_encoders);
    double enc_t0 = now_s();
    printf("| threads | s | files/s | ms a file | submit ms a batch | wait ms a batch |\n| --: | --: | --: | --: | --: | --: |\n");
    taker takers[4];
    int status = 0;
    for (int n_threads = 1; n_threads <= 4; n_threads++) {
        for (int i = 0; i < n_threads; i++) {
            takers[i] = (taker){ .f = &f, .batch = batch };
            if ((urgent_streams ? gpu_stream_create_urgent(&takers[i].stream, err, sizeof err)
                                : gpu_stream_create(&takers[i].stream, err, sizeof err)) ||
                jpeg_gpu_open_shared(&takers[i].g, parent, takers[i].stream, JPEG_GPU_DECODE, err, sizeof err)) {
                fprintf(stderr, "bench_jpeg_engine: %s\n", err);
                return 1;
            }
            jpeg_gpu_batch_warm(takers[i].g, batch);
        }
        double best = -1;
        jpeg_gpu_batch_times before[4];
        for (int r = 0; r <= rounds; r++) {
            if (r == 1)
                for (int i = 0; i < n_threads; i++) before[i] = jpeg_gpu_batch_totals(takers[i].g);
            double s = round_s(takers, n_threads);
            if (s < 0) {
                fprintf(stderr, "bench_jpeg_engine: a file failed with %d threads\n", n_threads);
                status = 1;
            }
            if (r && s >= 0 && (best < 0 || s < best)) best = s;
        }
        double submit = 0, wait = 0;
        long decodes = 0;
        for (int i = 0; i < n_threads; i++) {
            jpeg_gpu_batch_times t = jpeg_gpu_batch_totals(takers[i].g);
            decodes += t.decodes - before[i].decodes;
            submit += t.submit_ms - before[i].submit_ms;
            wait += (t.decode_ms - t.submit_ms) - (before[i].decode_ms - before[i].submit_ms);
            jpeg_gpu_close(takers[i].g);
            gpu_stream_destroy(takers[i].stream);
        }
        printf("| %d | %.3f | %.1f | %.2f | %.1f | %.1f |\n", n_threads, best, f.n / best, best * 1e3 / f.n,
               submit / (decodes ? decodes : 1), wait / (decodes ? decodes : 1));
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    long encodes = 0;
    for (int i = 0; i < n_encoders; i++) {
        pthread_join(encoders[i].tid, NULL);
        encodes += encoders[i].encodes;
    }
    if (n_encoders) printf("encoders beside the decoders: %.1f images/s\n", (encodes - enc_before) / (now_s() - enc_t0));
    gpu_free(image);
    for (int i = 0; i < f.n; i++) {
        gpu_host_free(f.bytes[i]);
        jpeg_gpu_buffer_free(&f.dev[i]);
    }
    jpeg_gpu_close(parent);
    return status;
}
