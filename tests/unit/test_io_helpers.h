/* Helpers shared by the tests/unit/test_io*.c programs. */
#ifndef TEST_IO_HELPERS_H
#define TEST_IO_HELPERS_H
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/image.h"
#include "io/io.h"
#include "testutil.h"

static inline const char *tio_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    return path;
}

static inline ip_image tio_from_ipk(const ipk_img *k)
{
    ip_image img = { k->data, k->stride, { k->width, k->height, k->channels, (ip_dtype)k->dtype }, 0 };
    return img;
}

static inline ipk_img tio_to_ipk(const ip_image *img)
{
    ipk_img k = { img->data, img->stride, img->shape.width, img->shape.height, img->shape.channels,
                  (ipk_dtype)img->shape.dtype };
    return k;
}

static inline int tio_same_shape(const ip_image *img, int w, int h, int c, ip_dtype t)
{
    return img->shape.width == w && img->shape.height == h && img->shape.channels == c && img->shape.dtype == t;
}

static inline double tio_get(const ip_image *img, int x, int y, int ch)
{
    ipk_img k = tio_to_ipk(img);
    return tu_get(&k, x, y, ch);
}

/* Whole file in memory; NULL when unreadable. */
static inline unsigned char *tio_slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    *size = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    return buf;
}

static inline int tio_spit(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = fwrite(data, 1, size, f);
    return fclose(f) == 0 && n == size ? 0 : -1;
}

static inline int tio_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Number of io_write temporaries left in the test folder. */
static inline int tio_leftover_temps(void)
{
    DIR *d = opendir(tu_tmpdir());
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, ".imgpipe-tmp-", 13) == 0) n++;
    if (d) closedir(d);
    return n;
}
#endif
