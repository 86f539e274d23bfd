/* The GPU PNG writer (png_gpu.h) against the CPU writer: the filter kernel's output equals the
 * CPU writer's filtered rows byte for byte (8/16-bit, 1-4 channels, 1x1, 1xN, Nx1, prime widths,
 * padded strides); ipk_adler32_spans equals zlib's adler32 per span; ipk_deflate_walk finds where
 * the host's walker finds each stream's final block and end, and rejects what it rejects (zlib's
 * streams of every kind, then damaged or cut short); png_gpu_write's files decode
 * equal to the source by libpng (io_read), Pillow and OpenCV, their image data inflates (zlib,
 * adler32 checked) to exactly the CPU writer's filtered bytes, and bands end mid-row; the file's
 * size against the CPU writer's at levels 1, 6 and 9 (at most 3% larger). Last (not under
 * IMGPIPE_TEST_QUICK), the benchmark: a photograph through every nvCOMP deflate algorithm 0..5
 * and three band sizes, ratio and GB/s, beside the CPU writer at levels 1..9. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "base/image.h"
#include "base/mono_clock.h"
#include "gpu/gpu.h"
#include "gpu_testutil.h"
#include "io/io.h"
#include "io/io_png_internal.h"
#include "io/deflate_walk.h"
#include "io/png_gpu.h"
#include "ipk_codec.h"
#include "png_testutil.h"

#define MAX_SIZE_RATIO 1.03

static char err[512];

/* A device copy of a host image, its rows pitch bytes apart. */
static ip_image upload(const ip_image *h, size_t pitch)
{
    size_t row = (size_t)h->shape.width * h->shape.channels * (h->shape.dtype == IP_U16 ? 2 : 1);
    ip_image d = { 0 };
    d.shape = h->shape, d.stride = (ptrdiff_t)pitch, d.on_device = 1;
    if (!cuda_ok(cudaMalloc(&d.data, pitch * (size_t)h->shape.height), "cudaMalloc")) exit(1);
    cuda_ok(cudaMemcpy2D(d.data, pitch, h->data, (size_t)h->stride, row, (size_t)h->shape.height,
                         cudaMemcpyHostToDevice), "upload");
    return d;
}

static void filter_image(const ip_image *src, size_t pad)
{
    const ip_image img = *src;
    int w = img.shape.width, h = img.shape.height, c = img.shape.channels;
    ip_dtype t = img.shape.dtype;
    size_t len, row = (size_t)w * c * (t == IP_U16 ? 2 : 1);
    unsigned char *want = ptu_filtered(&img, &len);
    ip_image d = upload(&img, row + pad);
    uint8_t *out = NULL, *got = malloc(len);
    cuda_ok(cudaMalloc((void **)&out, len), "cudaMalloc");
    unsigned allowed = pngx_allowed_filters((uint32_t)w, (uint32_t)h);
    int rc = ipk_png_filter(d.data, d.stride, row, (size_t)h, (unsigned)(c * (t == IP_U16 ? 2 : 1)),
                            t == IP_U16 ? 2 : 1, allowed, out, NULL);
    if (gpu_finish_ok(rc, "ipk_png_filter")) cuda_ok(cudaMemcpy(got, out, len, cudaMemcpyDeviceToHost), "download");
    size_t first = 0;
    while (first < len && got[first] == want[first]) first++;
    CHECK(first == len, "filter %dx%dx%d %s pad %zu: first difference at byte %zu (row %zu): %u, CPU %u", w, h, c,
          img_dtype_name(t), pad, first, first / (row + 1), first < len ? got[first] : 0, first < len ? want[first] : 0);
    cudaFree(out);
    cudaFree(d.data);
    free(got);
    free(want);
}

static void filter_case(int w, int h, int c, ip_dtype t, size_t pad)
{
    ip_image img = ptu_photo(w, h, c, t, pad, (uint64_t)(w * 7 + h * 13 + c));
    filter_image(&img, pad);
    img_free(&img);
}

