/* Run-time fusion and CUDA graphs on the GPU, through the executor: every fused group of the
 * in-tree stages (and the test plugin pointinv) against the same chain unfused, byte for byte
 * (median 3x3, mean of radius 1 to 16 and integer convolve up to 31x31 as consumers),
 * on odd sizes (1x1, 1xN, Nx1, prime widths, widths around the fused median's threads and warps),
 * host inputs, device inputs with strides that are not the width (unaligned rows), and zero-copy;
 * graphs replayed on new pixels against plain runs; the disk cache compiled once, then reused,
 * and missed when a source changes. Entropy's outputs (f32 or u8) are compared byte for byte too:
 * the fused kernel runs the unfused one's code; a fused histogram's CSV against the unfused one's
 * and against counts made here. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/exec.h"
#include "exec/fuse.h"
#include "gpu/gpu.h"
#include "gpu_testutil.h"
#include "base/image.h"
#include "plan_testutil.h"
#include "plan/plan.h"
#include "plan/registry.h"

static registry reg;

static exec_ctx *make_ctx(exec_transfer transfer, int no_fuse, int no_graph, int profile)
{
    exec_options eo = { EXEC_GPU, 0, 2, transfer, profile, 0 };
    exec_fusion_options fo = { no_fuse, no_graph, 1 };
    exec_ctx *ctx = NULL;
    char err[512];
    CHECK(exec_create(&ctx, &eo, err, sizeof err) == IP_OK, "exec_create: %s", err);
    if (ctx) exec_set_fusion(ctx, &fo);
    return ctx;
}

/* Runs p on in and returns a packed host copy of the result (NULL on failure). */
static unsigned char *run_copy(exec_ctx *ctx, const plan *p, const ip_image *in, const char *what, exec_profile *prof)
{
    ip_image out;
    char err[1024];
    int rc = exec_run(ctx, p, in, NULL, &out, prof, err, sizeof err);
    CHECK(rc == IP_OK, "%s: %s", what, err);
    if (rc != IP_OK) return NULL;
    size_t row = img_row_bytes(&out.shape);
    unsigned char *copy = malloc(row * (size_t)out.shape.height + 1);
    for (int y = 0; copy && y < out.shape.height; y++)
        memcpy(copy + (size_t)y * row, (const char *)out.data + (ptrdiff_t)y * out.stride, row);
    return copy;
}

static size_t result_bytes(const plan *p)
{
    return img_row_bytes(&p->steps[p->n - 1].out) * (size_t)p->steps[p->n - 1].out.height;
}

static const char *const chains[] = {
    "grayscale | median", "grayscale | median border=reflect101", "grayscale | median border=zero",
    "grayscale | pointinv | median", "grayscale | pointinv", "pointinv | pointinv", "pointinv | pointinv | median",
    "grayscale | median | grayscale | median", "pointinv | grayscale | pointinv | median border=zero",
    "grayscale | pointinv | pointinv | median border=reflect101", "pointinv | pointinv | pointinv",
    /* Mean fused into a shared tile: every border, radii 1 to 16 (the tile's halo); with 3
     * channels pointinv | pointinv fuses alone and the mean runs apart. */
    "grayscale | pointinv | mean border=shrink", "pointinv | pointinv | mean radius=3", "grayscale | mean",
    "grayscale | mean radius=2 border=replicate", "grayscale | mean radius=7 border=zero",
    "grayscale | mean radius=15 border=shrink", "grayscale | pointinv | mean radius=16 border=reflect101",
    /* Convolve with whole weights: named kernels, literal matrices, the shift, odd and double
     * roundings (conv_round.h), every border, negative sums. The 3x3s and 5x5s have weights too
     * large for the vec kernel's lanes and do not split into a row and a column: the vec kernel
     * and the separable passes take the others apart. */
    "grayscale | convolve kernel=\"64 64 64; 64 65 64; 64 64 64\" divisor=512",
    "grayscale | pointinv | convolve kernel=\"90 1 90; 1 1 1; 90 1 90\" border=zero",
    "grayscale | convolve kernel=\"2 8 12 8 2; 8 32 48 32 8; 12 48 73 48 12; 8 32 48 32 8; 2 8 12 8 2\" divisor=512 border=shrink",
    "grayscale | convolve kernel=\"0 -100 0; -100 500 -100; 0 -100 0\" border=replicate",
    "grayscale | convolve kernel=\"-100 0 100; -200 1 200; -100 0 100\" offset=128",
    "grayscale | convolve kernel=\"-200 -1 0; -1 1 1; 0 1 200\" divisor=3 offset=0.5",
    "grayscale | convolve kernel=\"0 100 0; 100 -400 100; 0 100 0\" divisor=-3 offset=7",
    "grayscale | pointinv | convolve kernel=\"1 2 3 2 1\" border=reflect101",
    "grayscale | convolve kernel=\"1; -2; 7; 0; 5; 0; 1; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; 0; "
    "0; 0; 0; 0; 0; 9\" divisor=7 border=replicate",
    /* Entropy's fast path: radii 1..3, bins 1..16, levels >= 256, f32 and u8, every base. */
    "grayscale | entropy", "grayscale | entropy radius=1 bins=8 output=u8",
    "grayscale | pointinv | entropy radius=3 base=2", "grayscale | pointinv | entropy levels=65536 bins=5 base=10 output=u8",
    "pointinv | grayscale | entropy radius=1 bins=1", "grayscale | entropy radius=3 levels=1000 bins=13 output=u8",
};
static const int sizes[][2] = { { 1, 1 }, { 1, 7 }, { 333, 1 }, { 16, 16 }, { 17, 5 }, { 101, 37 }, { 1031, 19 },
                                { 64, 300 }, { 131, 67 }, { 2053, 67 } };
