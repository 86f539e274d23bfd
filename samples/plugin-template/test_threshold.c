/* Loads the built threshold plugin as imgpipe would and checks its CPU path against a
 * reference written here: random images with fixed seeds, odd sizes, padded rows. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"

static int failures;

#define EXPECT(cond, ...)                                                  \
    do {                                                                   \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

static uint64_t rng_state;

static uint32_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Two clusters of values, so that Otsu's level is well defined. */
static unsigned random_value(ip_dtype dtype)
{
    unsigned maxval = dtype == IP_U8 ? 255u : 65535u;
    unsigned spread = maxval / 4 + 1, base = next_random() % 2 ? maxval / 8 : maxval / 2;
    return base + next_random() % spread + next_random() % spread;
}

static ip_image make_image(int w, int h, int c, ip_dtype dtype, int pad_bytes, int random)
{
    size_t row = (size_t)w * (size_t)c * ip_dtype_size(dtype) + (size_t)pad_bytes;
    ip_image im = { calloc((size_t)h, row), (ptrdiff_t)row, { w, h, c, dtype }, 0 };
    for (int y = 0; random && y < h; y++)
        for (int i = 0; i < w * c; i++) {
            char *p = (char *)im.data + (ptrdiff_t)y * im.stride;
            if (dtype == IP_U8) ((uint8_t *)p)[i] = (uint8_t)random_value(dtype);
            else ((uint16_t *)p)[i] = (uint16_t)random_value(dtype);
        }
    return im;
}

static unsigned value_at(const ip_image *im, int y, int i)
{
    const char *p = (const char *)im->data + (ptrdiff_t)y * im->stride;
    return im->shape.dtype == IP_U8 ? ((const uint8_t *)p)[i] : ((const uint16_t *)p)[i];
}

/* Otsu's level by its definition: the split that maximises the between-class variance
 * w0 * w1 * (m0 - m1)^2, ties going to the lowest level. */
static long reference_otsu(const ip_image *im)
{
    int bins = im->shape.dtype == IP_U8 ? 256 : 65536;
    double *hist = calloc((size_t)bins, sizeof *hist), total = 0, sum = 0;
    for (int y = 0; y < im->shape.height; y++)
        for (int i = 0; i < im->shape.width * im->shape.channels; i++) hist[value_at(im, y, i)] += 1;
    for (int v = 0; v < bins; v++) {
        total += hist[v];
        sum += v * hist[v];
    }
    double n0 = 0, sum0 = 0, best = 0;
    long level = 0;
    for (int t = 0; t < bins; t++) {
        n0 += hist[t];
        sum0 += t * hist[t];
        double n1 = total - n0;
        if (n0 == 0 || n1 == 0) continue;
        double d = sum0 / n0 - (sum - sum0) / n1, between = n0 * n1 * d * d;
        if (between > best * (1 + 1e-12)) {
            best = between;
            level = t;
        }
    }
    free(hist);
    return level;
}

typedef struct {
    const ip_stage *stage;
    void *state;
} loaded_stage;

#define MAX_ARGS 8

/* Sets the argument called name in args (in the stage's table order, as the core hands them over). */
static void set_arg(const ip_stage *stage, ip_value *args, const char *name, double f, int64_t i)
{
    const ip_value *slot = ip_arg(stage->params, stage->n_params, args, name);
    EXPECT(slot != NULL, "the stage has no parameter '%s'", name);
    if (!slot) return;
    args[slot - args].f = f;
    args[slot - args].i = i;
}

/* mode: 0 binary, 1 otsu (the index of its choice). */
static loaded_stage create_stage(const ip_stage *stage, double value, int mode, int invert)
{
    ip_value args[MAX_ARGS];
    memset(args, 0, sizeof args);
    EXPECT(stage->n_params <= MAX_ARGS, "%d parameters", stage->n_params);
    set_arg(stage, args, "value", value, (int64_t)value);
    set_arg(stage, args, "mode", mode, mode);
    set_arg(stage, args, "invert", invert, invert);
    loaded_stage ls = { stage, NULL };
    char err[256] = "";
    int rc = stage->create(args, &ls.state, err, sizeof err);
    EXPECT(rc == IP_OK, "create failed: %s", err);
    return ls;
}