static void filter_cases(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 29 }, { 29, 1 }, { 2, 2 }, { 257, 31 }, { 1031, 17 }, { 4099, 9 } };
    for (int s = 0; s < 7; s++)
        for (int c = 1; c <= 4; c++)
            for (int t = 0; t < 2; t++) filter_case(sizes[s][0], sizes[s][1], c, t ? IP_U16 : IP_U8, (size_t)(s * 3 + c) * 2);
    /* a few levels of noise and flat runs: filters' sums tie often */
    ip_image img = ptu_photo(61, 64, 2, IP_U8, 0, 5);
    tu_rng r;
    tu_seed(&r, 11);
    for (int i = 0; i < 61 * 64 * 2; i++) ((uint8_t *)img.data)[i] = (uint8_t)(i % 300 < 100 ? 7 : tu_next(&r) % 3 * 127);
    filter_image(&img, 0);
    img_free(&img);
}

static void adler_case(size_t total, size_t span)
{
    tu_rng r;
    tu_seed(&r, total);
    uint8_t *data = malloc(total + 1), *dev = NULL;
    for (size_t i = 0; i < total; i++) data[i] = (uint8_t)(i % 7 == 0 ? 255 : tu_next(&r));
    size_t n = (total + span - 1) / span;
    uint32_t *sums = NULL, *got = malloc(n * 4 + 4);
    cuda_ok(cudaMalloc((void **)&dev, total + 1), "cudaMalloc");
    cuda_ok(cudaMalloc((void **)&sums, n * 4 + 4), "cudaMalloc");
    cuda_ok(cudaMemcpy(dev, data, total, cudaMemcpyHostToDevice), "upload");
    if (gpu_finish_ok(ipk_adler32_spans(dev, total, span, sums, NULL), "ipk_adler32_spans"))
        cuda_ok(cudaMemcpy(got, sums, n * 4, cudaMemcpyDeviceToHost), "download");
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        size_t len = total - k * span < span ? total - k * span : span;
        bad += got[k] != (uint32_t)adler32_z(adler32(0L, Z_NULL, 0), data + k * span, len);
    }
    CHECK(bad == 0, "adler32 of %zu bytes in spans of %zu: %d spans differ from zlib's", total, span, bad);
    cudaFree(dev);
    cudaFree(sums);
    free(data);
    free(got);
}

/* The codecs as a run opens them (io_gpu_codecs_open: nvCOMP, its batch and the scratch buffers
 * kept between images) on a stream of the test's. */
typedef struct {
    io_gpu_codecs *c;
    void *stream;
    int ready;
} codecs;

