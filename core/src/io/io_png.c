#include "io/io_png_internal.h"
#include "io/io_internal.h"
#include <stdlib.h>
#include <string.h>

/* The file is read whole and its chunks checked once; plain 8/16-bit files go to our decoder
 * (libdeflate inflates all image data in one call, then rows are unfiltered), the rest to libpng. */
static int decode_whole(const unsigned char *data, size_t size, const io_options *opt, ip_image *out, char *err,
                        size_t errlen)
{
    pngx_layout layout;
    int rc = pngx_parse_head(data, size, &layout, err, errlen);
    if (!rc)
        rc = pngx_fast_path(&layout) ? pngx_decode_fast(data, size, &layout, opt, out, err, errlen)
                                     : pngx_decode_libpng(data, size, opt, out, err, errlen);
    pngx_layout_free(&layout);
    return rc;
}

/* A file refused for damage at or after its image data (cut before IEND, a bad IDAT CRC, a broken
 * chunk after the last IDAT) whose image data still inflates to every row is decoded, as Pillow
 * decodes it, with a warning naming the damage (refused under --fail-on warning). *whole says
 * whether it was; when it was not, err is left as it is. */
static int decode_salvaged(const unsigned char *data, size_t size, const io_options *opt, ip_image *out,
                           int *whole, char *err, size_t errlen)
{
    unsigned char *fixed;
    size_t fixed_size;
    *whole = 0;
    if (pngx_rebuild(data, size, &fixed, &fixed_size)) return IP_EFORMAT;
    io_options quiet = *opt;
    io_warnings seen = { 0 };
    quiet.warnings = &seen;
    quiet.fail_on = IO_FAIL_ON_ERROR;
    char why[256];
    int rc = decode_whole(fixed, fixed_size, &quiet, out, why, sizeof why);
    free(fixed);
    if (rc) return rc;
    *whole = 1;
    const char *prefix = "truncated or corrupt PNG: ", *damage = err;
    if (!strncmp(damage, prefix, strlen(prefix))) damage += strlen(prefix);
    char what[300];
    snprintf(what, sizeof what, "PNG: %s; the image data is whole", damage);
    rc = io_warn(opt, 1, what, err, errlen);
    if (rc) {
        io_image_free(opt, out);
        return rc;
    }
    io_warnings_add(opt->warnings, seen.count, seen.first);
    return IP_OK;
}

int io_read_png(FILE *f, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    out->data = NULL;
    unsigned char *data;
    size_t size;
    int rc = io_slurp(f, &data, &size, err, errlen);
    if (rc) return rc;
    /* Warnings are gathered, then settled once: the image with them, or a refusal. */
    io_options first = *opt;
    io_warnings seen = { 0 };
    first.warnings = &seen;
    first.fail_on = IO_FAIL_ON_ERROR;
    rc = decode_whole(data, size, &first, out, err, errlen);
    if (rc == IP_EFORMAT) {
        int whole;
        int salvaged = decode_salvaged(data, size, opt, out, &whole, err, errlen);
        if (whole) rc = salvaged;
    } else if (!rc && seen.count) {
        rc = io_warn(opt, seen.count, seen.first, err, errlen);
        if (rc) io_image_free(opt, out);
    }
    free(data);
    return rc;
}
