#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <inttypes.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "imgpipe/plugin.h"
#include "../common/adapt.h"
#include "../common/cost.h"

/* out and plot point into the core's argument memory, which outlives the stage. */
typedef struct {
    int bins;
    const char *out;
    const char *plot;
} hist_state;

static const ip_param hist_params[] = {
    { "bins", IP_INT, "256", 1, 65536, NULL,
      "bins per channel: 8-bit v*bins/256, 16-bit v*bins/65536, float floor(v*bins) for v in [0,1]" },
    { "out", IP_PATH, "{stem}.hist.csv", 0, 0, NULL,
      "CSV file of the counts; {stem} is the input file's name without folder and extension" },
    { "plot", IP_PATH, "", 0, 0, NULL, "PNG bar chart of the counts (empty: none); {stem} as for out" },
};

static int hist_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    const ip_value *bins = IP_ARG(hist_params, args, "bins"), *out = IP_ARG(hist_params, args, "out"),
                   *plot = IP_ARG(hist_params, args, "plot");
    if (!bins || !out || !plot) {
        snprintf(err, errlen, "histogram's parameter table lacks a parameter its create reads");
        return IP_EINVAL;
    }
    hist_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->bins = (int)bins->i;
    s->out = out->s ? out->s : "";
    s->plot = plot->s ? plot->s : "";
    *state = s;
    return IP_OK;
}

static int hist_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                     char *err, size_t errlen)
{
    const hist_state *s = state;
    if (in->channels < 1) {
        snprintf(err, errlen, "histogram needs at least one channel");
        return IP_EINVAL;
    }
    *out = *in;
    needs->halo = 0;
    needs->scratch_bytes = (size_t)in->channels * (size_t)s->bins * sizeof(uint64_t);
    needs->gpu_scratch_bytes = (size_t)in->channels * (size_t)s->bins * sizeof(uint32_t);
    return IP_OK;
}

/* The input's file name without folder and extension; "image" when there is no file. */
static void hist_stem(const char *input_path, char *stem, size_t len)
{
    if (!input_path) {
        snprintf(stem, len, "image");
        return;
    }
    const char *base = strrchr(input_path, '/');
    base = base ? base + 1 : input_path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    snprintf(stem, len, "%.*s", (int)(n < len ? n : len - 1), base);
}

/* A malloc'd copy of pattern with every "{stem}" replaced; NULL when out of memory. */
static char *hist_expand(const char *pattern, const char *input_path)
{
    char stem[256];
    hist_stem(input_path, stem, sizeof stem);
    size_t count = 0, stem_len = strlen(stem);
    for (const char *p = strstr(pattern, "{stem}"); p; p = strstr(p + 6, "{stem}")) count++;
    size_t len = strlen(pattern) + count * stem_len + 1;
    char *path = malloc(len), *d = path;
    if (!path) return NULL;
    for (const char *p = pattern; *p;) {
        if (!strncmp(p, "{stem}", 6)) {
            memcpy(d, stem, stem_len);
            d += stem_len;
            p += 6;
        } else {
            *d++ = *p++;
        }
    }
    *d = '\0';
    return path;
}

typedef int (*hist_writer)(FILE *f, const void *ctx);

/* Writes through a temporary file in the same folder and renames it, so a failure never
 * leaves a partial file at path. mkstemp makes it 0600; 0644 as an ordinary new file. */
static int hist_write_atomically(const char *path, hist_writer write, const void *ctx, const ip_exec *ex)
{
    size_t len = strlen(path) + 8;
    char *tmp = malloc(len);
    if (!tmp) return IP_ENOMEM;
    snprintf(tmp, len, "%s.XXXXXX", path);
    int fd = mkstemp(tmp), ok = fd >= 0, error = errno;
    FILE *f = ok ? fdopen(fd, "wb") : NULL;
    if (ok && !f) {
        error = errno;
        ok = 0;
        close(fd);
    }
    if (f) {
        fchmod(fd, 0644);
        ok = write(f, ctx) == 0 && !ferror(f);
        error = ok ? 0 : errno ? errno : EIO;
        if (fclose(f) != 0 && ok) {
            error = errno;
            ok = 0;
        }
        if (ok && rename(tmp, path) != 0) {
            error = errno;
            ok = 0;
        }
    }
    if (fd >= 0 && !ok) unlink(tmp);
    free(tmp);
    if (ok) return IP_OK;
    if (ex->err && ex->errlen)
        snprintf(ex->err, ex->errlen, "histogram: cannot write '%s': %s", path, strerror(error ? error : EIO));
    return IP_EIO;
}

