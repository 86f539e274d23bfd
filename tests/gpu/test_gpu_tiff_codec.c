/* TIFF on the GPU: the adler32 kernel against zlib's on random data of odd lengths and spans, the
 * predictor against a host loop, and (when nvCOMP opens: IMGPIPE_NVCOMP_LIB) files written by
 * libtiff decoded equal to the CPU reader's pixels, a strip that inflates past its block or
 * short of it left to the CPU reader, a damaged one failed, and device images written by
 * tiff_gpu_write read back by libtiff equal, within 3% of the CPU writer's size, also with a share
 * of their strips compressed by the cores (none: the CPU writer's bytes); strips
 * compressed in batches by the streamed writer's GPU codec (tiff_gpu_strips.h), written raw by
 * libtiff, read back equal by the CPU reader, and a streamed write where the GPU takes strips;
 * libtiff's strips and tiles streamed back with their bands inflated on the card
 * (tiff_gpu_bands.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "base/image.h"
#include "gpu_testutil.h"
#include "io/io_stream.h"
#include "io/io_tiff_handle.h"
#include "io/tiff_gpu.h"
#include "io/tiff_gpu_bands.h"
#include "io/tiff_gpu_strips.h"
#include "ipk_codec.h"
#include "tiff_testutil.h"

static void adler_spans(size_t total, size_t span, tu_rng *r)
{
    unsigned char *host = malloc(total ? total : 1), *dev = NULL;
    size_t n = total ? (total - 1) / span + 1 : 0;
    uint32_t *sums = calloc(n + 1, 4), *dev_sums = NULL;
    for (size_t i = 0; i < total; i++) host[i] = (unsigned char)tu_next(r);
    if (total < 1000) memset(host, 255, total);   /* the largest sums */
    cuda_ok(cudaMalloc((void **)&dev, total + 1), "malloc");
    cuda_ok(cudaMalloc((void **)&dev_sums, (n + 1) * 4), "malloc");
    cuda_ok(cudaMemcpy(dev, host, total, cudaMemcpyHostToDevice), "upload");
    gpu_finish_ok(ipk_adler32_spans(dev, total, span, dev_sums, NULL), "adler32");
    cuda_ok(cudaMemcpy(sums, dev_sums, n * 4, cudaMemcpyDeviceToHost), "download");
    for (size_t i = 0; i < n; i++) {
        size_t len = total - i * span < span ? total - i * span : span;
        uint32_t want = (uint32_t)adler32(1, host + i * span, (uInt)len);
        CHECK(sums[i] == want, "total %zu span %zu #%zu: %08x, zlib %08x", total, span, i, sums[i], want);
    }
    cudaFree(dev);
    cudaFree(dev_sums);
    free(host);
    free(sums);
}

/* Apply then undo returns the rows; apply alone matches the host's differences. */
static void predictor(int w, int h, int c, int sample_bytes, tu_rng *r)
{
    size_t row = (size_t)w * c * sample_bytes, pitch = row + 6 * sample_bytes, bytes = pitch * h;
    unsigned char *host = malloc(bytes), *back = malloc(bytes), *src = NULL, *dst = NULL;
    for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)tu_next(r);
    cuda_ok(cudaMalloc((void **)&src, bytes), "malloc");
    cuda_ok(cudaMalloc((void **)&dst, row * h), "malloc");
    cuda_ok(cudaMemcpy(src, host, bytes, cudaMemcpyHostToDevice), "upload");
    gpu_finish_ok(ipk_tiff_predictor_apply(src, pitch, dst, row, w, h, c, sample_bytes, NULL), "apply");
    cuda_ok(cudaMemcpy(back, dst, row * h, cudaMemcpyDeviceToHost), "download");
    int wrong = 0;
    for (int y = 0; y < h; y++)
        for (size_t i = 0; i < (size_t)w * c; i++) {
            const unsigned char *s = host + y * pitch;
            unsigned v = sample_bytes == 1 ? s[i] : ((const uint16_t *)s)[i];
            unsigned left = i >= (size_t)c ? (sample_bytes == 1 ? s[i - c] : ((const uint16_t *)s)[i - c]) : 0;
            unsigned want = (v - left) & (sample_bytes == 1 ? 0xffu : 0xffffu);
            unsigned got = sample_bytes == 1 ? back[y * row + i] : ((const uint16_t *)(back + y * row))[i];
            wrong += got != want;
        }
    CHECK(wrong == 0, "apply %dx%dx%d/%d: %d wrong", w, h, c, sample_bytes, wrong);
    gpu_finish_ok(ipk_tiff_predictor_undo(dst, row, w, h, c, sample_bytes, NULL), "undo");
    cuda_ok(cudaMemcpy(back, dst, row * h, cudaMemcpyDeviceToHost), "download");
    wrong = 0;
    for (int y = 0; y < h; y++) wrong += memcmp(back + y * row, host + y * pitch, row) != 0;
    CHECK(wrong == 0, "undo %dx%dx%d/%d: %d rows wrong", w, h, c, sample_bytes, wrong);
    cudaFree(src);
    cudaFree(dst);
    free(host);
    free(back);
}

