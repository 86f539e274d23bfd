/* jpeg_ahead, the folder read-ahead decoder: files written here (baseline in three samplings, gray,
 * odd sizes, progressive, truncated, turned by EXIF, missing, an entry not read ahead), taken by
 * four threads in the listing's order as folder workers do, in small batches with few slots: each
 * decoded ahead exactly when a single nvJPEG decode uses the hardware engine and the file is
 * upright, with the same pixels; the rest are left to the caller. A run stopped with images never
 * taken ends. Last, the rate on 12-MP photographs against the worker-fed pool, with at most half
 * the cores decoding on the CPU at once. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/image.h"
#include "gpu/gpu.h"
#include "gpu_testutil.h"
#include "io/io.h"
#include "io/jpeg_ahead.h"
#include "io/jpeg_gpu.h"
#include "io/jpeg_pool.h"
#include "jpeg_make.h"

enum { FILES = 23, THREADS = 4 };

static char err[512];
static jpeg_gpu *gj;
static jpeg_gpu_buffer dev_buf[1];
static const jpeg_gpu_memory dev_mem = { jpeg_gpu_buffer_alloc, dev_buf };

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static unsigned char *make_photo(int w, int h, int c, unsigned seed)
{
    unsigned char *px = malloc((size_t)w * (size_t)h * (size_t)c);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++) {
                unsigned v = (unsigned)(x * (3 + k) + y * (5 - k)) ^ (seed * 2654435761u >> (x % 7 + y % 5));
                px[((size_t)y * (size_t)w + (size_t)x) * (size_t)c + (size_t)k] = (unsigned char)(v + (x * y) / 97);
            }
    return px;
}

static unsigned char *photo_jpeg(int w, int h, int c, jm_settings s, unsigned seed, size_t *len)
{
    unsigned char *px = make_photo(w, h, c, seed);
    unsigned char *jpg = jm_encode(px, (size_t)w * (size_t)c, w, h, c, &s, len);
    free(px);
    return jpg;
}

/* An APP1 EXIF segment saying orientation 6 (turn 90 degrees), put right after SOI. */
static unsigned char *turned(const unsigned char *jpg, size_t len, size_t *out_len)
{
    static const unsigned char app1[] = { 0xFF, 0xE1, 0x00, 0x22, 'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 0x2A, 0x00,
                                          0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x12, 0x01, 0x03, 0x00, 0x01, 0x00,
                                          0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };
    unsigned char *out = malloc(len + sizeof app1);
    memcpy(out, jpg, 2);
    memcpy(out + 2, app1, sizeof app1);
    memcpy(out + 2 + sizeof app1, jpg + 2, len - 2);
    *out_len = len + sizeof app1;
    return out;
}

