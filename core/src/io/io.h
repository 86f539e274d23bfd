/* Image files: format detection by magic bytes, decoding and encoding. */
#ifndef IMGPIPE_IO_H
#define IMGPIPE_IO_H
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include "imgpipe/plugin.h"

typedef enum { IO_FMT_UNKNOWN = 0, IO_FMT_TIFF, IO_FMT_PNG, IO_FMT_JPEG } io_format;
typedef enum { IO_TIFF_DEFLATE = 0, IO_TIFF_LZW, IO_TIFF_ZSTD, IO_TIFF_NONE } io_tiff_compression;
struct io_meta;   /* meta.h */
struct tiff_strip_codec;   /* io_tiff_strips.h */

/* Where a decoder puts the final pixels, so a run can decode straight into the memory it uploads
 * from (pinned or mapped host memory). Without a provider, malloc (and img_free). */
typedef struct {
    int (*alloc)(void *user, size_t bytes, void **ptr, char *err, size_t errlen);
    void (*release)(void *user, void *ptr);
    void *user;
} io_pixel_memory;

/* --fail-on: whether a file a reader can decode past damage in (a JPEG ending early, a bad CRC on
 * a PNG ancillary chunk, a libtiff warning) is decoded, with a warning, or refused. */
typedef enum { IO_FAIL_ON_ERROR = 0, IO_FAIL_ON_WARNING } io_fail_on;

/* What the readers decoded past, for the caller to report (only the command line prints). */
typedef struct {
    int count;
    char first[256];   /* the first warning's message, without the path */
} io_warnings;

/* Where the name of a run's output temporary is kept for a signal handler: set is 1 while path
 * names a file that exists. */
typedef struct {
    char path[4096];
    volatile sig_atomic_t set;
} io_temp_slot;

typedef struct {
    int png_level;       /* 0..9, default 6 */
    int jpeg_quality;    /* 1..100, default 90 */
    uint64_t max_pixels; /* refuse larger images before allocating */
    /* The other limits on untrusted files (io_limits.h), each with the option that raises it. */
    uint64_t max_ratio;           /* decoded bytes per byte of file */
    int max_jpeg_scans;
    uint64_t max_tiff_blocks;     /* strips or tiles of one image */
    uint64_t max_tiff_tile_bytes; /* one decoded tile, where larger than the whole image */
    int threads;         /* codec threads (strips, tiles, PNG bands); 0 = all cores */
    io_tiff_compression tiff_compression;   /* default deflate, with the predictor */
    int tiff_level;      /* deflate's level 1..9, default 6 (libtiff's); zstd keeps libtiff's */
    io_pixel_memory memory;                 /* all NULL: malloc */
    /* Called by io_read once the header gives the decoded shape, before any pixel is decoded;
     * a non-zero return stops the read with that code and the callback's message. */
    int (*on_shape)(void *user, const ip_shape *shape, char *err, size_t errlen);
    void *on_shape_user;
    io_fail_on fail_on;        /* default IO_FAIL_ON_ERROR */
    io_warnings *warnings;     /* added to by io_read; NULL: not recorded */
    uint32_t page;             /* the page (TIFF directory) to read, from 0; other formats have page 0 */
    /* ICC profile, EXIF, XMP, text, resolution (meta.h): io_read fills *meta when set, io_write
     * writes what the output format holds of it. NULL: none read, none written. */
    struct io_meta *meta;
    /* *meta already holds the file's metadata (the run layer's probe read it): not read again. */
    int meta_known;
    /* io_read turns the pixels upright by their EXIF orientation (default 0: as stored). */
    int autorotate;
    uint64_t tiff_bigtiff_above;   /* streamed TIFF output: BigTIFF above this many pixel bytes (0: 3.5 GiB) */
    /* TIFF output's strips compressed by this (io_tiff_strips.h), where a GPU compressor can take
     * the CPU's place; NULL: the CPU's (libdeflate, libtiff). */
    const struct tiff_strip_codec *tiff_strip_codec;
    /* Streamed TIFF output: a batch compressor (a GPU's) beside those threads, its strips cut to
     * the size it prefers (io_tiff_strips.h); NULL: the threads alone. */
    const struct tiff_strip_batch_codec *tiff_strip_batch;
    /* Streamed PNG and JPEG output: hold about this much at most (fewer bands compressed at once;
     * at least one). 0: two bands a thread. */
    uint64_t stream_hold_bytes;
    /* The output's temporary file is named here while it exists (io_write, io_write_bytes and the
     * streamed writers), so that a signal handler can remove it if a signal ends the process
     * before it is renamed into place or removed. NULL: not named anywhere. */
    io_temp_slot *temp_slot;
} io_options;