static codecs open_codecs(void)
{
    codecs k = { NULL, NULL, 0 };
    int rc = gpu_stream_create(&k.stream, err, sizeof err);
    CHECK(rc == IP_OK, "stream: %s", err);
    if (rc == IP_OK && io_gpu_codecs_open(&k.c, 0, k.stream, err, sizeof err) != IP_OK) {
        CHECK(!getenv("IMGPIPE_NVCOMP_LIB"), "IMGPIPE_NVCOMP_LIB is set but nvCOMP does not open: %s", err);
        printf("note: the png_gpu_write cases are skipped: %s\n", err);
        return k;
    }
    k.ready = rc == IP_OK;
    if (k.ready) printf("%s\n", nvcomp_description(k.c->nvcomp));
    return k;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* One image written by the GPU; *bytes its size. */
static void write_case(const codecs *k, FILE *list, const ip_image *img, int level, long *bytes)
{
    char path[512], what[128];
    const ip_shape *s = &img->shape;
    snprintf(what, sizeof what, "%dx%dx%d %s level %d", s->width, s->height, s->channels, img_dtype_name(s->dtype), level);
    snprintf(path, sizeof path, "%s/gpu_%dx%dx%d_%s_l%d.png", tu_tmpdir(), s->width, s->height, s->channels,
             img_dtype_name(s->dtype), level);
    size_t row = (size_t)s->width * s->channels * (s->dtype == IP_U16 ? 2 : 1);
    ip_image d = upload(img, row + 6);
    io_options opt;
    io_default_options(&opt);
    opt.png_level = level;
    int on_gpu = png_gpu_settings_for(level).algorithm >= 0;
    CHECK(png_gpu_encodable(&d.shape, &opt) == on_gpu, "%s: encodable is not %d", what, on_gpu);
    /* levels the CPU writes (5-9): the encoder is still checked, at algorithms 4 and 5 */
    png_gpu_settings set = on_gpu ? png_gpu_settings_for(level) : (png_gpu_settings){ level == 9 ? 5 : 4, (size_t)64 << 10 };
    if (!on_gpu) opt.png_level = 4;
    int rc = png_gpu_write_with(k->c, &d, path, &opt, &set, NULL, err, sizeof err);
    CHECK(rc == IP_OK, "%s: png_gpu_write: %s", what, err);
    ip_image back = { 0 };
    rc = rc ? rc : io_read(path, NULL, &back, err, sizeof err);
    CHECK(rc == IP_OK && ptu_same_pixels(img, &back), "%s: libpng (io_read) pixels differ: %s", what, err);
    size_t len, got;
    unsigned char *want = ptu_filtered(img, &len), *data = ptu_inflate_file(path, &got);
    CHECK(data && got == len && !memcmp(data, want, len), "%s: the image data inflates to %zu bytes, not the CPU "
          "writer's %zu filtered bytes", what, data ? got : 0, len);
    if (list) ptu_list_add(list, path, img);
    if (bytes) *bytes = file_size(path);
    free(want);
    free(data);
    img_free(&back);
    cudaFree(d.data);
}

static void write_cases(const codecs *k)
{
    char list_path[512];
    snprintf(list_path, sizeof list_path, "%s/gpu_files.txt", tu_tmpdir());
    FILE *list = fopen(list_path, "w");
    /* 1031 * c + 1 bytes a row: the 64 KiB bands end mid-row */
    static const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 37, 1 }, { 257, 13 }, { 1031, 211 } };
    static const int levels[] = { 1, 6, 9 };
    for (int s = 0; s < 5; s++)
        for (int c = 1; c <= 4; c++)
            for (int t = 0; t < 2; t++) {
                ip_image img = ptu_photo(sizes[s][0], sizes[s][1], c, t ? IP_U16 : IP_U8, 0, (uint64_t)(s + c + t));
                write_case(k, list, &img, levels[(s + c + t) % 3], NULL);
                img_free(&img);
            }
    fclose(list);
    int rc = ptu_decode_check(list_path);
    if (rc == 77) printf("note: Pillow/OpenCV check skipped (no /usr/bin/python3 with both)\n");
    CHECK(rc == 0 || rc == 77, "Pillow/OpenCV decodes differ (%d)", rc);
    /* No file, nor a temporary, where the folder does not exist. */
    ip_image img = ptu_photo(16, 16, 3, IP_U8, 0, 1);
    ip_image d = upload(&img, 48);
    io_options opt;
    io_default_options(&opt);
    opt.png_level = 1;   /* a level the GPU writes (the default, 6, is the CPU's) */
    char path[512];
    snprintf(path, sizeof path, "%s/no-such-folder/x.png", tu_tmpdir());
    CHECK(png_gpu_write(k->c, &d, path, &opt, err, sizeof err) == IP_EIO, "a missing folder: %s", err);
    cudaFree(d.data);
    img_free(&img);
}

/* One stream for the walk: data deflated by zlib at level with strategy, flushed (full flush:
 * an empty stored block) every flush_every bytes when not 0, pad zero bytes after it. */
typedef struct {
    unsigned char *bytes;
    size_t len;
} stream_case;

static stream_case deflate_case(const unsigned char *data, size_t len, int level, int strategy, size_t flush_every,
                                size_t pad)
{
    z_stream z = { 0 };
    stream_case c = { 0 };
    if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, strategy) != Z_OK) exit(2);
    size_t cap = deflateBound(&z, (uLong)len) + 64 * (len / (flush_every ? flush_every : len + 1) + 2);
    c.bytes = calloc(cap + pad, 1);   /* the pad bytes after the stream stay zero */
    z.next_out = c.bytes, z.avail_out = (uInt)cap;
    for (size_t at = 0;;) {
        size_t piece = flush_every && len - at > flush_every ? flush_every : len - at;
        z.next_in = (Bytef *)data + at, z.avail_in = (uInt)piece;
        at += piece;
        int rc = deflate(&z, at < len ? Z_FULL_FLUSH : Z_FINISH);
        if (at == len) {
            CHECK(rc == Z_STREAM_END, "zlib deflate: %d", rc);
            break;
        }
    }
    c.len = cap - z.avail_out + pad;
    deflateEnd(&z);
    return c;
}