typedef struct {
    const uint64_t *counts;
    int channels, bins;
} hist_data;

static const char *hist_channel_name(int channels, int c, char *buf, size_t len)
{
    static const char *const gray_alpha[] = { "gray", "alpha" }, *const rgba[] = { "r", "g", "b", "a" };
    if (channels == 1) return "count";
    if (channels == 2) return gray_alpha[c];
    if (channels <= 4) return rgba[c];
    snprintf(buf, len, "c%d", c);
    return buf;
}

static int hist_write_csv(FILE *f, const void *ctx)
{
    const hist_data *h = ctx;
    char name[16];
    fputs("bin", f);
    for (int c = 0; c < h->channels; c++) fprintf(f, ",%s", hist_channel_name(h->channels, c, name, sizeof name));
    fputc('\n', f);
    for (int b = 0; b < h->bins; b++) {
        fprintf(f, "%d", b);
        for (int c = 0; c < h->channels; c++) fprintf(f, ",%" PRIu64, h->counts[(size_t)c * h->bins + b]);
        fputc('\n', f);
    }
    return 0;
}

enum { PLOT_W = 800, PLOT_H = 400, GLYPH_SCALE = 2, GLYPH_ADVANCE = 4 * GLYPH_SCALE };

typedef struct { uint8_t *rgb; int left, right, top, bottom; } hist_canvas;

/* 3x5 digits, one row of 3 bits per entry (bit 2 is the left column). */
static const uint8_t hist_font[10][5] = {
    { 7, 5, 5, 5, 7 }, { 2, 6, 2, 2, 7 }, { 7, 1, 7, 4, 7 }, { 7, 1, 7, 1, 7 }, { 5, 5, 7, 1, 1 },
    { 7, 4, 7, 1, 7 }, { 7, 4, 7, 5, 7 }, { 7, 1, 1, 1, 1 }, { 7, 5, 7, 5, 7 }, { 7, 5, 7, 1, 7 },
};

static void hist_blend(hist_canvas *cv, int x, int y, const uint8_t colour[3], int alpha256)
{
    if (x < 0 || y < 0 || x >= PLOT_W || y >= PLOT_H) return;
    uint8_t *p = cv->rgb + ((size_t)y * PLOT_W + (size_t)x) * 3;
    for (int k = 0; k < 3; k++) p[k] = (uint8_t)((p[k] * (256 - alpha256) + colour[k] * alpha256) >> 8);
}

static void hist_rect(hist_canvas *cv, int x0, int y0, int x1, int y1, const uint8_t colour[3], int alpha256)
{
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) hist_blend(cv, x, y, colour, alpha256);
}

/* Draws the digits of v with its top-left corner at (x, y). */
static void hist_text(hist_canvas *cv, int x, int y, uint64_t v)
{
    static const uint8_t black[3] = { 0, 0, 0 };
    char digits[24];
    snprintf(digits, sizeof digits, "%" PRIu64, v);
    for (const char *d = digits; *d; d++, x += GLYPH_ADVANCE)
        for (int row = 0; row < 5; row++)
            for (int col = 0; col < 3; col++)
                if (hist_font[*d - '0'][row] >> (2 - col) & 1)
                    hist_rect(cv, x + col * GLYPH_SCALE, y + row * GLYPH_SCALE, x + (col + 1) * GLYPH_SCALE,
                              y + (row + 1) * GLYPH_SCALE, black, 256);
}

static int hist_text_width(uint64_t v)
{
    char digits[24];
    return (int)snprintf(digits, sizeof digits, "%" PRIu64, v) * GLYPH_ADVANCE - GLYPH_SCALE;
}