static void check_case(const ip_stage *stage, int w, int h, int c, ip_dtype dtype, double value, int mode, int invert)
{
    loaded_stage ls = create_stage(stage, value, mode, invert);
    ip_shape out_shape;
    ip_needs needs = { 0, 0, 0 };
    char err[256] = "";
    ip_image in = make_image(w, h, c, dtype, 7, 1), out = make_image(w, h, c, dtype, 3, 0);
    int rc = stage->plan(ls.state, &in.shape, &out_shape, &needs, err, sizeof err);
    EXPECT(rc == IP_OK && memcmp(&out_shape, &in.shape, sizeof out_shape) == 0, "plan %dx%dx%d: %s", w, h, c, err);
    void *scratch = malloc(needs.scratch_bytes ? needs.scratch_bytes : 1);
    char msg[256] = "";
    ip_exec ex = { NULL, 1, NULL, scratch, needs.scratch_bytes, msg, sizeof msg };
    rc = stage->run_cpu(ls.state, &in, &out, &ex);
    EXPECT(rc == IP_OK, "run_cpu %dx%dx%d: %s", w, h, c, msg);
    long level = mode ? reference_otsu(&in) : (long)value;
    unsigned maxval = dtype == IP_U8 ? 255u : 65535u;
    int wrong = 0;
    for (int y = 0; y < h; y++)
        for (int i = 0; i < w * c; i++) {
            unsigned above = value_at(&in, y, i) > level, want = above != (unsigned)invert ? maxval : 0;
            wrong += value_at(&out, y, i) != want;
        }
    EXPECT(wrong == 0, "%dx%dx%d %s value=%g mode=%d invert=%d (level %ld): %d values differ", w, h, c,
           dtype == IP_U8 ? "u8" : "u16", value, mode, invert, level, wrong);
    free(scratch);
    free(in.data);
    free(out.data);
    stage->destroy(ls.state);
}

static void check_refuses_float(const ip_stage *stage)
{
    loaded_stage ls = create_stage(stage, 128, 0, 0);
    ip_shape in = { 5, 5, 1, IP_F32 }, out;
    ip_needs needs = { 0, 0, 0 };
    char err[256] = "";
    int rc = stage->plan(ls.state, &in, &out, &needs, err, sizeof err);
    EXPECT(rc != IP_OK && strstr(err, "float"), "a float image was accepted (rc %d, '%s')", rc, err);
    stage->destroy(ls.state);
}

int main(void)
{
    void *handle = dlopen(PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        fprintf(stderr, "cannot load %s: %s\n", PLUGIN_FILE, dlerror());
        return 1;
    }
    const ip_stage *(*entry)(void);
    void *sym = dlsym(handle, "imgpipe_stage");
    EXPECT(sym != NULL, "imgpipe_stage() is not exported");
    if (!sym) return 1;
    memcpy(&entry, &sym, sizeof entry);
    const ip_stage *stage = entry();
    EXPECT(stage->abi_version == IP_ABI_VERSION && stage->struct_size == sizeof(ip_stage), "wrong ABI");
    EXPECT(strcmp(stage->name, "threshold") == 0, "stage name is '%s'", stage->name);

    static const int sizes[][2] = { { 1, 1 }, { 1, 17 }, { 23, 1 }, { 31, 29 }, { 64, 3 } };
    rng_state = 0x9e3779b97f4a7c15ull;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int c = 1; c <= 4; c++) {
            check_case(stage, sizes[k][0], sizes[k][1], c, IP_U8, 100, 0, 0);
            check_case(stage, sizes[k][0], sizes[k][1], c, IP_U16, 40000.5, 0, 1);
        }
    check_case(stage, 1, 1, 1, IP_U8, 300, 0, 0);
    check_case(stage, 1, 1, 1, IP_U8, 0, 1, 0);
    check_case(stage, 97, 61, 1, IP_U8, 0, 1, 0);
    check_case(stage, 53, 41, 3, IP_U8, 0, 1, 1);
    check_case(stage, 89, 67, 1, IP_U16, 0, 1, 0);
    check_refuses_float(stage);
    dlclose(handle);
    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
