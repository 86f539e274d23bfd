#define _POSIX_C_SOURCE 200809L
#include "io/tiff_gpu_layout.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/image.h"
#include "io/io_limits.h"


static int declined(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "TIFF on the GPU: %s", what);
    return IP_EUNSUPPORTED;
}

static const char *codec_problem(tiff_gpu_layout *l)
{
    if (l->compression == COMPRESSION_ADOBE_DEFLATE || l->compression == COMPRESSION_DEFLATE) l->codec = NVCOMP_DEFLATE;
    else if (l->compression == COMPRESSION_ZSTD) l->codec = NVCOMP_ZSTD;
    else return "compression other than deflate or zstd";
    return NULL;
}

static const char *sample_problem(tiff_gpu_layout *l)
{
    uint16_t planar = PLANARCONFIG_CONTIG, extra_count = 0, *extra = NULL;
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_EXTRASAMPLES, &extra_count, &extra);
    int is_float = l->format == SAMPLEFORMAT_IEEEFP;
    if (planar != PLANARCONFIG_CONTIG && l->spp > 1) return "separate planes";
    if (l->spp < 1 || l->spp > 4) return "other than 1 to 4 samples a pixel";
    if (l->photometric != PHOTOMETRIC_MINISBLACK && (l->photometric != PHOTOMETRIC_RGB || l->spp < 3))
        return "colour other than gray or RGB";
    if (is_float ? l->bps != 32 : (l->bps != 8 && l->bps != 16) ||
                                      (l->format != SAMPLEFORMAT_UINT && l->format != SAMPLEFORMAT_VOID))
        return "samples other than 8 or 16-bit unsigned or 32-bit float";
    if (l->predictor != PREDICTOR_NONE && (l->predictor != PREDICTOR_HORIZONTAL || is_float))
        return "a predictor other than the horizontal one on integers";
    if (l->bps > 8 && TIFFIsByteSwapped(l->tif)) return "samples in the other byte order";
    if (extra_count == 1 && extra && extra[0] == EXTRASAMPLE_ASSOCALPHA && (l->spp == 2 || l->spp == 4))
        return "premultiplied alpha";
    return NULL;
}

static const char *request_problem(tiff_gpu_layout *l, const io_options *opt)
{
    uint16_t orientation = ORIENTATION_TOPLEFT;
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_ORIENTATION, &orientation);
    if (opt->meta && !opt->meta_known) return "metadata to read";
    if (opt->autorotate && orientation != ORIENTATION_TOPLEFT) return "an orientation to turn upright";
    return NULL;
}

static const char *block_problem(tiff_gpu_layout *l)
{
    uint64_t pixel_bytes = (uint64_t)l->spp * (l->bps / 8);
    l->tiled = TIFFIsTiled(l->tif);
    if (l->tiled) {
        if (!TIFFGetField(l->tif, TIFFTAG_TILEWIDTH, &l->bw) || !TIFFGetField(l->tif, TIFFTAG_TILELENGTH, &l->bh) ||
            l->bw == 0 || l->bh == 0 || l->bw > TILE_SIDE_MAX || l->bh > TILE_SIDE_MAX)
            return "a bad tile size";
        l->count = ((uint64_t)l->width + l->bw - 1) / l->bw * (((uint64_t)l->height + l->bh - 1) / l->bh);
    } else {
        uint32_t rps = 0;
        TIFFGetFieldDefaulted(l->tif, TIFFTAG_ROWSPERSTRIP, &rps);
        l->bw = l->width;
        l->bh = rps == 0 || rps > l->height ? l->height : rps;
        l->count = ((uint64_t)l->height + l->bh - 1) / l->bh;
    }
    l->row_bytes = l->bw * pixel_bytes;
    l->block_bytes = l->row_bytes * l->bh;
    uint64_t blocks = l->tiled ? TIFFNumberOfTiles(l->tif) : TIFFNumberOfStrips(l->tif);
    uint64_t *counts = NULL;
    if (blocks < l->count || l->count > INT32_MAX) return "fewer blocks than the image needs";
    if (!TIFFGetField(l->tif, l->tiled ? TIFFTAG_TILEBYTECOUNTS : TIFFTAG_STRIPBYTECOUNTS, &counts) || !counts)
        return "no block sizes";
    l->raw_bytes = counts;
    return NULL;
}

/* The tags of the page l->tif is on, and the problem with them for the GPU (NULL: none). */
static const char *tag_problem(tiff_gpu_layout *l)
{
    if (!TIFFGetField(l->tif, TIFFTAG_IMAGEWIDTH, &l->width) || !TIFFGetField(l->tif, TIFFTAG_IMAGELENGTH, &l->height) ||
        !TIFFGetField(l->tif, TIFFTAG_PHOTOMETRIC, &l->photometric))
        return "no image size or photometric interpretation";
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_SAMPLESPERPIXEL, &l->spp);
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_BITSPERSAMPLE, &l->bps);
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_SAMPLEFORMAT, &l->format);
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_COMPRESSION, &l->compression);
    TIFFGetFieldDefaulted(l->tif, TIFFTAG_PREDICTOR, &l->predictor);
    const char *problem = codec_problem(l);
    if (!problem) problem = sample_problem(l);
    if (!problem && (l->width == 0 || l->height == 0 || l->width > INT32_MAX || l->height > INT32_MAX))
        problem = "an odd size";
    if (!problem) problem = block_problem(l);
    return problem;
}

