#include "stream/stream_budget.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "stream/band.h"
#include "stream/band_workers.h"
#include "base/image.h"

static uint64_t image_bytes(const ip_shape *s) { return (uint64_t)img_row_bytes(s) * (uint64_t)s->height; }

uint64_t stream_whole_image_bytes(const plan *p)
{
    uint64_t largest = 0, scratch = 0;
    for (int i = 0; i < p->n; i++) {
        uint64_t b = image_bytes(&p->steps[i].out);
        largest = b > largest ? b : largest;
        scratch = p->steps[i].needs.scratch_bytes > scratch ? p->steps[i].needs.scratch_bytes : scratch;
    }
    return image_bytes(&p->steps[0].in) + 2 * largest + scratch;
}

void stream_bytes_text(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0) snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    else snprintf(buf, len, "%.*f %s", v < 10 ? 1 : 0, v, units[u]);
}

int stream_parse_size(const char *text, uint64_t *bytes)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || v < 0) return 0;
    double scale = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': scale = 1024.0; end++; break;
    case 'M': scale = 1024.0 * 1024; end++; break;
    case 'G': scale = 1024.0 * 1024 * 1024; end++; break;
    case 'T': scale = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (toupper((unsigned char)*end) == 'I') end++;
    if (toupper((unsigned char)*end) == 'B') end++;
    if (*end || v * scale >= 1.8e19) return 0;
    *bytes = (uint64_t)(v * scale);
    return 1;
}

static void too_large(const plan_step *st, uint64_t need, uint64_t limit, const char *where, const char *option,
                      char *err, size_t errlen)
{
    char need_text[32], limit_text[32];
    stream_bytes_text(need, need_text, sizeof need_text);
    stream_bytes_text(limit, limit_text, sizeof limit_text);
    snprintf(err, errlen, "stage '%s' (line %d) needs the whole image: %s of %smemory, more than the %s allowed (%s)",
             st->plugin->stage->name, st->line, need_text, where, limit_text, option);
}

static uint64_t device_image_bytes(const ip_shape *s)
{
    uint64_t pitch = ((uint64_t)img_row_bytes(s) + 255) / 256 * 256;
    return pitch * (uint64_t)s->height;
}

/* What the whole-image executor holds on the device for one global step: two buffers of the
 * larger image at its pitch, and the stage's device scratch. */
static uint64_t global_device_bytes(const plan_step *st)
{
    uint64_t in = device_image_bytes(&st->in), out = device_image_bytes(&st->out);
    return 2 * (in > out ? in : out) + st->needs.gpu_scratch_bytes;
}

/* The most held at once for a global stage: its input and its output whole (on the host; on the
 * GPU as well for a GPU run). */
static int check_globals(const plan *p, const band_layout *l, const stream_budget *b, uint64_t *held, char *err,
                         size_t errlen)
{
    *held = 0;
    for (int i = 0; i < l->n; i++) {
        if (!l->segs[i].global) continue;
        const plan_step *st = &p->steps[l->segs[i].first];
        uint64_t need = image_bytes(&st->in) + image_bytes(&st->out) + st->needs.scratch_bytes;
        if (b->place == BAND_ON_GPU) need += image_bytes(&st->out);   /* the executor's copy of its result */
        if (need > b->limit_bytes) {
            too_large(st, need, b->limit_bytes, "", "--memory", err, errlen);
            return IP_ELIMIT;
        }
        uint64_t dev = global_device_bytes(st);
        if (b->place == BAND_ON_GPU && b->device_limit_bytes && dev > b->device_limit_bytes) {
            too_large(st, dev, b->device_limit_bytes, "GPU ", "--gpu-memory", err, errlen);
            return IP_ELIMIT;
        }
        *held = need > *held ? need : *held;
    }
    return IP_OK;
}

static int workers_of(const stream_budget *b) { return b->n_workers > 1 ? b->n_workers : 1; }

/* Bands of rows; with several workers, each holding a chunk of chunk_rows. */
static uint64_t chunked_bytes(const plan *p, const band_layout *l, const stream_budget *b, int rows, int chunk_rows)
{
    uint64_t total = (uint64_t)rows * b->row_bytes;
    int n = workers_of(b);
    for (int i = 0; i < l->n; i++) {
        if (l->segs[i].global) continue;
        total += (uint64_t)n * band_segment_bytes(p, &l->segs[i], b->place, rows);
        if (n > 1) total += band_workers_bytes(p, &l->segs[i], n, chunk_rows);
    }
    return total;
}

