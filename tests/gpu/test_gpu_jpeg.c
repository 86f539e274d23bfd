/* jpeg_gpu against libjpeg-turbo: files made here with libjpeg-turbo from the sample photographs
 * (mirror-tiled to size), decoded by nvJPEG and by io_read; GPU encodes read back by io_read;
 * truncated and damaged files give the fallback code; 500 decodes do not grow device memory;
 * a batch gives the same pixels as single decodes; a decode lands after the work queued before it
 * on its stream. Prints max difference and PSNR of every case
 * and, last, decode times against libjpeg-turbo for a 12 MP and a 64 MP photograph.
 * Bounds (first version, to be set from the first H100 run): decode PSNR >= 40 dB and max
 * difference <= 16; encode at quality 90 read back >= 35 dB against the source. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu/gpu.h"
#include "gpu_testutil.h"
#include "base/image.h"
#include "io/io.h"
#include "io/jpeg_gpu.h"
#include "io/jpeg_pool.h"
#include "io/jpeg_layout.h"
#include "jpeg_make.h"

#define DECODE_MIN_PSNR 40.0
#define DECODE_MAX_DIFF 16
#define ENCODE_MIN_PSNR_Q90 35.0
#define ENCODE_MIN_PSNR_Q75 30.0

static char err[512];
static int quick;
static jpeg_gpu *gj;
static jpeg_gpu_buffer dev_buf[16];
static const jpeg_gpu_memory dev_mem = { jpeg_gpu_buffer_alloc, dev_buf };
static ip_image photo_rgb, photo_gray;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *tmp_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    return path;
}

static ip_image load_sample(const char *name, int channels)
{
    const char *dir = getenv("IMGPIPE_SAMPLES");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "samples", name);
    ip_image img;
    if (io_read(path, NULL, &img, err, sizeof err) != IP_OK || img.shape.channels < channels) {
        printf("cannot read the sample %s: %s\n", path, err);
        exit(1);
    }
    return img;
}

static int mirror(int i, int n)
{
    int period = 2 * n, m = i % period;
    return m < n ? m : period - 1 - m;
}

/* A w x h photograph: the sample mirror-tiled, so it has a photograph's detail at any size. */
static unsigned char *make_photo(int w, int h, int c)
{
    const ip_image *src = c == 1 ? &photo_gray : &photo_rgb;
    unsigned char *px = malloc((size_t)w * (size_t)h * (size_t)c);
    for (int y = 0; y < h; y++) {
        const unsigned char *row = (const unsigned char *)src->data + (size_t)mirror(y, src->shape.height) * (size_t)src->stride;
        for (int x = 0; x < w; x++)
            memcpy(px + ((size_t)y * (size_t)w + (size_t)x) * (size_t)c,
                   row + (size_t)mirror(x, src->shape.width) * (size_t)src->shape.channels, (size_t)c);
    }
    return px;
}

static ip_image download(const ip_image *d)
{
    ip_image h = { 0 };
    if (img_alloc(&h, &d->shape, IMG_DEFAULT_MAX_PIXELS, err, sizeof err) != IP_OK) exit(1);
    cuda_ok(cudaMemcpy2D(h.data, (size_t)h.stride, d->data, (size_t)d->stride, img_row_bytes(&d->shape),
                         (size_t)d->shape.height, cudaMemcpyDeviceToHost), "download");
    return h;
}

typedef struct { double max_diff, psnr; } diff_stats;

static diff_stats compare(const unsigned char *a, size_t a_stride, const unsigned char *b, size_t b_stride,
                          int w, int h, int c)
{
    diff_stats d = { 0, INFINITY };
    double sq = 0;
    for (int y = 0; y < h; y++)
        for (size_t i = 0; i < (size_t)w * (size_t)c; i++) {
            double e = fabs((double)a[(size_t)y * a_stride + i] - (double)b[(size_t)y * b_stride + i]);
            if (e > d.max_diff) d.max_diff = e;
            sq += e * e;
        }
    double mse = sq / ((double)w * h * c);
    if (mse > 0) d.psnr = 10.0 * log10(255.0 * 255.0 / mse);
    return d;
}

static ip_image read_cpu(const unsigned char *bytes, size_t len, const char *name, int *rc)
{
    const char *path = tmp_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
        printf("cannot write %s\n", path);
        exit(1);
    }
    /* Refused means refused under --fail-on warning: by default libjpeg-turbo decodes past damage. */
    io_options opt;
    io_default_options(&opt);
    opt.fail_on = IO_FAIL_ON_WARNING;
    ip_image img;
    *rc = io_read(path, &opt, &img, err, sizeof err);
    return img;
}

typedef struct {
    const char *name;
    int w, h, c;
    jm_settings s;
} decode_case;

