/* Pages of an image file, for --all-pages: a TIFF holds a chain of directories, one image each. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_internal.h"
#include "io/io_tiff_handle.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static int tiff_pages(int fd, uint32_t *pages, char *err, size_t errlen)
{
    tiff_log log = { .have = 0 };
    tiff_fd_cursor cursor = { fd, 0 };
    TIFF *tif = tiff_open_shared(&cursor, &log);
    if (!tif) {
        snprintf(err, errlen, "truncated or corrupt TIFF: %s", tiff_log_text(&log, "cannot parse the header"));
        return IP_EFORMAT;
    }
    *pages = TIFFNumberOfDirectories(tif);   /* libtiff stops at a loop in the chain */
    TIFFClose(tif);
    return IP_OK;
}

int io_page_count(const char *path, uint32_t *pages, char *err, size_t errlen)
{
    char why[128];
    io_format fmt = io_detect_file(path);
    *pages = 1;
    if (fmt == IO_FMT_UNKNOWN) {
        snprintf(err, errlen, "not a PNG, JPEG or TIFF file");
        return IP_EFORMAT;
    }
    if (fmt != IO_FMT_TIFF) return IP_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open: %s", io_strerror(errno, why, sizeof why));
        return IP_EIO;
    }
    int rc = tiff_pages(fd, pages, err, errlen);
    close(fd);
    return rc;
}
