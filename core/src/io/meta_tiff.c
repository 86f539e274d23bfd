#define _POSIX_C_SOURCE 200809L
#include "io/meta_tiff.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/exif.h"
#include "io/io_internal.h"
#include "io/io_tiff_handle.h"

#define TAG_XMP 700
#define TAG_ICC 34675

/* EXIF's IFD0 text tags that TIFF shares: description, make, model, software, date, artist,
 * copyright. */
static const uint16_t text_tags[] = { 270, 271, 272, 305, 306, 315, 33432 };

static int is_text_tag(uint16_t tag)
{
    for (size_t i = 0; i < sizeof text_tags / sizeof *text_tags; i++)
        if (text_tags[i] == tag) return 1;
    return 0;
}

static int tiff_wanted(uint16_t tag)
{
    return is_text_tag(tag) || tag == EXIF_TAG_ORIENTATION || tag == 282 || tag == 283 || tag == 296 ||
           tag == TAG_XMP || tag == TAG_ICC || tag == EXIF_TAG_EXIF_IFD || tag == EXIF_TAG_GPS_IFD;
}

static int take_bytes(unsigned char **dst, size_t *len, const exif_entry *e)
{
    if (!e || !e->value || (e->type != EXIF_BYTE && e->type != EXIF_UNDEFINED && e->type != EXIF_ASCII)) return IP_OK;
    return meta_set_bytes(dst, len, e->value, e->len);
}

static void take_resolution(io_meta *m, const exif_ifd *ifd0)
{
    double x = exif_number(exif_find(ifd0, 282), 0, 0), y = exif_number(exif_find(ifd0, 283), 0, 0);
    uint32_t unit = exif_uint(exif_find(ifd0, 296), 0, 2);
    if (!(x > 0) || !(y > 0) || unit < 1 || unit > 3) return;
    m->res_unit = unit == 1 ? META_RES_ASPECT : unit == 2 ? META_RES_INCH : META_RES_CM;
    m->res_x = x;
    m->res_y = y;
}

/* EXIF for other formats: IFD0's text tags and the Exif and GPS directories, moved out of ifd0. */
static int take_exif(io_meta *m, exif_ifd *ifd0)
{
    exif_ifd exif = { 0 };
    int rc = IP_OK;
    for (int i = 0; i < ifd0->n && !rc; i++) {
        exif_entry *e = &ifd0->entries[i];
        if (is_text_tag(e->tag) && e->value) rc = exif_set(&exif, e->tag, e->type, e->count, e->value, e->len);
        if (e->sub) {
            rc = exif_set_sub(&exif, e->tag, e->sub);
            e->sub = NULL;
        }
    }
    if (!rc && exif.n) rc = exif_serialize(&exif, &m->exif, &m->exif_len);
    exif_ifd_free(&exif);
    return rc;
}

/* Where page's directory starts, found by libtiff (which stops at loops in the chain); 0 when the
 * page cannot be reached. */
static uint64_t page_offset(int fd, uint32_t page)
{
    tiff_log log = { .have = 0 };
    tiff_fd_cursor cursor = { fd, 0 };
    TIFF *tif = tiff_open_shared(&cursor, &log);
    if (!tif) return 0;
    uint64_t offset = TIFFSetDirectory(tif, (tdir_t)page) ? TIFFCurrentDirOffset(tif) : 0;
    TIFFClose(tif);
    return offset;
}

int meta_read_tiff(int fd, uint32_t page, io_meta *m)
{
    meta_clear(m);
    exif_source s;
    uint64_t first;
    exif_ifd ifd0;
    if (exif_source_fd(&s, fd, &first)) return IP_OK;
    if (page > 0 && (first = page_offset(fd, page)) == 0) return IP_OK;
    int rc = exif_read(&s, first, tiff_wanted, &ifd0);
    if (rc) return rc == IP_ENOMEM ? rc : IP_OK;
    rc = take_bytes(&m->icc, &m->icc_len, exif_find(&ifd0, TAG_ICC));
    if (!rc) rc = take_bytes(&m->xmp, &m->xmp_len, exif_find(&ifd0, TAG_XMP));
    uint32_t orientation = exif_uint(exif_find(&ifd0, EXIF_TAG_ORIENTATION), 0, 1);
    m->orientation = orientation >= 1 && orientation <= 8 ? (int)orientation : 1;
    take_resolution(m, &ifd0);
    if (!rc) rc = take_exif(m, &ifd0);
    exif_ifd_free(&ifd0);
    if (rc == IP_ELIMIT) rc = IP_OK;
    if (rc) meta_clear(m);
    return rc;
}

static int set_text_tags(TIFF *tif, const exif_ifd *exif)
{
    for (int i = 0; i < exif->n; i++) {
        const exif_entry *e = &exif->entries[i];
        if (!is_text_tag(e->tag) || e->type != EXIF_ASCII || !e->value) continue;
        char *text = malloc(e->len + 1);
        if (!text) return 0;
        memcpy(text, e->value, e->len);
        text[e->len] = '\0';
        int ok = TIFFSetField(tif, e->tag, text);
        free(text);
        if (!ok) return 0;
    }
    return 1;
}

