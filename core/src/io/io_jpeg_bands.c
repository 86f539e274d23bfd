#include "io/io_jpeg_bands.h"
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bands of about this many input bytes: enough of them for every thread, few enough that the
 * restart markers (2 bytes and a partial byte each) cost nothing. */
#define BAND_BYTES ((size_t)1 << 20)
#define MAX_RESTART_MCUS 65535u

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jmp;
    char message[JMSG_LENGTH_MAX];
} band_error;

static void band_error_exit(j_common_ptr c)
{
    band_error *e = (band_error *)c->err;
    (*c->err->format_message)(c, e->message);
    longjmp(e->jmp, 1);
}

static void band_quiet(j_common_ptr c, int level)
{
    (void)c;
    (void)level;
}


/* MCU height and MCUs per row with the hooks' settings, from a compressor set up but not started. */
static int mcu_geometry(const ip_shape *s, const jpeg_band_hooks *h, unsigned *mcu_rows, unsigned *mcus_per_row)
{
    struct jpeg_compress_struct c;
    band_error e;
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = band_error_exit;
    if (setjmp(e.jmp)) {
        jpeg_destroy_compress(&c);
        return -1;
    }
    jpeg_create_compress(&c);
    c.image_width = (JDIMENSION)s->width;
    c.image_height = (JDIMENSION)s->height;
    c.input_components = s->channels;
    c.in_color_space = s->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    h->configure(h->user, &c);
    int hmax = 1, vmax = 1;
    for (int i = 0; i < c.num_components; i++) {
        if (c.comp_info[i].h_samp_factor > hmax) hmax = c.comp_info[i].h_samp_factor;
        if (c.comp_info[i].v_samp_factor > vmax) vmax = c.comp_info[i].v_samp_factor;
    }
    /* One component is coded without interleaving: its MCU is one 8x8 block. */
    if (c.num_components == 1) hmax = vmax = 1;
    int plain = !c.progressive_mode && !c.optimize_coding && c.restart_interval == 0 && c.restart_in_rows == 0;
    jpeg_destroy_compress(&c);
    *mcu_rows = 8u * (unsigned)vmax;
    *mcus_per_row = ((unsigned)s->width + 8u * (unsigned)hmax - 1) / (8u * (unsigned)hmax);
    return plain ? 0 : -1;
}

size_t jpeg_bands_plan(const ip_shape *s, const jpeg_band_hooks *h, size_t *band_rows)
{
    unsigned mcu_rows, per_row;
    *band_rows = (size_t)s->height;
    if (s->dtype != IP_U8 || (s->channels != 1 && s->channels != 3) || mcu_geometry(s, h, &mcu_rows, &per_row))
        return 1;
    size_t mcu_row_bytes = (size_t)s->width * (size_t)s->channels * mcu_rows;
    size_t k = (BAND_BYTES + mcu_row_bytes - 1) / mcu_row_bytes;
    if (k * per_row > MAX_RESTART_MCUS) k = MAX_RESTART_MCUS / per_row;
    if (k == 0) return 1;   /* rows wider than a restart interval can count */
    *band_rows = k * mcu_rows;
    return ((size_t)s->height + *band_rows - 1) / *band_rows;
}

/* The band's SOS segment and where its entropy-coded data start. */
static int find_scan(jpeg_band_out *b)
{
    for (size_t i = 2; i + 3 < b->len;) {
        if (b->data[i] != 0xFF) return -1;
        unsigned marker = b->data[i + 1];
        size_t seg = ((size_t)b->data[i + 2] << 8) | b->data[i + 3];
        if (marker == 0xDA) {
            b->sos = i;
            b->ecs_start = i + 2 + seg;
            return b->ecs_start + 2 <= b->len ? 0 : -1;
        }
        i += 2 + seg;
    }
    return -1;
}