void io_default_options(io_options *opt);
io_format io_detect(const unsigned char *head, size_t n);
/* A reader decoded past damage (thread-safe). IP_OK when opt lets it go on: the warning is added
 * to opt->warnings (count of them, message kept when it is the first); IP_EFORMAT, with err saying
 * so, when opt->fail_on is IO_FAIL_ON_WARNING. */
int io_warn(const io_options *opt, int count, const char *message, char *err, size_t errlen);
void io_warnings_add(io_warnings *w, int count, const char *message);

/* The pages of a file: a TIFF's directories, 1 for PNG and JPEG. IP_EIO or IP_EFORMAT when the
 * file cannot be read or is no image. */
int io_page_count(const char *path, uint32_t *pages, char *err, size_t errlen);

/* Reads the file's first bytes; IO_FMT_UNKNOWN when unreadable or not an image. */
io_format io_detect_file(const char *path);
io_format io_format_from_ext(const char *path);
const char *io_format_name(io_format fmt);
/* For the readers: checks the pixel limit, the decoded size against file_bytes (the whole file;
 * 0 when unknown) and calls opt->on_shape, if any. */
int io_shape_known(const io_options *opt, const ip_shape *shape, uint64_t file_bytes, char *err, size_t errlen);

/* The decoders' allocation of the final image (packed, stride = row bytes), through
 * opt->memory when set; io_image_free gives it back the same way. */
int io_image_alloc(const io_options *opt, ip_image *img, const ip_shape *shape, char *err, size_t errlen);
void io_image_free(const io_options *opt, ip_image *img);
/* Codec threads to use: opt->threads, or the cores when 0. */
int io_thread_count(const io_options *opt);
const char *io_tiff_compression_name(io_tiff_compression c);
/* The compression a name gives ("deflate", "lzw", "zstd", "none"): 1, or 0 for any other. */
int io_tiff_compression_from_name(const char *name, io_tiff_compression *c);

/* Decodes any supported file into a freshly allocated packed host image (free with
 * io_image_free, or img_free when opt has no memory provider). Errors: IP_EIO (cannot open/read), IP_EFORMAT (corrupt, truncated,
 * unsupported), IP_ELIMIT (over a limit of io_options). The message does not repeat the path. */
int io_read(const char *path, const io_options *opt, ip_image *out, char *err, size_t errlen);

/* An input file opened once: its format read from its first bytes, then handed to whichever
 * reader runs it (the whole-image reader, a streaming reader), each starting from its start. */
typedef struct {
    FILE *file;
    io_format format;
} io_input;
/* IP_EIO (cannot open or read) or IP_EFORMAT (empty, or not PNG, JPEG or TIFF), as io_read says. */
int io_input_open(const char *path, io_input *in, char *err, size_t errlen);
void io_input_close(io_input *in);
/* The whole of an opened input's bytes, from its start, in malloc'd memory (for nvJPEG). */
int io_input_bytes(io_input *in, unsigned char **data, size_t *size, char *err, size_t errlen);
/* io_read of an opened input. */
int io_read_input(io_input *in, const io_options *opt, ip_image *out, char *err, size_t errlen);
/* The whole file in malloc'd memory (for decoders that take bytes, such as nvJPEG). */
int io_read_file(const char *path, unsigned char **data, size_t *size, char *err, size_t errlen);

/* Whether the format (from the output's extension) can hold this shape; the message says
 * what to change. */
int io_check_writable(io_format fmt, const ip_shape *shape, char *err, size_t errlen);

/* Encodes to path by writing a temporary file in the same folder and renaming it;
 * on any failure no file at path (nor the temporary) is left. */
int io_write(const char *path, const ip_image *img, const io_options *opt, char *err, size_t errlen);
/* Writes already-encoded file bytes (a GPU-encoded JPEG) to path the same way as io_write; opt
 * (may be NULL) for its temp_slot only. */
int io_write_bytes(const char *path, const unsigned char *bytes, size_t len, const io_options *opt, char *err,
                   size_t errlen);
#endif
