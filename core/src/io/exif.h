/* TIFF-structured directories: the EXIF payload (JPEG's APP1 "Exif", PNG's eXIf) and the same
 * directories inside a TIFF file, read into a small tree, changed and written back. Only the
 * directories EXIF defines are followed: IFD0, its Exif and GPS sub-directories, and the Exif
 * directory's Interoperability one; IFD1 (the thumbnail) is not read. */
#ifndef IMGPIPE_EXIF_H
#define IMGPIPE_EXIF_H
#include <stddef.h>
#include <stdint.h>

#define EXIF_TAG_ORIENTATION 274
#define EXIF_TAG_EXIF_IFD 34665
#define EXIF_TAG_GPS_IFD 34853
#define EXIF_TAG_INTEROP_IFD 40965
#define EXIF_MAX_ENTRIES 4096   /* a directory claiming more is damaged */

enum { EXIF_BYTE = 1, EXIF_ASCII, EXIF_SHORT, EXIF_LONG, EXIF_RATIONAL, EXIF_SBYTE, EXIF_UNDEFINED,
       EXIF_SSHORT, EXIF_SLONG, EXIF_SRATIONAL, EXIF_FLOAT, EXIF_DOUBLE, EXIF_IFD,
       EXIF_LONG8 = 16, EXIF_SLONG8, EXIF_IFD8 };

typedef struct exif_ifd exif_ifd;

typedef struct {
    uint16_t tag, type;
    uint32_t count;
    unsigned char *value;   /* the values, each element little-endian; NULL for a pointer tag */
    size_t len;
    exif_ifd *sub;          /* a pointer tag's directory */
} exif_entry;

struct exif_ifd {
    exif_entry *entries;
    int n, cap;
};

/* Where directories are read from: a blob in memory, or a file read with pread. */
typedef struct {
    const unsigned char *mem;
    int fd;
    uint64_t size;
    int big_endian, bigtiff;
} exif_source;

/* Check the TIFF header and give the first directory's offset. IP_EFORMAT when it is not one. */
int exif_source_mem(exif_source *s, const unsigned char *blob, size_t len, uint64_t *ifd0);
int exif_source_fd(exif_source *s, int fd, uint64_t *ifd0);

/* Reads IFD0 at offset into out (empty first), keeping the entries whose tag want() accepts (all
 * when want is NULL) and following the EXIF pointer tags. Entries of unknown type, with values
 * outside the source or past META_MAX_BYTES of values in all are dropped; IP_EFORMAT for a
 * directory that cannot be read at all, IP_ENOMEM. */
int exif_read(const exif_source *s, uint64_t offset, int (*want)(uint16_t tag), exif_ifd *out);
/* The whole tree of a blob. */
int exif_parse(const unsigned char *blob, size_t len, exif_ifd *ifd0);
void exif_ifd_free(exif_ifd *ifd);

exif_entry *exif_find(const exif_ifd *ifd, uint16_t tag);
/* Adds or replaces an entry, copying the value (len bytes, elements little-endian). */
int exif_set(exif_ifd *ifd, uint16_t tag, uint16_t type, uint32_t count, const void *value, size_t len);
/* Moves a pointer tag's directory in (an empty sub is freed instead). */
int exif_set_sub(exif_ifd *ifd, uint16_t tag, exif_ifd *sub);
/* Element i of a BYTE, SHORT or LONG entry; def when absent. */
uint32_t exif_uint(const exif_entry *e, uint32_t i, uint32_t def);
/* Element i of a RATIONAL (or integer) entry as a number; def when absent or divided by 0. */
double exif_number(const exif_entry *e, uint32_t i, double def);

/* A blob ("II*\0" little-endian) holding the tree. */
int exif_serialize(const exif_ifd *ifd0, unsigned char **blob, size_t *len);
/* One directory and what hangs from it, to be placed at file offset base of a classic TIFF in this
 * byte order (offsets inside are absolute). The size depends on the tree only: exif_ifd_size. */
size_t exif_ifd_size(const exif_ifd *ifd);
int exif_write_ifd(const exif_ifd *ifd, int big_endian, uint32_t base, unsigned char *out);

/* The orientation tag of a blob: 1..8, or 1 when missing or invalid. */
int exif_orientation(const unsigned char *blob, size_t len);
/* A copy of the blob (NULL: none) with the orientation tag set: patched in place where it exists
 * (the thumbnail directory kept), else added (the blob rewritten without IFD1). */
int exif_with_orientation(const unsigned char *blob, size_t len, int orientation, unsigned char **out,
                          size_t *out_len);
#endif
