/* Streaming codecs: images read and written a band of rows at a time, beside the whole-image
 * codecs of io.h (which stay for the whole-image path). TIFF by strips and tiles, PNG by rows
 * (interlaced files are not streamed), JPEG by scanlines; each writes the same bytes as its
 * whole-image writer. */
#ifndef IMGPIPE_IO_STREAM_H
#define IMGPIPE_IO_STREAM_H
#include "io/io.h"
#include "io/tiff_band_decode.h"

typedef struct io_stream_reader io_stream_reader;
typedef struct io_stream_writer io_stream_writer;

/* Opens path and reads its header: *shape is the decoded image's; band_bytes: about how much of
 * the image to hand out at a time (whole strips or rows of tiles, at least one). IP_EUNSUPPORTED (with a
 * message saying why) for a file this reader cannot stream, which the whole-image reader may
 * still take; other errors as io_read's. opt->on_shape is called as io_read calls it. */
int io_stream_open(const char *path, const io_options *opt, uint64_t band_bytes, io_stream_reader **r, ip_shape *shape,
                   char *err, size_t errlen);
/* io_stream_open of an input already opened (it keeps its own descriptor: in may be closed). */
int io_stream_open_input(io_input *in, const io_options *opt, uint64_t band_bytes, io_stream_reader **out,
                         ip_shape *shape, char *err, size_t errlen);
/* The next rows in order: *rows is valid until the next call, its height 0 after the last row. */
int io_stream_next(io_stream_reader *r, ip_image *rows, int *y0, char *err, size_t errlen);
/* io_stream_next decoding straight into dst (packed rows, room for dst->shape.height of them, at
 * least io_stream_block_rows), which then holds the rows read: no copy of the reader's band.
 * IP_EUNSUPPORTED for the readers that cannot (io_stream_reads_into says which). */
int io_stream_next_into(io_stream_reader *r, ip_image *dst, int *y0, char *err, size_t errlen);
int io_stream_reads_into(const io_stream_reader *r);
/* Rows the reader hands out at a time (a strip or a row of tiles), for sizing bands. */
int io_stream_block_rows(const io_stream_reader *r);
/* About the most the reader holds at once: its band, the compressed data it reads, its decoder's
 * state (a progressive JPEG's coefficients are the whole image's). */
uint64_t io_stream_held_bytes(const io_stream_reader *r);
/* A TIFF: each band goes to d before libtiff (tiff_band_decode.h), from the next band on; held
 * bytes then count d's buffers. IP_EUNSUPPORTED with why for other readers and the files d does
 * not take: they read as before. */
int io_stream_set_band_decoder(io_stream_reader *r, const tiff_band_decoder *d, char *why, size_t whylen);
/* What the band decoder took so far (zeros without one). */
void io_stream_band_decode_stat(const io_stream_reader *r, tiff_band_decode_stat *st);
void io_stream_close(io_stream_reader *r);

/* Starts writing shape to a temporary file beside path (the format from path's extension). Rows
 * then go to io_stream_write in order; io_stream_finish renames the file into place once every
 * row is written; io_stream_abort removes it. Either of the two ends the writer. */
int io_stream_create(const char *path, const ip_shape *shape, const io_options *opt, io_stream_writer **w,
                     char *err, size_t errlen);
int io_stream_write(io_stream_writer *w, const ip_image *rows, int y0, char *err, size_t errlen);
int io_stream_finish(io_stream_writer *w, char *err, size_t errlen);
void io_stream_abort(io_stream_writer *w);
/* About the most the writer for path's format holds at once for this shape (its group of bands,
 * its compressors), within opt->stream_hold_bytes where it can. */
uint64_t io_stream_write_bytes(const char *path, const ip_shape *shape, const io_options *opt);
/* Whether this build streams the format (reading, writing). */
int io_stream_reads(io_format fmt);
int io_stream_writes(io_format fmt);
#endif