static int write_file(const char *path, const unsigned char *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(bytes, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static ip_image download(const ip_image *d)
{
    ip_image h = { 0 };
    char e[256];
    if (img_alloc(&h, &d->shape, IMG_DEFAULT_MAX_PIXELS, e, sizeof e) != IP_OK ||
        gpu_copy2d(h.data, (size_t)h.stride, d->data, (size_t)d->stride, img_row_bytes(&d->shape),
                   (size_t)d->shape.height, GPU_D2H, NULL, e, sizeof e) != IP_OK) {
        fprintf(stderr, "download: %s\n", e);
        exit(1);
    }
    return h;
}

static int same_pixels(const ip_image *a, const ip_image *b)
{
    if (a->shape.width != b->shape.width || a->shape.height != b->shape.height ||
        a->shape.channels != b->shape.channels)
        return 0;
    for (int y = 0; y < a->shape.height; y++)
        if (memcmp((unsigned char *)a->data + (size_t)y * (size_t)a->stride,
                   (unsigned char *)b->data + (size_t)y * (size_t)b->stride, img_row_bytes(&a->shape)))
            return 0;
    return 1;
}

typedef struct {
    char *paths[FILES];
    ip_image expect[FILES];    /* data NULL: must be left to the caller */
    jpeg_ahead *ahead;
    pthread_mutex_t lock;
    int next, wrong_status, wrong_pixels, taken;
} listing;

/* The single decode's pixels when the engine takes the file (the read-ahead's only decoder). */
static void expect_of(listing *l, int i, const unsigned char *jpg, size_t len, int upright)
{
    long before = jpeg_gpu_hardware_decodes(gj);
    ip_image dev;
    int rc = jpeg_gpu_decode(gj, jpg, len, NULL, &dev_mem, &dev, err, sizeof err);
    if (rc == IP_OK && upright && jpeg_gpu_hardware_decodes(gj) > before) l->expect[i] = download(&dev);
}

static void make_listing(listing *l)
{
    static const struct { int w, h, c; jm_settings s; } cases[] = {
        { 640, 480, 3, { 90, JM_420, 0, 0, JCS_UNKNOWN } },   { 97, 61, 3, { 85, JM_444, 0, 0, JCS_UNKNOWN } },
        { 131, 7, 3, { 75, JM_422, 0, 0, JCS_UNKNOWN } },     { 211, 149, 1, { 90, JM_444, 0, 0, JCS_UNKNOWN } },
        { 1, 1, 3, { 90, JM_420, 0, 0, JCS_UNKNOWN } },       { 1, 37, 3, { 90, JM_444, 0, 0, JCS_UNKNOWN } },
        { 333, 211, 3, { 90, JM_420, 1, 0, JCS_UNKNOWN } },   { 1021, 769, 3, { 92, JM_420, 0, 4, JCS_UNKNOWN } },
    };
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    for (int i = 0; i < FILES; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s/ahead-%02d.jpg", tu_tmpdir(), i);
        if (i == 9) continue;   /* not read ahead: path NULL */
        l->paths[i] = strdup(name);
        if (i == 13) continue;  /* listed but missing */
        const int k = i % (int)(sizeof cases / sizeof cases[0]);
        size_t len;
        unsigned char *jpg = photo_jpeg(cases[k].w, cases[k].h, cases[k].c, cases[k].s, (unsigned)i, &len);
        int upright = 1;
        if (i == 11) len /= 2;   /* truncated */
        if (i == 17) {
            size_t turned_len;
            unsigned char *t = turned(jpg, len, &turned_len);
            free(jpg);
            jpg = t;
            len = turned_len;
            upright = 0;
        }
        CHECK(write_file(name, jpg, len), "cannot write %s", name);
        expect_of(l, i, jpg, len, upright);
        free(jpg);
    }
}

static void *taker(void *arg)
{
    listing *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->lock);
        int i = l->next < FILES ? l->next++ : -1;
        pthread_mutex_unlock(&l->lock);
        if (i < 0) break;
        ip_image dev;
        int rc = jpeg_ahead_take(l->ahead, i, &dev) == JPEG_AHEAD_TAKEN ? IP_OK : IP_EUNSUPPORTED;
        int wrong_status = (rc == IP_OK) != (l->expect[i].data != NULL), wrong_pixels = 0;
        if (rc == IP_OK && l->expect[i].data) {
            ip_image host = download(&dev);
            wrong_pixels = !same_pixels(&host, &l->expect[i]);
            img_free(&host);
        }
        jpeg_ahead_release(l->ahead, i);
        pthread_mutex_lock(&l->lock);
        l->wrong_status += wrong_status;
        l->wrong_pixels += wrong_pixels;
        l->taken += rc == IP_OK;
        if (wrong_status || wrong_pixels)
            fprintf(stderr, "entry %d: read ahead %s, expected %s%s\n", i, rc == IP_OK ? "yes" : "no",
                    l->expect[i].data ? "yes" : "no", wrong_pixels ? ", pixels differ" : "");
        pthread_mutex_unlock(&l->lock);
    }
    return NULL;
}