static int device_input(void *user, const ip_shape *shape, size_t bytes, void **dev, char *err, size_t errlen)
{
    (void)shape, (void)err, (void)errlen;
    void **held = user;
    cudaFree(*held);
    *held = NULL;
    if (cudaMalloc(held, bytes) != cudaSuccess) return IP_ENOMEM;
    *dev = *held;
    return IP_OK;
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* CPU-written file -> GPU decode = CPU decode; GPU write -> CPU read = the image, size near the CPU's. */
static void round_trip(io_gpu_codecs *codecs, int w, int h, int c, ip_dtype t, io_tiff_compression comp, tu_rng *r)
{
    char cpu_path[512], gpu_path[512], err[512] = "";
    snprintf(cpu_path, sizeof cpu_path, "%s/cpu.tif", tu_tmpdir());
    snprintf(gpu_path, sizeof gpu_path, "%s/gpu.tif", tu_tmpdir());
    ip_image img;
    ip_shape shape = { w, h, c, t };
    img_alloc(&img, &shape, UINT64_MAX, err, sizeof err);
    for (size_t i = 0; i < img_row_bytes(&shape) * h; i++) ((unsigned char *)img.data)[i] = (unsigned char)(tu_next(r) % 9 + i / 4096);
    io_options opt;
    io_default_options(&opt);
    opt.tiff_compression = comp;
    CHECK(io_write(cpu_path, &img, &opt, err, sizeof err) == IP_OK, "cpu write: %s", err);
    io_input in;
    void *held = NULL;
    jpeg_route_target target = { device_input, &held };
    ip_image dev = { 0 };
    CHECK(io_input_open(cpu_path, &in, err, sizeof err) == IP_OK, "%s", err);
    int rc = tiff_gpu_decode(codecs, &target, &in, &opt, &dev, err, sizeof err);
    io_input_close(&in);
    CHECK(rc == IP_OK, "decode %dx%dx%d: %s", w, h, c, err);
    size_t row = img_row_bytes(&shape);
    unsigned char *back = malloc(row * h);
    if (rc == IP_OK) {
        cuda_ok(cudaMemcpy2D(back, row, dev.data, (size_t)dev.stride, row, h, cudaMemcpyDeviceToHost), "download");
        CHECK(memcmp(back, img.data, row * h) == 0, "decoded pixels %dx%dx%d differ", w, h, c);
        rc = tiff_gpu_write(codecs, &dev, gpu_path, &opt, 1.0, err, sizeof err);
        CHECK(rc == IP_OK, "gpu write: %s", err);
    }
    ip_image read = { 0 };
    if (rc == IP_OK && io_read(gpu_path, &opt, &read, err, sizeof err) == IP_OK) {
        CHECK(memcmp(read.data, img.data, row * h) == 0, "GPU-written pixels %dx%dx%d differ", w, h, c);
        double ratio = (double)file_size(gpu_path) / (double)file_size(cpu_path);
        printf("%dx%dx%d %s: CPU %lld bytes, GPU %lld (%.3f)\n", w, h, c, comp == IO_TIFF_ZSTD ? "zstd" : "deflate",
               (long long)file_size(cpu_path), (long long)file_size(gpu_path), ratio);
        (void)ratio;   /* synthetic rows: the size is checked on a photograph (photo_sizes) */
        img_free(&read);
    } else if (rc == IP_OK) {
        CHECK(0, "read back: %s", err);
    }
    cudaFree(held);
    free(back);
    img_free(&img);
}

/* A device image whose pitch is past its rows, written with share of its strips on the card and
 * the rest by the cores: read back equal; with no share, the CPU writer's very bytes. */
static void shared_write(io_gpu_codecs *codecs, int w, int h, int c, ip_dtype t, io_tiff_compression comp, int level,
                         double share, tu_rng *r)
{
    char cpu_path[512], gpu_path[512], err[512] = "";
    snprintf(cpu_path, sizeof cpu_path, "%s/shared_cpu.tif", tu_tmpdir());
    snprintf(gpu_path, sizeof gpu_path, "%s/shared_gpu.tif", tu_tmpdir());
    ip_shape shape = { w, h, c, t };
    ip_image img;
    CHECK(ttu_image(&img, &shape, r) == 0, "alloc %dx%d", w, h);
    size_t row = img_row_bytes(&shape), pitch = row + 64;
    void *dev = NULL;
    cuda_ok(cudaMalloc(&dev, pitch * (size_t)h), "malloc");
    cuda_ok(cudaMemcpy2D(dev, pitch, img.data, (size_t)img.stride, row, (size_t)h, cudaMemcpyHostToDevice), "upload");
    ip_image d = { dev, (ptrdiff_t)pitch, shape, 1 };
    io_options opt;
    io_default_options(&opt);
    opt.tiff_compression = comp;
    opt.tiff_level = level;
    CHECK(io_write(cpu_path, &img, &opt, err, sizeof err) == IP_OK, "cpu write: %s", err);
    int rc = tiff_gpu_write(codecs, &d, gpu_path, &opt, share, err, sizeof err);
    CHECK(rc == IP_OK, "%dx%dx%d, %.0f%% on the card: %s", w, h, c, share * 100, err);
    ip_image back = { 0 };
    if (rc == IP_OK && io_read(gpu_path, &opt, &back, err, sizeof err) == IP_OK) {
        int wrong = 0;
        for (int y = 0; y < h; y++)
            wrong += memcmp((unsigned char *)back.data + (size_t)y * back.stride,
                            (unsigned char *)img.data + (size_t)y * img.stride, row) != 0;
        CHECK(wrong == 0, "%dx%dx%d, %.0f%% on the card: %d rows differ", w, h, c, share * 100, wrong);
        img_free(&back);
    } else if (rc == IP_OK) {
        CHECK(0, "read back %dx%dx%d: %s", w, h, c, err);
    }
    if (share == 0) CHECK(tu_same_file(cpu_path, gpu_path), "%dx%dx%d, none on the card: not the CPU's bytes", w, h, c);
    cudaFree(dev);
    img_free(&img);
}

/* The image's strips of rps rows compressed by the GPU codec in batches of at most max_strips,
 * written raw into a TIFF tagged as the CPU writer tags it, read back by the CPU reader. */
static void gpu_strips_case(const tiff_strip_batch_codec *codec, int w, int h, int c, ip_dtype t,
                            io_tiff_compression comp, uint32_t rps, uint32_t max_strips, tu_rng *r)
{
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/strips.tif", tu_tmpdir());
    ip_image img;
    ip_shape shape = { w, h, c, t };
    CHECK(ttu_image(&img, &shape, r) == 0, "alloc %dx%d", w, h);
    tiff_strip_format f = { shape, rps, comp, 6, NULL };
    int rc = ttu_batch_round_trip(codec, &img, &f, max_strips, path, err, sizeof err);
    CHECK(rc == IP_OK, "%dx%dx%d %s %s, %u rows a strip, batches of %u: %s", w, h, c, t == IP_U8 ? "u8" : "u16",
          comp == IO_TIFF_ZSTD ? "zstd" : "deflate", rps, max_strips, err);
    img_free(&img);
}

/* The streamed writer with the GPU codec and one slow thread: the GPU takes strips, the file
 * reads back equal. */
static void gpu_strips_streamed(tiff_gpu_strips *g, tu_rng *r)
{
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/streamed.tif", tu_tmpdir());
    ip_image img;
    ip_shape shape = { 4099, 3001, 3, IP_U8 };
    img_alloc(&img, &shape, UINT64_MAX, err, sizeof err);
    size_t row = img_row_bytes(&shape);
    for (size_t i = 0; i < row * shape.height; i++) ((unsigned char *)img.data)[i] = (unsigned char)(tu_next(r) % 61);
    io_options opt;
    io_default_options(&opt);
    opt.threads = 1;
    opt.tiff_strip_batch = tiff_gpu_strips_codec(g);
    tiff_gpu_strips_stat before, st;
    tiff_gpu_strips_stats(g, &before);
    io_stream_writer *sw = NULL;
    int rc = io_stream_create(path, &shape, &opt, &sw, err, sizeof err);
    for (int y0 = 0; rc == IP_OK && y0 < shape.height; y0 += 256) {
        ip_image rows = img;
        rows.data = (char *)img.data + (size_t)y0 * img.stride;
        rows.shape.height = shape.height - y0 < 256 ? shape.height - y0 : 256;
        rc = io_stream_write(sw, &rows, y0, err, sizeof err);
    }
    if (rc == IP_OK) rc = io_stream_finish(sw, err, sizeof err);
    else if (sw) io_stream_abort(sw);
    CHECK(rc == IP_OK, "streamed with the GPU's strips: %s", err);
    tiff_gpu_strips_stats(g, &st);
    st.strips -= before.strips, st.batches -= before.batches, st.busy_ms -= before.busy_ms;
    st.bytes_in -= before.bytes_in, st.bytes_out -= before.bytes_out;
    CHECK(st.strips > 0 && st.bytes_out > 0 && st.bytes_out < st.bytes_in, "streamed: the GPU compressed %llu strips",
          (unsigned long long)st.strips);
    printf("streamed 4099x3001x3: the GPU compressed %llu strips in %llu batches, %.1f -> %.1f MB, %.1f ms\n",
           (unsigned long long)st.strips, (unsigned long long)st.batches, st.bytes_in / 1e6, st.bytes_out / 1e6,
           st.busy_ms);
    ip_image back = { 0 };
    rc = io_read(path, &opt, &back, err, sizeof err);
    int same = rc == IP_OK && back.shape.width == shape.width && back.shape.height == shape.height;
    for (int y = 0; same && y < shape.height; y++)
        same = memcmp((char *)back.data + (size_t)y * back.stride, (char *)img.data + (size_t)y * img.stride, row) == 0;
    CHECK(same, "streamed with the GPU's strips: read back differs (%s)", rc == IP_OK ? "pixels" : err);
    img_free(&back);
    img_free(&img);
}

static void gpu_strips(tu_rng *r)
{
    setenv("IMGPIPE_TIFF_GPU_BATCH_MB", "4", 1);   /* batches the streamed case's 37 MB image takes */
    tiff_gpu_strips *g = NULL;
    char why[256];
    int gpu = 0;
    CHECK(tiff_gpu_strips_create(&g, &gpu, 1, why, sizeof why) == IP_OK, "GPU strips: %s", why);
    if (!g) return;
    const tiff_strip_batch_codec *codec = tiff_gpu_strips_codec(g);
    gpu_strips_case(codec, 1, 1, 1, IP_U8, IO_TIFF_DEFLATE, 1, 1, r);
    gpu_strips_case(codec, 1021, 37, 3, IP_U8, IO_TIFF_DEFLATE, 3, 5, r);
    gpu_strips_case(codec, 1021, 37, 3, IP_U8, IO_TIFF_ZSTD, 3, 5, r);
    gpu_strips_case(codec, 509, 300, 4, IP_U16, IO_TIFF_DEFLATE, 7, 64, r);
    gpu_strips_case(codec, 509, 300, 2, IP_U16, IO_TIFF_ZSTD, 1, 300, r);
    gpu_strips_case(codec, 70001, 9, 1, IP_U8, IO_TIFF_DEFLATE, 1, 4, r);
    gpu_strips_streamed(g, r);
    tiff_gpu_strips_destroy(g);
}

/* Files libtiff wrote (deflate, with the predictor or without; strips and 16x16 tiles) streamed
 * back with their bands inflated on the card, in groups as they come and of 2: every band taken
 * there, every row the image's. */
static void gpu_bands(tu_rng *r)
{
    static const struct {
        ip_shape shape;
        uint32_t rps;   /* 0: tiles */
        uint16_t predictor;
    } cases[] = { { { 1021, 379, 3, IP_U8 }, 7, PREDICTOR_HORIZONTAL }, { { 509, 300, 1, IP_U16 }, 16, PREDICTOR_NONE },
                  { { 1, 1, 1, IP_U8 }, 1, PREDICTOR_HORIZONTAL },    { { 7919, 61, 4, IP_U8 }, 1, PREDICTOR_HORIZONTAL },
                  { { 1001, 777, 2, IP_U16 }, 0, PREDICTOR_HORIZONTAL }, { { 33, 1000, 3, IP_U8 }, 0, PREDICTOR_NONE } };
    tiff_gpu_bands *g = NULL;
    char why[256] = "", path[512];
    setenv("IMGPIPE_TIFF_GPU_READ_BANDS", "1", 1);
    CHECK(tiff_gpu_bands_create(&g, 0, 0, why, sizeof why) == IP_OK, "GPU bands: %s", why);
    unsetenv("IMGPIPE_TIFF_GPU_READ_BANDS");
    snprintf(path, sizeof path, "%s/bands.tif", tu_tmpdir());
    for (size_t k = 0; g && k < 2 * sizeof cases / sizeof *cases; k++) {
        size_t i = k % (sizeof cases / sizeof *cases);
        /* the second time in groups of 2 bands, most groups then ending mid-image */
        if (k == sizeof cases / sizeof *cases) setenv("IMGPIPE_TIFF_GPU_BAND_GROUP", "2", 1);
        const ip_shape *sh = &cases[i].shape;
        char err[512] = "";
        ip_image img = { 0 };
        io_options opt;
        io_default_options(&opt);
        int rc = ttu_image(&img, sh, r) == 0 ? IP_OK : IP_ENOMEM;
        size_t row = img_row_bytes(sh);
        if (rc == IP_OK && ttu_write_libtiff(path, &img, cases[i].rps, COMPRESSION_ADOBE_DEFLATE, cases[i].predictor,
                                             cases[i].rps == 0) != 0)
            rc = IP_EIO;
        io_stream_reader *sr = NULL;
        ip_shape shape;
        if (rc == IP_OK) rc = io_stream_open(path, &opt, 1 << 20, &sr, &shape, err, sizeof err);
        if (rc == IP_OK) rc = io_stream_set_band_decoder(sr, tiff_gpu_bands_decoder(g), err, sizeof err);
        int same = 1, read = 0;
        while (rc == IP_OK) {
            ip_image rows;
            int y0 = 0;
            rc = io_stream_next(sr, &rows, &y0, err, sizeof err);
            if (rc != IP_OK || rows.shape.height == 0) break;
            for (int y = 0; same && y < rows.shape.height; y++)
                same = memcmp((char *)rows.data + (size_t)y * rows.stride, (char *)img.data + (size_t)(y0 + y) * row,
                              row) == 0;
            read += rows.shape.height;
        }
        tiff_band_decode_stat st = { 0 };
        if (sr) io_stream_band_decode_stat(sr, &st);
        io_stream_close(sr);
        CHECK(rc == IP_OK && same && read == sh->height, "bands %dx%dx%d %s: rc %d, %d rows read, same %d: %s",
              sh->width, sh->height, sh->channels, cases[i].rps ? "strips" : "tiles", rc, read, same, err);
        CHECK(st.bands > 0 && st.declined == 0, "bands %dx%dx%d: %llu bands, %llu declined (%s)", sh->width, sh->height,
              sh->channels, (unsigned long long)st.bands, (unsigned long long)st.declined, st.first_why);
        img_free(&img);
    }
    unsetenv("IMGPIPE_TIFF_GPU_BAND_GROUP");
    tiff_gpu_bands_destroy(g);
}

/* tiff_gpu_decode of path: its code, err naming why. */
static int gpu_decode(io_gpu_codecs *codecs, const char *path, const io_options *opt, char *err, size_t errlen)
{
    io_input in;
    void *held = NULL;
    jpeg_route_target target = { device_input, &held };
    ip_image dev = { 0 };
    int rc = io_input_open(path, &in, err, errlen);
    if (rc) return rc;
    rc = tiff_gpu_decode(codecs, &target, &in, opt, &dev, err, errlen);
    io_input_close(&in);
    cudaFree(held);
    return rc;
}

/* Strip 1 of 37x11 gray in strips of 3 rows holds rows of data: more (it inflates past its block)
 * or fewer, the GPU leaves it to the CPU reader, which reads libtiff's pixels or fails where
 * libtiff does; TTU_DAMAGED, the GPU fails it as corrupt. */
static void odd_strip(io_gpu_codecs *codecs, int rows, int want, const char *what)
{
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/odd_strip.tif", tu_tmpdir());
    ttu_strips s = { 37, 11, 3, 1, rows };
    CHECK(ttu_write_strips(path, &s) == 0, "%s: cannot write it", what);
    io_options opt;
    io_default_options(&opt);
    int rc = gpu_decode(codecs, path, &opt, err, sizeof err);
    CHECK(rc == want && strstr(err, "strip 1"), "%s: GPU decode %d, not %d (%s)", what, rc, want, err);
    if (want != IP_EUNSUPPORTED) return;
    ip_image img = { 0 };
    int libtiff_reads = ttu_libtiff_reads(path);
    rc = io_read(path, &opt, &img, err, sizeof err);
    CHECK((rc == IP_OK) == libtiff_reads, "%s: io_read %d (%s) where libtiff %s it", what, rc, err,
          libtiff_reads ? "reads" : "fails");
    CHECK(libtiff_reads || rows < 3, "%s: libtiff fails a strip inflating past its block", what);
    long off_pattern = 0, off_libtiff = rc == IP_OK ? ttu_differences(path, &img, &off_pattern) : 0;
    CHECK(off_libtiff == 0 && (rows < 3 || off_pattern == 0), "%s: %ld pixels not libtiff's, %ld not the rows written",
          what, off_libtiff, off_pattern);
    img_free(&img);
}

/* A photograph's TIFF written on the GPU is at most 3% larger than the CPU's at the same level. */
static void photo_sizes(io_gpu_codecs *codecs)
{
    char path[4096], err[512] = "";
    const char *samples = getenv("IMGPIPE_SAMPLES");
    snprintf(path, sizeof path, "%s/astronaut.png", samples ? samples : "samples");
    io_options opt;
    io_default_options(&opt);
    ip_image photo = { 0 };
    if (io_read(path, &opt, &photo, err, sizeof err) != IP_OK) {
        CHECK(0, "cannot read %s: %s", path, err);
        return;
    }
    size_t row = img_row_bytes(&photo.shape), h = (size_t)photo.shape.height;
    void *dev = NULL;
    cuda_ok(cudaMalloc(&dev, row * h), "malloc");
    cuda_ok(cudaMemcpy2D(dev, row, photo.data, (size_t)photo.stride, row, h, cudaMemcpyHostToDevice), "upload");
    ip_image d = { dev, (ptrdiff_t)row, photo.shape, 1 };
    static const int levels[] = { 1, 6, 9 };
    for (int i = 0; i < 3; i++) {
        char cpu_path[512], gpu_path[512];
        snprintf(cpu_path, sizeof cpu_path, "%s/photo_cpu.tif", tu_tmpdir());
        snprintf(gpu_path, sizeof gpu_path, "%s/photo_gpu.tif", tu_tmpdir());
        opt.tiff_level = levels[i];
        CHECK(io_write(cpu_path, &photo, &opt, err, sizeof err) == IP_OK, "cpu write: %s", err);
        for (int half = 0; half < 2; half++) {
            double share = half ? 0.5 : 1.0;
            CHECK(tiff_gpu_write(codecs, &d, gpu_path, &opt, share, err, sizeof err) == IP_OK, "gpu write: %s", err);
            double ratio = (double)file_size(gpu_path) / (double)file_size(cpu_path);
            printf("photograph %dx%dx%d deflate level %d, %.0f%% on the card: CPU %lld bytes, GPU %lld (%.3f)\n",
                   photo.shape.width, photo.shape.height, photo.shape.channels, levels[i], share * 100,
                   (long long)file_size(cpu_path), (long long)file_size(gpu_path), ratio);
            CHECK(ratio <= 1.03, "level %d, share %.1f: the GPU's file is %.3f of the CPU's", levels[i], share, ratio);
        }
    }
    cudaFree(dev);
    img_free(&photo);
}

int main(void)
{
    need_gpu();
    tu_rng r;
    tu_seed(&r, 2029);
    const size_t totals[] = { 1, 7, 255, 5552, 65536, 65537, 1000003 };
    const size_t spans[] = { 1, 3, 4096, 65536, 262144 };
    for (int i = 0; i < 7; i++)
        for (int k = 0; k < 5; k++)
            if (totals[i] / spans[k] < 100000) adler_spans(totals[i], spans[k], &r);
    for (int c = 1; c <= 4; c++) {
        predictor(1, 1, c, 1, &r);
        predictor(97, 5, c, 1, &r);
        predictor(1021, 3, c, 2, &r);
    }
    io_gpu_codecs *codecs = NULL;
    char why[256];
    if (io_gpu_codecs_open(&codecs, 0, NULL, why, sizeof why) != IP_OK) {
        printf("nvCOMP not opened (%s): decode and write not tested\n", why);
        return tu_finish();
    }
    round_trip(codecs, 1, 1, 1, IP_U8, IO_TIFF_DEFLATE, &r);
    round_trip(codecs, 997, 641, 3, IP_U8, IO_TIFF_DEFLATE, &r);
    round_trip(codecs, 509, 300, 4, IP_U16, IO_TIFF_DEFLATE, &r);
    round_trip(codecs, 2003, 1500, 1, IP_U8, IO_TIFF_ZSTD, &r);
    shared_write(codecs, 1, 1, 1, IP_U8, IO_TIFF_DEFLATE, 6, 0.5, &r);
    shared_write(codecs, 4099, 37, 1, IP_U8, IO_TIFF_DEFLATE, 6, 0.5, &r);
    shared_write(codecs, 997, 641, 3, IP_U8, IO_TIFF_DEFLATE, 1, 0.25, &r);
    shared_write(codecs, 509, 300, 4, IP_U16, IO_TIFF_DEFLATE, 9, 0.6, &r);
    shared_write(codecs, 70001, 3, 1, IP_U8, IO_TIFF_DEFLATE, 6, 0.5, &r);
    shared_write(codecs, 801, 203, 2, IP_U16, IO_TIFF_ZSTD, 6, 0.5, &r);
    shared_write(codecs, 2003, 150, 1, IP_U8, IO_TIFF_DEFLATE, 6, 0.0, &r);
    shared_write(codecs, 333, 77, 3, IP_U8, IO_TIFF_DEFLATE, 6, 0.01, &r);
    odd_strip(codecs, 5, IP_EUNSUPPORTED, "strip 1 inflating past its block");
    odd_strip(codecs, 2, IP_EUNSUPPORTED, "strip 1 short");
    odd_strip(codecs, TTU_DAMAGED, IP_EFORMAT, "strip 1 damaged");
    photo_sizes(codecs);
    io_gpu_codecs_close(codecs);
    gpu_strips(&r);
    gpu_bands(&r);
    return tu_finish();
}
