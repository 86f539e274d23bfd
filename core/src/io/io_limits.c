#define _POSIX_C_SOURCE 200809L
#include "io/io_limits.h"
#include <stdio.h>
#include <sys/stat.h>

uint64_t io_file_bytes(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) return 0;
    return (uint64_t)st.st_size;
}

int io_limit_ratio(const io_options *opt, const ip_shape *shape, uint64_t decoded_bytes, uint64_t file_bytes,
                   char *err, size_t errlen)
{
    if (file_bytes == 0 || opt->max_ratio > UINT64_MAX / file_bytes) return IP_OK;
    if (decoded_bytes <= opt->max_ratio * file_bytes) return IP_OK;
    /* Rounded up, so that a refused ratio never reads as equal to the limit. */
    unsigned long long times = (unsigned long long)(decoded_bytes / file_bytes + (decoded_bytes % file_bytes != 0));
    snprintf(err, errlen,
             "image of %dx%d decodes to %llu bytes, %llu times the file's %llu bytes, over the limit of %llu times "
             "(--max-ratio raises it)",
             shape->width, shape->height, (unsigned long long)decoded_bytes, times, (unsigned long long)file_bytes,
             (unsigned long long)opt->max_ratio);
    return IP_ELIMIT;
}

int io_limit_jpeg_scans(const io_options *opt, int seen, char *err, size_t errlen)
{
    if (seen <= opt->max_jpeg_scans) return IP_OK;
    snprintf(err, errlen, "JPEG has %d scans or more, over the limit of %d scans (--max-jpeg-scans raises it)", seen,
             opt->max_jpeg_scans);
    return IP_ELIMIT;
}

int io_limit_tiff_blocks(const io_options *opt, uint64_t count, int tiled, char *err, size_t errlen)
{
    if (count <= opt->max_tiff_blocks) return IP_OK;
    snprintf(err, errlen,
             "TIFF image is stored in %llu %s, over the limit of %llu strips or tiles (--max-tiff-blocks raises it)",
             (unsigned long long)count, tiled ? "tiles" : "strips", (unsigned long long)opt->max_tiff_blocks);
    return IP_ELIMIT;
}

int io_limit_tiff_tile(const io_options *opt, uint32_t width, uint32_t height, uint64_t tile_bytes,
                       uint64_t image_bytes, char *err, size_t errlen)
{
    if (tile_bytes <= image_bytes || tile_bytes <= opt->max_tiff_tile_bytes) return IP_OK;
    snprintf(err, errlen,
             "TIFF tiles of %ux%u decode to %llu bytes each, more than the whole image (%llu bytes) and over the limit "
             "of %llu bytes (--max-tiff-tile-bytes raises it)",
             width, height, (unsigned long long)tile_bytes, (unsigned long long)image_bytes,
             (unsigned long long)opt->max_tiff_tile_bytes);
    return IP_ELIMIT;
}
