/* The streamed readers (io_stream.h) on untrusted bytes, whatever the format: a streamed run
 * opens its input with them, so they meet the same files io_read does. Bands are kept small so
 * that a file's strips, tiles or rows arrive in several calls. The bytes are a file in memory,
 * opened by its /proc path as a run opens its input. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fuzz_common.h"
#include "base/image.h"
#include "io/io_stream.h"

#define BAND_BYTES ((uint64_t)16 << 10)

static int memory_file(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz", 0);
    size_t done = 0;
    while (fd >= 0 && done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return fd;
}

/* Every row handed out is read, and the rows must come in order, each once, inside the shape. */
static void read_all(io_stream_reader *r, const ip_shape *shape)
{
    char err[1024];
    int expected = 0;
    for (;;) {
        ip_image rows;
        int y0;
        if (io_stream_next(r, &rows, &y0, err, sizeof err) != IP_OK || rows.shape.height == 0) return;
        if (y0 != expected || rows.shape.height < 0 || y0 + rows.shape.height > shape->height ||
            rows.shape.width != shape->width || rows.shape.channels != shape->channels)
            abort();
        size_t row = img_row_bytes(&rows.shape);
        volatile unsigned char sink = 0;
        for (int y = 0; y < rows.shape.height; y++) sink ^= ((unsigned char *)rows.data)[(ptrdiff_t)y * rows.stride + (ptrdiff_t)row - 1];
        (void)sink;
        expected += rows.shape.height;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memory_file(data, size);
    if (fd < 0) return 0;
    char path[64], err[1024];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    io_options opt = fuzz_io_options();
    io_stream_reader *r = NULL;
    ip_shape shape;
    if (io_stream_open(path, &opt, BAND_BYTES, &r, &shape, err, sizeof err) == IP_OK) {
        read_all(r, &shape);
        io_stream_close(r);
    }
    close(fd);
    return 0;
}