/* The smallest 1, 2 or 5 times a power of ten that is >= raw. */
static uint64_t hist_nice_step(double raw)
{
    uint64_t p = 1;
    while (p * 10 <= raw) p *= 10;
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static uint64_t hist_max_count(const hist_data *h)
{
    uint64_t m = 1;
    for (size_t i = 0; i < (size_t)h->channels * (size_t)h->bins; i++) m = h->counts[i] > m ? h->counts[i] : m;
    return m;
}

static int hist_count_y(const hist_canvas *cv, uint64_t v, uint64_t top_count)
{
    return cv->bottom - (int)((double)v / (double)top_count * (cv->bottom - cv->top));
}

static void hist_grid(hist_canvas *cv, uint64_t step, uint64_t top_count)
{
    static const uint8_t grid[3] = { 225, 225, 225 };
    for (uint64_t v = step; v <= top_count; v += step) {
        int y = hist_count_y(cv, v, top_count);
        hist_rect(cv, cv->left, y, cv->right, y + 1, grid, 256);
    }
}

static void hist_y_axis(hist_canvas *cv, uint64_t step, uint64_t top_count)
{
    static const uint8_t black[3] = { 0, 0, 0 };
    for (uint64_t v = 0; v <= top_count; v += step) {
        int y = hist_count_y(cv, v, top_count);
        hist_rect(cv, cv->left - 5, y, cv->left, y + 1, black, 256);
        hist_text(cv, cv->left - 10 - hist_text_width(v), y - 5 * GLYPH_SCALE / 2, v);
    }
    hist_rect(cv, cv->left - 1, cv->top, cv->left, cv->bottom + 1, black, 256);
}

static void hist_x_axis(hist_canvas *cv, int bins)
{
    static const uint8_t black[3] = { 0, 0, 0 };
    int plot_w = cv->right - cv->left;
    uint64_t step = hist_nice_step(bins / 8.0);
    for (uint64_t b = 0; b < (uint64_t)bins; b += step) {
        int x = cv->left + (int)(b * (uint64_t)plot_w / (uint64_t)bins);
        hist_rect(cv, x, cv->bottom, x + 1, cv->bottom + 6, black, 256);
        hist_text(cv, x - hist_text_width(b) / 2, cv->bottom + 10, b);
    }
    hist_rect(cv, cv->left - 1, cv->bottom, cv->right, cv->bottom + 1, black, 256);
}

static const uint8_t *hist_colour(int channels, int c)
{
    static const uint8_t gray[3] = { 90, 90, 90 }, palette[][3] = {
        { 220, 30, 30 }, { 30, 160, 30 }, { 30, 70, 220 }, { 60, 60, 60 }, { 200, 120, 0 }, { 140, 40, 180 },
    }, gray_alpha[][3] = { { 90, 90, 90 }, { 140, 40, 180 } };
    if (channels == 1) return gray;
    if (channels == 2) return gray_alpha[c];
    return palette[c % 6];
}

/* Bars per pixel column: the largest count among the bins that fall in it; channels are
 * overlaid half-transparent; narrow gaps separate bars when bins are wide. */
static void hist_bars(hist_canvas *cv, const hist_data *h, uint64_t top_count)
{
    int plot_w = cv->right - cv->left, plot_h = cv->bottom - cv->top;
    int alpha = h->channels == 1 ? 256 : 128;
    for (int px = 0; px < plot_w; px++) {
        int b0 = (int)((int64_t)px * h->bins / plot_w), b1 = (int)(((int64_t)px + 1) * h->bins / plot_w);
        if (b1 <= b0) b1 = b0 + 1;
        int gap = h->bins * 4 <= plot_w && (int)(((int64_t)px + 2) * h->bins / plot_w) > b0;
        for (int c = 0; c < h->channels && !gap; c++) {
            uint64_t m = 0;
            for (int b = b0; b < b1; b++) m = h->counts[(size_t)c * h->bins + b] > m ? h->counts[(size_t)c * h->bins + b] : m;
            int bar = (int)((double)m / (double)top_count * plot_h + 0.5);
            hist_rect(cv, cv->left + px, cv->bottom - bar, cv->left + px + 1, cv->bottom, hist_colour(h->channels, c), alpha);
        }
    }
}

static void hist_draw(hist_canvas *cv, const hist_data *h)
{
    uint64_t max = hist_max_count(h), step = hist_nice_step(max / 5.0);
    uint64_t top_count = (max + step - 1) / step * step;
    memset(cv->rgb, 255, (size_t)PLOT_W * PLOT_H * 3);
    cv->left = hist_text_width(top_count) + 20;
    cv->right = PLOT_W - 20;
    cv->top = 20;
    cv->bottom = PLOT_H - 32;
    hist_grid(cv, step, top_count);
    hist_bars(cv, h, top_count);
    hist_y_axis(cv, step, top_count);
    hist_x_axis(cv, h->bins);
}

static void hist_png_error(png_structp png, png_const_charp msg)
{
    (void)msg;
    png_longjmp(png, 1);
}

static void hist_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static int hist_write_png(FILE *f, const void *ctx)
{
    const uint8_t *rgb = ctx;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, hist_png_error, hist_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, PLOT_W, PLOT_H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < PLOT_H; y++) png_write_row(png, rgb + (size_t)y * PLOT_W * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

static int hist_plot(const char *path, const hist_data *h, const ip_exec *ex)
{
    hist_canvas cv;
    cv.rgb = malloc((size_t)PLOT_W * PLOT_H * 3);
    if (!cv.rgb) return IP_ENOMEM;
    hist_draw(&cv, h);
    int rc = hist_write_atomically(path, hist_write_png, cv.rgb, ex);
    free(cv.rgb);
    return rc;
}

/* Writes the CSV and, when asked, the plot, with {stem} taken from the input's name. */
static int hist_write_outputs(const hist_state *s, const hist_data *h, const ip_exec *ex)
{
    int rc = IP_OK;
    const char *patterns[2] = { s->out, s->plot };
    for (int k = 0; k < 2 && rc == IP_OK; k++) {
        if (!patterns[k][0]) continue;
        char *path = hist_expand(patterns[k], ex->input_path);
        if (!path) return IP_ENOMEM;
        rc = k == 0 ? hist_write_atomically(path, hist_write_csv, h, ex) : hist_plot(path, h, ex);
        free(path);
    }
    if (rc == IP_ENOMEM && ex->err && ex->errlen) snprintf(ex->err, ex->errlen, "histogram: out of memory");
    return rc;
}

static void hist_copy_image(const ip_image *in, ip_image *out)
{
    if (in->data == out->data) return;
    size_t row = (size_t)in->shape.width * (size_t)in->shape.channels * ip_dtype_size(in->shape.dtype);
    for (int y = 0; y < in->shape.height; y++)
        memmove((char *)out->data + (ptrdiff_t)y * out->stride, (const char *)in->data + (ptrdiff_t)y * in->stride, row);
}

static int hist_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const hist_state *s = state;
    size_t need = (size_t)in->shape.channels * (size_t)s->bins * sizeof(uint64_t);
    uint64_t *counts = ex->scratch && ex->scratch_bytes >= need ? ex->scratch : malloc(need);
    if (!counts) return adapt_status(IPK_ENOMEM, "histogram", ex);
    ipk_img src = adapt_img(in);
    int rc = adapt_status(ipk_histogram_cpu(&src, s->bins, counts, ex->threads), "histogram", ex);
    hist_data h = { counts, in->shape.channels, s->bins };
    if (rc == IP_OK) rc = hist_write_outputs(s, &h, ex);
    if (rc == IP_OK) hist_copy_image(in, out);
    if (counts != ex->scratch) free(counts);
    return rc;
}

#ifdef IMGPIPE_HAVE_CUDA
#include <cuda_runtime_api.h>

/* Counts on the device into ex->scratch, brought to the host (they are needed there). */
static int hist_counts_gpu(const hist_state *s, const ip_image *in, const ip_exec *ex, uint64_t *counts)
{
    size_t n = (size_t)in->shape.channels * (size_t)s->bins;
    if (!ex->scratch || ex->scratch_bytes < n * sizeof(uint32_t)) return IPK_EINVAL;
    uint32_t *host = malloc(n * sizeof *host);
    if (!host) return IPK_ENOMEM;
    ipk_img src = adapt_img(in);
    int rc = ipk_histogram_gpu(&src, s->bins, ex->scratch, ex->stream);
    if (rc == IPK_OK &&
        (cudaMemcpyAsync(host, ex->scratch, n * sizeof *host, cudaMemcpyDeviceToHost, (cudaStream_t)ex->stream) != cudaSuccess ||
         cudaStreamSynchronize((cudaStream_t)ex->stream) != cudaSuccess))
        rc = IPK_ECUDA;
    for (size_t i = 0; i < n; i++) counts[i] = host[i];
    free(host);
    return rc;
}

static int hist_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const hist_state *s = state;
    uint64_t *counts = malloc((size_t)in->shape.channels * (size_t)s->bins * sizeof *counts);
    if (!counts) return adapt_status(IPK_ENOMEM, "histogram", ex);
    int rc = adapt_status(hist_counts_gpu(s, in, ex, counts), "histogram", ex);
    hist_data h = { counts, in->shape.channels, s->bins };
    if (rc == IP_OK) rc = hist_write_outputs(s, &h, ex);
    free(counts);
    size_t row = (size_t)in->shape.width * (size_t)in->shape.channels * ip_dtype_size(in->shape.dtype);
    if (rc == IP_OK && in->data != out->data &&
        cudaMemcpy2DAsync(out->data, (size_t)out->stride, in->data, (size_t)in->stride, row,
                          (size_t)in->shape.height, cudaMemcpyDeviceToDevice, (cudaStream_t)ex->stream) != cudaSuccess)
        rc = adapt_status(IPK_ECUDA, "histogram", ex);
    return rc;
}
#endif

