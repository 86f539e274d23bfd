#define _POSIX_C_SOURCE 200809L
#include "io/meta.h"
#include <stdlib.h>
#include <string.h>
#include "io/exif.h"

void meta_init(io_meta *m)
{
    memset(m, 0, sizeof *m);
    m->orientation = 1;
}

static void free_text(meta_text *t)
{
    free(t->key);
    free(t->lang);
    free(t->translated);
    free(t->text);
}

void meta_clear(io_meta *m)
{
    free(m->icc);
    free(m->exif);
    free(m->xmp);
    for (int i = 0; i < m->n_texts; i++) free_text(&m->texts[i]);
    free(m->texts);
    meta_init(m);
}

int meta_set_bytes(unsigned char **dst, size_t *dst_len, const void *src, size_t n)
{
    if (n > META_MAX_BYTES) return IP_ELIMIT;
    unsigned char *copy = malloc(n ? n : 1);
    if (!copy) return IP_ENOMEM;
    if (n) memcpy(copy, src, n);
    free(*dst);
    *dst = copy;
    *dst_len = n;
    return IP_OK;
}

static char *copy_text(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

int meta_add_text(io_meta *m, meta_text_kind kind, int compressed, const char *key, const char *lang,
                  const char *translated, const char *text, size_t text_len)
{
    if (m->n_texts >= META_MAX_TEXTS) return IP_OK;
    meta_text *grown = realloc(m->texts, (size_t)(m->n_texts + 1) * sizeof *grown);
    if (!grown) return IP_ENOMEM;
    m->texts = grown;
    int intl = kind == META_TEXT_INTL;
    meta_text t = { kind, intl && compressed, copy_text(key, strlen(key)),
                    intl ? copy_text(lang ? lang : "", lang ? strlen(lang) : 0) : NULL,
                    intl ? copy_text(translated ? translated : "", translated ? strlen(translated) : 0) : NULL,
                    copy_text(text, text_len), text_len };
    if (!t.key || !t.text || (intl && (!t.lang || !t.translated))) {
        free_text(&t);
        return IP_ENOMEM;
    }
    m->texts[m->n_texts++] = t;
    return IP_OK;
}

const char *meta_icc_space(const unsigned char *icc, size_t len)
{
    static const char *const known[] = { "RGB ", "GRAY", "CMYK", "Lab ", "XYZ ", "YCbr", "CMY " };
    if (!icc || len < 128) return NULL;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!memcmp(icc + 16, known[i], 4)) return known[i];
    return NULL;
}

int meta_icc_fits(const io_meta *m, const ip_shape *shape)
{
    const char *space = m ? meta_icc_space(m->icc, m->icc_len) : NULL;
    if (!space) return 0;
    return shape->channels <= 2 ? !strcmp(space, "GRAY") : !strcmp(space, "RGB ");
}

int meta_exif_for_output(const io_meta *m, unsigned char **exif, size_t *len)
{
    int orientation = m->orientation >= 1 && m->orientation <= 8 ? m->orientation : 1;
    return exif_with_orientation(m->exif, m->exif_len, orientation, exif, len);
}

void meta_oriented(io_meta *m)
{
    if (m->orientation >= 5 && m->orientation <= 8) {
        double t = m->res_x;
        m->res_x = m->res_y;
        m->res_y = t;
    }
    m->orientation = 1;
}

int meta_read(FILE *f, io_format fmt, uint32_t page, io_meta *m)
{
    switch (fmt) {
    case IO_FMT_JPEG: return meta_read_jpeg(f, m);
    case IO_FMT_PNG: return meta_read_png(f, m);
    case IO_FMT_TIFF: return meta_read_tiff(fileno(f), page, m);
    case IO_FMT_UNKNOWN: break;
    }
    meta_clear(m);
    return IP_OK;
}