static void decode_one(const decode_case *k)
{
    unsigned char *px = make_photo(k->w, k->h, k->c);
    size_t len;
    unsigned char *jpg = jm_encode(px, (size_t)k->w * (size_t)k->c, k->w, k->h, k->c, &k->s, &len);
    int cpu_rc;
    ip_image cpu = read_cpu(jpg, len, "case.jpg", &cpu_rc);
    CHECK(cpu_rc == IP_OK, "%s: libjpeg-turbo: %s", k->name, err);
    long hw_before = jpeg_gpu_hardware_decodes(gj);
    ip_image dev;
    int rc = jpeg_gpu_decode(gj, jpg, len, NULL, &dev_mem, &dev, err, sizeof err);
    const char *path = jpeg_gpu_hardware_decodes(gj) > hw_before ? "hardware" : "CUDA";
    CHECK(rc == IP_OK, "%s %dx%dx%d: nvJPEG: %s", k->name, k->w, k->h, k->c, err);
    if (rc == IP_OK && cpu_rc == IP_OK) {
        CHECK(dev.on_device && dev.shape.width == k->w && dev.shape.height == k->h && dev.shape.channels == k->c &&
              dev.shape.dtype == IP_U8 && dev.stride == (ptrdiff_t)k->w * k->c, "%s: shape", k->name);
        ip_image host = download(&dev);
        diff_stats d = compare(host.data, (size_t)host.stride, cpu.data, (size_t)cpu.stride, k->w, k->h, k->c);
        printf("decode %-22s %5dx%-5d c%d %8zu bytes  %-8s  max diff %3.0f  PSNR %6.2f dB\n", k->name, k->w, k->h,
               k->c, len, path, d.max_diff, d.psnr);
        CHECK(d.max_diff <= DECODE_MAX_DIFF && d.psnr >= DECODE_MIN_PSNR, "%s %dx%d: max diff %.0f, PSNR %.2f dB",
              k->name, k->w, k->h, d.max_diff, d.psnr);
        img_free(&host);
    }
    if (cpu_rc == IP_OK) img_free(&cpu);
    free(jpg);
    free(px);
}

static void decode_cases(void)
{
    const int sizes[][2] = { { 1, 1 }, { 17, 9 }, { 641, 479 }, { 4001, 2999 } };
    const struct { const char *name; int c; jm_settings s; } kinds[] = {
        { "baseline 4:4:4 q90", 3, { 90, JM_444, 0, 0, JCS_UNKNOWN } },  { "baseline 4:2:2 q85", 3, { 85, JM_422, 0, 0, JCS_UNKNOWN } },
        { "baseline 4:2:0 q75", 3, { 75, JM_420, 0, 0, JCS_UNKNOWN } },  { "progressive 4:2:0 q90", 3, { 90, JM_420, 1, 0, JCS_UNKNOWN } },
        { "restarts 4:2:0 q90", 3, { 90, JM_420, 0, 1, JCS_UNKNOWN } },  { "gray q90", 1, { 90, JM_444, 0, 0, JCS_UNKNOWN } },
        { "gray progressive q80", 1, { 80, JM_444, 1, 0, JCS_UNKNOWN } }, { "gray restarts q90", 1, { 90, JM_444, 0, 2, JCS_UNKNOWN } },
    };
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            if (quick && sizes[z][0] > 1000) continue;
            decode_case dc = { kinds[k].name, sizes[z][0], sizes[z][1], kinds[k].c, kinds[k].s };
            decode_one(&dc);
        }
}

/* Encodes the host pixels px from a device copy whose rows are longer than the image's. */
static int encode_on_gpu(const unsigned char *px, int w, int h, int c, int quality, unsigned char **bytes,
                         size_t *len, double *ms)
{
    ip_shape shape = { w, h, c, IP_U8 };
    size_t row = img_row_bytes(&shape), pitch = row + 64;
    void *d = NULL;
    if (!cuda_ok(cudaMalloc(&d, pitch * (size_t)h), "cudaMalloc")) exit(1);
    cuda_ok(cudaMemcpy2D(d, pitch, px, row, row, (size_t)h, cudaMemcpyHostToDevice), "upload");
    ip_image dev = { d, (ptrdiff_t)pitch, shape, 1 };
    double t0 = now_ms();
    int rc = jpeg_gpu_encode(gj, &dev, quality, bytes, len, err, sizeof err);
    *ms = now_ms() - t0;
    cudaFree(d);
    return rc;
}

