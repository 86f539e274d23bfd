#include "stream_budget.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "band.h"
#include "image.h"

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

/* The most held at once for a global stage: its input and its output whole. */
static int check_globals(const plan *p, const band_layout *l, uint64_t limit, uint64_t *held, char *err, size_t errlen)
{
    *held = 0;
    for (int i = 0; i < l->n; i++) {
        if (!l->segs[i].global) continue;
        const plan_step *st = &p->steps[l->segs[i].first];
        uint64_t need = image_bytes(&st->in) + image_bytes(&st->out) + st->needs.scratch_bytes;
        if (need > limit) {
            char need_text[32], limit_text[32];
            stream_bytes_text(need, need_text, sizeof need_text);
            stream_bytes_text(limit, limit_text, sizeof limit_text);
            snprintf(err, errlen, "stage '%s' (line %d) needs the whole image: %s of memory, more than the %s "
                     "allowed (--memory)", st->plugin->stage->name, st->line, need_text, limit_text);
            return IP_ELIMIT;
        }
        *held = need > *held ? need : *held;
    }
    return IP_OK;
}

static uint64_t bands_bytes(const plan *p, const band_layout *l, int rows, uint64_t row_bytes)
{
    uint64_t total = (uint64_t)rows * row_bytes;
    for (int i = 0; i < l->n; i++)
        if (!l->segs[i].global) total += band_segment_bytes(p, &l->segs[i], rows);
    return total;
}

int stream_band_rows(const plan *p, const band_layout *l, uint64_t limit_bytes, uint64_t fixed_bytes, uint64_t row_bytes,
                     int *band_rows, char *err, size_t errlen)
{
    uint64_t held;
    int rc = check_globals(p, l, limit_bytes, &held, err, errlen);
    if (rc != IP_OK) return rc;
    uint64_t budget = limit_bytes > fixed_bytes + held ? limit_bytes - fixed_bytes - held : 0;
    int rows = STREAM_MAX_BAND_ROWS;
    while (rows > 1 && bands_bytes(p, l, rows, row_bytes) > budget) rows /= 2;
    if (bands_bytes(p, l, rows, row_bytes) > budget) {
        char need_text[32], limit_text[32];
        stream_bytes_text(bands_bytes(p, l, 1, row_bytes) + fixed_bytes + held, need_text, sizeof need_text);
        stream_bytes_text(limit_bytes, limit_text, sizeof limit_text);
        snprintf(err, errlen, "this pipeline needs at least %s of memory for this image in bands of one row, more "
                 "than the %s allowed (--memory)", need_text, limit_text);
        return IP_ELIMIT;
    }
    *band_rows = rows;
    return IP_OK;
}