static int set_exif_tags(TIFF *tif, const io_meta *m)
{
    exif_ifd exif;
    if (!m->exif || exif_parse(m->exif, m->exif_len, &exif) != IP_OK) return 1;
    int ok = set_text_tags(tif, &exif);
    /* Placeholders, pointed at the directories appended after closing; BigTIFF would need them
     * in its own 64-bit layout, which this does not write. */
    const exif_entry *sub = exif_find(&exif, EXIF_TAG_EXIF_IFD);
    if (ok && sub && sub->sub && !TIFFIsBigTIFF(tif)) ok = TIFFSetField(tif, TIFFTAG_EXIFIFD, (uint64_t)0);
    sub = exif_find(&exif, EXIF_TAG_GPS_IFD);
    if (ok && sub && sub->sub && !TIFFIsBigTIFF(tif)) ok = TIFFSetField(tif, TIFFTAG_GPSIFD, (uint64_t)0);
    exif_ifd_free(&exif);
    return ok;
}

static int set_resolution(TIFF *tif, const io_meta *m)
{
    if (m->res_unit == META_RES_NONE || !(m->res_x > 0) || !(m->res_y > 0)) return 1;
    int unit = m->res_unit == META_RES_INCH ? RESUNIT_INCH : m->res_unit == META_RES_CM ? RESUNIT_CENTIMETER : RESUNIT_NONE;
    return TIFFSetField(tif, TIFFTAG_XRESOLUTION, m->res_x) && TIFFSetField(tif, TIFFTAG_YRESOLUTION, m->res_y) &&
           TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT, unit);
}

int meta_tiff_set_tags(TIFF *tif, const io_meta *m, const ip_shape *shape)
{
    if (!m) return 1;
    int ok = set_resolution(tif, m);
    if (ok && meta_icc_fits(m, shape) && m->icc_len <= UINT32_MAX)
        ok = TIFFSetField(tif, TIFFTAG_ICCPROFILE, (uint32_t)m->icc_len, m->icc);
    if (ok && m->xmp && m->xmp_len <= UINT32_MAX) ok = TIFFSetField(tif, TIFFTAG_XMLPACKET, (uint32_t)m->xmp_len, m->xmp);
    if (ok && m->orientation > 1 && m->orientation <= 8) ok = TIFFSetField(tif, TIFFTAG_ORIENTATION, m->orientation);
    return ok && set_exif_tags(tif, m);
}

static int write_all(int fd, const void *buf, size_t n, uint64_t off)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(fd, (const char *)buf + done, n - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

/* Where IFD0's entry for tag keeps its value (a LONG or IFD pointer); 0 when it has none. */
static uint64_t pointer_slot(const exif_source *s, uint64_t first, uint16_t tag)
{
    unsigned char head[2], e[12];
    if (pread(s->fd, head, 2, (off_t)first) != 2) return 0;
    unsigned n = s->big_endian ? (unsigned)head[0] << 8 | head[1] : (unsigned)head[1] << 8 | head[0];
    for (unsigned i = 0; i < n; i++) {
        uint64_t at = first + 2 + 12 * (uint64_t)i;
        if (pread(s->fd, e, 12, (off_t)at) != 12) return 0;
        unsigned t = s->big_endian ? (unsigned)e[0] << 8 | e[1] : (unsigned)e[1] << 8 | e[0];
        unsigned type = s->big_endian ? (unsigned)e[2] << 8 | e[3] : (unsigned)e[3] << 8 | e[2];
        if (t == tag) return type == EXIF_LONG || type == EXIF_IFD ? at + 8 : 0;
    }
    return 0;
}

/* Appends one directory (word-aligned) at the end of the file and points slot at it. */
static int append_dir(const exif_source *s, uint64_t slot, const exif_ifd *dir)
{
    struct stat st;
    if (fstat(s->fd, &st) != 0) return IP_EIO;
    uint64_t at = ((uint64_t)st.st_size + 3) & ~(uint64_t)3;
    size_t size = exif_ifd_size(dir);
    if (at + size > UINT32_MAX) return IP_ELIMIT;
    unsigned char *buf = calloc(1, size + 3);
    if (!buf) return IP_ENOMEM;
    int rc = exif_write_ifd(dir, s->big_endian, (uint32_t)at, buf + (at - (uint64_t)st.st_size));
    if (!rc && write_all(s->fd, buf, size + (size_t)(at - (uint64_t)st.st_size), (uint64_t)st.st_size)) rc = IP_EIO;
    unsigned char ptr[4];
    for (int i = 0; i < 4; i++) ptr[s->big_endian ? 3 - i : i] = (unsigned char)(at >> (8 * i));
    if (!rc && write_all(s->fd, ptr, 4, slot)) rc = IP_EIO;
    free(buf);
    return rc;
}

int meta_tiff_finish(int fd, const io_meta *m, char *err, size_t errlen)
{
    exif_ifd exif;
    if (!m || !m->exif || exif_parse(m->exif, m->exif_len, &exif) != IP_OK) return IP_OK;
    exif_source s;
    uint64_t first;
    int rc = exif_source_fd(&s, fd, &first) ? IP_EIO : IP_OK;
    static const uint16_t pointers[2] = { EXIF_TAG_EXIF_IFD, EXIF_TAG_GPS_IFD };
    for (int i = 0; i < 2 && !rc && !s.bigtiff; i++) {
        const exif_entry *e = exif_find(&exif, pointers[i]);
        uint64_t slot = e && e->sub ? pointer_slot(&s, first, pointers[i]) : 0;
        if (slot) rc = append_dir(&s, slot, e->sub);
    }
    exif_ifd_free(&exif);
    char why[128];
    if (rc == IP_EIO) snprintf(err, errlen, "cannot write TIFF: %s", io_strerror(errno, why, sizeof why));
    else if (rc == IP_ELIMIT) snprintf(err, errlen, "cannot write TIFF: the EXIF directories do not fit below 4 GB");
    else if (rc) snprintf(err, errlen, "cannot write TIFF: out of memory");
    return rc;
}