static void encode_one(int w, int h, int c, int quality)
{
    unsigned char *px = make_photo(w, h, c);
    ip_shape shape = { w, h, c, IP_U8 };
    size_t row = img_row_bytes(&shape);
    unsigned char *bytes = NULL;
    size_t len = 0;
    double ms = 0;
    int rc = encode_on_gpu(px, w, h, c, quality, &bytes, &len, &ms);
    CHECK(rc == IP_OK && bytes && len > 0, "encode %dx%dx%d q%d: %s", w, h, c, quality, err);
    if (rc == IP_OK) {
        const char *path = tmp_path("gpu-encoded.jpg");
        CHECK(io_write_bytes(path, bytes, len, NULL, err, sizeof err) == IP_OK, "io_write_bytes: %s", err);
        jpeg_layout L;
        CHECK(jpeg_layout_read(bytes, len, &L, err, sizeof err) == IP_OK, "encoded layout: %s", err);
        int full_chroma = c == 1 || quality >= 90;
        CHECK(L.components == c && L.coding == JL_BASELINE && L.h[0] == (full_chroma ? 1 : 2) &&
              L.v[0] == (full_chroma ? 1 : 2), "encoded %dx%dx%d q%d: %d components, coding %d, luma %dx%d", w, h, c,
              quality, L.components, (int)L.coding, L.h[0], L.v[0]);
        ip_image back;
        rc = io_read(path, NULL, &back, err, sizeof err);
        CHECK(rc == IP_OK, "reading the GPU-encoded file: %s", err);
        if (rc == IP_OK) {
            diff_stats s = compare(back.data, (size_t)back.stride, px, row, w, h, c);
            ip_image cpu_src = { px, (ptrdiff_t)row, shape, 0 };
            io_options opt;
            io_default_options(&opt);
            opt.jpeg_quality = quality;
            CHECK(io_write(tmp_path("cpu-encoded.jpg"), &cpu_src, &opt, err, sizeof err) == IP_OK, "%s", err);
            size_t cpu_len = 0;
            FILE *f = fopen(tmp_path("cpu-encoded.jpg"), "rb");
            if (f) {
                fseek(f, 0, SEEK_END);
                cpu_len = (size_t)ftell(f);
                fclose(f);
            }
            printf("encode %5dx%-5d c%d q%d: %8zu bytes (CPU writer %8zu), read back max diff %3.0f PSNR %6.2f dB, %.2f ms\n",
                   w, h, c, quality, len, cpu_len, s.max_diff, s.psnr, ms);
            double floor = quality >= 90 ? ENCODE_MIN_PSNR_Q90 : ENCODE_MIN_PSNR_Q75;
            CHECK(s.psnr >= floor, "encode %dx%dx%d q%d: PSNR %.2f dB < %.0f", w, h, c, quality, s.psnr, floor);
            img_free(&back);
        }
    }
    free(bytes);
    free(px);
}

/* The encoder keeps its bytes' buffer between images: a small image after large ones must come
 * back exactly as it did first, not with the larger image's length or bytes. */
static void encode_after_larger(unsigned char *first, size_t first_len)
{
    unsigned char *px = make_photo(17, 9, 3), *again = NULL;
    size_t len = 0;
    double ms = 0;
    int rc = encode_on_gpu(px, 17, 9, 3, 90, &again, &len, &ms);
    int same = rc == IP_OK && len == first_len && !memcmp(again, first, len);
    CHECK(same, "17x9 encoded after larger images: %zu bytes, first time %zu (%s)", len, first_len, rc ? err : "");
    printf("encode 17x9 after larger images: %zu bytes, %s the first encode's\n", len, same ? "equal to" : "UNLIKE");
    free(again);
    free(px);
}

/* Noise at quality 100 encodes past JPEG_GPU_PINNED_MAX: its bytes come the pageable way and must
 * decode to the image as any encode does. */
static void encode_past_pinned_cap(void)
{
    const int w = 4096, h = 4096;
    size_t n = (size_t)w * (size_t)h * 3;
    unsigned char *px = malloc(n), *bytes = NULL;
    uint32_t seed = 29;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        px[i] = (unsigned char)(seed >> 24);
    }
    size_t len = 0;
    double ms = 0;
    int rc = encode_on_gpu(px, w, h, 3, 100, &bytes, &len, &ms);
    CHECK(rc == IP_OK && len > JPEG_GPU_PINNED_MAX, "noise %dx%d q100: %zu bytes, want past the %zu pinned (%s)", w,
          h, len, JPEG_GPU_PINNED_MAX, rc ? err : "");
    ip_image back = { 0 };
    const char *path = tmp_path("gpu-encoded-noise.jpg");
    if (rc == IP_OK) rc = io_write_bytes(path, bytes, len, NULL, err, sizeof err);
    if (rc == IP_OK) rc = io_read(path, NULL, &back, err, sizeof err);
    CHECK(rc == IP_OK, "reading the noise JPEG back: %s", err);
    if (rc == IP_OK) {
        diff_stats d = compare(back.data, (size_t)back.stride, px, (size_t)w * 3, w, h, 3);
        printf("encode noise %dx%d q100: %zu bytes past the pinned buffer, read back PSNR %.2f dB\n", w, h, len, d.psnr);
        CHECK(d.psnr >= ENCODE_MIN_PSNR_Q90, "noise q100 read back: PSNR %.2f dB < %.0f", d.psnr, ENCODE_MIN_PSNR_Q90);
        img_free(&back);
    }
    free(bytes);
    free(px);
}

static void encode_cases(void)
{
    unsigned char *px = make_photo(17, 9, 3), *first = NULL;
    size_t first_len = 0;
    double ms = 0;
    CHECK(encode_on_gpu(px, 17, 9, 3, 90, &first, &first_len, &ms) == IP_OK, "first 17x9 encode: %s", err);
    free(px);
    const int sizes[][2] = { { 1, 1 }, { 17, 9 }, { 641, 479 }, { 4001, 2999 } };
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (int c = 1; c <= 3; c += 2)
            for (int q = 75; q <= 90; q += 15) {
                if (quick && sizes[z][0] > 1000) continue;
                encode_one(sizes[z][0], sizes[z][1], c, q);
            }
    encode_past_pinned_cap();
    if (first) encode_after_larger(first, first_len);
    free(first);
    ip_image bad = { dev_buf[0].dev, 16, { 4, 4, 2, IP_U8 }, 1 };
    unsigned char *bytes;
    size_t len;
    CHECK(jpeg_gpu_encode(gj, &bad, 90, &bytes, &len, err, sizeof err) == IP_EINVAL && !bytes, "2 channels accepted");
}