static void run_listing(jpeg_pool *pool, listing *l, int batch, int held)
{
    io_options opt;
    io_default_options(&opt);
    opt.autorotate = 1;
    l->next = l->wrong_status = l->wrong_pixels = l->taken = 0;
    jpeg_ahead_limits lim = { batch, held, (uint64_t)1 << 32, 0, 0 };
    int rc = jpeg_ahead_start(&l->ahead, pool, 0, FILES, (const char *const *)l->paths, &opt, &lim, err, sizeof err);
    CHECK(rc == IP_OK, "jpeg_ahead_start: %s", err);
    if (rc) return;
    pthread_t tids[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&tids[t], NULL, taker, l);
    for (int t = 0; t < THREADS; t++) pthread_join(tids[t], NULL);
    jpeg_ahead_stats st = jpeg_ahead_totals(l->ahead);
    jpeg_ahead_stop(l->ahead);
    int expected = 0;
    for (int i = 0; i < FILES; i++) expected += l->expect[i].data != NULL;
    printf("batch %d, held %d: %d of %d entries decoded ahead (%ld in %ld batches, largest %d), %ld left\n", batch,
           held, l->taken, FILES, st.files, st.batches, st.largest_batch, st.not_ahead);
    CHECK(l->wrong_status == 0 && l->wrong_pixels == 0, "batch %d: %d wrong statuses, %d images differ", batch,
          l->wrong_status, l->wrong_pixels);
    CHECK(l->taken == expected && st.files == expected, "batch %d: %d taken, %ld decoded, %d expected", batch, l->taken,
          st.files, expected);
    CHECK(st.largest_batch <= batch, "a batch of %d over %d", st.largest_batch, batch);
    CHECK(st.states_at_open == 1, "batch %d: %d decoder states made at the start, not the engine's one", batch,
          st.states_at_open);
}

/* Stopped after three images, the rest never taken: the threads end and the memory goes. */
static void stop_early(jpeg_pool *pool, listing *l)
{
    io_options opt;
    io_default_options(&opt);
    jpeg_ahead *a = NULL;
    jpeg_ahead_limits lim = { 2, 1, (uint64_t)1 << 32, 0, 0 };
    CHECK(jpeg_ahead_start(&a, pool, 0, FILES, (const char *const *)l->paths, &opt, &lim, err, sizeof err) == IP_OK,
          "%s", err);
    if (!a) return;
    int got = 0;
    for (int i = 0; i < 3; i++) {
        ip_image dev;
        got += jpeg_ahead_take(a, i, &dev) == JPEG_AHEAD_TAKEN;
        jpeg_ahead_release(a, i);
    }
    double t0 = now_ms();
    jpeg_ahead_stop(a);
    printf("stopped early after %d images: %.1f ms\n", got, now_ms() - t0);
    CHECK(got == (l->expect[0].data != NULL) + (l->expect[1].data != NULL) + (l->expect[2].data != NULL),
          "stopped early: %d of the first 3 decoded", got);
}

typedef struct {
    jpeg_ahead *ahead;
    jpeg_pool *pool;
    unsigned char **bytes;
    size_t *len;
    char **paths;
    int n, *next, failures, on_cpu;
    int *cpu_now, *cpu_most;   /* CPU decodes under way across the takers, and the most at once */
    pthread_mutex_t *lock;
} rate_worker;

static void count_cpu(rate_worker *w, int step)
{
    pthread_mutex_lock(w->lock);
    *w->cpu_now += step;
    if (*w->cpu_now > *w->cpu_most) *w->cpu_most = *w->cpu_now;
    pthread_mutex_unlock(w->lock);
}

/* A file handed back by the read-ahead, decoded as a worker would: libjpeg-turbo, then uploaded. */
static int decode_on_cpu(rate_worker *w, int i, jpeg_gpu_memory *mem)
{
    io_options opt;
    io_default_options(&opt);
    ip_image host = { 0 };
    char e[256];
    count_cpu(w, 1);
    double t0 = now_ms();
    int rc = io_read(w->paths[i], &opt, &host, e, sizeof e);
    void *dev = NULL;
    size_t row = (size_t)host.shape.width * (size_t)host.shape.channels, bytes = row * (size_t)host.shape.height;
    if (rc == IP_OK) rc = mem->alloc(mem->user, 0, bytes, &dev, e, sizeof e);
    if (rc == IP_OK)
        rc = gpu_copy2d(dev, row, host.data, (size_t)host.stride, row, (size_t)host.shape.height, GPU_H2D, NULL, e,
                        sizeof e);
    img_free(&host);
    count_cpu(w, -1);
    jpeg_ahead_cpu_took(w->ahead, now_ms() - t0);
    w->on_cpu++;
    return rc;
}