static uint64_t bands_bytes(const plan *p, const band_layout *l, const stream_budget *b, int rows)
{
    return chunked_bytes(p, l, b, rows, rows);
}

/* Segments run one after another: the device holds the largest one's executors at a time. */
uint64_t stream_device_bytes(const plan *p, const band_layout *l, int n_workers, int band_rows)
{
    uint64_t most = 0;
    for (int i = 0; i < l->n; i++) {
        if (l->segs[i].global) continue;
        uint64_t b = (uint64_t)(n_workers > 1 ? n_workers : 1) * band_segment_device_bytes(p, &l->segs[i], band_rows);
        most = b > most ? b : most;
    }
    return most;
}

static int fits(const plan *p, const band_layout *l, const stream_budget *b, uint64_t budget, int rows)
{
    if (bands_bytes(p, l, b, rows) > budget) return 0;
    return b->place != BAND_ON_GPU || !b->device_limit_bytes ||
           stream_device_bytes(p, l, b->n_workers, rows) <= b->device_limit_bytes;
}

int stream_band_rows_for(const plan *p, const band_layout *l, const stream_budget *b, int *band_rows, char *err,
                         size_t errlen)
{
    uint64_t held;
    int rc = check_globals(p, l, b, &held, err, errlen);
    if (rc != IP_OK) return rc;
    uint64_t budget = b->limit_bytes > b->fixed_bytes + held ? b->limit_bytes - b->fixed_bytes - held : 0;
    int rows = STREAM_MAX_BAND_ROWS;
    while (rows > 1 && !fits(p, l, b, budget, rows)) rows /= 2;
    if (bands_bytes(p, l, b, rows) > budget) {
        char need_text[32], limit_text[32];
        stream_bytes_text(bands_bytes(p, l, b, 1) + b->fixed_bytes + held, need_text, sizeof need_text);
        stream_bytes_text(b->limit_bytes, limit_text, sizeof limit_text);
        snprintf(err, errlen, "this pipeline needs at least %s of memory for this image in bands of one row, more "
                 "than the %s allowed (--memory)", need_text, limit_text);
        return IP_ELIMIT;
    }
    if (!fits(p, l, b, budget, rows)) {
        char need_text[32], limit_text[32];
        stream_bytes_text(stream_device_bytes(p, l, b->n_workers, 1), need_text, sizeof need_text);
        stream_bytes_text(b->device_limit_bytes, limit_text, sizeof limit_text);
        snprintf(err, errlen, "this pipeline needs at least %s of GPU memory for this image in bands of one row, "
                 "more than the %s allowed (--gpu-memory)", need_text, limit_text);
        return IP_ELIMIT;
    }
    *band_rows = rows;
    return IP_OK;
}

int stream_chunk_rows_for(const plan *p, const band_layout *l, const stream_budget *b, int band_rows)
{
    uint64_t held;
    char err[256];
    if (workers_of(b) < 2 || check_globals(p, l, b, &held, err, sizeof err) != IP_OK) return band_rows;
    uint64_t budget = b->limit_bytes > b->fixed_bytes + held ? b->limit_bytes - b->fixed_bytes - held : 0;
    int height = p->steps[0].in.height, most = height / (STREAM_CHUNKS_PER_WORKER * workers_of(b));
    for (int k = STREAM_MAX_CHUNK_BANDS; k > 1; k /= 2) {
        int chunk = band_rows * k;
        if (chunk <= most && chunked_bytes(p, l, b, band_rows, chunk) <= budget) return chunk;
    }
    return band_rows;
}

int stream_band_rows(const plan *p, const band_layout *l, uint64_t limit_bytes, uint64_t fixed_bytes, uint64_t row_bytes,
                     int *band_rows, char *err, size_t errlen)
{
    stream_budget b = { limit_bytes, fixed_bytes, row_bytes, BAND_ON_HOST, 0, 1 };
    return stream_band_rows_for(p, l, &b, band_rows, err, errlen);
}