static unsigned char *photo_jpeg(int w, int h, int c, jm_settings s, size_t *len)
{
    unsigned char *px = make_photo(w, h, c);
    unsigned char *jpg = jm_encode(px, (size_t)w * (size_t)c, w, h, c, &s, len);
    free(px);
    return jpg;
}

/* Expects the fallback code and no pixels; reports what libjpeg-turbo said of the same bytes. */
static void expect_fallback(const char *what, const unsigned char *jpg, size_t len)
{
    ip_image dev;
    int rc = jpeg_gpu_decode(gj, jpg, len, NULL, &dev_mem, &dev, err, sizeof err);
    CHECK(rc == IP_EUNSUPPORTED && dev.data == NULL, "%s: GPU status %d (%s)", what, rc, err);
    char gpu_why[512];
    snprintf(gpu_why, sizeof gpu_why, "%s", err);
    int cpu_rc;
    ip_image cpu = read_cpu(jpg, len, "damaged.jpg", &cpu_rc);
    printf("damaged %-34s GPU: %-40.40s | libjpeg-turbo: %s\n", what, gpu_why, cpu_rc ? err : "decoded");
    if (cpu_rc == IP_OK) img_free(&cpu);
}

static void damaged_files(void)
{
    size_t len;
    unsigned char *jpg = photo_jpeg(641, 479, 3, (jm_settings){ 90, JM_420, 0, 0, JCS_UNKNOWN }, &len);
    unsigned char *copy = malloc(len);
    const size_t cuts[] = { len / 2, len - 1, len - 2, len - 100, 300 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "truncated at %zu of %zu", cuts[i], len);
        expect_fallback(what, jpg, cuts[i]);
    }
    size_t sos = 0;
    for (size_t i = 2; i + 1 < len && !sos; i++)
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xDA) sos = i;
    size_t mid = sos + (len - sos) / 2;
    while (jpg[mid] == 0xFF || jpg[mid - 1] == 0xFF || jpg[mid + 1] == 0xFF) mid++;
    memcpy(copy, jpg, len);
    copy[mid] = 0xFF;
    copy[mid + 1] = 0xD3;
    expect_fallback("stray restart marker", copy, len);
    memcpy(copy, jpg, len);
    for (size_t i = 2; i + 8 < sos; i++)
        if (copy[i] == 0xFF && copy[i + 1] == 0xC0) copy[i + 7] = copy[i + 8] = 0;   /* frame width 0 */
    expect_fallback("frame width 0", copy, len);
    memcpy(copy, jpg, len);
    memset(copy + sos + 40, 0x00, 64);   /* scan data zeroed: decodes, as with libjpeg-turbo? */
    ip_image dev;
    int rc = jpeg_gpu_decode(gj, copy, len, NULL, &dev_mem, &dev, err, sizeof err);
    int cpu_rc;
    ip_image cpu = read_cpu(copy, len, "damaged.jpg", &cpu_rc);
    printf("damaged %-34s GPU status %d | libjpeg-turbo: %s\n", "64 bytes of scan data zeroed", rc,
           cpu_rc ? err : "decoded");
    if (cpu_rc == IP_OK) img_free(&cpu);
    /* Random byte damage inside the scan data, away from markers. nvJPEG does not report bit damage
     * in entropy-coded data (measured on the H100: it decoded all 6 of 6 such files libjpeg-turbo
     * refuses), which jpeg_gpu.h documents; here it must either decline the file or give an image of
     * the file's own shape, never fail otherwise. */
    tu_rng rng;
    tu_seed(&rng, 2024);
    int cpu_refused = 0, gpu_accepted_refused = 0;
    for (int round = 0; round < 40; round++) {   /* about 1 in 7 of these makes libjpeg-turbo refuse */
        memcpy(copy, jpg, len);
        for (int k = 0; k < 4; k++) {
            size_t at = sos + 20 + tu_next(&rng) % (len - sos - 40);
            unsigned char v = (unsigned char)(tu_next(&rng) % 255);
            if (copy[at - 1] != 0xFF && copy[at] != 0xFF) copy[at] = v;
        }
        cpu = read_cpu(copy, len, "damaged.jpg", &cpu_rc);
        if (cpu_rc == IP_OK) {
            img_free(&cpu);
            continue;
        }
        cpu_refused++;
        rc = jpeg_gpu_decode(gj, copy, len, NULL, &dev_mem, &dev, err, sizeof err);
        CHECK(rc == IP_OK || rc == IP_EUNSUPPORTED, "damaged scan data: status %d (%s)", rc, err);
        if (rc == IP_OK) {
            gpu_accepted_refused++;
            CHECK(dev.shape.width == 641 && dev.shape.height == 479, "damaged scan data decoded as %dx%d",
                  dev.shape.width, dev.shape.height);
        }
    }
    printf("damaged scan data: libjpeg-turbo refused %d files, nvJPEG decoded %d of them\n", cpu_refused,
           gpu_accepted_refused);
    CHECK(cpu_refused > 0, "the damage never made libjpeg-turbo refuse a file: the check above tried nothing");
    free(copy);
    free(jpg);
    /* Files libjpeg-turbo decodes differently or not at all go to it. */
    jpg = photo_jpeg(64, 48, 3, (jm_settings){ 90, JM_444, 0, 0, JCS_RGB }, &len);
    expect_fallback("RGB-coded (Adobe transform 0)", jpg, len);
    free(jpg);
    unsigned char *cmyk = calloc(64 * 48, 4);
    for (size_t i = 0; i < 64 * 48 * 4; i++) cmyk[i] = (unsigned char)(i * 7);
    jpg = jm_encode(cmyk, 64 * 4, 64, 48, 4, &(jm_settings){ 90, JM_444, 0, 0, JCS_UNKNOWN }, &len);
    expect_fallback("CMYK", jpg, len);
    free(cmyk);
    free(jpg);
}