/* Streamed: counts per band added into the partial (uint64 per channel and bin), partials
 * added, and the outputs written once from the whole image's counts. */
static size_t hist_partial_bytes(const void *state, const ip_shape *in)
{
    const hist_state *s = state;
    return (size_t)in->channels * (size_t)s->bins * sizeof(uint64_t);
}

static int hist_reduce_band(const void *state, const ip_image *band, void *partial, const ip_exec *ex)
{
    const hist_state *s = state;
    size_t n = (size_t)band->shape.channels * (size_t)s->bins;
    uint64_t *counts = malloc(n * sizeof *counts), *total = partial;
    if (!counts) return adapt_status(IPK_ENOMEM, "histogram", ex);
    int rc;
#ifdef IMGPIPE_HAVE_CUDA
    if (band->on_device) rc = adapt_status(hist_counts_gpu(s, band, ex, counts), "histogram", ex);
    else
#endif
    {
        ipk_img src = adapt_img(band);
        rc = adapt_status(ipk_histogram_cpu(&src, s->bins, counts, ex->threads), "histogram", ex);
    }
    for (size_t i = 0; rc == IP_OK && i < n; i++) total[i] += counts[i];
    free(counts);
    return rc;
}

static void hist_reduce_merge(const void *state, const ip_shape *in, void *total, const void *partial)
{
    size_t n = hist_partial_bytes(state, in) / sizeof(uint64_t);
    const uint64_t *add = partial;
    for (size_t i = 0; i < n; i++) ((uint64_t *)total)[i] += add[i];
}

