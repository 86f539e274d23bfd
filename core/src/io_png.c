#include "io_png_internal.h"
#include "io_internal.h"
#include <stdlib.h>

/* The file is read whole and its chunks checked once; plain 8/16-bit files go to our decoder
 * (libdeflate inflates all image data in one call, then rows are unfiltered), the rest to libpng. */
int io_read_png(FILE *f, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    out->data = NULL;
    unsigned char *data;
    size_t size;
    int rc = io_slurp(f, &data, &size, err, errlen);
    if (rc) return rc;
    pngx_layout layout;
    rc = pngx_parse_head(data, size, &layout, err, errlen);
    if (!rc)
        rc = pngx_fast_path(&layout) ? pngx_decode_fast(data, size, &layout, opt, out, err, errlen)
                                     : pngx_decode_libpng(data, size, opt, out, err, errlen);
    pngx_layout_free(&layout);
    free(data);
    return rc;
}