/* The streams laid out slot bytes apart on the device, walked there and here: equal results. */
static void walk_compare(const char *what, stream_case *cases, size_t n)
{
    size_t slot = 8;
    for (size_t k = 0; k < n; k++)
        if (cases[k].len + 8 > slot) slot = (cases[k].len + 8) / 8 * 8;
    unsigned char *host = calloc(n, slot);
    unsigned long long *lens = malloc(n * sizeof *lens), *walks = malloc(2 * n * sizeof *walks);
    for (size_t k = 0; k < n; k++) memcpy(host + k * slot, cases[k].bytes, cases[k].len), lens[k] = cases[k].len;
    unsigned char *d_data = NULL;
    unsigned long long *d_lens = NULL, *d_walks = NULL;
    cuda_ok(cudaMalloc((void **)&d_data, n * slot), "cudaMalloc");
    cuda_ok(cudaMalloc((void **)&d_lens, n * sizeof *lens), "cudaMalloc");
    cuda_ok(cudaMalloc((void **)&d_walks, 2 * n * sizeof *walks), "cudaMalloc");
    cuda_ok(cudaMemcpy(d_data, host, n * slot, cudaMemcpyHostToDevice), "upload");
    cuda_ok(cudaMemcpy(d_lens, lens, n * sizeof *lens, cudaMemcpyHostToDevice), "upload");
    int rc = ipk_deflate_walk(d_data, slot, d_lens, n, d_walks, NULL);
    if (gpu_finish_ok(rc, "ipk_deflate_walk"))
        cuda_ok(cudaMemcpy(walks, d_walks, 2 * n * sizeof *walks, cudaMemcpyDeviceToHost), "download");
    int valid = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        deflate_walk_result w = { UINT64_MAX, UINT64_MAX };
        if (deflate_walk_prefix(cases[k].bytes, cases[k].len, &w)) w.final_start = w.end = UINT64_MAX;
        else valid++;
        CHECK(walks[2 * k] == w.final_start && walks[2 * k + 1] == w.end,
              "%s, stream %zu (%zu bytes): the device walked to %llu..%llu, the host to %llu..%llu", what, k,
              cases[k].len, walks[2 * k], walks[2 * k + 1], (unsigned long long)w.final_start,
              (unsigned long long)w.end);
    }
    printf("walk %s: %zu streams (%d valid) walked alike\n", what, n, valid);
    cudaFree(d_data), cudaFree(d_lens), cudaFree(d_walks);
    free(host), free(lens), free(walks);
}

/* The device's walk (ipk_deflate_walk) against the host's (deflate_walk_prefix): stored, fixed,
 * dynamic and Huffman-only streams of random and photo-like data from empty to 300 KB, several
 * blocks, zero padding after; then the same streams with a bit flipped or cut short. */
