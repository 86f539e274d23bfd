/* JPEG streamed in: libjpeg-turbo's scanlines, a band at a time, with the whole-image reader's
 * colour handling (CMYK and YCCK turned into RGB) and its warnings. A progressive file has its
 * coefficients buffered whole by libjpeg (its scans are all read when decoding starts, with the
 * first band). */
#define _POSIX_C_SOURCE 200809L
#include "io/io_jpeg_internal.h"
#include "base/image.h"
#include "io/io_internal.h"
#include "io/io_limits.h"
#include "io/io_stream_internal.h"
#include <stdlib.h>

/* State lives outside the functions that call setjmp, so nothing is clobbered by longjmp. */
typedef struct {
    jpegx_error_ctx e;
    struct jpeg_decompress_struct cinfo;
    int created;
    io_options opt;      /* the caller's: limits, fail_on, and where the warnings go */
    FILE *f;
    io_stream_rows rows;
    int is_cmyk, started;
    uint64_t held;       /* what it holds at most, for the caller's budget */
    JSAMPARRAY cmyk;     /* one row of libjpeg's memory, for CMYK files */
} jpeg_stream_reader;

static void reader_close(void *codec)
{
    jpeg_stream_reader *r = codec;
    if (!r) return;
    if (r->created) jpeg_destroy_decompress(&r->cinfo);
    if (r->f) fclose(r->f);
    free(r->rows.band.data);
    free(r);
}

static int read_header(jpeg_stream_reader *r, ip_shape *shape)
{
    if (setjmp(r->e.jmp)) return r->e.rc;
    jpeg_create_decompress(&r->cinfo);
    r->created = 1;
    int rc = jpegx_read_start(&r->e, &r->cinfo, r->f, &r->opt, shape, &r->is_cmyk);
    JOCTET *icc = NULL;
    unsigned int icc_len = 0;
    /* CMYK through an embedded profile needs every row's inks at once (color_cmyk_image.h) */
    if (rc == IP_OK && r->is_cmyk && jpeg_read_icc_profile(&r->cinfo, &icc, &icc_len) && icc) {
        free(icc);
        snprintf(r->e.err, r->e.errlen, "a CMYK JPEG with an ICC profile is read whole");
        return IP_EUNSUPPORTED;
    }
    return rc;
}

/* The next n rows into the band; after the last, the end of the file. */
static int read_rows(jpeg_stream_reader *r, uint32_t n)
{
    if (setjmp(r->e.jmp)) return r->e.rc;
    /* Decoding starts with the first band, not at open: a run that takes the file whole after
     * all (it fits --memory) does not read a progressive file's scans twice. */
    if (!r->started) {
        r->started = 1;
        jpeg_start_decompress(&r->cinfo);
        if (r->is_cmyk)
            r->cmyk = (*r->cinfo.mem->alloc_sarray)((j_common_ptr)&r->cinfo, JPOOL_IMAGE, r->cinfo.output_width * 4, 1);
    }
    for (uint32_t y = 0; y < n; y++) {
        JSAMPROW dst = (JSAMPROW)r->rows.band.data + (size_t)y * r->rows.band.stride;
        if (!r->cmyk) {
            jpeg_read_scanlines(&r->cinfo, &dst, 1);
            continue;
        }
        /* CMYK as the whole-image reader takes it: Adobe's, 0 meaning full ink. */
        jpeg_read_scanlines(&r->cinfo, r->cmyk, 1);
        jpegx_cmyk_row(r->cmyk[0], dst, r->cinfo.output_width);
    }
    if (r->rows.next_row + n == r->rows.height) jpeg_finish_decompress(&r->cinfo);
    return IP_OK;
}

static int read_band(void *codec, uint32_t n, char *err, size_t errlen)
{
    jpeg_stream_reader *r = codec;
    r->e.err = err;
    r->e.errlen = errlen;
    return read_rows(r, n);
}

static int reader_next(void *codec, ip_image *rows, int *y0, char *err, size_t errlen)
{
    return io_stream_rows_next(&((jpeg_stream_reader *)codec)->rows, read_band, codec, "JPEG", rows, y0, err, errlen);
}

static int reader_block_rows(const void *codec) { return (int)((const jpeg_stream_reader *)codec)->rows.band_rows; }

/* The band and libjpeg's state: for a file of several scans the whole image's coefficients (2
 * bytes each, 64 a block), else a few MCU rows of samples per component, and its tables. Taken
 * right after the header, where libjpeg answers whether the file has several scans. */
static uint64_t decoder_bytes(jpeg_stream_reader *r)
{
    struct jpeg_decompress_struct *c = &r->cinfo;
    int multi_scan = jpeg_has_multiple_scans(c);
    uint64_t state = (uint64_t)256 << 10;
    for (int i = 0; i < c->num_components; i++) {
        const jpeg_component_info *k = &c->comp_info[i];
        uint64_t row_blocks = (uint64_t)k->width_in_blocks;
        state += multi_scan ? row_blocks * k->height_in_blocks * 128 : row_blocks * 64 * (uint64_t)k->v_samp_factor * 6;
    }
    return (uint64_t)r->rows.band_rows * r->rows.band.stride + (uint64_t)c->output_width * 4 * 4 + state;
}

static uint64_t reader_held_bytes(const void *codec) { return ((const jpeg_stream_reader *)codec)->held; }

static const io_stream_read_ops read_ops = { reader_next, reader_block_rows, reader_held_bytes, reader_close, NULL, NULL,
                                             NULL };

int io_jpeg_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape,
                        const io_stream_read_ops **ops, char *err, size_t errlen)
{
    jpeg_stream_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    r->opt = *opt;
    jpegx_init_error_ctx(&r->e, &r->opt, "truncated or corrupt JPEG: ", err, errlen);
    r->cinfo.err = &r->e.pub;
    if (!(r->f = io_stream_read_file(fd, err, errlen))) {
        free(r);
        return IP_EIO;
    }
    int rc = read_header(r, shape);
    if (rc == IP_OK) {
        rc = io_stream_rows_init(&r->rows, shape, band_bytes, err, errlen);
    }
    if (rc == IP_OK) r->held = decoder_bytes(r);
    if (rc != IP_OK) {
        reader_close(r);
        return rc;
    }
    *codec = r;
    *ops = &read_ops;
    return IP_OK;
}
