#define _POSIX_C_SOURCE 200809L
/* io_read's metadata pass: the file's metadata read in a light pass of its own before the pixels
 * (the parallel decoders stay as they are), and the decoded pixels turned upright by the EXIF
 * orientation. */
#include "io/io_internal.h"
#include "base/image.h"
#include "io/meta.h"
#include "io/orient.h"

/* Only a TIFF has pages past the first (--page). */
static int check_page(io_format fmt, const io_options *opt, char *err, size_t errlen)
{
    if (fmt == IO_FMT_TIFF || opt->page == 0) return IP_OK;
    snprintf(err, errlen, "a %s file has one page (page 0); there is no page %u", io_format_name(fmt), opt->page);
    return IP_EINVAL;
}

static int decode(FILE *f, io_format fmt, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    if (fmt == IO_FMT_PNG) return io_read_png(f, opt, out, err, errlen);
    if (fmt == IO_FMT_JPEG) return io_read_jpeg(f, opt, out, err, errlen);
    return io_read_tiff(fileno(f), opt, out, err, errlen);
}

typedef struct {
    const io_options *outer;
    int orientation;
} upright_ctx;

/* The caller sees, and plans for, the upright shape. */
static int upright_shape(void *user, const ip_shape *stored, char *err, size_t errlen)
{
    const upright_ctx *c = user;
    ip_shape shape = orient_shape(stored, c->orientation);
    /* The inner read checked the file's size ratio already (0: not again). */
    return io_shape_known(c->outer, &shape, 0, err, errlen);
}

/* The stored pixels are decoded into plain memory, then turned into the caller's memory; the
 * inner options are the caller's otherwise (limits, page, fail_on and the warnings it collects). */
static int decode_upright(FILE *f, io_format fmt, const io_options *opt, int orientation, ip_image *out,
                          char *err, size_t errlen)
{
    upright_ctx ctx = { opt, orientation };
    io_options inner = *opt;
    inner.memory = (io_pixel_memory){ NULL, NULL, NULL };
    inner.on_shape = upright_shape;
    inner.on_shape_user = &ctx;
    ip_image stored = { 0 };
    int rc = decode(f, fmt, &inner, &stored, err, errlen);
    if (rc) return rc;
    ip_shape upright = orient_shape(&stored.shape, orientation);
    rc = io_image_alloc(opt, out, &upright, err, errlen);
    if (!rc && orient_apply(&stored, out, orientation, io_thread_count(opt)) != IP_OK) {
        snprintf(err, errlen, "cannot turn the image upright");
        io_image_free(opt, out);
        rc = IP_EINVAL;
    }
    img_free(&stored);
    return rc;
}

int io_decode_with_meta(FILE *f, io_format fmt, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    int rc = check_page(fmt, opt, err, errlen);
    if (rc) return rc;
    if (!opt->meta && !opt->autorotate) return decode(f, fmt, opt, out, err, errlen);
    io_meta local;
    io_meta *m = opt->meta ? opt->meta : &local;
    meta_init(&local);
    rc = opt->meta && opt->meta_known ? IP_OK : meta_read(f, fmt, opt->page, m);
    if (rc) snprintf(err, errlen, "out of memory");
    if (!rc && fseek(f, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot read: cannot go back to the file's start");
        rc = IP_EIO;
    }
    int orientation = opt->autorotate ? m->orientation : 1;
    if (!rc) rc = orientation == 1 ? decode(f, fmt, opt, out, err, errlen)
                                   : decode_upright(f, fmt, opt, orientation, out, err, errlen);
    if (!rc && orientation != 1) meta_oriented(m);
    if (rc || m == &local) meta_clear(m);
    return rc;
}