/* The shape goes through io_shape_known: the pixel limit and on_shape apply before any memory. */
static int refuse_shape(void *user, const ip_shape *shape, char *e, size_t elen)
{
    ++*(int *)user;
    snprintf(e, elen, "refused %dx%d", shape->width, shape->height);
    return IP_EINVAL;
}

static void shape_checks(void)
{
    size_t len;
    unsigned char *jpg = photo_jpeg(64, 48, 3, (jm_settings){ 90, JM_444, 0, 0, JCS_UNKNOWN }, &len);
    io_options opt;
    io_default_options(&opt);
    opt.max_pixels = 64 * 48 - 1;
    ip_image dev;
    CHECK(jpeg_gpu_decode(gj, jpg, len, &opt, &dev_mem, &dev, err, sizeof err) == IP_ELIMIT, "pixel limit: %s", err);
    io_default_options(&opt);
    int calls = 0;
    opt.on_shape = refuse_shape;
    opt.on_shape_user = &calls;
    int rc = jpeg_gpu_decode(gj, jpg, len, &opt, &dev_mem, &dev, err, sizeof err);
    CHECK(rc == IP_EINVAL && calls == 1 && !strcmp(err, "refused 64x48"), "on_shape: %d calls, %d (%s)", calls, rc, err);
    free(jpg);
}

static void batch_matches_single(void)
{
    enum { N = 6 };
    const jm_settings s[N] = { { 90, JM_420, 0, 0, JCS_UNKNOWN }, { 90, JM_444, 0, 0, JCS_UNKNOWN }, { 85, JM_420, 1, 0, JCS_UNKNOWN },
                               { 90, JM_444, 0, 0, JCS_UNKNOWN }, { 90, JM_420, 0, 0, JCS_UNKNOWN }, { 75, JM_422, 0, 1, JCS_UNKNOWN } };
    const int chans[N] = { 3, 3, 3, 1, 3, 3 };
    unsigned char *jpg[N];
    size_t len[N];
    for (int i = 0; i < N; i++) jpg[i] = photo_jpeg(300 + 7 * i, 200 + 5 * i, chans[i], s[i], &len[i]);
    len[4] = len[4] / 2;   /* truncated: only this one falls back */
    ip_image out[N];
    int rcs[N];
    int rc = jpeg_gpu_decode_batch(gj, N, (const unsigned char *const *)jpg, len, NULL, &dev_mem, out, rcs, err, sizeof err);
    CHECK(rc == IP_OK, "batch: %s", err);
    for (int i = 0; rc == IP_OK && i < N; i++) {
        CHECK(i == 4 ? rcs[i] == IP_EUNSUPPORTED : rcs[i] == IP_OK, "batch item %d: status %d", i, rcs[i]);
        if (rcs[i] != IP_OK) continue;
        ip_image host = download(&out[i]);
        int cpu_rc;
        ip_image cpu = read_cpu(jpg[i], len[i], "batch.jpg", &cpu_rc);
        diff_stats d = compare(host.data, (size_t)host.stride, cpu.data, (size_t)cpu.stride, host.shape.width,
                               host.shape.height, host.shape.channels);
        CHECK(cpu_rc == IP_OK && d.max_diff <= DECODE_MAX_DIFF && d.psnr >= DECODE_MIN_PSNR,
              "batch item %d: max diff %.0f PSNR %.2f", i, d.max_diff, d.psnr);
        img_free(&host);
        if (cpu_rc == IP_OK) img_free(&cpu);
    }
    for (int i = 0; i < N; i++) free(jpg[i]);
}

/* nvJPEG's hardware batch writes its output when it is called, ahead of work queued before it on
 * its stream (torchcodec#1634), so jpeg_gpu must wait for that work first. The queued work here is
 * a 100 ms pause on the host, then a fill of the very buffer the decode writes: the decode must
 * land after it, giving exactly the pixels of the same decode alone. */
static void CUDART_CB pause_100ms(void *user)
{
    (void)user;
    struct timespec t = { 0, 100000000L };
    nanosleep(&t, NULL);
}