static void walk_cases(void)
{
    tu_rng r;
    tu_seed(&r, 41);
    ip_image photo = ptu_photo(700, 300, 3, IP_U8, 5, 9);
    size_t photo_len;
    unsigned char *rows = ptu_filtered(&photo, &photo_len), *noise = malloc(photo_len);
    for (size_t i = 0; i < photo_len; i++) noise[i] = (unsigned char)tu_next(&r);
    static const int levels[] = { 0, 1, 4, 6, 9 };
    static const int strategies[] = { Z_DEFAULT_STRATEGY, Z_FIXED, Z_HUFFMAN_ONLY, Z_FILTERED };
    static const size_t sizes[] = { 0, 1, 2, 100, 65536, 300000 };
    stream_case cases[5 * 4 * 6];
    size_t n = 0;
    for (int li = 0; li < 5; li++)
        for (int si = 0; si < 4; si++)
            for (int zi = 0; zi < 6; zi++) {
                size_t len = sizes[zi] < photo_len ? sizes[zi] : photo_len;
                const unsigned char *src = (li + si + zi) % 2 ? noise : rows;
                cases[n++] = deflate_case(src, len, levels[li], strategies[si], zi % 3 == 2 ? 7000 : 0, zi % 2);
            }
    walk_compare("valid", cases, n);
    for (size_t k = 0; k < n; k++) {
        if (!cases[k].len) continue;
        if (k % 2) cases[k].len = tu_next(&r) % cases[k].len;
        else cases[k].bytes[tu_next(&r) % cases[k].len] ^= (unsigned char)(1u << (tu_next(&r) % 8));
    }
    walk_compare("damaged", cases, n);
    for (size_t k = 0; k < n; k++) free(cases[k].bytes);
    free(rows);
    free(noise);
    img_free(&photo);
}

/* The sample photograph mirror-tiled to w x h. */
static ip_image photo(int w, int h, int channels)
{
    const char *dir = getenv("IMGPIPE_SAMPLES");
    char path[512];
    snprintf(path, sizeof path, "%s/astronaut.png", dir ? dir : "samples");
    ip_image src = { 0 }, out = { 0 };
    if (io_read(path, NULL, &src, err, sizeof err) != IP_OK) {
        printf("cannot read %s: %s\n", path, err);
        exit(1);
    }
    ip_shape s = { w, h, channels, IP_U8 };
    if (img_alloc(&out, &s, (uint64_t)1 << 32, err, sizeof err)) exit(1);
    int sw = src.shape.width, sh = src.shape.height, sc = src.shape.channels;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int tx = (x / sw) % 2 ? sw - 1 - x % sw : x % sw, ty = (y / sh) % 2 ? sh - 1 - y % sh : y % sh;
            const uint8_t *p = (const uint8_t *)src.data + (size_t)ty * (size_t)src.stride + (size_t)tx * sc;
            uint8_t *q = (uint8_t *)out.data + (size_t)y * (size_t)out.stride + (size_t)x * channels;
            if (channels == 1) q[0] = (uint8_t)((p[0] * 9798 + p[1] * 19235 + p[2] * 3735 + 16384) >> 15);
            else memcpy(q, p, 3);
        }
    img_free(&src);
    return out;
}

/* The bytes of a PNG file's IDAT chunks' data: its zlib stream. */
static long idat_bytes(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char head[8];
    long total = 0;
    if (!f || fread(head, 1, 8, f) != 8) {
        if (f) fclose(f);
        return -1;
    }
    while (fread(head, 1, 8, f) == 8) {
        long len = (long)head[0] << 24 | head[1] << 16 | head[2] << 8 | head[3];
        if (memcmp(head + 4, "IDAT", 4) == 0) total += len;
        if (fseek(f, len + 4, SEEK_CUR) != 0) break;
    }
    fclose(f);
    return total;
}

/* libpng's size at level: zlib at that level on the same filtered rows, plus the chunks' bytes */
static long libpng_size(const ip_image *img, int level, long cpu_file, long cpu_data)
{
    size_t len = 0;
    unsigned char *filtered = ptu_filtered(img, &len);
    uLongf bound = compressBound((uLong)len);
    unsigned char *z = malloc(bound);
    long size = -1;
    if (filtered && z && compress2(z, &bound, filtered, (uLong)len, level) == Z_OK)
        size = cpu_file - cpu_data + (long)bound;
    free(filtered);
    free(z);
    return size;
}