/* IMGPIPE_TEST_QUICK=1 (compute-sanitizer): three sizes, one and three channels */
static int quick;

static int size_wanted(size_t s) { return !quick || s == 1 || s == 4 || s == 8; }
static int channels_wanted(int c) { return !quick || c == 1 || c == 3; }

static ip_image host_image(const ipk_img *k)
{
    ip_image im = { k->data, k->stride, { k->width, k->height, k->channels, (ip_dtype)k->dtype }, 0 };
    return im;
}

/* One chain's plan on one random input, on the host and uploaded with an odd stride. */
typedef struct {
    plan p;
    ipk_img host, dev;
    ip_image in, dev_in;
    char what[1600];
} fuse_input;

static int input_open(fuse_input *fi, const char *text, int w, int h, int c, uint64_t seed, int pad)
{
    ip_shape shape = { w, h, c, IP_U8 };
    if (!tu_build_plan(&reg, text, &shape, &fi->p)) return 0;
    tu_rng r;
    tu_seed(&r, seed);
    fi->host = tu_img_random(w, h, c, IPK_U8, pad, &r);
    fi->in = host_image(&fi->host);
    fi->dev = dev_upload(&fi->host, 0);
    fi->dev_in = (ip_image){ fi->dev.data, fi->dev.stride, shape, 1 };
    snprintf(fi->what, sizeof fi->what, "%s on %dx%dx%d", text, w, h, c);
    return 1;
}

static void input_close(fuse_input *fi)
{
    dev_free(&fi->dev);
    tu_img_free(&fi->host);
    plan_free(&fi->p);
}

/* The result of the fused run (host input), checking that the chain was fused. */
static unsigned char *run_fused_copy(exec_ctx *fused, const fuse_input *fi)
{
    exec_profile prof;
    unsigned char *got = run_copy(fused, &fi->p, &fi->in, fi->what, &prof);
    CHECK(prof.stage_fused[0] >= 2, "%s: the chain was not fused (%d)", fi->what, prof.stage_fused[0]);
    return got;
}

/* One chain on one input, fused (copy, device input with an odd stride, zero-copy) against unfused. */
static void compare_one(const char *text, int w, int h, int c, uint64_t seed, exec_ctx *plain, exec_ctx *fused,
                        exec_ctx *zerocopy)
{
    fuse_input fi;
    if (!input_open(&fi, text, w, h, c, seed, 5)) return;
    const char *what = fi.what;
    unsigned char *want = run_copy(plain, &fi.p, &fi.in, what, NULL), *got = run_fused_copy(fused, &fi);
    unsigned char *zc = run_copy(zerocopy, &fi.p, &fi.in, what, NULL);
    unsigned char *from_dev = run_copy(fused, &fi.p, &fi.dev_in, what, NULL);
    size_t n = result_bytes(&fi.p);
    CHECK(want && got && memcmp(want, got, n) == 0, "%s: fused differs from unfused", what);
    CHECK(want && zc && memcmp(want, zc, n) == 0, "%s: fused zero-copy differs from unfused", what);
    CHECK(want && from_dev && memcmp(want, from_dev, n) == 0, "%s: fused from a strided device input differs", what);
    free(want);
    free(got);
    free(zc);
    free(from_dev);
    input_close(&fi);
}