static void decode_after_queued_work(void *stream)
{
    const int w = 641, h = 479, c = 3;
    size_t len;
    unsigned char *jpg = photo_jpeg(w, h, c, (jm_settings){ 90, JM_420, 0, 0, JCS_UNKNOWN }, &len);
    ip_image alone, after;
    long hw_before = jpeg_gpu_hardware_decodes(gj);
    int rc = jpeg_gpu_decode(gj, jpg, len, NULL, &dev_mem, &alone, err, sizeof err);
    CHECK(rc == IP_OK, "decode alone: %s", err);
    if (rc != IP_OK) {
        free(jpg);
        return;
    }
    ip_image expect = download(&alone);
    size_t bytes = (size_t)alone.stride * (size_t)alone.shape.height;
    int queued = cuda_ok(cudaLaunchHostFunc((cudaStream_t)stream, pause_100ms, NULL), "queue a pause") &&
                 cuda_ok(cudaMemsetAsync(alone.data, 0x5A, bytes, (cudaStream_t)stream), "queue a fill");
    rc = jpeg_gpu_decode(gj, jpg, len, NULL, &dev_mem, &after, err, sizeof err);
    CHECK(rc == IP_OK && after.data == alone.data, "decode after queued work: %s (the same buffer: %d)", err,
          rc == IP_OK && after.data == alone.data);
    if (queued && rc == IP_OK && cuda_ok(cudaStreamSynchronize((cudaStream_t)stream), "the stream")) {
        ip_image got = download(&after);
        diff_stats d = compare(got.data, (size_t)got.stride, expect.data, (size_t)expect.stride, w, h, c);
        printf("decode after 100 ms of queued work (%s): max diff %.0f against the same decode alone\n",
               jpeg_gpu_hardware_decodes(gj) >= hw_before + 2 ? "hardware" : "CUDA", d.max_diff);
        CHECK(d.max_diff == 0, "decode after queued work: overwritten by that work (max diff %.0f)", d.max_diff);
        img_free(&got);
    }
    img_free(&expect);
    free(jpg);
}

/* The folder pool: threads decoding at once through one shared decoder get exactly the pixels a
 * lone decode gives (batched or not), and a truncated file falls back for its thread alone. */
enum { POOL_THREADS = 4, POOL_FILES = 6 };
typedef struct {
    jpeg_pool *pool;
    unsigned char *jpg[POOL_FILES];
    size_t len[POOL_FILES];
    ip_image expect[POOL_FILES];   /* host copies of single decodes; data NULL: must fall back */
    int mismatches, wrong_status;
} pool_worker;

static void *pool_thread(void *arg)
{
    pool_worker *w = arg;
    jpeg_gpu_buffer buf = { 0 };
    jpeg_gpu_memory mem = { jpeg_gpu_buffer_alloc, &buf };
    char e[256];
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < POOL_FILES; i++) {
            ip_image dev;
            int rc = jpeg_pool_decode(w->pool, 0, w->jpg[i], w->len[i], NULL, &mem, &dev, e, sizeof e);
            if ((rc == IP_OK) != (w->expect[i].data != NULL)) w->wrong_status++;
            if (rc != IP_OK) continue;
            ip_image host = download(&dev);
            diff_stats d = compare(host.data, (size_t)host.stride, w->expect[i].data, (size_t)w->expect[i].stride,
                                   host.shape.width, host.shape.height, host.shape.channels);
            if (d.max_diff != 0) w->mismatches++;
            img_free(&host);
        }
    jpeg_gpu_buffer_free(&buf);
    return NULL;
}

