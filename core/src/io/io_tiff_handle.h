/* libtiff handles for the TIFF codec: messages kept per handle, several reading handles on one
 * descriptor (one per thread), and handles that encode strips into memory. */
#ifndef IMGPIPE_IO_TIFF_HANDLE_H
#define IMGPIPE_IO_TIFF_HANDLE_H
#include <stddef.h>
#include <stdint.h>
#include <tiffio.h>
#include "io/io.h"

/* libtiff never prints and no global handler is touched: each handle fills its own log. */
typedef struct {
    char text[256];
    int have;
    char warning[256];   /* libtiff sometimes fails an open after warnings only */
    io_warnings *warnings;   /* when set, warnings that may mean wrong pixels are added here */
} tiff_log;

const char *tiff_log_text(const tiff_log *log, const char *fallback);
/* After a read that succeeded: an error libtiff reported on the way (a CCITT fax line with a bad
 * code, after which the decoder goes on with the next line) is damage decoded anyway, a warning. */
void tiff_log_went_past(tiff_log *log);
/* Decoders that can succeed with part of a block unwritten: CCITT fax (bits of the lines after a
 * bad code) and deflate (libtiff's libdeflate path stops before a back-reference that crosses the
 * block's end). Such a block decodes into zeroed memory, so that its pixels never depend on what
 * was there before. */
int tiff_decoder_may_leave_unwritten(uint16_t compression);

/* A reading handle's position in the shared descriptor: reads use pread(), so handles on one
 * fd do not move each other's offset. */
typedef struct {
    int fd;
    uint64_t pos;
} tiff_fd_cursor;

/* Opens for reading without mapping the file (a file cut short is an error, not SIGBUS);
 * cursor must outlive the handle, and TIFFClose leaves cursor->fd open. */
TIFF *tiff_open_shared(tiff_fd_cursor *cursor, tiff_log *log);

/* Opens fd for writing; TIFFClose closes fd. */
TIFF *tiff_open_fd_write(int fd, const char *mode, tiff_log *log);

/* Where an encoding handle's strip bytes land. Only bytes written while `collecting` are
 * kept: the header and directory libtiff writes for the handle itself are dropped. */
typedef struct {
    unsigned char *data;
    size_t len, cap;
    int collecting;
    int out_of_memory;        /* a write failed for want of memory */
} tiff_sink;

/* Opens a handle whose writes go to sink; give it the tags of the real file, write one strip
 * at a time with TIFFWriteEncodedStrip, and sink holds that strip's compressed bytes. */
TIFF *tiff_open_sink(tiff_sink *sink, tiff_log *log);
/* The output's layout and tags, shared by the whole-image writer (io_tiff_write.c) and the
 * streaming one, so that both write the same bytes. */
uint16_t tiff_scheme(io_tiff_compression c);
int tiff_set_image_tags(TIFF *tif, const ip_shape *s, uint32_t rows_per_strip, io_tiff_compression c);
uint32_t tiff_rows_per_strip(const ip_shape *s);
/* Whether pixels of this shape call for BigTIFF: above `above` bytes (0: the default threshold). */
int tiff_wants_bigtiff(const ip_shape *s, uint64_t above);
/* The output handle that takes the compressed strips, in order, through tiff_write_raw_strip
 * (a tiff_strip_write_fn of io_tiff_strips.h). */
typedef struct {
    TIFF *out;
    tiff_log *log;
} tiff_raw_out;
int tiff_write_raw_strip(void *raw_out, uint32_t index, const unsigned char *data, size_t len, char *err, size_t errlen);
#endif