static void *rate_thread(void *arg)
{
    rate_worker *w = arg;
    jpeg_gpu_buffer buf = { 0 };
    jpeg_gpu_memory mem = { jpeg_gpu_buffer_alloc, &buf };
    char e[256];
    for (;;) {
        pthread_mutex_lock(w->lock);
        int i = *w->next < w->n ? (*w->next)++ : -1;
        pthread_mutex_unlock(w->lock);
        if (i < 0) break;
        ip_image dev;
        int rc;
        if (w->ahead) {
            jpeg_ahead_got got = jpeg_ahead_take(w->ahead, i, &dev);
            rc = got == JPEG_AHEAD_TAKEN ? IP_OK : got == JPEG_AHEAD_ON_CPU ? decode_on_cpu(w, i, &mem) : IP_EUNSUPPORTED;
            jpeg_ahead_release(w->ahead, i);
        } else {
            rc = jpeg_pool_decode(w->pool, 0, w->bytes[i % 4], w->len[i % 4], NULL, &mem, &dev, e, sizeof e);
        }
        if (rc != IP_OK) w->failures++;
    }
    jpeg_gpu_buffer_free(&buf);
    return NULL;
}

/* Gradients with a little noise: about the entropy of a photograph, where make_photo's is a noise
 * image's (10 MB a 12-MP file). */
static unsigned char *smooth_photo(int w, int h, unsigned seed)
{
    unsigned char *px = malloc((size_t)w * (size_t)h * 3);
    unsigned r = seed * 2654435761u + 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < 3; k++) {
                r = r * 1103515245u + 12345u;
                int v = (x * 255 / w + y * 255 / h) / 2 + k * 40 + (int)(seed * 17) + (int)((r >> 16) & 15);
                px[((size_t)y * (size_t)w + (size_t)x) * 3 + (size_t)k] = (unsigned char)(v & 255);
            }
    return px;
}

/* files/s of 16 takers on n 12-MP files: read ahead in batches of 64 (the engine alone, then with
 * the takers decoding on the CPU what it would keep them waiting for), and through the pool. Every
 * file is decoded once, by one of them. */
