/* What the GPU's TIFF reader needs to know of a file before it reads a block: whether the page
 * is one it decodes (the reason when not) and the layout of its strips or tiles, with the limits
 * the CPU reader enforces checked the same way. */
#ifndef IMGPIPE_TIFF_GPU_LAYOUT_H
#define IMGPIPE_TIFF_GPU_LAYOUT_H
#include <stdint.h>
#include <tiffio.h>
#include "gpu/nvcomp.h"
#include "io/io.h"
#include "io/io_tiff_handle.h"

typedef struct {
    TIFF *tif;
    tiff_log log;
    tiff_fd_cursor cursor;
    uint32_t width, height;
    uint16_t spp, bps, format, photometric, compression, predictor;
    nvcomp_codec codec;
    int tiled;
    uint32_t bw, bh;                 /* a block's pixels (strips: the width and rows per strip) */
    uint64_t count, row_bytes, block_bytes;
    const uint64_t *raw_bytes;       /* each block's compressed size (libtiff's array) */
} tiff_gpu_layout;

/* Opens in's page (opt->page) and reads its tags. IP_EUNSUPPORTED, with why, when it is not for
 * the GPU: other than deflate or zstd, planes, colour other than gray or RGB, samples other than
 * 8 or 16-bit unsigned or 32-bit float (without a predictor), big-endian samples wider than a
 * byte, premultiplied alpha, metadata or an orientation to act on, or anything odd (the CPU
 * reader then says what). Close it whatever it returns. */
int tiff_gpu_layout_open(tiff_gpu_layout *l, io_input *in, const io_options *opt, char *why, size_t whylen);
/* The same checks of the file for the page an open handle is on, the handle the caller's (not
 * closed by tiff_gpu_layout_close: set l->tif to NULL first), the request's left to the caller. */
int tiff_gpu_layout_of(tiff_gpu_layout *l, TIFF *tif, char *why, size_t whylen);
/* The CPU reader's limits and opt->on_shape (io_shape_known), then each block within the file. */
int tiff_gpu_layout_limits(const tiff_gpu_layout *l, const io_options *opt, char *err, size_t errlen);
ip_shape tiff_gpu_layout_shape(const tiff_gpu_layout *l);
/* Whether libtiff decodes block b to need bytes, as the CPU reader asks it (bytes a stream
 * inflates to past those are ignored): IP_OK, IP_EFORMAT when it cannot, IP_ENOMEM. It reads and
 * inflates the block again: a verdict on a block nvCOMP refused, not a step of every decode. */
int tiff_gpu_layout_cpu_reads(const tiff_gpu_layout *l, uint64_t b, uint64_t need);
void tiff_gpu_layout_close(tiff_gpu_layout *l);
#endif
