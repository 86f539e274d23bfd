#define _POSIX_C_SOURCE 200809L
#include "io/io_tiff_handle.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where a sink handle says its file ends: every strip is placed at this same small offset, so
 * a handle that encodes gigabytes over its life never passes classic TIFF's 4 GiB limit. */
#define SINK_END 8u

/* libtiff starts many messages with the handle's name ("TIFF: ..."); our prefix says it. */
static void drop_handle_name(char *text)
{
    static const char name[] = "TIFF: ";
    if (strncmp(text, name, sizeof name - 1) == 0) memmove(text, text + sizeof name - 1, strlen(text) - (sizeof name - 2));
}

static int on_tiff_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    (void)module;
    tiff_log *log = user;
    if (!log->have) {   /* the first message names the cause; later ones are consequences */
        vsnprintf(log->text, sizeof log->text, fmt, ap);
        drop_handle_name(log->text);
        log->have = 1;
    }
    return 1;
}

/* Warnings about the file's form, not its pixels: tags libtiff does not know or that are out of
 * order or badly terminated, tile sizes off the recommended multiple, old LZW, 8-bit colour maps
 * (which the palette expansion detects itself), samples past the colour ones without an
 * ExtraSamples tag. */
static int is_harmless(const char *text)
{
    static const char *const harmless[] = { "Unknown field with tag", "tags are not sorted",
                                            "does not end in null byte", "Nonstandard tile",
                                            "Old-style LZW codes", "Assuming 8-bit colormap",
                                            "Defining non-color channels as ExtraSamples" };
    for (size_t i = 0; i < sizeof harmless / sizeof *harmless; i++)
        if (strstr(text, harmless[i])) return 1;
    return 0;
}

static int on_tiff_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    (void)module;
    tiff_log *log = user;
    if (log) {
        vsnprintf(log->warning, sizeof log->warning, fmt, ap);
        drop_handle_name(log->warning);
        char what[sizeof log->warning + 8];
        snprintf(what, sizeof what, "TIFF: %s", log->warning);
        if (log->warnings && !is_harmless(log->warning)) io_warnings_add(log->warnings, 1, what);
    }
    return 1;
}

const char *tiff_log_text(const tiff_log *log, const char *fallback)
{
    return log->have ? log->text : log->warning[0] ? log->warning : fallback;
}

void tiff_log_went_past(tiff_log *log)
{
    if (!log->have || !log->warnings) return;
    char what[sizeof log->text + 8];
    snprintf(what, sizeof what, "TIFF: %s", log->text);
    io_warnings_add(log->warnings, 1, what);
}

int tiff_decoder_may_leave_unwritten(uint16_t compression)
{
    return compression == COMPRESSION_CCITTRLE || compression == COMPRESSION_CCITTRLEW ||
           compression == COMPRESSION_CCITTFAX3 || compression == COMPRESSION_CCITTFAX4 ||
           compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_DEFLATE;
}

static TIFFOpenOptions *options_for(tiff_log *log)
{
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o) return NULL;
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_tiff_error, log);
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_tiff_warning, log);
    return o;
}

static uint64_t file_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_size >= 0 ? (uint64_t)st.st_size : 0;
}

static tmsize_t shared_read(thandle_t h, void *buf, tmsize_t size)
{
    tiff_fd_cursor *c = h;
    if (size < 0 || c->pos > (uint64_t)INT64_MAX - (uint64_t)size) return -1;
    size_t done = 0;
    while (done < (size_t)size) {
        ssize_t n = pread(c->fd, (char *)buf + done, (size_t)size - done, (off_t)(c->pos + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break;
        done += (size_t)n;
    }
    c->pos += done;
    return (tmsize_t)done;
}

static tmsize_t shared_write(thandle_t h, void *buf, tmsize_t size)
{
    (void)h;
    (void)buf;
    (void)size;
    return -1;
}

static toff_t shared_seek(thandle_t h, toff_t off, int whence)
{
    tiff_fd_cursor *c = h;
    if (whence == SEEK_SET) c->pos = off;
    else if (whence == SEEK_CUR) c->pos += off;   /* unsigned wrap-around subtracts */
    else if (whence == SEEK_END) c->pos = file_size(c->fd) + off;
    else return (toff_t)-1;
    return c->pos;
}

static int shared_close(thandle_t h)
{
    (void)h;
    return 0;
}

static toff_t shared_size(thandle_t h)
{
    return file_size(((tiff_fd_cursor *)h)->fd);
}

static int no_map(thandle_t h, void **base, toff_t *size)
{
    (void)h;
    (void)base;
    (void)size;
    return 0;
}

static void no_unmap(thandle_t h, void *base, toff_t size)
{
    (void)h;
    (void)base;
    (void)size;
}

TIFF *tiff_open_shared(tiff_fd_cursor *cursor, tiff_log *log)
{
    TIFFOpenOptions *o = options_for(log);
    if (!o) return NULL;
    /* m: never mapped, so a file cut short is a read error, not SIGBUS */
    TIFF *tif = TIFFClientOpenExt("TIFF", "rm", cursor, shared_read, shared_write, shared_seek, shared_close,
                                  shared_size, no_map, no_unmap, o);
    TIFFOpenOptionsFree(o);
    return tif;
}

TIFF *tiff_open_fd_write(int fd, const char *mode, tiff_log *log)
{
    TIFFOpenOptions *o = options_for(log);
    if (!o) return NULL;
    TIFF *tif = TIFFFdOpenExt(fd, "TIFF", mode, o);
    TIFFOpenOptionsFree(o);
    return tif;
}

static tmsize_t sink_read(thandle_t h, void *buf, tmsize_t size)
{
    (void)h;
    (void)buf;
    (void)size;
    return 0;
}

static int sink_grow(tiff_sink *s, size_t need)
{
    size_t cap = s->cap ? s->cap : (size_t)64 << 10;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    unsigned char *data = realloc(s->data, cap);
    if (!data) return -1;
    s->data = data;
    s->cap = cap;
    return 0;
}

static tmsize_t sink_write(thandle_t h, void *buf, tmsize_t size)
{
    tiff_sink *s = h;
    if (!s->collecting || size <= 0) return size;
    if ((size_t)size > SIZE_MAX - s->len ||
        (s->len + (size_t)size > s->cap && sink_grow(s, s->len + (size_t)size) != 0)) {
        s->out_of_memory = 1;
        return -1;
    }
    memcpy(s->data + s->len, buf, (size_t)size);
    s->len += (size_t)size;
    return size;
}

/* Positions do not matter: a strip's bytes arrive in order, with no seek inside a strip. */
static toff_t sink_seek(thandle_t h, toff_t off, int whence)
{
    (void)h;
    return whence == SEEK_END ? SINK_END + off : off;
}

static toff_t sink_size(thandle_t h)
{
    (void)h;
    return SINK_END;
}

TIFF *tiff_open_sink(tiff_sink *sink, tiff_log *log)
{
    TIFFOpenOptions *o = options_for(log);
    if (!o) return NULL;
    TIFF *tif = TIFFClientOpenExt("TIFF", "w", sink, sink_read, sink_write, sink_seek, shared_close, sink_size,
                                  no_map, no_unmap, o);
    TIFFOpenOptionsFree(o);
    return tif;
}