static void pool_matches_single(void)
{
    pool_worker ws[POOL_THREADS];
    memset(ws, 0, sizeof ws);
    int device = 0;
    jpeg_pool *pool = NULL;
    /* the handle alone at open: the decoder state is made at the first decode */
    CHECK(jpeg_pool_open(&pool, 1, &device, 0, POOL_THREADS, err, sizeof err) == IP_OK, "%s", err);
    if (!pool) return;
    CHECK(!jpeg_gpu_times(jpeg_pool_handle(pool, device, NULL)).decoder_made, "the pool made a decoder state at open");
    for (int t = 0; t < POOL_THREADS; t++) {
        ws[t].pool = pool;
        for (int i = 0; i < POOL_FILES; i++) {
            jm_settings s = { 80 + 3 * i, i % 3 == 0 ? JM_420 : i % 3 == 1 ? JM_444 : JM_422, i == 5, i == 4, JCS_UNKNOWN };
            ws[t].jpg[i] = photo_jpeg(97 + 31 * t + 13 * i, 61 + 7 * i, i == 3 ? 1 : 3, s, &ws[t].len[i]);
            if (t == 2 && i == 1) ws[t].len[i] /= 2;   /* truncated */
            ip_image dev;
            if (jpeg_gpu_decode(gj, ws[t].jpg[i], ws[t].len[i], NULL, &dev_mem, &dev, err, sizeof err) == IP_OK)
                ws[t].expect[i] = download(&dev);
        }
    }
    pthread_t tids[POOL_THREADS];
    for (int t = 0; t < POOL_THREADS; t++) pthread_create(&tids[t], NULL, pool_thread, &ws[t]);
    int mismatches = 0, wrong = 0;
    for (int t = 0; t < POOL_THREADS; t++) {
        pthread_join(tids[t], NULL);
        mismatches += ws[t].mismatches;
        wrong += ws[t].wrong_status;
    }
    jpeg_pool_stats st = jpeg_pool_totals(pool);
    printf("pool: %ld files in %ld batches (largest %d), open %.0f ms\n", st.files, st.batches, st.largest_batch,
           st.open_ms);
    CHECK(wrong == 0 && mismatches == 0, "pool: %d wrong statuses, %d images differ from single decodes", wrong,
          mismatches);
    CHECK(st.files == (long)(3 * (POOL_THREADS * POOL_FILES - 1)), "pool decoded %ld files", st.files);
    CHECK(jpeg_gpu_times(jpeg_pool_handle(pool, device, NULL)).decoder_made, "the pool decoded without a state");
    jpeg_gpu *shared = NULL;
    jpeg_gpu *handle = jpeg_pool_handle(pool, 0, NULL);
    CHECK(handle && jpeg_gpu_open_shared(&shared, handle, NULL, JPEG_GPU_ENCODE, err, sizeof err) == IP_OK,
          "encoder on the pool's handle: %s", err);
    if (shared) {
        ip_image dev;
        unsigned char *bytes = NULL;
        size_t n = 0;
        int rc = jpeg_gpu_decode(gj, ws[0].jpg[0], ws[0].len[0], NULL, &dev_mem, &dev, err, sizeof err);
        if (rc == IP_OK) rc = jpeg_gpu_encode(shared, &dev, 90, &bytes, &n, err, sizeof err);
        CHECK(rc == IP_OK && n > 100 && bytes[0] == 0xFF && bytes[1] == 0xD8, "shared-handle encode: %s", err);
        free(bytes);
        jpeg_gpu_close(shared);
    }
    jpeg_pool_close(pool);
    for (int t = 0; t < POOL_THREADS; t++)
        for (int i = 0; i < POOL_FILES; i++) {
            free(ws[t].jpg[i]);
            img_free(&ws[t].expect[i]);
        }
}