void jpeg_bands_encode(const ip_image *img, const jpeg_band_hooks *h, size_t y0, size_t rows, int first,
                       jpeg_band_out *out)
{
    struct jpeg_compress_struct c;
    band_error e;
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = band_error_exit;
    e.pub.emit_message = band_quiet;
    size_t own_size = ((size_t)img->shape.width + 16) * (rows + 16) * (size_t)img->shape.channels * 2 + 65536;
    unsigned char *own = malloc(own_size);
    if (!own) {
        snprintf(out->message, sizeof out->message, "out of memory");
        out->rc = IP_ENOMEM;
        return;
    }
    if (setjmp(e.jmp)) {
        jpeg_destroy_compress(&c);
        free(own);
        out->data = NULL;
        snprintf(out->message, sizeof out->message, "%s", e.message);
        out->rc = IP_EIO;
        return;
    }
    jpeg_create_compress(&c);
    /* Our own buffer, larger than any band's file can be: libjpeg-turbo frees only buffers it
     * allocated itself, and would leave one behind on an error. */
    out->data = own;
    out->len = own_size;
    jpeg_mem_dest(&c, &out->data, &out->len);
    c.image_width = (JDIMENSION)img->shape.width;
    c.image_height = (JDIMENSION)rows;
    c.input_components = img->shape.channels;
    c.in_color_space = img->shape.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    h->configure(h->user, &c);
    jpeg_start_compress(&c, TRUE);
    if (first && h->after_start) h->after_start(h->user, &c);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)img->data + (y0 + c.next_scanline) * (size_t)img->stride;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    if (out->data != own) free(own);   /* it grew into a buffer of libjpeg-turbo's: now ours */
    out->rc = find_scan(out) == 0 ? IP_OK : IP_EIO;
    if (out->rc) snprintf(out->message, sizeof out->message, "libjpeg-turbo wrote a band without a scan");
}

/* The first band's header with the whole height in its frame, and the restart interval. */
static int write_header(FILE *f, const jpeg_band_out *b0, unsigned height, unsigned interval)
{
    unsigned char *head = malloc(b0->ecs_start);
    if (!head) return -1;
    memcpy(head, b0->data, b0->ecs_start);
    int patched = 0;
    for (size_t i = 2; i + 8 < b0->sos;) {
        unsigned marker = head[i + 1];
        size_t seg = ((size_t)head[i + 2] << 8) | head[i + 3];
        if (marker == 0xC0 || marker == 0xC1) {
            head[i + 5] = (unsigned char)(height >> 8);
            head[i + 6] = (unsigned char)height;
            patched = 1;
        }
        i += 2 + seg;
    }
    const unsigned char dri[6] = { 0xFF, 0xDD, 0x00, 0x04, (unsigned char)(interval >> 8), (unsigned char)interval };
    int ok = patched && fwrite(head, 1, b0->sos, f) == b0->sos && fwrite(dri, 1, 6, f) == 6 &&
             fwrite(head + b0->sos, 1, b0->ecs_start - b0->sos, f) == b0->ecs_start - b0->sos;
    free(head);
    return ok ? 0 : -1;
}

int jpeg_bands_put(FILE *f, const jpeg_band_out *b, size_t k, const jpeg_bands_layout *l)
{
    if (k == 0 && write_header(f, b, l->height, l->interval)) return -1;
    size_t ecs = b->len - 2 - b->ecs_start;
    if (fwrite(b->data + b->ecs_start, 1, ecs, f) != ecs) return -1;
    const unsigned char marker[2] = { 0xFF, k + 1 < l->n ? (unsigned char)(0xD0 + k % 8) : 0xD9 };
    return fwrite(marker, 1, 2, f) == 2 ? 0 : -1;
}

int jpeg_bands_layout_make(const ip_shape *s, const jpeg_band_hooks *h, jpeg_bands_layout *l)
{
    unsigned mcu_rows, per_row;
    l->n = jpeg_bands_plan(s, h, &l->band_rows);
    if (l->n < 2 || mcu_geometry(s, h, &mcu_rows, &per_row)) return -1;
    l->height = (unsigned)s->height;
    l->interval = (unsigned)(l->band_rows / mcu_rows) * per_row;
    return 0;
}

int jpeg_bands_write(FILE *f, const ip_image *img, const jpeg_band_hooks *h, int threads, char *err, size_t errlen)
{
    jpeg_bands_layout l;
    if (jpeg_bands_layout_make(&img->shape, h, &l)) {
        snprintf(err, errlen, "image not cut into JPEG bands");
        return IP_EINVAL;
    }
    size_t n = l.n, band_rows = l.band_rows;
    jpeg_band_out *bands = calloc(n, sizeof *bands);
    if (!bands) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    size_t height = (size_t)img->shape.height;
    long count = (long)n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
    for (long k = 0; k < count; k++) {
        size_t y0 = (size_t)k * band_rows, rows = height - y0 < band_rows ? height - y0 : band_rows;
        jpeg_bands_encode(img, h, y0, rows, k == 0, &bands[k]);
    }
    int rc = IP_OK;
    for (size_t k = 0; k < n && !rc; k++)
        if (bands[k].rc) {
            snprintf(err, errlen, "cannot write JPEG: %s", bands[k].message);
            rc = bands[k].rc;
        }
    for (size_t k = 0; k < n && !rc; k++)
        if (jpeg_bands_put(f, &bands[k], k, &l)) {
            snprintf(err, errlen, "cannot write JPEG: %s", "the file could not be written");
            rc = IP_EIO;
        }
    for (size_t k = 0; k < n; k++) free(bands[k].data);
    free(bands);
    return rc;
}
