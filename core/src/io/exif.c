#define _POSIX_C_SOURCE 200809L
#include "io/exif.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/meta.h"

/* Which directory is being read decides which pointer tags lead further, so the tree has at
 * most three levels whatever the offsets say (no loops). */
typedef enum { DIR_IFD0, DIR_EXIF, DIR_LEAF } dir_kind;

static unsigned type_unit(uint16_t type)
{
    switch (type) {
    case EXIF_BYTE: case EXIF_ASCII: case EXIF_SBYTE: case EXIF_UNDEFINED: return 1;
    case EXIF_SHORT: case EXIF_SSHORT: return 2;
    case EXIF_LONG: case EXIF_SLONG: case EXIF_FLOAT: case EXIF_IFD: case EXIF_RATIONAL: case EXIF_SRATIONAL: return 4;
    case EXIF_DOUBLE: case EXIF_LONG8: case EXIF_SLONG8: case EXIF_IFD8: return 8;
    default: return 0;
    }
}

static unsigned type_size(uint16_t type)
{
    return type == EXIF_RATIONAL || type == EXIF_SRATIONAL ? 8 : type_unit(type);
}

/* Reverses the bytes of each element (unit bytes) between the two byte orders. */
static void swap_units(unsigned char *p, size_t len, unsigned unit)
{
    if (unit < 2) return;
    for (size_t i = 0; i + unit <= len; i += unit)
        for (unsigned a = 0, b = unit - 1; a < b; a++, b--) {
            unsigned char t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

static int src_read(const exif_source *s, uint64_t off, void *buf, size_t n)
{
    if (off > s->size || n > s->size - off) return -1;
    if (s->mem) {
        if (n) memcpy(buf, s->mem + off, n);
        return 0;
    }
    for (size_t done = 0; done < n;) {
        ssize_t got = pread(s->fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (got <= 0) return -1;
        done += (size_t)got;
    }
    return 0;
}

static uint64_t get_uint(const exif_source *s, const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v = s->big_endian ? v << 8 | p[i] : v | (uint64_t)p[i] << (8 * i);
    return v;
}

static int parse_header(exif_source *s, uint64_t *ifd0)
{
    unsigned char h[16];
    if (src_read(s, 0, h, 8)) return IP_EFORMAT;
    if (h[0] == 'I' && h[1] == 'I') s->big_endian = 0;
    else if (h[0] == 'M' && h[1] == 'M') s->big_endian = 1;
    else return IP_EFORMAT;
    uint64_t version = get_uint(s, h + 2, 2);
    s->bigtiff = version == 43;
    if (version == 42) {
        *ifd0 = get_uint(s, h + 4, 4);
        return IP_OK;
    }
    if (!s->bigtiff || get_uint(s, h + 4, 2) != 8 || src_read(s, 8, h + 8, 8)) return IP_EFORMAT;
    *ifd0 = get_uint(s, h + 8, 8);
    return IP_OK;
}

int exif_source_mem(exif_source *s, const unsigned char *blob, size_t len, uint64_t *ifd0)
{
    *s = (exif_source){ .mem = blob, .fd = -1, .size = len };
    return blob ? parse_header(s, ifd0) : IP_EFORMAT;
}

int exif_source_fd(exif_source *s, int fd, uint64_t *ifd0)
{
    struct stat st;
    *s = (exif_source){ .mem = NULL, .fd = fd };
    if (fstat(fd, &st) != 0 || st.st_size < 0) return IP_EFORMAT;
    s->size = (uint64_t)st.st_size;
    return parse_header(s, ifd0);
}

void exif_ifd_free(exif_ifd *ifd)
{
    if (!ifd) return;
    for (int i = 0; i < ifd->n; i++) {
        free(ifd->entries[i].value);
        exif_ifd_free(ifd->entries[i].sub);
        free(ifd->entries[i].sub);
    }
    free(ifd->entries);
    *ifd = (exif_ifd){ 0 };
}

exif_entry *exif_find(const exif_ifd *ifd, uint16_t tag)
{
    for (int i = 0; ifd && i < ifd->n; i++)
        if (ifd->entries[i].tag == tag) return &ifd->entries[i];
    return NULL;
}

/* Takes ownership of value and sub; a tag already present is replaced. */
static int put_entry(exif_ifd *ifd, exif_entry e)
{
    exif_entry *old = exif_find(ifd, e.tag);
    if (old) {
        free(old->value);
        exif_ifd_free(old->sub);
        free(old->sub);
        *old = e;
        return IP_OK;
    }
    if (ifd->n == ifd->cap) {
        int cap = ifd->cap ? ifd->cap * 2 : 16;
        exif_entry *grown = realloc(ifd->entries, (size_t)cap * sizeof *grown);
        if (!grown) {
            free(e.value);
            exif_ifd_free(e.sub);
            free(e.sub);
            return IP_ENOMEM;
        }
        ifd->entries = grown;
        ifd->cap = cap;
    }
    ifd->entries[ifd->n++] = e;
    return IP_OK;
}

int exif_set(exif_ifd *ifd, uint16_t tag, uint16_t type, uint32_t count, const void *value, size_t len)
{
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy) return IP_ENOMEM;
    if (len) memcpy(copy, value, len);
    return put_entry(ifd, (exif_entry){ tag, type, count, copy, len, NULL });
}

int exif_set_sub(exif_ifd *ifd, uint16_t tag, exif_ifd *sub)
{
    if (sub->n == 0) {
        exif_ifd_free(sub);
        free(sub);
        return IP_OK;
    }
    return put_entry(ifd, (exif_entry){ tag, EXIF_LONG, 1, NULL, 0, sub });
}

static dir_kind sub_kind(dir_kind kind, uint16_t tag)
{
    if (kind == DIR_IFD0 && tag == EXIF_TAG_EXIF_IFD) return DIR_EXIF;
    if (kind == DIR_IFD0 && tag == EXIF_TAG_GPS_IFD) return DIR_LEAF;
    if (kind == DIR_EXIF && tag == EXIF_TAG_INTEROP_IFD) return DIR_LEAF;
    return DIR_IFD0;   /* not a pointer here */
}

/* A whole read shares one budget of value bytes, so many entries pointing at one large range
 * cannot make it hold more than META_MAX_BYTES. */
typedef struct {
    const exif_source *s;
    size_t left;
} reader;

static int read_dir(reader *r, uint64_t off, dir_kind kind, int (*want)(uint16_t), exif_ifd *out);

static int read_sub(reader *r, uint16_t tag, uint16_t type, uint64_t count, const unsigned char *field,
                    dir_kind kind, exif_ifd *out)
{
    unsigned size = type_size(type);
    int pointer_type = type == EXIF_LONG || type == EXIF_IFD || type == EXIF_LONG8 || type == EXIF_IFD8;
    if (!pointer_type || count != 1 || size > (r->s->bigtiff ? 8u : 4u)) return IP_OK;
    exif_ifd *sub = calloc(1, sizeof *sub);
    if (!sub) return IP_ENOMEM;
    int rc = read_dir(r, get_uint(r->s, field, size), kind, NULL, sub);
    if (rc == IP_ENOMEM) {
        exif_ifd_free(sub);
        free(sub);
        return rc;
    }
    return exif_set_sub(out, tag, sub);
}

/* One entry: its value inline or at its offset; an entry that cannot be read is dropped. */
static int read_entry(reader *r, const unsigned char *e, dir_kind kind, int (*want)(uint16_t), exif_ifd *out)
{
    const exif_source *s = r->s;
    size_t field_bytes = s->bigtiff ? 8 : 4;
    uint16_t tag = (uint16_t)get_uint(s, e, 2), type = (uint16_t)get_uint(s, e + 2, 2);
    uint64_t count = get_uint(s, e + 4, field_bytes);
    const unsigned char *field = e + 4 + field_bytes;
    if ((want && !want(tag)) || exif_find(out, tag)) return IP_OK;
    dir_kind next = sub_kind(kind, tag);
    if (next != DIR_IFD0) return read_sub(r, tag, type, count, field, next, out);
    unsigned size = type_size(type);
    if (!size || count == 0 || count > r->left / size) return IP_OK;
    size_t len = (size_t)count * size;
    unsigned char *v = malloc(len);
    if (!v) return IP_ENOMEM;
    if (len <= field_bytes) memcpy(v, field, len);
    else if (src_read(s, get_uint(s, field, field_bytes), v, len)) {
        free(v);
        return IP_OK;
    }
    if (s->big_endian) swap_units(v, len, type_unit(type));
    r->left -= len;
    return put_entry(out, (exif_entry){ tag, type, (uint32_t)count, v, len, NULL });
}

static int read_dir(reader *r, uint64_t off, dir_kind kind, int (*want)(uint16_t), exif_ifd *out)
{
    size_t count_bytes = r->s->bigtiff ? 8 : 2, entry_bytes = r->s->bigtiff ? 20 : 12;
    unsigned char head[8];
    if (src_read(r->s, off, head, count_bytes)) return IP_EFORMAT;
    uint64_t n = get_uint(r->s, head, count_bytes);
    if (n > EXIF_MAX_ENTRIES) return IP_EFORMAT;
    unsigned char *raw = malloc((size_t)n * entry_bytes + 1);
    if (!raw) return IP_ENOMEM;
    int rc = src_read(r->s, off + count_bytes, raw, (size_t)n * entry_bytes) ? IP_EFORMAT : IP_OK;
    for (uint64_t i = 0; i < n && rc == IP_OK; i++) rc = read_entry(r, raw + i * entry_bytes, kind, want, out);
    free(raw);
    return rc;
}

int exif_read(const exif_source *s, uint64_t offset, int (*want)(uint16_t tag), exif_ifd *out)
{
    *out = (exif_ifd){ 0 };
    reader r = { s, META_MAX_BYTES };
    int rc = read_dir(&r, offset, DIR_IFD0, want, out);
    if (rc) exif_ifd_free(out);
    return rc;
}

int exif_parse(const unsigned char *blob, size_t len, exif_ifd *ifd0)
{
    exif_source s;
    uint64_t first;
    *ifd0 = (exif_ifd){ 0 };
    int rc = exif_source_mem(&s, blob, len, &first);
    return rc ? rc : exif_read(&s, first, NULL, ifd0);
}

static uint32_t le(const unsigned char *p, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

uint32_t exif_uint(const exif_entry *e, uint32_t i, uint32_t def)
{
    if (!e || !e->value || i >= e->count) return def;
    switch (e->type) {
    case EXIF_BYTE: return e->value[i];
    case EXIF_SHORT: return le(e->value + 2 * (size_t)i, 2);
    case EXIF_LONG: return le(e->value + 4 * (size_t)i, 4);
    default: return def;
    }
}

double exif_number(const exif_entry *e, uint32_t i, double def)
{
    if (!e || !e->value || i >= e->count) return def;
    if (e->type == EXIF_RATIONAL || e->type == EXIF_SRATIONAL) {
        uint32_t num = le(e->value + 8 * (size_t)i, 4), den = le(e->value + 8 * (size_t)i + 4, 4);
        if (den == 0) return def;
        return e->type == EXIF_RATIONAL ? (double)num / den : (double)(int32_t)num / (int32_t)den;
    }
    return exif_uint(e, i, UINT32_MAX) == UINT32_MAX ? def : (double)exif_uint(e, i, 0);
}

/* Classic TIFF has no 8-byte integers: such entries are left out when writing. */
static int writable(const exif_entry *e)
{
    return e->sub || (type_unit(e->type) && e->type < EXIF_LONG8 && e->len <= UINT32_MAX);
}

static size_t out_of_line(const exif_entry *e)
{
    return !e->sub && e->len > 4 ? (e->len + 1) & ~(size_t)1 : 0;
}

size_t exif_ifd_size(const exif_ifd *ifd)
{
    size_t size = 6;
    for (int i = 0; i < ifd->n; i++) {
        const exif_entry *e = &ifd->entries[i];
        if (!writable(e)) continue;
        size += 12 + out_of_line(e) + (e->sub ? exif_ifd_size(e->sub) : 0);
    }
    return size;
}

static void put(unsigned char *p, uint32_t v, int n, int big_endian)
{
    for (int i = 0; i < n; i++) p[big_endian ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

static int by_tag(const void *a, const void *b)
{
    const exif_entry *x = *(const exif_entry *const *)a, *y = *(const exif_entry *const *)b;
    return (x->tag > y->tag) - (x->tag < y->tag);
}

/* The entry's value bytes in the output's order at dst. */
static void put_value(const exif_entry *e, int big_endian, unsigned char *dst)
{
    memcpy(dst, e->value, e->len);
    if (big_endian) swap_units(dst, e->len, type_unit(e->type));
}

int exif_write_ifd(const exif_ifd *ifd, int big_endian, uint32_t base, unsigned char *out)
{
    size_t total = exif_ifd_size(ifd);
    if (total > UINT32_MAX - base) return IP_ELIMIT;
    const exif_entry **sorted = malloc(((size_t)ifd->n + 1) * sizeof *sorted);
    if (!sorted) return IP_ENOMEM;
    int n = 0;
    for (int i = 0; i < ifd->n; i++)
        if (writable(&ifd->entries[i])) sorted[n++] = &ifd->entries[i];
    qsort(sorted, (size_t)n, sizeof *sorted, by_tag);
    put(out, (uint32_t)n, 2, big_endian);
    size_t data_at = 6 + 12 * (size_t)n;
    int rc = IP_OK;
    for (int pass = 0; pass < 2 && rc == IP_OK; pass++)   /* values first, then the sub-directories */
        for (int i = 0; i < n && rc == IP_OK; i++) {
            const exif_entry *e = sorted[i];
            unsigned char *slot = out + 2 + 12 * (size_t)i;
            if (pass == 0) {
                put(slot, e->tag, 2, big_endian);
                put(slot + 2, e->sub ? EXIF_LONG : e->type, 2, big_endian);
                put(slot + 4, e->sub ? 1 : e->count, 4, big_endian);
                memset(slot + 8, 0, 4);
            }
            if (pass == 0 && !e->sub && e->len <= 4) {
                put_value(e, big_endian, slot + 8);
            } else if ((pass == 0 && !e->sub) || (pass == 1 && e->sub)) {
                put(slot + 8, base + (uint32_t)data_at, 4, big_endian);
                if (e->sub) rc = exif_write_ifd(e->sub, big_endian, base + (uint32_t)data_at, out + data_at);
                else put_value(e, big_endian, out + data_at);
                if (!e->sub && (e->len & 1)) out[data_at + e->len] = 0;
                data_at += e->sub ? exif_ifd_size(e->sub) : out_of_line(e);
            }
        }
    put(out + 2 + 12 * (size_t)n, 0, 4, big_endian);   /* no next directory */
    free(sorted);
    return rc;
}

int exif_serialize(const exif_ifd *ifd0, unsigned char **blob, size_t *len)
{
    size_t size = exif_ifd_size(ifd0);
    *blob = NULL;
    *len = 0;
    if (size > UINT32_MAX - 8) return IP_ELIMIT;
    unsigned char *out = malloc(8 + size);
    if (!out) return IP_ENOMEM;
    memcpy(out, "II*\0\x08\0\0\0", 8);
    int rc = exif_write_ifd(ifd0, 0, 8, out + 8);
    if (rc) {
        free(out);
        return rc;
    }
    *blob = out;
    *len = 8 + size;
    return IP_OK;
}

static int is_orientation(uint16_t tag)
{
    return tag == EXIF_TAG_ORIENTATION;
}

int exif_orientation(const unsigned char *blob, size_t len)
{
    exif_source s;
    uint64_t first;
    exif_ifd ifd0;
    if (exif_source_mem(&s, blob, len, &first) || s.bigtiff || exif_read(&s, first, is_orientation, &ifd0))
        return 1;
    uint32_t v = exif_uint(exif_find(&ifd0, EXIF_TAG_ORIENTATION), 0, 1);
    exif_ifd_free(&ifd0);
    return v >= 1 && v <= 8 ? (int)v : 1;
}

/* Where IFD0's orientation value lies in the blob (a SHORT is kept in the entry itself); 0: nowhere. */
static size_t orientation_slot(const unsigned char *blob, size_t len)
{
    exif_source s;
    uint64_t first;
    unsigned char head[2], e[12];
    if (exif_source_mem(&s, blob, len, &first) || s.bigtiff || src_read(&s, first, head, 2)) return 0;
    uint64_t n = get_uint(&s, head, 2);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t at = first + 2 + 12 * i;
        if (src_read(&s, at, e, 12)) return 0;
        if (get_uint(&s, e, 2) == EXIF_TAG_ORIENTATION && get_uint(&s, e + 2, 2) == EXIF_SHORT &&
            get_uint(&s, e + 4, 4) >= 1)
            return (size_t)at + 8;
    }
    return 0;
}

int exif_with_orientation(const unsigned char *blob, size_t len, int orientation, unsigned char **out,
                          size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    size_t slot = blob ? orientation_slot(blob, len) : 0;
    if (slot || (orientation == 1 && blob)) {
        if (!(*out = malloc(len))) return IP_ENOMEM;
        memcpy(*out, blob, len);
        *out_len = len;
        if (slot) put(*out + slot, (uint32_t)orientation, 2, blob[0] == 'M');
        return IP_OK;
    }
    if (orientation == 1) return IP_OK;
    exif_ifd ifd0 = { 0 };
    int rc = blob ? exif_parse(blob, len, &ifd0) : IP_OK;
    if (rc == IP_EFORMAT) rc = IP_OK;   /* a damaged blob is replaced by the orientation alone */
    unsigned char value[2] = { (unsigned char)orientation, 0 };
    if (rc == IP_OK) rc = exif_set(&ifd0, EXIF_TAG_ORIENTATION, EXIF_SHORT, 1, value, 2);
    if (rc == IP_OK) rc = exif_serialize(&ifd0, out, out_len);
    exif_ifd_free(&ifd0);
    return rc;
}
