#define _POSIX_C_SOURCE 200809L
#include "io/io_internal.h"
#include "base/image.h"
#include "io/io_limits.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IO_TMP_PREFIX ".imgpipe-tmp-"
#define IO_TMP_BASE_MAX 200   /* keeps the temporary's name under NAME_MAX */

void io_default_options(io_options *opt)
{
    opt->png_level = 6;
    opt->jpeg_quality = 90;
    opt->max_pixels = IMG_DEFAULT_MAX_PIXELS;
    opt->max_ratio = IO_DEFAULT_MAX_RATIO;
    opt->max_jpeg_scans = IO_DEFAULT_MAX_JPEG_SCANS;
    opt->max_tiff_blocks = IO_DEFAULT_MAX_TIFF_BLOCKS;
    opt->max_tiff_tile_bytes = IO_DEFAULT_MAX_TIFF_TILE_BYTES;
    opt->on_shape = NULL;
    opt->on_shape_user = NULL;
    opt->threads = 0;
    opt->tiff_compression = IO_TIFF_DEFLATE;
    opt->tiff_level = 6;
    opt->memory = (io_pixel_memory){ NULL, NULL, NULL };
    opt->fail_on = IO_FAIL_ON_ERROR;
    opt->warnings = NULL;
    opt->page = 0;
    opt->meta = NULL;
    opt->meta_known = 0;
    opt->autorotate = 0;
    opt->tiff_bigtiff_above = 0;
    opt->tiff_strip_codec = NULL;
    opt->tiff_strip_batch = NULL;
    opt->stream_hold_bytes = 0;
    opt->temp_slot = NULL;
}

int io_image_alloc(const io_options *opt, ip_image *img, const ip_shape *shape, char *err, size_t errlen)
{
    if (!opt->memory.alloc) return img_alloc(img, shape, opt->max_pixels, err, errlen);
    size_t bytes;
    int rc = img_size_check(shape, opt->max_pixels, &bytes, err, errlen);
    if (rc) return rc;
    void *data = NULL;
    rc = opt->memory.alloc(opt->memory.user, bytes, &data, err, errlen);
    if (rc) return rc;
    *img = (ip_image){ data, (ptrdiff_t)img_row_bytes(shape), *shape, 0 };
    return IP_OK;
}

void io_image_free(const io_options *opt, ip_image *img)
{
    if (!img || !img->data) return;
    if (opt->memory.release) opt->memory.release(opt->memory.user, img->data);
    else if (!opt->memory.alloc) free(img->data);
    img->data = NULL;
}

int io_thread_count(const io_options *opt)
{
    if (opt->threads > 0) return opt->threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (int)cores : 1;
}

const char *io_tiff_compression_name(io_tiff_compression c)
{
    switch (c) {
    case IO_TIFF_DEFLATE: return "deflate";
    case IO_TIFF_LZW: return "lzw";
    case IO_TIFF_ZSTD: return "zstd";
    case IO_TIFF_NONE: return "none";
    }
    return "?";
}

int io_tiff_compression_from_name(const char *name, io_tiff_compression *c)
{
    static const io_tiff_compression all[] = { IO_TIFF_DEFLATE, IO_TIFF_LZW, IO_TIFF_ZSTD, IO_TIFF_NONE };
    for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
        if (strcmp(name, io_tiff_compression_name(all[i])) == 0) {
            *c = all[i];
            return 1;
        }
    return 0;
}

int io_shape_known(const io_options *opt, const ip_shape *shape, uint64_t file_bytes, char *err, size_t errlen)
{
    size_t bytes;
    int rc = img_size_check(shape, opt->max_pixels, &bytes, err, errlen);
    if (rc == IP_OK) rc = io_limit_ratio(opt, shape, bytes, file_bytes, err, errlen);
    if (rc == IP_OK && opt->on_shape) rc = opt->on_shape(opt->on_shape_user, shape, err, errlen);
    return rc;
}

io_format io_detect(const unsigned char *head, size_t n)
{
    static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (n >= 8 && memcmp(head, png_sig, 8) == 0) return IO_FMT_PNG;
    if (n >= 3 && head[0] == 0xff && head[1] == 0xd8 && head[2] == 0xff) return IO_FMT_JPEG;
    /* Classic TIFF has version 42, BigTIFF 43; libtiff reads both. */
    if (n >= 4 && head[0] == 'I' && head[1] == 'I' && (head[2] == 42 || head[2] == 43) && head[3] == 0)
        return IO_FMT_TIFF;
    if (n >= 4 && head[0] == 'M' && head[1] == 'M' && head[2] == 0 && (head[3] == 42 || head[3] == 43))
        return IO_FMT_TIFF;
    return IO_FMT_UNKNOWN;
}

