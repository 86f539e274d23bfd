/* TIFF writing: strips compressed by all threads, each thread through its own libtiff handle
 * that encodes into memory, then written in strip order through the real file's handle. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_internal.h"
#include "io/io_tiff_handle.h"
#include "base/image.h"
#include "io/meta_tiff.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Strip height depends on the row size only, never on the thread count: the file is the same
 * with any --threads. 256 KiB strips compress within 0.5% of 1 MiB ones and give a 200 MB
 * image 800 strips to share out. */
#define STRIP_TARGET_BYTES ((size_t)256 << 10)
/* Classic TIFF offsets are 32-bit; leave room for deflate's worst case and the directory. */
#define BIGTIFF_THRESHOLD ((uint64_t)3584 << 20)

uint16_t tiff_scheme(io_tiff_compression c)
{
    return c == IO_TIFF_LZW ? COMPRESSION_LZW : c == IO_TIFF_ZSTD ? COMPRESSION_ZSTD
         : c == IO_TIFF_NONE ? COMPRESSION_NONE : COMPRESSION_ADOBE_DEFLATE;
}

int tiff_set_image_tags(TIFF *tif, const ip_shape *s, uint32_t rows_per_strip, io_tiff_compression c)
{
    int is_float = s->dtype == IP_F32;
    int has_alpha = s->channels == 2 || s->channels == 4;
    uint16_t alpha[1] = { EXTRASAMPLE_UNASSALPHA };
    return TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)s->width) &&
           TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)s->height) &&
           TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s->channels) &&
           TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (int)ip_dtype_size(s->dtype) * 8) &&
           TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, is_float ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
           TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s->channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
           TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
           TIFFSetField(tif, TIFFTAG_COMPRESSION, tiff_scheme(c)) &&
           (c == IO_TIFF_NONE ||
            TIFFSetField(tif, TIFFTAG_PREDICTOR, is_float ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL)) &&
           TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rows_per_strip) &&
           (!has_alpha || TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, alpha));
}

int tiff_set_level(TIFF *tif, io_tiff_compression c, int level)
{
    return c != IO_TIFF_DEFLATE || TIFFSetField(tif, TIFFTAG_ZIPQUALITY, level);
}

uint32_t tiff_rows_per_strip(const ip_shape *s)
{
    uint32_t rps = (uint32_t)(STRIP_TARGET_BYTES / img_row_bytes(s));
    if (rps == 0) rps = 1;
    return rps > (uint32_t)s->height ? (uint32_t)s->height : rps;
}

int tiff_wants_bigtiff(const ip_shape *s, uint64_t above)
{
    return (uint64_t)img_row_bytes(s) * (uint64_t)s->height > (above ? above : BIGTIFF_THRESHOLD);
}

/* A compressed strip waiting for the strips before it to be written. */
typedef struct {
    unsigned char *data;
    size_t len;
    int ready;
} encoded_strip;

typedef struct {
    const ip_image *img;
    io_tiff_compression compression;
    int level;                /* deflate's */
    TIFF *out;                /* the real file; written under the order lock only */
    tiff_log *out_log;
    size_t row_bytes;
    uint32_t rps, strips;
    encoded_strip *pending;   /* one slot a strip */
    uint32_t next_write;
    /* The lowest failed strip, so the message does not depend on the thread count. */
    uint32_t failed_strip;    /* UINT32_MAX: none */
    int failed_rc;
    char failed_msg[256];
} strip_writer;

/* One thread's encoder: a handle tagged like the output whose strip bytes land in sink. */
typedef struct {
    TIFF *tif;
    tiff_sink sink;
    tiff_log log;
    unsigned char *rows;      /* the strip's rows, copied: the predictor rewrites its input */
} strip_encoder;

static void record_failure(strip_writer *w, uint32_t strip, int rc, const char *why)
{
#pragma omp critical(io_tiff_write_failure)
    if (strip < w->failed_strip) {
        w->failed_rc = rc;
        snprintf(w->failed_msg, sizeof w->failed_msg, "%s", why);
#pragma omp atomic write
        w->failed_strip = strip;
    }
}

static int failed_before(strip_writer *w, uint32_t strip)
{
    uint32_t failed;
#pragma omp atomic read
    failed = w->failed_strip;
    return failed < strip;
}

static int encoder_open(strip_encoder *e, const strip_writer *w)
{
    e->tif = tiff_open_sink(&e->sink, &e->log);
    if (!e->tif) return IP_ENOMEM;
    if (!tiff_set_image_tags(e->tif, &w->img->shape, w->rps, w->compression) ||
        !tiff_set_level(e->tif, w->compression, w->level))
        return IP_EIO;
    e->rows = malloc(w->row_bytes * w->rps);
    return e->rows ? IP_OK : IP_ENOMEM;
}

static void encoder_close(strip_encoder *e)
{
    if (e->tif) TIFFClose(e->tif);   /* its directory goes nowhere: the sink is not collecting */
    free(e->rows);
    free(e->sink.data);
}

