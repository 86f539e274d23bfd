/* The band planner of a streamed run: a shape and a memory limit from the input's first bytes,
 * then pipeline text, parsed, planned on that shape, cut into segments (band_plan.h), given a
 * band height for the limit (stream_budget.h), and each segment made for that height, as a
 * streamed run does before decoding. The promises it checks: segments cover the steps in order,
 * a global segment holds one global step, the band height lies in 1..STREAM_MAX_BAND_ROWS, and
 * the memory the segments say they need fits the limit they were given. */
#include <stdlib.h>
#include <string.h>
#include "stream/band.h"
#include "fuzz_common.h"
#include "base/image.h"
#include "plan/pipeline.h"
#include "plan/plan.h"
#include "plan/registry.h"
#include "stream/stream_budget.h"

#ifndef IMGPIPE_FUZZ_PLUGIN_DIR
#define IMGPIPE_FUZZ_PLUGIN_DIR "."
#endif
#define HEADER_BYTES 8

static registry *plugins(void)
{
    static registry reg;
    static int loaded;
    if (!loaded) {
        char err[256];
        const char *dir = getenv("IMGPIPE_FUZZ_PLUGINS");
        if (registry_load(&reg, dir ? dir : IMGPIPE_FUZZ_PLUGIN_DIR, NULL, NULL, err, sizeof err) != IP_OK) abort();
        if (reg.n == 0) abort();
        loaded = 1;
    }
    return &reg;
}

/* Widths and heights up to 2^20 (shapes a run would refuse are planned all the same), any
 * channel count and depth a stage may see, a limit from 4 KiB to 64 MiB. */
static void read_header(const uint8_t *d, ip_shape *shape, uint64_t *limit)
{
    shape->width = 1 + (int32_t)((((uint32_t)d[0] << 8 | d[1]) << (d[4] & 4)) & 0xFFFFF);
    shape->height = 1 + (int32_t)((((uint32_t)d[2] << 8 | d[3]) << (d[4] & 4)) & 0xFFFFF);
    shape->channels = 1 + d[5] % 4;
    shape->dtype = (ip_dtype)(d[6] % 3);
    *limit = (uint64_t)4096 << (d[7] % 15);
}

static void check_layout(const plan *p, const band_layout *l)
{
    int next = 0;
    for (int i = 0; i < l->n; i++) {
        const band_seg *s = &l->segs[i];
        if (s->first != next || s->last <= s->first || s->last > p->n) abort();
        if (s->global && (s->last != s->first + 1 || band_step_class(&p->steps[s->first]) != IP_CLASS_GLOBAL)) abort();
        next = s->last;
    }
    if (next != p->n) abort();
}

static void plan_bands(const plan *p, const ip_shape *shape, uint64_t limit)
{
    band_layout l;
    char err[1024];
    if (band_layout_make(p, &l, err, sizeof err) != IP_OK) return;
    check_layout(p, &l);
    int rows = 0;
    /* as a run counts the output bands queued for the encoder: two rows for each row of a band */
    uint64_t queued_row = 2 * (uint64_t)img_row_bytes(&p->steps[p->n - 1].out);
    if (stream_band_rows(p, &l, limit, 0, queued_row, &rows, err, sizeof err) == IP_OK) {
        if (rows < 1 || rows > STREAM_MAX_BAND_ROWS || (uint64_t)rows * queued_row > limit) abort();
        for (int i = 0; i < l.n; i++) {
            if (l.segs[i].global) continue;
            if (band_segment_bytes(p, &l.segs[i], BAND_ON_HOST, rows) > limit) abort();
            band_segment *seg;
            band_config cfg = { BAND_ON_HOST, 0, 1, "fuzz.tif", rows };
            /* Made (buffers allocated) only for shapes a run would read. */
            if ((uint64_t)shape->width * (uint64_t)shape->height <= FUZZ_MAX_PIXELS &&
                band_segment_create(&seg, p, &l.segs[i], &cfg, err, sizeof err) == IP_OK)
                band_segment_destroy(seg);
        }
    }
    band_layout_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEADER_BYTES) return 0;
    ip_shape shape;
    uint64_t limit;
    read_header(data, &shape, &limit);
    char *text = malloc(size - HEADER_BYTES + 1);
    if (!text) return 0;
    memcpy(text, data + HEADER_BYTES, size - HEADER_BYTES);
    text[size - HEADER_BYTES] = '\0';
    pl_pipeline pl;
    char err[1024];
    if (pl_parse(text, "-e", &pl, err, sizeof err) == IP_OK) {
        plan p;
        if (plan_build(plugins(), &pl, &p, err, sizeof err) == IP_OK) {
            ip_shape final;
            if (plan_shapes(&p, &shape, &final, err, sizeof err) == IP_OK) plan_bands(&p, &shape, limit);
            plan_free(&p);
        }
        pl_free(&pl);
    }
    free(text);
    return 0;
}