static void rate(jpeg_pool *pool, int n)
{
    unsigned char *bytes[4];
    size_t len[4];
    char **paths = calloc((size_t)n, sizeof *paths);
    for (int k = 0; k < 4; k++) {
        unsigned char *px = smooth_photo(4000, 3000, (unsigned)k);
        jm_settings q90 = { 90, JM_420, 0, 0, JCS_UNKNOWN };
        bytes[k] = jm_encode(px, 4000 * 3, 4000, 3000, 3, &q90, &len[k]);
        free(px);
    }
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s/rate-%03d.jpg", tu_tmpdir(), i);
        paths[i] = strdup(name);
        write_file(name, bytes[i % 4], len[i % 4]);
    }
    io_options opt;
    io_default_options(&opt);
    static const char *const pass_name[] = { "read-ahead", "read-ahead + CPU", "pool" };
    for (int pass = 0; pass < 3; pass++) {
        pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        int next = 0, cpu_now = 0, cpu_most = 0;
        rate_worker ws[16];
        double t0 = now_ms();
        jpeg_ahead *a = NULL;
        jpeg_ahead_limits lim = { 64, 16, (uint64_t)16 << 30, pass == 1, 0 };
        if (pass < 2 && jpeg_ahead_start(&a, pool, 0, n, (const char *const *)paths, &opt, &lim, err, sizeof err)) {
            CHECK(0, "jpeg_ahead_start: %s", err);
            continue;
        }
        pthread_t tids[16];
        for (int t = 0; t < 16; t++) {
            ws[t] = (rate_worker){ a, pool, bytes, len, paths, n, &next, 0, 0, &cpu_now, &cpu_most, &lock };
            pthread_create(&tids[t], NULL, rate_thread, &ws[t]);
        }
        int failures = 0, on_cpu = 0;
        for (int t = 0; t < 16; t++) {
            pthread_join(tids[t], NULL);
            failures += ws[t].failures;
            on_cpu += ws[t].on_cpu;
        }
        double ms = now_ms() - t0;
        jpeg_ahead_stats st = jpeg_ahead_totals(a);
        jpeg_ahead_stop(a);
        printf("rate %s: %d 12-MP files (%.1f MB each) in %.0f ms: %.0f files/s", pass_name[pass], n,
               (double)len[0] / 1e6, ms, n * 1e3 / ms);
        if (pass < 2)
            printf(" (%ld by the engine in %ld batches, largest %d, %.2f ms a file; reading %.2f ms a file; %ld on "
                   "the CPU, %.1f ms a file)", st.files, st.batches, st.largest_batch,
                   st.files ? st.engine_ms / (double)st.files : 0.0, st.files ? st.read_ms / (double)st.files : 0.0,
                   st.cpu_files, st.cpu_files ? st.cpu_ms / (double)st.cpu_files : 0.0);
        printf("\n");
        CHECK(failures == 0, "rate %s: %d files not decoded", pass_name[pass], failures);
        if (pass < 2)
            CHECK(st.files + on_cpu == n && st.cpu_files == on_cpu && (pass == 1 || on_cpu == 0),
                  "rate %s: %ld files by the engine and %d on the CPU, of %d", pass_name[pass], st.files, on_cpu, n);
        /* the readers, the decoder and the handle's opening keep cores of their own, from the start */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        int cpu_max = cores > JPEG_AHEAD_READERS + 3 ? (int)cores / 2 : 1;
        CHECK(cpu_most <= cpu_max, "rate %s: %d CPU decodes at once, more than %d", pass_name[pass], cpu_most,
              cpu_max);
    }
    for (int i = 0; i < n; i++) {
        remove(paths[i]);
        free(paths[i]);
    }
    free(paths);
    for (int k = 0; k < 4; k++) free(bytes[k]);
}

int main(void)
{
    need_gpu();
    void *stream = NULL;
    if (gpu_stream_create(&stream, err, sizeof err) != IP_OK) tu_skip(err);
    int rc = jpeg_gpu_open(&gj, 0, stream, err, sizeof err);
    if (rc == IP_EUNSUPPORTED) tu_skip(err);
    CHECK(rc == IP_OK, "jpeg_gpu_open: %s", err);
    if (rc) return tu_finish();
    if (!jpeg_gpu_has_hardware(gj)) tu_skip("no hardware JPEG decoder on this GPU: nothing is read ahead");
    int device = 0;
    jpeg_pool *pool = NULL;
    /* as a folder opens it under the read-ahead: the handle alone, which the read-ahead never decodes on */
    CHECK(jpeg_pool_open(&pool, 1, &device, 0, 16, err, sizeof err) == IP_OK, "%s", err);
    listing l;
    make_listing(&l);
    run_listing(pool, &l, 4, 2);
    run_listing(pool, &l, 3, 1);
    run_listing(pool, &l, 64, 16);
    stop_early(pool, &l);
    CHECK(!jpeg_gpu_times(jpeg_pool_handle(pool, 0, NULL)).decoder_made,
          "the read-ahead made the pool's decoder state");
    rate(pool, tu_quick() ? 128 : 384);
    jpeg_pool_close(pool);
    for (int i = 0; i < FILES; i++) {
        if (l.paths[i]) remove(l.paths[i]);
        free(l.paths[i]);
        img_free(&l.expect[i]);
    }
    jpeg_gpu_buffer_free(&dev_buf[0]);
    jpeg_gpu_close(gj);
    gpu_stream_destroy(stream);
    return tu_finish();
}