static int hist_reduce_finish(const void *state, const ip_shape *in, const void *total, const ip_exec *ex)
{
    const hist_state *s = state;
    hist_data h = { total, in->channels, s->bins };
    return hist_write_outputs(s, &h, ex);
}

static int hist_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    (void)state;
    (void)in;
    return cost_set(cost, 9.0, 0.0105);
}

/* The partial is the fused histogram kernel's layout, so the core may count in it and hand the
 * total to hist_reduce_finish. */
static int hist_window(const void *state, const ip_shape *in, ip_window *w)
{
    (void)in;
    w->kind = IP_WINDOW_HISTOGRAM;
    w->bins = ((const hist_state *)state)->bins;
    return IP_OK;
}

static const ip_stage hist_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "histogram",
    .summary = "per-channel counts written as CSV (and a bar chart PNG); the image passes on unchanged",
    .params = hist_params,
    .n_params = IP_COUNT(hist_params),
    .create = hist_create,
    .plan = hist_plan,
    .run_cpu = hist_run_cpu,
    .run_gpu = IP_GPU_ENTRY(hist_run_gpu),
    .destroy = free,
    .stage_class = IP_CLASS_REDUCTION,
    .partial_bytes = hist_partial_bytes,
    .reduce_band = hist_reduce_band,
    .reduce_merge = hist_reduce_merge,
    .reduce_finish = hist_reduce_finish,
    .cost_of = hist_cost,
    .window_of = hist_window,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &hist_stage; }