static void test_fused_against_unfused(void)
{
    exec_ctx *plain = make_ctx(EXEC_COPY, 1, 1, 0), *fused = make_ctx(EXEC_COPY, 0, 1, 1);
    exec_ctx *zerocopy = make_ctx(EXEC_ZEROCOPY, 0, 1, 0);
    if (!plain || !fused || !zerocopy) return;
    uint64_t seed = 1;
    for (size_t i = 0; i < sizeof chains / sizeof *chains; i++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (int c = 1; c <= 4; c++) {
                if ((strncmp(chains[i], "grayscale", 9) && c == 2) || !size_wanted(s) || !channels_wanted(c)) continue;
                compare_one(chains[i], sizes[s][0], sizes[s][1], c, seed++, plain, fused, zerocopy);
            }
    exec_destroy(plain);
    exec_destroy(fused);
    exec_destroy(zerocopy);
}

/* The fused median's layout (kernels/fused/fused_median3.cu): 16 columns a thread, 512 a warp, 4
 * rows a thread and 16 a block, whose 18 input rows go through the chain into shared memory first
 * (16-byte loads all issued first where the 18 rows and 512 columns lie inside the image: 1024 x
 * 34 and 1100 x 50 have such blocks beside others). Widths around those (the warps' edge pixels,
 * lanes right of the image, a last warp with one lane inside), heights that are multiples of the
 * rows and not (the last rows read inside or through the border), every border, 1 to 4 channels
 * into the chain. */
static void test_fused_median_layout(void)
{
    static const char *const median_chains[] = { "grayscale | median", "grayscale | pointinv | median border=zero",
                                                  "pointinv | grayscale | median border=reflect101" };
    static const int shapes[][2] = { { 15, 6 }, { 16, 4 }, { 17, 3 }, { 31, 2 }, { 48, 16 }, { 511, 5 },
                                     { 512, 17 }, { 513, 15 }, { 528, 9 }, { 1024, 32 }, { 1041, 7 },
                                     { 1024, 34 }, { 1100, 50 } };
    exec_ctx *plain = make_ctx(EXEC_COPY, 1, 1, 0), *fused = make_ctx(EXEC_COPY, 0, 1, 1);
    exec_ctx *zerocopy = make_ctx(EXEC_ZEROCOPY, 0, 1, 0);
    uint64_t seed = 500;
    for (size_t i = 0; plain && fused && zerocopy && i < sizeof median_chains / sizeof *median_chains; i++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int c = 1; c <= 4; c++) {
                if ((strncmp(median_chains[i], "grayscale", 9) && c == 2) || (quick && (s % 3 || !channels_wanted(c))))
                    continue;
                compare_one(median_chains[i], shapes[s][0], shapes[s][1], c, seed++, plain, fused, zerocopy);
            }
    exec_destroy(plain);
    exec_destroy(fused);
    exec_destroy(zerocopy);
}

/* A side x side convolve of whole weights from -3 to 3 after grayscale, as pipeline text. */
static char *large_convolve(int side, const char *border)
{
    size_t cap = (size_t)side * side * 4 + 128;
    char *text = malloc(cap);
    if (!text) return NULL;
    size_t used = (size_t)snprintf(text, cap, "grayscale | convolve border=%s kernel=\"", border);
    for (int i = 0; i < side * side; i++)
        used += (size_t)snprintf(text + used, cap - used, "%d%s", (i * 5) % 7 - 3,
                                 i == side * side - 1 ? "\"" : (i + 1) % side == 0 ? ";" : " ");
    return text;
}

/* The largest kernel the tile holds (31x31, radius 15), RGB and RGBA, on sizes around the tile's. */
static void test_large_convolve(void)
{
    exec_ctx *plain = make_ctx(EXEC_COPY, 1, 1, 0), *fused = make_ctx(EXEC_COPY, 0, 1, 1);
    exec_ctx *zerocopy = make_ctx(EXEC_ZEROCOPY, 0, 1, 0);
    char *zero = large_convolve(31, "zero"), *reflect = large_convolve(31, "reflect101");
    static const int shapes[][2] = { { 1, 1 }, { 31, 2 }, { 129, 65 }, { 300, 140 } };
    uint64_t seed = 900;
    for (int i = 0; plain && fused && zerocopy && zero && reflect && i < (quick ? 3 : 4); i++)
        for (int c = 3; c <= 4; c++) {
            compare_one(zero, shapes[i][0], shapes[i][1], c, seed++, plain, fused, zerocopy);
            compare_one(reflect, shapes[i][0], shapes[i][1], c, seed++, plain, fused, zerocopy);
        }
    free(zero);
    free(reflect);
    exec_destroy(plain);
    exec_destroy(fused);
    exec_destroy(zerocopy);
}

/* The whole file at path, NUL-terminated (NULL if unreadable), removed after reading. */
static char *take_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        text = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (text && (fseek(f, 0, SEEK_SET) != 0 || fread(text, 1, (size_t)n, f) != (size_t)n)) {
            free(text);
            text = NULL;
        }
        if (text) text[n] = '\0';
    }
    if (f) fclose(f);
    remove(path);
    return text;
}