static void memory_is_stable(void)
{
    size_t len[3];
    unsigned char *jpg[3] = { photo_jpeg(641, 479, 3, (jm_settings){ 90, JM_420, 0, 0, JCS_UNKNOWN }, &len[0]),
                              photo_jpeg(641, 479, 3, (jm_settings){ 90, JM_420, 1, 0, JCS_UNKNOWN }, &len[1]),
                              photo_jpeg(641, 479, 1, (jm_settings){ 90, JM_444, 0, 1, JCS_UNKNOWN }, &len[2]) };
    ip_image dev;
    for (int i = 0; i < 12; i++) jpeg_gpu_decode(gj, jpg[i % 3], i % 4 == 3 ? len[i % 3] / 2 : len[i % 3], NULL, &dev_mem, &dev, err, sizeof err);
    size_t free_before, free_after, total;
    CHECK(gpu_memory_info(&free_before, &total, err, sizeof err) == IP_OK, "%s", err);
    int loops = quick ? 100 : 500, failures = 0;
    for (int i = 0; i < loops; i++) {
        size_t n = i % 4 == 3 ? len[i % 3] / 2 : len[i % 3];   /* every fourth truncated */
        int rc = jpeg_gpu_decode(gj, jpg[i % 3], n, NULL, &dev_mem, &dev, err, sizeof err);
        if ((rc == IP_OK) != (i % 4 != 3)) failures++;
    }
    CHECK(gpu_memory_info(&free_after, &total, err, sizeof err) == IP_OK, "%s", err);
    double grown_mib = ((double)free_before - (double)free_after) / 1048576.0;
    printf("memory: %d decodes, device memory in use grew by %.1f MiB\n", loops, grown_mib);
    CHECK(failures == 0, "%d of %d decodes gave the wrong status", failures, loops);
    CHECK(grown_mib <= 2.0, "device memory grew by %.1f MiB over %d decodes", grown_mib, loops);
    for (int i = 0; i < 3; i++) free(jpg[i]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Decode times, median of 5 after one warm-up; libjpeg-turbo reads from a file in page cache. */
static void probe(int w, int h, jm_settings s, const char *label)
{
    size_t len;
    unsigned char *jpg = photo_jpeg(w, h, 3, s, &len);
    double layout_ms[5], gpu_ms[5], cpu_ms[5];
    ip_image dev;
    long hw_before = jpeg_gpu_hardware_decodes(gj);
    int rc = jpeg_gpu_decode(gj, jpg, len, NULL, &dev_mem, &dev, err, sizeof err);
    CHECK(rc == IP_OK, "probe %s: %s", label, err);
    const char *path = jpeg_gpu_hardware_decodes(gj) > hw_before ? "hardware" : "CUDA";
    for (int i = 0; i < 5 && rc == IP_OK; i++) {
        jpeg_layout L;
        double t0 = now_ms();
        jpeg_layout_read(jpg, len, &L, err, sizeof err);
        layout_ms[i] = now_ms() - t0;
        t0 = now_ms();
        rc = jpeg_gpu_decode(gj, jpg, len, NULL, &dev_mem, &dev, err, sizeof err);
        gpu_ms[i] = now_ms() - t0;
        int cpu_rc;
        t0 = now_ms();
        ip_image cpu = read_cpu(jpg, len, "probe.jpg", &cpu_rc);
        cpu_ms[i] = now_ms() - t0;
        if (cpu_rc == IP_OK) img_free(&cpu);
    }
    if (rc == IP_OK)
        printf("probe %-24s %5dx%-5d %9zu bytes: nvJPEG (%s) %7.1f ms (of which structure check %.1f), "
               "libjpeg-turbo (io_read, with file write) %7.1f ms\n",
               label, w, h, len, path, median(gpu_ms, 5), median(layout_ms, 5), median(cpu_ms, 5));
    free(jpg);
}

/* One hardware batch against the same files one at a time. */
static void probe_batch(int n, int w, int h)
{
    unsigned char **jpg = calloc((size_t)n, sizeof *jpg);
    size_t *len = calloc((size_t)n, sizeof *len);
    ip_image *out = calloc((size_t)n, sizeof *out);
    int *rcs = calloc((size_t)n, sizeof *rcs);
    for (int i = 0; i < n; i++) jpg[i] = photo_jpeg(w + i, h, 3, (jm_settings){ 90, JM_420, 0, 0, JCS_UNKNOWN }, &len[i]);
    double one_ms[3], batch_ms[3];
    jpeg_gpu_decode_batch(gj, n, (const unsigned char *const *)jpg, len, NULL, &dev_mem, out, rcs, err, sizeof err);
    for (int r = 0; r < 3; r++) {
        double t0 = now_ms();
        for (int i = 0; i < n; i++) jpeg_gpu_decode(gj, jpg[i], len[i], NULL, &dev_mem, &out[0], err, sizeof err);
        one_ms[r] = now_ms() - t0;
        t0 = now_ms();
        int rc = jpeg_gpu_decode_batch(gj, n, (const unsigned char *const *)jpg, len, NULL, &dev_mem, out, rcs, err, sizeof err);
        batch_ms[r] = now_ms() - t0;
        CHECK(rc == IP_OK, "batch probe: %s", err);
    }
    printf("probe batch of %d x %dx%d 4:2:0: one at a time %.1f ms, one batch %.1f ms\n", n, w, h,
           median(one_ms, 3), median(batch_ms, 3));
    for (int i = 0; i < n; i++) free(jpg[i]);
    free(jpg);
    free(len);
    free(out);
    free(rcs);
}

static void load_photos(void)
{
    photo_rgb = load_sample("astronaut.png", 3);
    if (photo_rgb.shape.channels != 3) {
        printf("astronaut.png has %d channels, expected 3\n", photo_rgb.shape.channels);
        exit(1);
    }
    photo_gray = load_sample("camera.png", 1);
    if (photo_gray.shape.channels != 1) {
        printf("camera.png has %d channels, expected 1\n", photo_gray.shape.channels);
        exit(1);
    }
}

int main(void)
{
    need_gpu();
    quick = tu_quick();
    void *stream = NULL;
    if (gpu_stream_create(&stream, err, sizeof err) != IP_OK) tu_skip(err);
    double t0 = now_ms();
    int rc = jpeg_gpu_open(&gj, 0, stream, err, sizeof err);
    if (rc == IP_EUNSUPPORTED) tu_skip(err);
    CHECK(rc == IP_OK, "jpeg_gpu_open: %s", err);
    if (rc) return tu_finish();
    jpeg_gpu_open_times ot = jpeg_gpu_times(gj);
    printf("open: %.0f ms, %s (library %.1f ms, handle %.1f ms in %d tries, decoder %.1f ms, encoder %.1f ms)\n",
           now_ms() - t0, jpeg_gpu_description(gj), ot.library_ms, ot.handle_ms, ot.handle_tries, ot.decoder_ms,
           ot.encoder_ms);
    load_photos();
    decode_cases();
    encode_cases();
    damaged_files();
    shape_checks();
    batch_matches_single();
    decode_after_queued_work(stream);
    pool_matches_single();
    memory_is_stable();
    probe(4000, 3000, (jm_settings){ 90, JM_444, 0, 0, JCS_UNKNOWN }, "12 MP 4:4:4 q90");
    probe(4000, 3000, (jm_settings){ 85, JM_420, 0, 0, JCS_UNKNOWN }, "12 MP 4:2:0 q85");
    if (!quick) {
        probe(8192, 8192, (jm_settings){ 90, JM_444, 0, 0, JCS_UNKNOWN }, "64 MP 4:4:4 q90");
        probe(8192, 8192, (jm_settings){ 85, JM_420, 0, 0, JCS_UNKNOWN }, "64 MP 4:2:0 q85");
        probe(4000, 3000, (jm_settings){ 90, JM_420, 1, 0, JCS_UNKNOWN }, "12 MP progressive q90");
        probe_batch(16, 1024, 768);
    }
    for (size_t i = 0; i < sizeof dev_buf / sizeof dev_buf[0]; i++) jpeg_gpu_buffer_free(&dev_buf[i]);
    jpeg_gpu_close(gj);
    gpu_stream_destroy(stream);
    img_free(&photo_rgb);
    img_free(&photo_gray);
    return tu_finish();
}