io_format io_detect_file(const char *path)
{
    unsigned char head[8];
    FILE *f = fopen(path, "rb");
    if (!f) return IO_FMT_UNKNOWN;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return io_detect(head, n);
}

io_format io_format_from_ext(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot) return IO_FMT_UNKNOWN;
    if (!strcasecmp(dot, ".tif") || !strcasecmp(dot, ".tiff")) return IO_FMT_TIFF;
    if (!strcasecmp(dot, ".png")) return IO_FMT_PNG;
    if (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg")) return IO_FMT_JPEG;
    return IO_FMT_UNKNOWN;
}

const char *io_format_name(io_format fmt)
{
    switch (fmt) {
    case IO_FMT_TIFF: return "TIFF";
    case IO_FMT_PNG: return "PNG";
    case IO_FMT_JPEG: return "JPEG";
    case IO_FMT_UNKNOWN: break;
    }
    return "unknown";
}

const char *io_strerror(int errnum, char *buf, size_t len)
{
    if (strerror_r(errnum, buf, len) != 0) snprintf(buf, len, "error %d", errnum);
    return buf;
}

int io_host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

FILE *io_fdopen_write(int fd, char *err, size_t errlen)
{
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        char why[128];
        snprintf(err, errlen, "cannot write: %s", io_strerror(errno, why, sizeof why));
        close(fd);
    }
    return f;
}

int io_fclose_checked(FILE *f, char *err, size_t errlen)
{
    int failed = fflush(f) != 0 || ferror(f);
    int saved = errno;
    if (fclose(f) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    if (!failed) return IP_OK;
    char why[128];
    snprintf(err, errlen, "cannot write: %s", saved ? io_strerror(saved, why, sizeof why) : "write error");
    return IP_EIO;
}

static int valid_options(const io_options *opt, char *err, size_t errlen)
{
    if (opt->png_level < 0 || opt->png_level > 9) {
        snprintf(err, errlen, "PNG compression level %d is out of range 0..9", opt->png_level);
        return IP_EINVAL;
    }
    if (opt->tiff_level < 1 || opt->tiff_level > 9) {
        snprintf(err, errlen, "TIFF deflate level %d is out of range 1..9", opt->tiff_level);
        return IP_EINVAL;
    }
    if (opt->jpeg_quality < 1 || opt->jpeg_quality > 100) {
        snprintf(err, errlen, "JPEG quality %d is out of range 1..100", opt->jpeg_quality);
        return IP_EINVAL;
    }
    return IP_OK;
}

int io_slurp(FILE *f, unsigned char **data, size_t *size, char *err, size_t errlen)
{
    struct stat st;
    size_t cap = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 1 << 16;
    size_t n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown, cap *= 2;
    }
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    if (ferror(f)) {
        free(buf);
        snprintf(err, errlen, "cannot read the file");
        return IP_EIO;
    }
    *data = buf, *size = n;
    return IP_OK;
}

int io_read_file(const char *path, unsigned char **data, size_t *size, char *err, size_t errlen)
{
    char why[128];
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", io_strerror(errno, why, sizeof why));
        return IP_EIO;
    }
    int rc = io_slurp(f, data, size, err, errlen);
    fclose(f);
    return rc;
}