static void size_cases(const codecs *k)
{
    ip_image img = photo(1536, 1024, 3);
    static const int levels[] = { 1, 4, 6, 9 };
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/cpu_l%d.png", tu_tmpdir(), levels[i]);
        io_options opt;
        io_default_options(&opt);
        opt.png_level = levels[i];
        long gpu = 0, cpu = io_write(path, &img, &opt, err, sizeof err) ? -1 : file_size(path);
        if (!png_gpu_encodable(&img.shape, &opt)) {   /* the CPU writes this level */
            CHECK(levels[i] >= 5, "level %d is not encodable on the GPU", levels[i]);
            printf("size at level %d: written by the CPU (no GPU algorithm within 3%%)\n", levels[i]);
            continue;
        }
        long cpu_data = idat_bytes(path);
        long libpng = libpng_size(&img, levels[i], cpu, cpu_data);
        write_case(k, NULL, &img, levels[i], &gpu);
        double ratio = (double)gpu / (double)libpng;
        printf("size at level %d (algorithm %d): GPU %ld bytes, CPU writer %ld, libpng (zlib) %ld: %.4f of libpng's\n",
               levels[i], png_gpu_settings_for(levels[i]).algorithm, gpu, cpu, libpng, ratio);
        CHECK(libpng > 0 && ratio <= MAX_SIZE_RATIO, "level %d: the GPU's file is %.4f of libpng's (at most %.2f)",
              levels[i], ratio, MAX_SIZE_RATIO);
    }
    img_free(&img);
}

/* The numbers the level -> algorithm table is set from. */
static void bench(const codecs *k, int channels)
{
    ip_image img = photo(4096, 4096, channels);
    size_t row = (size_t)img.shape.width * channels;
    ip_image d = upload(&img, row);
    double raw = (double)row * img.shape.height;
    char path[512];
    snprintf(path, sizeof path, "%s/bench.png", tu_tmpdir());
    printf("\nbench: astronaut mirror-tiled to 4096x4096x%d (%.1f MB)\n", channels, raw / 1e6);
    for (int level = 1; level <= 9; level++) {
        io_options opt;
        io_default_options(&opt);
        opt.png_level = level;
        double t0 = now_ms();
        int rc = io_write(path, &img, &opt, err, sizeof err);
        double ms = now_ms() - t0;
        printf("CPU writer level %d (%d threads): %ld bytes, ratio %.3f, %.1f ms, %.2f GB/s\n", level,
               io_thread_count(&opt), rc ? -1 : file_size(path), raw / (double)file_size(path), ms, raw / ms / 1e6);
    }
    static const size_t bands[] = { (size_t)1 << 15, (size_t)1 << 16, (size_t)1 << 18 };
    for (int alg = 0; alg <= 5; alg++)
        for (int b = 0; b < 3; b++) {
            io_options opt;
            io_default_options(&opt);
            opt.png_level = 1;   /* encodable: the settings below choose the algorithm */
            png_gpu_settings s = { alg, bands[b] };
            png_gpu_times t = { 0 }, best = { 0 };
            int rc = IP_OK;
            for (int rep = 0; rep < 3 && !rc; rep++) {
                rc = png_gpu_write_with(k->c, &d, path, &opt, &s, &t, err, sizeof err);
                if (!rc && (rep == 0 || t.total_ms < best.total_ms)) best = t;
            }
            if (rc) {
                printf("GPU algorithm %d, %zu KiB bands: %s\n", alg, bands[b] >> 10, err);
                continue;
            }
            printf("GPU algorithm %d, %4zu KiB bands: %ld bytes, ratio %.3f; filter %.2f ms, deflate %.2f ms (%.2f "
                   "GB/s), download %.2f ms, join+write %.2f ms, total %.2f ms (%.2f GB/s)\n",
                   alg, bands[b] >> 10, file_size(path), raw / (double)file_size(path), best.filter_ms,
                   best.deflate_ms, (double)best.filtered_bytes / best.deflate_ms / 1e6, best.download_ms,
                   best.join_ms, best.total_ms, raw / best.total_ms / 1e6);
        }
    cudaFree(d.data);
    img_free(&img);
}

int main(void)
{
    need_gpu();
    filter_cases();
    adler_case(1, 1), adler_case(100000, 65536), adler_case(1 << 20, 4096), adler_case(3000001, 1 << 20);
    walk_cases();
    codecs k = open_codecs();
    if (k.ready) {
        write_cases(&k);
        size_cases(&k);
        if (!tu_quick()) bench(&k, 3), bench(&k, 1);
        io_gpu_codecs_close(k.c);
    }
    gpu_stream_destroy(k.stream);
    return tu_finish();
}