int tiff_gpu_layout_open(tiff_gpu_layout *l, io_input *in, const io_options *opt, char *why, size_t whylen)
{
    memset(l, 0, sizeof *l);
    if (in->format != IO_FMT_TIFF) return declined(why, whylen, "not a TIFF");
    l->cursor = (tiff_fd_cursor){ fileno(in->file), 0 };
    l->tif = tiff_open_shared(&l->cursor, &l->log);
    if (!l->tif) return declined(why, whylen, "cannot parse the header");
    if (opt->page > 0 && !TIFFSetDirectory(l->tif, (tdir_t)opt->page)) return declined(why, whylen, "no such page");
    const char *problem = tag_problem(l);
    if (!problem) problem = request_problem(l, opt);
    return problem ? declined(why, whylen, problem) : IP_OK;
}

int tiff_gpu_layout_of(tiff_gpu_layout *l, TIFF *tif, char *why, size_t whylen)
{
    memset(l, 0, sizeof *l);
    l->tif = tif;
    const char *problem = tag_problem(l);
    return problem ? declined(why, whylen, problem) : IP_OK;
}

ip_shape tiff_gpu_layout_shape(const tiff_gpu_layout *l)
{
    ip_dtype t = l->bps == 32 ? IP_F32 : l->bps == 16 ? IP_U16 : IP_U8;
    return (ip_shape){ (int32_t)l->width, (int32_t)l->height, l->spp, t };
}

/* Each block lies in the file, and all of them take no more than the file: blocks pointing at
 * the same bytes again and again cannot make the upload larger than the file. */
static int blocks_in_file(const tiff_gpu_layout *l, uint64_t file_bytes, char *err, size_t errlen)
{
    uint64_t *offsets = NULL, total = 0;
    if (!TIFFGetField(l->tif, l->tiled ? TIFFTAG_TILEOFFSETS : TIFFTAG_STRIPOFFSETS, &offsets) || !offsets) {
        snprintf(err, errlen, "truncated or corrupt TIFF: no %s offsets", l->tiled ? "tile" : "strip");
        return IP_EFORMAT;
    }
    for (uint64_t b = 0; b < l->count; b++) {
        uint64_t n = l->raw_bytes[b];
        int outside = file_bytes && (offsets[b] > file_bytes || n > file_bytes - offsets[b]);
        total += n;
        if (n == 0 || outside || (file_bytes && total > file_bytes)) {
            snprintf(err, errlen, "truncated or corrupt TIFF: %s %llu %s", l->tiled ? "tile" : "strip",
                     (unsigned long long)b, n == 0 ? "is empty" : "extends past the end of the file");
            return IP_EFORMAT;
        }
    }
    return IP_OK;
}

int tiff_gpu_layout_limits(const tiff_gpu_layout *l, const io_options *opt, char *err, size_t errlen)
{
    ip_shape shape = tiff_gpu_layout_shape(l);
    uint64_t file_bytes = io_file_bytes(l->cursor.fd);
    uint64_t image_bytes = (uint64_t)img_row_bytes(&shape) * l->height;
    int rc = img_pixel_check(l->width, l->height, opt->max_pixels, err, errlen);
    if (!rc) rc = io_shape_known(opt, &shape, file_bytes, err, errlen);
    if (!rc) rc = io_limit_tiff_blocks(opt, l->count, l->tiled, err, errlen);
    if (!rc && l->tiled) rc = io_limit_tiff_tile(opt, l->bw, l->bh, l->block_bytes, image_bytes, err, errlen);
    if (!rc) rc = blocks_in_file(l, file_bytes, err, errlen);
    return rc;
}

int tiff_gpu_layout_cpu_reads(const tiff_gpu_layout *l, uint64_t b, uint64_t need)
{
    void *buf = need <= SIZE_MAX && need <= INT64_MAX ? malloc(need ? (size_t)need : 1) : NULL;
    if (!buf) return IP_ENOMEM;
    tmsize_t got = l->tiled ? TIFFReadEncodedTile(l->tif, (uint32_t)b, buf, (tmsize_t)need)
                            : TIFFReadEncodedStrip(l->tif, (uint32_t)b, buf, (tmsize_t)need);
    free(buf);
    return got >= 0 && (uint64_t)got >= need ? IP_OK : IP_EFORMAT;
}

void tiff_gpu_layout_close(tiff_gpu_layout *l)
{
    if (l->tif) TIFFClose(l->tif);
    l->tif = NULL;
}
