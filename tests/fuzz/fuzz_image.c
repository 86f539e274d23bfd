/* One decoder's entry point on untrusted bytes, through imgpipe's own I/O layer with a run's
 * limits: built once per format (FUZZ_FORMAT_PNG, _TIFF or _JPEG). The bytes are handed over as
 * a file in memory, as the readers take them from io_read. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fuzz_common.h"
#include "image.h"
#include "io_internal.h"
#include "meta.h"

/* An anonymous in-memory file holding the bytes: TIFF reads it with pread on its descriptor. */
static int memory_file(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return lseek(fd, 0, SEEK_SET) == 0 ? fd : (close(fd), -1);
}

static int decode(int fd, const io_options *opt, ip_image *img, char *err, size_t errlen)
{
#if defined(FUZZ_FORMAT_TIFF)
    return io_read_tiff(fd, opt, img, err, errlen);
#else
    FILE *f = fdopen(dup(fd), "rb");
    if (!f) return IP_EIO;
#if defined(FUZZ_FORMAT_PNG)
    int rc = io_read_png(f, opt, img, err, errlen);
#else
    int rc = io_read_jpeg(f, opt, img, err, errlen);
#endif
    fclose(f);
    return rc;
#endif
}

/* The metadata pass io_read makes before decoding (it shares the descriptor's offset). */
static void read_metadata(int fd)
{
    io_meta m;
    meta_init(&m);
#if defined(FUZZ_FORMAT_TIFF)
    meta_read_tiff(fd, 0, &m);
#else
    FILE *f = fdopen(dup(fd), "rb");
    if (f) {
#if defined(FUZZ_FORMAT_PNG)
        meta_read_png(f, &m);
#else
        meta_read_jpeg(f, &m);
#endif
        fclose(f);
    }
#endif
    meta_clear(&m);
    lseek(fd, 0, SEEK_SET);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memory_file(data, size);
    if (fd < 0) return 0;
    read_metadata(fd);
    io_options opt = fuzz_io_options();
    ip_image img = { 0 };
    char err[1024];
    if (decode(fd, &opt, &img, err, sizeof err) == IP_OK) {
        /* Touch every row: a decoder that reported success must have filled a whole image. */
        size_t row = img_row_bytes(&img.shape);
        volatile unsigned char sink = 0;
        for (int32_t y = 0; y < img.shape.height; y++) sink ^= ((unsigned char *)img.data)[(size_t)y * (size_t)img.stride + row - 1];
        (void)sink;
        img_free(&img);
    }
    close(fd);
    return 0;
}