/* The CSV plugins/histogram writes, computed here from the passed-on image (packed u8). */
static char *reference_csv(const unsigned char *img, const ip_shape *s, int bins)
{
    static const char *const names[4][4] = { { "count" }, { "gray", "alpha" }, { "r", "g", "b" }, { "r", "g", "b", "a" } };
    size_t n = (size_t)s->channels * (size_t)bins, px = (size_t)s->width * (size_t)s->height;
    uint64_t *counts = calloc(n, sizeof *counts);
    size_t cap = 64 + (size_t)bins * (12 + 21 * (size_t)s->channels), used = 0;
    char *csv = malloc(cap);
    if (!counts || !csv) {
        free(counts);
        free(csv);
        return NULL;
    }
    for (size_t i = 0; i < px * (size_t)s->channels; i++)
        counts[(i % (size_t)s->channels) * (size_t)bins + (size_t)img[i] * (size_t)bins / 256]++;
    used += (size_t)snprintf(csv + used, cap - used, "bin");
    for (int c = 0; c < s->channels; c++) used += (size_t)snprintf(csv + used, cap - used, ",%s", names[s->channels - 1][c]);
    used += (size_t)snprintf(csv + used, cap - used, "\n");
    for (int b = 0; b < bins; b++) {
        used += (size_t)snprintf(csv + used, cap - used, "%d", b);
        for (int c = 0; c < s->channels; c++)
            used += (size_t)snprintf(csv + used, cap - used, ",%llu", (unsigned long long)counts[(size_t)c * bins + b]);
        used += (size_t)snprintf(csv + used, cap - used, "\n");
    }
    free(counts);
    return csv;
}

/* Points then histogram, fused (host input, and a device input with an odd stride) against
 * unfused: the passed-on image byte for byte, the CSV byte for byte, and the CSV against counts
 * made here from the unfused image. */
static void compare_histogram(const char *chain, int bins, int w, int h, int c, uint64_t seed, exec_ctx *plain,
                              exec_ctx *fused)
{
    char text[1400], csv[1100];
    snprintf(csv, sizeof csv, "%s/fused-hist.csv", tu_tmpdir());
    snprintf(text, sizeof text, "%s | histogram bins=%d out=%s", chain, bins, csv);
    fuse_input fi;
    if (!input_open(&fi, text, w, h, c, seed, 3)) return;
    const char *what = fi.what;
    unsigned char *want = run_copy(plain, &fi.p, &fi.in, what, NULL);
    char *want_csv = take_file(csv);
    unsigned char *got = run_fused_copy(fused, &fi);
    char *got_csv = take_file(csv);
    unsigned char *from_dev = run_copy(fused, &fi.p, &fi.dev_in, what, NULL);
    char *dev_csv = take_file(csv);
    char *ref = want ? reference_csv(want, &fi.p.steps[fi.p.n - 1].out, bins) : NULL;
    size_t n = result_bytes(&fi.p);
    CHECK(want && got && memcmp(want, got, n) == 0, "%s: fused image differs from unfused", what);
    CHECK(want && from_dev && memcmp(want, from_dev, n) == 0, "%s: fused from a strided device input differs", what);
    CHECK(want_csv && ref && strcmp(want_csv, ref) == 0, "%s: unfused CSV differs from the reference counts", what);
    CHECK(want_csv && got_csv && strcmp(want_csv, got_csv) == 0, "%s: fused CSV differs from unfused", what);
    CHECK(want_csv && dev_csv && strcmp(want_csv, dev_csv) == 0, "%s: fused CSV (device input) differs", what);
    free(want);
    free(got);
    free(from_dev);
    free(want_csv);
    free(got_csv);
    free(dev_csv);
    free(ref);
    input_close(&fi);
}