static int encode_strip(strip_encoder *e, const strip_writer *w, uint32_t strip)
{
    uint32_t height = (uint32_t)w->img->shape.height;
    uint32_t y0 = strip * w->rps;
    uint32_t rows = height - y0 < w->rps ? height - y0 : w->rps;
    const unsigned char *src = (const unsigned char *)w->img->data + (size_t)y0 * (size_t)w->img->stride;
    for (uint32_t y = 0; y < rows; y++)
        memcpy(e->rows + (size_t)y * w->row_bytes, src + (size_t)y * (size_t)w->img->stride, w->row_bytes);
    e->sink.len = 0;
    e->sink.collecting = 1;
    tmsize_t n = TIFFWriteEncodedStrip(e->tif, strip, e->rows, (tmsize_t)(rows * w->row_bytes));
    e->sink.collecting = 0;
    return n >= 0 ? IP_OK : e->sink.out_of_memory ? IP_ENOMEM : IP_EIO;
}

static void write_strip(strip_writer *w, uint32_t strip)
{
    encoded_strip *p = &w->pending[strip];
    if (TIFFWriteRawStrip(w->out, strip, p->data, (tmsize_t)p->len) < 0)
        record_failure(w, strip, IP_EIO, tiff_log_text(w->out_log, "write error"));
    free(p->data);
    p->data = NULL;
}

/* The strip's bytes move to its slot (the sink starts a new buffer); whoever completes the
 * run of strips after the last one written writes them, so no thread waits for another. */
static void hand_over(strip_writer *w, strip_encoder *e, uint32_t strip)
{
    w->pending[strip].data = e->sink.data;
    w->pending[strip].len = e->sink.len;
    e->sink = (tiff_sink){ .data = NULL };
#pragma omp critical(io_tiff_write_order)
    {
        w->pending[strip].ready = 1;
        while (w->next_write < w->strips && w->pending[w->next_write].ready && !failed_before(w, w->next_write + 1))
            write_strip(w, w->next_write++);
    }
}

static void write_strips(strip_writer *w, int threads)
{
#pragma omp parallel num_threads(threads)
    {
        strip_encoder e = { .tif = NULL };
        int setup = encoder_open(&e, w);
        if (setup) record_failure(w, 0, setup, tiff_log_text(&e.log, setup == IP_ENOMEM ? "out of memory" : "bad tags"));
#pragma omp for schedule(dynamic, 1)
        for (uint32_t s = 0; s < w->strips; s++) {
            int rc = setup || failed_before(w, s) ? -1 : encode_strip(&e, w, s);
            if (rc > 0) record_failure(w, s, rc, rc == IP_ENOMEM ? "out of memory" : tiff_log_text(&e.log, "cannot compress"));
            if (rc == IP_OK) hand_over(w, &e, s);
        }
        encoder_close(&e);
    }
    for (uint32_t s = w->next_write; s < w->strips; s++) free(w->pending[s].data);
}

static int write_image(TIFF *tif, tiff_log *log, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    const ip_shape *s = &img->shape;
    strip_writer w = { .img = img, .compression = opt->tiff_compression, .level = opt->tiff_level, .out = tif, .out_log = log,
                       .row_bytes = img_row_bytes(s), .failed_strip = UINT32_MAX };
    w.rps = tiff_rows_per_strip(s);
    w.strips = (uint32_t)(((uint64_t)s->height + w.rps - 1) / w.rps);
    if (!tiff_set_image_tags(tif, s, w.rps, opt->tiff_compression) || !meta_tiff_set_tags(tif, opt->meta, s)) {
        snprintf(err, errlen, "cannot write TIFF: %s", tiff_log_text(log, "bad tags"));
        return IP_EIO;
    }
    w.pending = calloc(w.strips, sizeof *w.pending);
    if (!w.pending) {
        snprintf(err, errlen, "cannot write TIFF: out of memory");
        return IP_ENOMEM;
    }
    int threads = io_thread_count(opt);
    write_strips(&w, (uint32_t)threads < w.strips ? threads : (int)w.strips);
    free(w.pending);
    if (w.failed_strip != UINT32_MAX) {
        snprintf(err, errlen, "cannot write TIFF: %s", w.failed_msg);
        return w.failed_rc;
    }
    if (!TIFFFlush(tif)) {
        snprintf(err, errlen, "cannot write TIFF: %s", tiff_log_text(log, "write error"));
        return IP_EIO;
    }
    return IP_OK;
}

int io_write_tiff(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    tiff_log log = { .have = 0 };
    char why[128];
    const char *mode = tiff_wants_bigtiff(&img->shape, 0) ? "w8" : "w";
    int tfd = dup(fd);
    TIFF *tif = tfd >= 0 ? tiff_open_fd_write(tfd, mode, &log) : NULL;
    if (!tif) {
        snprintf(err, errlen, "cannot write TIFF: %s",
                 tfd < 0 ? io_strerror(errno, why, sizeof why) : tiff_log_text(&log, "out of memory"));
        if (tfd >= 0) close(tfd);
        close(fd);
        return IP_EIO;
    }
    int rc = IP_EINVAL;
    if (!TIFFIsCODECConfigured(tiff_scheme(opt->tiff_compression)))
        snprintf(err, errlen, "cannot write TIFF: this libtiff has no %s compression; choose another "
                 "--tiff-compression", io_tiff_compression_name(opt->tiff_compression));
    else
        rc = write_image(tif, &log, img, opt, err, errlen);
    TIFFClose(tif);
    if (!rc) rc = meta_tiff_finish(fd, opt->meta, err, errlen);
    if (close(fd) != 0 && !rc) {
        snprintf(err, errlen, "cannot write TIFF: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    return rc;
}