int io_input_open(const char *path, io_input *in, char *err, size_t errlen)
{
    char why[128];
    in->format = IO_FMT_UNKNOWN;
    in->file = fopen(path, "rb");
    if (!in->file) {
        snprintf(err, errlen, "cannot open: %s", io_strerror(errno, why, sizeof why));
        return IP_EIO;
    }
    unsigned char head[8];
    size_t n = fread(head, 1, sizeof head, in->file);
    int rc = IP_OK;
    if (n < sizeof head && ferror(in->file)) {
        snprintf(err, errlen, "cannot read: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    } else if (n == 0) {
        snprintf(err, errlen, "empty file, not an image");
        rc = IP_EFORMAT;
    } else if ((in->format = io_detect(head, n)) == IO_FMT_UNKNOWN) {
        snprintf(err, errlen, "not a PNG, JPEG or TIFF file");
        rc = IP_EFORMAT;
    }
    if (rc != IP_OK) io_input_close(in);
    return rc;
}

void io_input_close(io_input *in)
{
    if (in->file) fclose(in->file);
    in->file = NULL;
}

int io_input_bytes(io_input *in, unsigned char **data, size_t *size, char *err, size_t errlen)
{
    char why[128];
    if (fseek(in->file, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot read: %s", io_strerror(errno, why, sizeof why));
        return IP_EIO;
    }
    return io_slurp(in->file, data, size, err, errlen);
}

int io_read_input(io_input *in, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    io_options defaults;
    if (!opt) {
        io_default_options(&defaults);
        opt = &defaults;
    }
    memset(out, 0, sizeof *out);
    char why[128];
    int rc = IP_OK;
    if (fseek(in->file, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot read: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    if (!rc) rc = io_decode_with_meta(in->file, in->format, opt, out, err, errlen);
    if (rc) io_image_free(opt, out);
    return rc;
}

int io_read(const char *path, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    io_input in;
    memset(out, 0, sizeof *out);
    int rc = io_input_open(path, &in, err, errlen);
    if (rc == IP_OK) rc = io_read_input(&in, opt, out, err, errlen);
    io_input_close(&in);
    return rc;
}

static int check_shape(const ip_shape *s, char *err, size_t errlen)
{
    if (s->width <= 0 || s->height <= 0 || s->channels < 1 || s->channels > 4 ||
        (s->dtype != IP_U8 && s->dtype != IP_U16 && s->dtype != IP_F32)) {
        snprintf(err, errlen, "invalid image shape %dx%d with %d channels", s->width, s->height,
                 s->channels);
        return IP_EINVAL;
    }
    return IP_OK;
}

static int check_jpeg_writable(const ip_shape *s, char *err, size_t errlen)
{
    if (s->dtype != IP_U8) {
        snprintf(err, errlen, "JPEG holds 8-bit only (this image is %s); write .png or .tif, or convert "
                 "to 8-bit", s->dtype == IP_U16 ? "16-bit" : "32-bit float");
        return IP_EFORMAT;
    }
    if (s->channels == 2 || s->channels == 4) {
        snprintf(err, errlen, "JPEG cannot hold an alpha channel (%d channels); write .png or .tif%s",
                 s->channels, s->channels == 4 ? ", or add grayscale" : "");
        return IP_EFORMAT;
    }
    if (s->width > 65500 || s->height > 65500) {
        snprintf(err, errlen, "JPEG holds at most 65500 pixels a side (this image is %dx%d); write .png "
                 "or .tif", s->width, s->height);
        return IP_EFORMAT;
    }
    return IP_OK;
}

int io_check_writable(io_format fmt, const ip_shape *shape, char *err, size_t errlen)
{
    int rc = check_shape(shape, err, errlen);
    if (rc) return rc;
    switch (fmt) {
    case IO_FMT_TIFF:
        return IP_OK;
    case IO_FMT_PNG:
        if (shape->dtype == IP_F32) {
            snprintf(err, errlen, "PNG cannot hold 32-bit float pixels; write a .tif, or convert "
                     "(entropy output=u8, convolve output=same)");
            return IP_EFORMAT;
        }
        return IP_OK;
    case IO_FMT_JPEG:
        return check_jpeg_writable(shape, err, errlen);
    case IO_FMT_UNKNOWN:
        break;
    }
    snprintf(err, errlen, "unknown output format; name the output .tif, .tiff, .png, .jpg or .jpeg");
    return IP_EINVAL;
}

/* Temporaries are made 0600; give the output the mode a plain fopen would have. */
static mode_t default_file_mode(void)
{
    unsigned mask = 022;
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[128];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Umask: %o", &mask) == 1) break;
        fclose(f);
    }
    return (mode_t)(0666 & ~mask);
}

/* Builds "<dir>/.imgpipe-tmp-<basename>-<pid>-XXXXXX" next to path; NULL when path names no file. */
static char *temp_template(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    size_t base_len = strlen(base);
    if (base_len == 0 || !strcmp(base, ".") || !strcmp(base, "..")) return NULL;
    if (base_len > IO_TMP_BASE_MAX) base_len = IO_TMP_BASE_MAX;
    size_t len = dir_len + strlen(IO_TMP_PREFIX) + base_len + 22 + strlen("-XXXXXX") + 1;
    char *tmpl = malloc(len);
    if (tmpl)
        snprintf(tmpl, len, "%.*s" IO_TMP_PREFIX "%.*s-%ld-XXXXXX", (int)dir_len, path, (int)base_len, base,
                 (long)getpid());
    return tmpl;
}

/* The template's trailing XXXXXX from seed. */
static void temp_fill(char *tmpl, uint64_t seed)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    char *x = tmpl + strlen(tmpl) - 6;
    for (int i = 0; i < 6; i++, seed /= 36) x[i] = letters[seed % 36];
}

static void temp_told(const io_options *opt, const char *tmp_path, int made)
{
    io_temp_slot *slot = opt ? opt->temp_slot : NULL;
    if (!slot) return;
    slot->set = 0;
    size_t len = strlen(tmp_path);
    if (!made || len >= sizeof slot->path) return;
    memcpy(slot->path, tmp_path, len + 1);
    slot->set = 1;
}

/* Creates the temporary tmpl names (XXXXXX filled in), mode 0600; -1 with errno on failure. opt's
 * the slot holds the name before the file exists, so that a signal handler removing what it heard
 * of cannot miss a file that is there (mkstemp would tell it only after). The name holds the
 * process id: one already taken can only be a dead run's leftover, so it is no loss if a signal
 * then removes it. */
static int temp_create(char *tmpl, const io_options *opt)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)tmpl;
    for (int attempt = 0; attempt < 100; attempt++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        temp_fill(tmpl, seed >> 16);
        temp_told(opt, tmpl, 1);
        int fd = open(tmpl, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) return fd;
        int why = errno;
        temp_told(opt, tmpl, 0);
        errno = why;
        if (why != EEXIST) return -1;
    }
    return -1;
}

