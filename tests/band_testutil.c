#define _POSIX_C_SOURCE 200809L
#include "band_testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/image.h"
#include "plan_testutil.h"
#include "testutil.h"

ip_image bt_random_image(const ip_shape *s, uint64_t seed, int max_value)
{
    tu_rng r;
    tu_seed(&r, seed);
    ipk_img k = tu_img_random(s->width, s->height, s->channels, (ipk_dtype)s->dtype, 0, &r);
    if (max_value > 0) {
        size_t n = (size_t)s->width * s->height * s->channels;
        for (size_t i = 0; i < n; i++) {
            if (s->dtype == IP_U8) ((uint8_t *)k.data)[i] %= (uint8_t)(max_value + 1 > 255 ? 255 : max_value + 1);
            else if (s->dtype == IP_U16) ((uint16_t *)k.data)[i] %= (uint16_t)(max_value + 1);
        }
    }
    ip_image im = { k.data, k.stride, *s, 0 };
    return im;
}

int bt_run_whole(const registry *reg, const char *text, const ip_image *in, exec_device dev, ip_image *out)
{
    plan p;
    if (!tu_build_plan(reg, text, &in->shape, &p)) return 0;
    exec_options eo = { dev, 0, 2, EXEC_COPY, 0, 0 };
    exec_ctx *ctx = NULL;
    char err[1024] = "";
    ip_image res;
    int rc = exec_create(&ctx, &eo, err, sizeof err);
    if (rc == IP_OK) rc = exec_run(ctx, &p, in, "whole.png", &res, NULL, err, sizeof err);
    if (rc == IP_OK) rc = img_alloc(out, &res.shape, UINT64_MAX, err, sizeof err);
    if (rc == IP_OK)
        for (int y = 0; y < res.shape.height; y++)
            memcpy((char *)out->data + y * out->stride, (char *)res.data + y * res.stride, img_row_bytes(&res.shape));
    CHECK(rc == IP_OK, "%s: whole: %s", text, err);
    exec_destroy(ctx);
    plan_free(&p);
    return rc == IP_OK;
}

int bt_run_streamed(const registry *reg, const char *text, const ip_image *in, const stream_options *so,
                    ip_image *out, stream_profile *prof)
{
    plan p;
    if (!tu_build_plan(reg, text, &in->shape, &p)) return 0;
    stream_image_source src_state;
    stream_source src = stream_source_of_image(&src_state, in, so->band_rows);
    stream_image_sink sink_state;
    char err[1024] = "";
    int rc = stream_image_sink_init(&sink_state, &p.steps[p.n - 1].out, err, sizeof err);
    band_sink sink = stream_sink_of_image(&sink_state);
    if (rc == IP_OK) rc = stream_run(&p, &src, &sink, so, prof, err, sizeof err);
    if (rc == IP_OK && sink_state.rows_in != sink_state.img.shape.height) rc = IP_EINVAL;
    CHECK(rc == IP_OK, "%s: streamed (bands of %d, %d workers, %s): %s", text, so->band_rows, so->n_workers,
          so->place == BAND_ON_GPU ? "gpu" : "cpu", err);
    if (rc == IP_OK) *out = sink_state.img;
    else img_free(&sink_state.img);
    plan_free(&p);
    return rc == IP_OK;
}

int bt_same_image(const ip_image *a, const ip_image *b)
{
    if (memcmp(&a->shape, &b->shape, sizeof a->shape) != 0) return 0;
    size_t row = img_row_bytes(&a->shape);
    for (int y = 0; y < a->shape.height; y++)
        if (memcmp((char *)a->data + y * a->stride, (char *)b->data + y * b->stride, row) != 0) return 0;
    return 1;
}

static double value_at(const ip_image *im, int y, size_t i)
{
    const char *row = (const char *)im->data + (ptrdiff_t)y * im->stride;
    if (im->shape.dtype == IP_U8) return ((const uint8_t *)row)[i];
    if (im->shape.dtype == IP_U16) return ((const uint16_t *)row)[i];
    return ((const float *)row)[i];
}

double bt_max_diff(const ip_image *a, const ip_image *b)
{
    if (memcmp(&a->shape, &b->shape, sizeof a->shape) != 0) return INFINITY;
    double most = 0;
    size_t n = (size_t)a->shape.width * (size_t)a->shape.channels;
    for (int y = 0; y < a->shape.height; y++)
        for (size_t i = 0; i < n; i++) {
            double d = fabs(value_at(a, y, i) - value_at(b, y, i));
            if (d > most || d != d) most = d != d ? INFINITY : d;
        }
    return most;
}

char *bt_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    if (buf) buf[fread(buf, 1, (1 << 20) - 1, f)] = '\0';
    fclose(f);
    return buf;
}
