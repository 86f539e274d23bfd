#include "io/jpeg_layout.h"
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "imgpipe/plugin.h"

typedef struct {
    const unsigned char *data;
    size_t len, pos;
    jpeg_layout *out;
    int ids[4];
    int have_frame, jfif, adobe, adobe_transform;
    unsigned restart_interval;
    char *why;
    size_t whylen;
} layout_reader;

static int fail(layout_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, r->whylen, fmt, ap);
    va_end(ap);
    return IP_EFORMAT;
}

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

static uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static jpeg_layout_coding coding_of(int marker)
{
    switch (marker) {
    case 0xC0: return JL_BASELINE;
    case 0xC1: return JL_EXTENDED;
    case 0xC2: return JL_PROGRESSIVE;
    case 0xC3: return JL_LOSSLESS;
    case 0xC9: case 0xCA: case 0xCB: return JL_ARITHMETIC;
    default: return JL_HIERARCHICAL;   /* C5-C7, CD-CF: differential frames */
    }
}

static int is_frame_marker(int m)
{
    return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

static int read_frame(layout_reader *r, int marker, const unsigned char *seg, size_t seglen)
{
    if (r->have_frame) return fail(r, "JPEG has a second frame header");
    if (seglen < 6) return fail(r, "JPEG frame header is too short");
    int n = seg[5];
    if (n < 1 || n > 4) return fail(r, "JPEG frame has %d components", n);
    if (seglen != 6 + 3 * (size_t)n) return fail(r, "JPEG frame header has a wrong length");
    jpeg_layout *L = r->out;
    L->precision = seg[0];
    L->height = (int)be16(seg + 1);
    L->width = (int)be16(seg + 3);
    L->components = n;
    L->coding = coding_of(marker);
    if (L->width == 0) return fail(r, "JPEG frame has width 0");
    if (L->height == 0) return fail(r, "JPEG height given in a DNL marker (not supported)");
    for (int c = 0; c < n; c++) {
        const unsigned char *comp = seg + 6 + 3 * c;
        r->ids[c] = comp[0];
        L->h[c] = comp[1] >> 4;
        L->v[c] = comp[1] & 15;
        if (L->h[c] < 1 || L->h[c] > 4 || L->v[c] < 1 || L->v[c] > 4)
            return fail(r, "JPEG component %d has sampling factors %dx%d", c, L->h[c], L->v[c]);
        for (int k = 0; k < c; k++)
            if (r->ids[k] == r->ids[c]) return fail(r, "JPEG frame repeats component id %d", r->ids[c]);
    }
    r->have_frame = 1;
    return IP_OK;
}

static int component_index(const layout_reader *r, int id)
{
    for (int c = 0; c < r->out->components; c++)
        if (r->ids[c] == id) return c;
    return -1;
}

/* MCUs in a scan: blocks of the one component when not interleaved, else whole MCUs. */
static uint64_t scan_mcus(const layout_reader *r, int ncomp, int first)
{
    const jpeg_layout *L = r->out;
    int hmax = 1, vmax = 1;
    for (int c = 0; c < L->components; c++) {
        if (L->h[c] > hmax) hmax = L->h[c];
        if (L->v[c] > vmax) vmax = L->v[c];
    }
    uint64_t block = L->coding == JL_LOSSLESS ? 1 : 8;
    if (ncomp == 1)
        return div_up((uint64_t)L->width * (uint64_t)L->h[first], (uint64_t)hmax * block) *
               div_up((uint64_t)L->height * (uint64_t)L->v[first], (uint64_t)vmax * block);
    return div_up((uint64_t)L->width, (uint64_t)hmax * block) * div_up((uint64_t)L->height, (uint64_t)vmax * block);
}

/* Walks the entropy-coded data from r->pos to the marker that ends it, counting restart markers. */
static int read_entropy_data(layout_reader *r, uint64_t expected_restarts)
{
    size_t p = r->pos;
    uint64_t restarts = 0;
    for (;;) {
        const unsigned char *ff = p < r->len ? memchr(r->data + p, 0xFF, r->len - p) : NULL;
        if (!ff) return fail(r, "JPEG ends inside scan data (truncated)");
        p = (size_t)(ff - r->data);
        if (p + 1 >= r->len) return fail(r, "JPEG ends inside scan data (truncated)");
        int b = r->data[p + 1];
        if (b == 0x00) {
            p += 2;
        } else if (b == 0xFF) {
            p += 1;
        } else if (b >= 0xD0 && b <= 0xD7) {
            if ((uint64_t)(b - 0xD0) != restarts % 8)
                return fail(r, "JPEG restart marker %d out of order", b - 0xD0);
            restarts++;
            p += 2;
        } else {
            break;
        }
    }
    if (restarts != expected_restarts)
        return fail(r, "JPEG scan has %llu restart markers where its size needs %llu",
                    (unsigned long long)restarts, (unsigned long long)expected_restarts);
    r->out->restart_markers += (int)restarts;
    r->pos = p;
    return IP_OK;
}

static int read_scan(layout_reader *r, const unsigned char *seg, size_t seglen)
{
    if (!r->have_frame) return fail(r, "JPEG scan before the frame header");
    if (r->out->scans < INT_MAX) r->out->scans++;
    int n = seglen ? seg[0] : 0;
    if (n < 1 || n > r->out->components) return fail(r, "JPEG scan has %d components", n);
    if (seglen != 4 + 2 * (size_t)n) return fail(r, "JPEG scan header has a wrong length");
    int first = -1;
    for (int k = 0; k < n; k++) {
        int c = component_index(r, seg[1 + 2 * k]);
        if (c < 0) return fail(r, "JPEG scan names component id %d, not in the frame", seg[1 + 2 * k]);
        if (k == 0) first = c;
    }
    uint64_t mcus = scan_mcus(r, n, first);
    uint64_t expected = r->restart_interval ? div_up(mcus, r->restart_interval) - 1 : 0;
    return read_entropy_data(r, expected);
}

static void read_app(layout_reader *r, int marker, const unsigned char *seg, size_t seglen)
{
    if (marker == 0xE0 && seglen >= 14 && !memcmp(seg, "JFIF", 5)) r->jfif = 1;
    if (marker == 0xEE && seglen >= 12 && !memcmp(seg, "Adobe", 5)) {
        r->adobe = 1;
        r->adobe_transform = seg[11];
    }
}

static jpeg_layout_colour colour_of(const layout_reader *r)
{
    const int *id = r->ids;
    switch (r->out->components) {
    case 1:
        return JL_GRAY;
    case 3:
        if (r->jfif) return JL_YCBCR;
        if (r->adobe) return r->adobe_transform == 0 ? JL_RGB : JL_YCBCR;
        if (id[0] == 'R' && id[1] == 'G' && id[2] == 'B') return JL_RGB;
        return JL_YCBCR;
    case 4:
        return r->adobe && r->adobe_transform != 0 ? JL_YCCK : JL_CMYK;
    default:
        return JL_OTHER;
    }
}

/* Reads the marker at r->pos (after any fill bytes); -1 when the data ends first, -2 when no
 * marker is there. */
static int next_marker(layout_reader *r)
{
    if (r->pos >= r->len) return -1;
    if (r->data[r->pos] != 0xFF) return -2;
    while (r->pos < r->len && r->data[r->pos] == 0xFF) r->pos++;
    if (r->pos >= r->len) return -1;
    return r->data[r->pos++];
}

static int read_segment(layout_reader *r, int m)
{
    if (r->pos + 2 > r->len) return fail(r, "JPEG ends inside a marker segment (truncated)");
    size_t L = be16(r->data + r->pos);
    if (L < 2) return fail(r, "JPEG marker 0x%02X has length %zu", m, L);
    if (r->pos + L > r->len) return fail(r, "JPEG ends inside a marker segment (truncated)");
    const unsigned char *seg = r->data + r->pos + 2;
    size_t seglen = L - 2;
    r->pos += L;
    if (is_frame_marker(m)) return read_frame(r, m, seg, seglen);
    if (m == 0xDA) return read_scan(r, seg, seglen);
    if (m == 0xDD) {
        if (seglen != 2) return fail(r, "JPEG restart interval segment has a wrong length");
        r->restart_interval = be16(seg);
        return IP_OK;
    }
    if (m >= 0xE0 && m <= 0xEF) read_app(r, m, seg, seglen);
    if (m == 0xC4 || m == 0xCC || m == 0xDB || m == 0xFE || (m >= 0xE0 && m <= 0xEF)) return IP_OK;
    return fail(r, "JPEG has an unexpected marker 0x%02X", m);
}

int jpeg_layout_read(const unsigned char *data, size_t len, jpeg_layout *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    layout_reader r = { .data = data, .len = len, .pos = 2, .out = out, .why = why, .whylen = whylen };
    if (len < 2 || data[0] != 0xFF || data[1] != 0xD8) return fail(&r, "not a JPEG (no start-of-image marker)");
    for (;;) {
        int m = next_marker(&r);
        if (m == -1) return fail(&r, "JPEG ends before its end-of-image marker (truncated)");
        if (m == -2) return fail(&r, "JPEG has data where a marker should be");
        if (m == 0xD9) break;
        if (m == 0x01) continue;   /* TEM: no segment, ignored as libjpeg does */
        if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7)) return fail(&r, "JPEG has a stray marker 0x%02X", m);
        if (m == 0xDC) return fail(&r, "JPEG height given in a DNL marker (not supported)");
        int rc = read_segment(&r, m);
        if (rc) return rc;
    }
    if (!r.have_frame || out->scans == 0) return fail(&r, "JPEG has no image data");
    out->colour = colour_of(&r);
    return IP_OK;
}