static void test_fused_histogram(void)
{
    static const char *const hist_chains[] = { "grayscale", "grayscale | pointinv", "pointinv", "pointinv | pointinv" };
    static const int bins[] = { 1, 7, 256, 1000 };
    exec_ctx *plain = make_ctx(EXEC_COPY, 1, 1, 0), *fused = make_ctx(EXEC_COPY, 0, 1, 1);
    if (!plain || !fused) return;
    uint64_t seed = 7000;
    for (size_t i = 0; i < sizeof hist_chains / sizeof *hist_chains; i++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (int c = 1; c <= 4; c++) {
                if ((strncmp(hist_chains[i], "grayscale", 9) && c == 2) || !size_wanted(s) || !channels_wanted(c))
                    continue;
                compare_histogram(hist_chains[i], bins[(s + (size_t)c) % 4], sizes[s][0], sizes[s][1], c, seed++,
                                  plain, fused);
            }
    exec_destroy(plain);
    exec_destroy(fused);
}

/* Images of one shape with new pixels: from the second on they run as a graph. */
static void test_graph_replay(void)
{
    const char *texts[] = { "grayscale | median | mean | convolve kernel=gaussian3", "median | median radius=2",
                            "grayscale | median" };
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        exec_ctx *plain = make_ctx(EXEC_COPY, 1, 1, 0), *graphed = make_ctx(EXEC_COPY, 0, 0, 0);
        ip_shape shape = { 257, 131, 3, IP_U8 };
        plan p;
        if (!plain || !graphed || !tu_build_plan(&reg, texts[t], &shape, &p)) continue;
        for (int i = 0; i < 4; i++) {
            tu_rng r;
            tu_seed(&r, 100 + (uint64_t)i);
            ipk_img k = tu_img_random(shape.width, shape.height, shape.channels, IPK_U8, 0, &r);
            ip_image in = host_image(&k);
            exec_profile prof;
            ip_image out;
            char err[512];
            unsigned char *want = run_copy(plain, &p, &in, texts[t], NULL);
            int rc = exec_run(graphed, &p, &in, NULL, &out, &prof, err, sizeof err);
            CHECK(rc == IP_OK, "%s: %s", texts[t], err);
            /* The first image runs plain; the second (same shape) is captured, later ones replay. */
            CHECK(prof.graphed == (i > 0), "%s: image %d graphed %d", texts[t], i, prof.graphed);
            size_t row = img_row_bytes(&out.shape);
            int same = rc == IP_OK && want != NULL;
            for (int y = 0; same && y < out.shape.height; y++)
                same = memcmp(want + (size_t)y * row, (const char *)out.data + (ptrdiff_t)y * out.stride, row) == 0;
            CHECK(same, "%s: graph replay %d differs from the plain run", texts[t], i);
            free(want);
            tu_img_free(&k);
        }
        plan_free(&p);
        exec_destroy(plain);
        exec_destroy(graphed);
    }
}

/* Notes of a fresh context's first run of text: what fusion did. */
static void run_fresh(const char *text, char *notes, size_t len)
{
    exec_ctx *ctx = make_ctx(EXEC_COPY, 0, 1, 0);
    ip_shape shape = { 40, 30, 3, IP_U8 };
    plan p;
    notes[0] = '\0';
    if (!ctx || !tu_build_plan(&reg, text, &shape, &p)) return;
    tu_rng r;
    tu_seed(&r, 5);
    ipk_img k = tu_img_random(40, 30, 3, IPK_U8, 0, &r);
    ip_image in = host_image(&k);
    free(run_copy(ctx, &p, &in, text, NULL));
    snprintf(notes, len, "%s", exec_take_notes(ctx));
    tu_img_free(&k);
    plan_free(&p);
    exec_destroy(ctx);
}