static int check_source(const ip_image *img, char *err, size_t errlen)
{
    int rc = check_shape(&img->shape, err, errlen);
    if (rc) return rc;
    if (!img->data || img->on_device) {
        snprintf(err, errlen, "image to write is not in host memory");
        return IP_EINVAL;
    }
    if (img->stride < 0 || (size_t)img->stride < img_row_bytes(&img->shape)) {
        snprintf(err, errlen, "image row stride %td is shorter than a row", img->stride);
        return IP_EINVAL;
    }
    return IP_OK;
}

static int encode(io_format fmt, int fd, const ip_image *img, const io_options *opt, char *err,
                  size_t errlen)
{
    if (fmt == IO_FMT_PNG) return io_write_png(fd, img, opt, err, errlen);
    if (fmt == IO_FMT_JPEG) return io_write_jpeg(fd, img, opt, err, errlen);
    return io_write_tiff(fd, img, opt, err, errlen);
}

void io_temp_done(const io_options *opt, const char *tmp_path) { temp_told(opt, tmp_path, 0); }

int io_temp_open(const char *path, const io_options *opt, char **tmp_path, int *fd, char *err, size_t errlen)
{
    char why[128];
    *tmp_path = temp_template(path);
    *fd = -1;
    if (!*tmp_path) {
        snprintf(err, errlen, "output path names a folder, not a file");
        return IP_EINVAL;
    }
    *fd = temp_create(*tmp_path, opt);
    if (*fd >= 0 && fchmod(*fd, default_file_mode()) == 0) return IP_OK;
    snprintf(err, errlen, "cannot create a file in the output folder: %s", io_strerror(errno, why, sizeof why));
    if (*fd >= 0) {
        close(*fd);
        unlink(*tmp_path);
        temp_told(opt, *tmp_path, 0);
    }
    free(*tmp_path);
    *tmp_path = NULL;
    return IP_EIO;
}

int io_write_atomically(const char *path, const io_options *opt, io_fill_fn fill, void *ctx, char *err, size_t errlen)
{
    char *tmp;
    int fd;
    int rc = io_temp_open(path, opt, &tmp, &fd, err, errlen);
    if (rc) return rc;
    rc = fill(fd, ctx, err, errlen);
    if (!rc && rename(tmp, path) != 0) {
        char why[128];
        snprintf(err, errlen, "cannot move the finished file into place: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    if (rc) unlink(tmp);
    io_temp_done(opt, tmp);
    free(tmp);
    return rc;
}

typedef struct {
    io_format fmt;
    const ip_image *img;
    const io_options *opt;
} encode_job;

static int fill_encoded(int fd, void *ctx, char *err, size_t errlen)
{
    const encode_job *job = ctx;
    return encode(job->fmt, fd, job->img, job->opt, err, errlen);
}

int io_write(const char *path, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    io_options defaults;
    if (!opt) {
        io_default_options(&defaults);
        opt = &defaults;
    }
    io_format fmt = io_format_from_ext(path);
    int rc = io_check_writable(fmt, &img->shape, err, errlen);
    if (!rc) rc = check_source(img, err, errlen);
    if (!rc) rc = valid_options(opt, err, errlen);
    if (rc) return rc;
    encode_job job = { fmt, img, opt };
    return io_write_atomically(path, opt, fill_encoded, &job, err, errlen);
}

typedef struct {
    const unsigned char *bytes;
    size_t len;
} byte_span;

static int fill_bytes(int fd, void *ctx, char *err, size_t errlen)
{
    const byte_span *span = ctx;
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    if (span->len && fwrite(span->bytes, 1, span->len, f) != span->len) {
        char why[128];
        snprintf(err, errlen, "cannot write: %s", io_strerror(errno, why, sizeof why));
        fclose(f);
        return IP_EIO;
    }
    return io_fclose_checked(f, err, errlen);
}

int io_write_bytes(const char *path, const unsigned char *bytes, size_t len, const io_options *opt, char *err,
                   size_t errlen)
{
    byte_span span = { bytes, len };
    return io_write_atomically(path, opt, fill_bytes, &span, err, errlen);
}