static void test_disk_cache(void)
{
    char xdg[1024], notes[1024];
    snprintf(xdg, sizeof xdg, "%s/fuse-gpu-cache", tu_tmpdir());
    setenv("XDG_CACHE_HOME", xdg, 1);
    run_fresh("grayscale | median", notes, sizeof notes);
    CHECK(strstr(notes, "compiled by NVRTC"), "first run did not compile: %s", notes);
    run_fresh("grayscale | median", notes, sizeof notes);
    CHECK(strstr(notes, "loaded from the disk cache"), "second run did not reuse the cache: %s", notes);
    run_fresh("grayscale weights=bt709 | median", notes, sizeof notes);
    CHECK(strstr(notes, "compiled by NVRTC"), "another source reused a cached kernel: %s", notes);

    /* Compiled beside decoding (fuse_warm), then found in the cache by the run. */
    ip_shape shape = { 40, 30, 3, IP_U8 };
    plan p;
    if (tu_build_plan(&reg, "grayscale weights=average | median border=zero", &shape, &p)) {
        double ms = 0;
        int compiled = fuse_warm_end(fuse_warm_begin(&p, 0), &ms);
        CHECK(compiled == 1, "the warm-up compiled %d kernels", compiled);
        CHECK(fuse_warm_end(fuse_warm_begin(&p, 0), &ms) == 0, "the warm-up compiled a cached kernel again");
        plan_free(&p);
    }
    run_fresh("grayscale weights=average | median border=zero", notes, sizeof notes);
    CHECK(strstr(notes, "loaded from the disk cache"), "the warmed kernel was not found in the cache: %s", notes);
}

typedef struct {
    const plan *p;
    fuse_group g;
    int compiled, loaded;
} maker;

static void *make_kernel(void *arg)
{
    maker *m = arg;
    fuser *f = NULL;
    fuse_kernel k;
    char err[512];
    if (gpu_select(0, err, sizeof err) == IP_OK && fuser_create(&f, 0, err, sizeof err) == IP_OK &&
        fuser_prepare(f, m->p, &m->g, &k, err, sizeof err) == IP_OK) {
        m->compiled = k.compiled;
        m->loaded = k.function != NULL;
    }
    fuser_destroy(f);
    return NULL;
}

/* A folder's workers meeting a kernel missing from the cache at once: one compiles it, the others
 * wait for it and load it from the cache. */
static void test_one_compile(void)
{
    enum { MAKERS = 6 };
    char xdg[1024];
    snprintf(xdg, sizeof xdg, "%s/fuse-gpu-cache-makers", tu_tmpdir());
    setenv("XDG_CACHE_HOME", xdg, 1);
    ip_shape shape = { 40, 30, 3, IP_U8 };
    plan p;
    if (!tu_build_plan(&reg, "grayscale weights=average | mean radius=2", &shape, &p)) return;
    maker m[MAKERS];
    pthread_t t[MAKERS];
    for (int i = 0; i < MAKERS; i++) m[i] = (maker){ &p, fuse_group_at(&p, 0), 0, 0 };
    for (int i = 0; i < MAKERS; i++) pthread_create(&t[i], NULL, make_kernel, &m[i]);
    int compiled = 0, loaded = 0;
    for (int i = 0; i < MAKERS; i++) {
        pthread_join(t[i], NULL);
        compiled += m[i].compiled;
        loaded += m[i].loaded;
    }
    CHECK(m[0].g.kind != FUSE_NONE, "the chain does not fuse");
    CHECK(loaded == MAKERS && compiled == 1, "%d makers: %d compiled the kernel, %d loaded it", MAKERS, compiled,
          loaded);
    plan_free(&p);
}

int main(void)
{
    need_gpu();
    quick = tu_quick();
    const char *build = getenv("IMGPIPE_BUILD_DIR"), *tp = getenv("IMGPIPE_TEST_PLUGINS");
    if (!build || !tp) tu_skip("IMGPIPE_BUILD_DIR or IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    char dirs[1200], err[512];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins:%s/point", build, tp);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    char xdg[1024];
    snprintf(xdg, sizeof xdg, "%s/fuse-gpu-cache-main", tu_tmpdir());
    setenv("XDG_CACHE_HOME", xdg, 1);
    test_fused_against_unfused();
    test_fused_median_layout();
    test_large_convolve();
    test_fused_histogram();
    test_graph_replay();
    test_disk_cache();
    test_one_compile();
    registry_free(&reg);
    return tu_finish();
}
