/* Run-time fusion without a GPU: which steps fuse, the generated sources compiled by NVRTC (when
 * libnvrtc is found, else the compile part skips), and the disk cache's keys, reuse and
 * invalidation in a temporary XDG_CACHE_HOME. The GPU side is tests/gpu/test_fuse_gpu.c. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/mono_clock.h"
#include "exec/fuse_cache.h"
#include "exec/fuse_plan.h"
#include "gpu/nvrtc_lib.h"
#include "plan_testutil.h"
#include "plan/plan.h"
#include "plan/registry.h"
#include "plan/stage_class.h"
#include "testutil.h"
#include <stddef.h>

static registry reg;

typedef struct {
    const char *text;
    ip_shape shape;
    int at;
    fuse_kind kind;
    int n_steps;
    const char *label;
} group_case;

static const group_case group_cases[] = {
    { "grayscale | median", { 37, 23, 3, IP_U8 }, 0, FUSE_MEDIAN3, 2, "grayscale+median" },
    { "grayscale | median border=reflect101", { 5, 1, 4, IP_U8 }, 0, FUSE_MEDIAN3, 2, "grayscale+median" },
    { "grayscale | median border=zero", { 1, 1, 3, IP_U8 }, 0, FUSE_MEDIAN3, 2, "grayscale+median" },
    { "grayscale | pointinv | median", { 17, 9, 3, IP_U8 }, 0, FUSE_MEDIAN3, 3, "grayscale+pointinv+median" },
    { "grayscale | pointinv", { 17, 9, 3, IP_U8 }, 0, FUSE_POINT, 2, "grayscale+pointinv" },
    { "pointinv | pointinv | transpose", { 17, 9, 3, IP_U8 }, 0, FUSE_POINT, 2, "pointinv+pointinv" },
    { "median | grayscale | pointinv", { 17, 9, 3, IP_U8 }, 1, FUSE_POINT, 2, "grayscale+pointinv" },
    { "pointinv | grayscale | pointinv | median border=zero", { 13, 7, 1, IP_U8 }, 0, FUSE_MEDIAN3, 4,
      "pointinv+grayscale+pointinv+median" },
    { "pointinv | grayscale | pointinv | median border=zero", { 13, 7, 4, IP_U8 }, 0, FUSE_MEDIAN3, 4,
      "pointinv+grayscale+pointinv+median" },
    { "pointinv | pointinv | pointinv", { 1, 1, 4, IP_U8 }, 0, FUSE_POINT, 3, "pointinv+pointinv+pointinv" },
    /* Mean of every border and radius 1..16 (the tile's halo), on 8-bit one-channel chain output. */
    { "grayscale | pointinv | mean border=zero", { 3, 2, 4, IP_U8 }, 0, FUSE_MEAN, 3, "grayscale+pointinv+mean" },
    { "grayscale | mean", { 17, 9, 3, IP_U8 }, 0, FUSE_MEAN, 2, "grayscale+mean" },
    { "pointinv | mean radius=7 border=shrink", { 17, 9, 1, IP_U8 }, 0, FUSE_MEAN, 2, "pointinv+mean" },
    { "grayscale | mean radius=15 border=replicate", { 1, 1, 3, IP_U8 }, 0, FUSE_MEAN, 2, "grayscale+mean" },
    { "grayscale | mean radius=16 border=reflect101", { 9, 40, 4, IP_U8 }, 0, FUSE_MEAN, 2, "grayscale+mean" },
    { "median | grayscale | mean radius=2 border=shrink", { 9, 4, 3, IP_U8 }, 1, FUSE_MEAN, 2, "grayscale+mean" },
    /* Convolve with whole weights: named kernels, literal matrices, the three ways to round. A 3x3
     * whose sums fit the vec kernel's 16-bit lanes (every named 3x3) runs apart: that kernel and
     * the points' own beat the fused tile on the H100. */
    { "grayscale | convolve", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | pointinv | convolve kernel=box3 border=zero", { 5, 3, 3, IP_U8 }, 0, FUSE_POINT, 2,
      "grayscale+pointinv" },
    { "grayscale | convolve kernel=sharpen border=replicate", { 5, 3, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve kernel=sobel-y divisor=-3", { 5, 3, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve kernel=\"90 1 90; 1 1 1; 90 1 90\"", { 17, 9, 3, IP_U8 }, 0, FUSE_CONVOLVE, 2,
      "grayscale+convolve" },
    { "grayscale | pointinv | convolve kernel=\"-200 -1 0; -1 1 1; 0 1 200\" divisor=3 offset=0.5 border=zero",
      { 5, 3, 3, IP_U8 }, 0, FUSE_CONVOLVE, 3, "grayscale+pointinv+convolve" },
    { "grayscale | convolve kernel=gaussian5 border=shrink", { 5, 3, 4, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    /* separable kernels run apart too, whatever their weights */
    { "grayscale | convolve kernel=\"2 8 12 8 2; 8 32 48 32 8; 12 48 72 48 12; 8 32 48 32 8; 2 8 12 8 2\" divisor=512",
      { 5, 3, 4, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve kernel=\"64 64 64; 64 64 64; 64 64 64\"", { 5, 3, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve kernel=\"2 8 12 8 2; 8 32 48 32 8; 12 48 73 48 12; 8 32 48 32 8; 2 8 12 8 2\" divisor=512 border=shrink", { 5, 3, 4, IP_U8 }, 0,
      FUSE_CONVOLVE, 2, "grayscale+convolve" },
    { "pointinv | convolve kernel=\"1 2 3 2 1\"", { 5, 3, 1, IP_U8 }, 0, FUSE_CONVOLVE, 2, "pointinv+convolve" },
    { "grayscale | convolve kernel=\"1; -2; 7\" divisor=7", { 5, 3, 3, IP_U8 }, 0, FUSE_CONVOLVE, 2,
      "grayscale+convolve" },
    /* Not fused: one point stage with nothing fusable after it, other medians, other depths. */
    { "grayscale", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | median radius=2", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | median border=shrink", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | median", { 17, 9, 3, IP_U16 }, 0, FUSE_NONE, 0, NULL },
    /* Mean and convolve: 16-bit, several channels out of the chain, radii past the tile's halo,
     * float weights, float output, sums past int32. */
    { "grayscale | mean", { 17, 9, 3, IP_U16 }, 0, FUSE_NONE, 0, NULL },
    { "pointinv | mean", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | mean radius=17", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve", { 17, 9, 3, IP_U16 }, 0, FUSE_NONE, 0, NULL },
    { "pointinv | convolve", { 17, 9, 4, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve output=f32", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve kernel=\"0.25 0.5 0.25\"", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | convolve kernel=\"1 2 1; 2 4.5 2; 1 2 1\"", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    /* Entropy's fast path (radius <= 3, bins <= 16, levels >= 256) on u8: the points feed its tile. */
    { "grayscale | entropy", { 17, 9, 3, IP_U8 }, 0, FUSE_ENTROPY, 2, "grayscale+entropy" },
    { "grayscale | entropy radius=1 bins=1 output=u8", { 1, 1, 4, IP_U8 }, 0, FUSE_ENTROPY, 2, "grayscale+entropy" },
    { "grayscale | pointinv | entropy radius=3 levels=65536 base=2", { 31, 7, 3, IP_U8 }, 0, FUSE_ENTROPY, 3,
      "grayscale+pointinv+entropy" },
    { "pointinv | entropy bins=7 base=10 output=u8", { 13, 1, 1, IP_U8 }, 0, FUSE_ENTROPY, 2, "pointinv+entropy" },
    { "median | grayscale | entropy radius=1", { 17, 9, 3, IP_U8 }, 1, FUSE_ENTROPY, 2, "grayscale+entropy" },
    /* Not fused: beyond the fast path, levels that a u8 value can exceed, 16-bit pixels. */
    { "grayscale | entropy radius=4", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | entropy bins=17", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | entropy levels=255 bins=16", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "grayscale | entropy levels=65536", { 17, 9, 3, IP_U16 }, 0, FUSE_NONE, 0, NULL },
    { "entropy", { 17, 9, 1, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    /* Histogram on u8: the points' output written and counted in one pass. */
    { "grayscale | histogram", { 17, 9, 3, IP_U8 }, 0, FUSE_HISTOGRAM, 2, "grayscale+histogram" },
    { "pointinv | histogram bins=7", { 1, 1, 4, IP_U8 }, 0, FUSE_HISTOGRAM, 2, "pointinv+histogram" },
    { "grayscale | pointinv | histogram bins=65536", { 5, 3, 3, IP_U8 }, 0, FUSE_HISTOGRAM, 3,
      "grayscale+pointinv+histogram" },
    { "pointinv | pointinv | histogram bins=1 | median", { 3, 2, 3, IP_U8 }, 0, FUSE_HISTOGRAM, 3,
      "pointinv+pointinv+histogram" },
    { "grayscale | histogram", { 17, 9, 3, IP_U16 }, 0, FUSE_NONE, 0, NULL },
    { "histogram | grayscale", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "median | grayscale", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
    { "pointinv | median", { 17, 9, 3, IP_U8 }, 0, FUSE_NONE, 0, NULL },
};

/* src compiles with NVRTC for sm_90 into a CUBIN (not checked without NVRTC). Under tu_quick()
 * only the first source of each kind: the sources are the same bytes in every build, all compiled
 * in the normal one, and one compile takes nvrtc_lib.c's path under the sanitizers. */
static void check_compiles(nvrtc_lib *nvrtc, const char *src, const char *what, fuse_kind kind)
{
    static unsigned compiled_kinds;
    if (!nvrtc || !src) return;
    if (tu_quick() && (compiled_kinds & 1u << kind)) return;
    compiled_kinds |= 1u << kind;
    void *cubin = NULL;
    size_t bytes = 0;
    char err[4096] = "";
    const char *opts[] = { "-default-device" };
    nvrtc_job job = { src, "t.cu", fuse_header_count(), fuse_header_sources(), fuse_header_names(), 1, opts };
    int rc = nvrtc_compile_cubin(nvrtc, &job, 90, &cubin, &bytes, err, sizeof err);
    CHECK(rc == IP_OK && bytes > 4 && memcmp(cubin, "\177ELF", 4) == 0, "%s: NVRTC: %s", what, err);
    free(cubin);
}

static void test_groups(nvrtc_lib *nvrtc)
{
    for (size_t c = 0; c < sizeof group_cases / sizeof *group_cases; c++) {
        const group_case *gc = &group_cases[c];
        plan p;
        if (!tu_build_plan(&reg, gc->text, &gc->shape, &p)) continue;
        fuse_group g = fuse_group_at(&p, gc->at);
        CHECK(g.kind == gc->kind && g.n_steps == gc->n_steps, "%s: kind %d, %d steps", gc->text, (int)g.kind,
              g.n_steps);
        if (g.kind != FUSE_NONE && g.kind == gc->kind) {
            char label[256], err[4096] = "";
            fuse_group_label(&p, &g, label, sizeof label);
            CHECK(strcmp(label, gc->label) == 0, "%s: label '%s'", gc->text, label);
            char *src = NULL;
            CHECK(fuse_source(&p, &g, &src, err, sizeof err) == IP_OK, "%s: %s", gc->text, err);
            check_compiles(nvrtc, src, gc->text, gc->kind);
            free(src);
        }
        plan_free(&p);
    }
}

typedef struct {
    const char *text;
    const char *want[3];   /* lines the fused source must hold */
} defines_case;

/* What the fused mean and convolve sources are told: the consumer's radius, border, weights (named
 * kernels from the plugin's table), divisor (auto: the weights' sum, or 1) and rounding method
 * (conv_round.h: 1 shift for +-2^k, 2 odd for odd divisors, 0 the double reference otherwise). */
static const defines_case defines_cases[] = {
    { "grayscale | mean radius=7 border=shrink", { "#define IP_RADIUS 7\n", "#define IP_BORDER 3\n", NULL } },
    { "grayscale | convolve kernel=\"64 64 64; 64 65 64; 64 64 64\" divisor=512",
      { "#define IPF_WEIGHTS { 64,64,64,64,65,64,64,64,64 }\n", "#define IPF_FINISH 1\n", "#define IP_BORDER 1\n" } },
    { "grayscale | convolve kernel=\"90 1 90; 1 1 1; 90 1 90\" border=zero",
      { "#define IPF_WEIGHTS { 90,1,90,1,1,1,90,1,90 }\n", "#define IPF_FINISH 2\n", "#define IP_BORDER 2\n" } },
    { "grayscale | convolve kernel=\"2 8 12 8 2; 8 32 48 32 8; 12 48 73 48 12; 8 32 48 32 8; 2 8 12 8 2\" divisor=512",
      { "#define IPF_KW 5\n#define IPF_KH 5\n", "#define IPF_ROUNDING { 1, 0, 512, 9, 256,", NULL } },
    { "grayscale | convolve kernel=\"0 100 0; 100 -400 100; 0 100 0\"",
      { "#define IPF_WEIGHTS { 0,100,0,100,-400,100,0,100,0 }\n", "#define IPF_ROUNDING { 2, 0, 1, 1, 1,", NULL } },
    { "grayscale | convolve kernel=\"-200 -1 0; -1 1 1; 0 1 200\" divisor=3 offset=0.5",
      { "#define IPF_FINISH 0\n", "IPF_DIVISOR __longlong_as_double((long long)0x4008000000000000ull)",
        "IPF_OFFSET __longlong_as_double((long long)0x3fe0000000000000ull)" } },
    { "grayscale | convolve kernel=\"1; -2; 7\" divisor=-7",
      { "#define IPF_KW 1\n#define IPF_KH 3\n", "#define IPF_WEIGHTS { 1,-2,7 }\n",
        "#define IPF_ROUNDING { -1, 0, 7, 0, 0," } },
};

static void test_window_defines(void)
{
    ip_shape shape = { 23, 11, 3, IP_U8 };
    for (size_t c = 0; c < sizeof defines_cases / sizeof *defines_cases; c++) {
        const defines_case *dc = &defines_cases[c];
        plan p;
        if (!tu_build_plan(&reg, dc->text, &shape, &p)) continue;
        fuse_group g = fuse_group_at(&p, 0);
        char *src = NULL, err[256] = "";
        CHECK(g.kind != FUSE_NONE && fuse_source(&p, &g, &src, err, sizeof err) == IP_OK, "%s: not fused %s",
              dc->text, err);
        for (int i = 0; i < 3 && src && dc->want[i]; i++)
            CHECK(strstr(src, dc->want[i]) != NULL, "%s: the source lacks '%s'", dc->text, dc->want[i]);
        free(src);
        plan_free(&p);
    }
}

/* A side x side convolve kernel of whole weights (value, or i % 7 - 3 when value is 0) as pipeline text. */
static char *matrix_pipeline(int side, int value)
{
    size_t cap = (size_t)side * side * 8 + 64;
    char *text = malloc(cap);
    if (!text) return NULL;
    size_t used = (size_t)snprintf(text, cap, "grayscale | convolve kernel=\"");
    for (int i = 0; i < side * side; i++)
        used += (size_t)snprintf(text + used, cap - used, "%d%s", value ? value : i % 7 - 3,
                                 i == side * side - 1 ? "\"" : (i + 1) % side == 0 ? ";" : " ");
    return text;
}

/* The largest kernels: 31x31 fuses and compiles; weights whose sums could leave int32 do not fuse. */
static void test_large_kernels(nvrtc_lib *nvrtc)
{
    ip_shape shape = { 40, 33, 3, IP_U8 };
    char *big = matrix_pipeline(31, 0), *wide = matrix_pipeline(13, 65536);
    plan p;
    if (big && tu_build_plan(&reg, big, &shape, &p)) {
        fuse_group g = fuse_group_at(&p, 0);
        char *src = NULL, err[256] = "";
        CHECK(g.kind == FUSE_CONVOLVE && g.radius == 15, "31x31: kind %d radius %d", (int)g.kind, g.radius);
        CHECK(fuse_source(&p, &g, &src, err, sizeof err) == IP_OK, "31x31: %s", err);
        check_compiles(nvrtc, src, "31x31 convolve", FUSE_CONVOLVE);
        free(src);
        plan_free(&p);
    }
    if (wide && tu_build_plan(&reg, wide, &shape, &p)) {
        CHECK(fuse_group_at(&p, 0).kind == FUSE_NONE, "13x13 of 65536 (sums past int32) was fused");
        plan_free(&p);
    }
    free(big);
    free(wide);
}

/* The source names the weights, so another weighting is another kernel (and another key). */
static void test_source_changes_key(void)
{
    const char *texts[] = { "grayscale | median", "grayscale weights=bt709 | median",
                            "grayscale | median border=zero" };
    char keys[3][FUSE_KEY_CHARS];
    ip_shape shape = { 64, 32, 3, IP_U8 };
    for (int i = 0; i < 3; i++) {
        plan p;
        keys[i][0] = '\0';
        if (!tu_build_plan(&reg, texts[i], &shape, &p)) continue;
        fuse_group g = fuse_group_at(&p, 0);
        char *src = NULL, err[256];
        CHECK(fuse_source(&p, &g, &src, err, sizeof err) == IP_OK, "%s", err);
        const char *parts[] = { src ? src : "", "sm_90" };
        fuse_cache_key(parts, 2, keys[i]);
        free(src);
        plan_free(&p);
    }
    CHECK(strcmp(keys[0], keys[1]) != 0 && strcmp(keys[0], keys[2]) != 0 && strcmp(keys[1], keys[2]) != 0,
          "keys %s %s %s", keys[0], keys[1], keys[2]);
}

static void test_cache(void)
{
    char xdg[1024], dir[4200], err[512];
    snprintf(xdg, sizeof xdg, "%s/fuse-cache", tu_tmpdir());
    setenv("XDG_CACHE_HOME", xdg, 1);
    CHECK(fuse_cache_dir(dir, sizeof dir, err, sizeof err) == IP_OK, "%s", err);
    char expect[1100];
    snprintf(expect, sizeof expect, "%s/imgpipe", xdg);
    CHECK(strcmp(dir, expect) == 0, "cache folder %s", dir);

    const char *a[] = { "source A", "-O3", "sm_90 nvrtc 13.0 driver 13000" };
    const char *b[] = { "source B", "-O3", "sm_90 nvrtc 13.0 driver 13000" };
    const char *c[] = { "source A", "-O3", "sm_90 nvrtc 13.0 driver 13010" };
    const char *split1[] = { "ab", "c" }, *split2[] = { "a", "bc" };
    char ka[FUSE_KEY_CHARS], kb[FUSE_KEY_CHARS], kc[FUSE_KEY_CHARS], ka2[FUSE_KEY_CHARS], k1[FUSE_KEY_CHARS],
        k2[FUSE_KEY_CHARS];
    fuse_cache_key(a, 3, ka);
    fuse_cache_key(a, 3, ka2);
    fuse_cache_key(b, 3, kb);
    fuse_cache_key(c, 3, kc);
    fuse_cache_key(split1, 2, k1);
    fuse_cache_key(split2, 2, k2);
    CHECK(strlen(ka) == 32 && strcmp(ka, ka2) == 0, "key not stable: %s %s", ka, ka2);
    CHECK(strcmp(ka, kb) && strcmp(ka, kc) && strcmp(k1, k2), "keys collide: %s %s %s / %s %s", ka, kb, kc, k1, k2);

    const char payload[] = "\177ELF pretend cubin";
    void *data = NULL;
    size_t bytes = 0;
    CHECK(fuse_cache_load(dir, ka, &data, &bytes) == IP_EIO, "an empty cache found %s", ka);
    CHECK(fuse_cache_store(dir, ka, payload, sizeof payload, err, sizeof err) == IP_OK, "%s", err);
    CHECK(fuse_cache_load(dir, ka, &data, &bytes) == IP_OK && bytes == sizeof payload &&
          memcmp(data, payload, bytes) == 0, "the stored entry was not reused");
    free(data);
    data = NULL;
    CHECK(fuse_cache_load(dir, kb, &data, &bytes) == IP_EIO, "another source's key found an entry");

    /* A damaged entry is a miss, never data: truncated, a flipped byte, or another key's file. */
    char path[4300], other[4300];
    snprintf(path, sizeof path, "%s/%s.cubin", dir, ka);
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL, "cannot open %s", path);
    if (f) {
        fseek(f, 8 + 32 + 8 + 3, SEEK_SET);
        fputc('X', f);
        fclose(f);
        CHECK(fuse_cache_load(dir, ka, &data, &bytes) == IP_EIO, "a corrupted entry was read");
    }
    CHECK(fuse_cache_store(dir, ka, payload, sizeof payload, err, sizeof err) == IP_OK, "%s", err);
    snprintf(other, sizeof other, "%s/%s.cubin", dir, kb);
    CHECK(rename(path, other) == 0, "rename");
    CHECK(fuse_cache_load(dir, kb, &data, &bytes) == IP_EIO, "an entry under the wrong name was read");
    CHECK(truncate(other, 20) == 0, "truncate");
    CHECK(fuse_cache_load(dir, kb, &data, &bytes) == IP_EIO, "a truncated entry was read");
    CHECK(fuse_cache_store(dir, "short", payload, sizeof payload, err, sizeof err) != IP_OK, "a bad key was stored");

    setenv("XDG_CACHE_HOME", "relative/path", 1);
    setenv("HOME", xdg, 1);
    CHECK(fuse_cache_dir(dir, sizeof dir, err, sizeof err) == IP_OK, "%s", err);
    snprintf(expect, sizeof expect, "%s/.cache/imgpipe", xdg);
    CHECK(strcmp(dir, expect) == 0, "a relative XDG_CACHE_HOME must be ignored: %s", dir);
}

typedef struct {
    const char *dir, *key;
    double got_at;   /* when the lock was had, ms; -1: never */
} locker;

static void *take_lock(void *arg)
{
    locker *l = arg;
    int fd;
    fuse_cache_lock(l->dir, l->key, &fd);
    l->got_at = fd >= 0 ? now_ms() : -1.0;
    fuse_cache_unlock(fd);
    return NULL;
}

/* One maker at a time for a key, threads of one process included; another key never waits. */
static void test_cache_lock(void)
{
    char xdg[1024], dir[4200], err[512];
    snprintf(xdg, sizeof xdg, "%s/fuse-cache-lock", tu_tmpdir());
    setenv("XDG_CACHE_HOME", xdg, 1);
    int rc = fuse_cache_dir(dir, sizeof dir, err, sizeof err);
    CHECK(rc == IP_OK, "%s", err);
    if (rc != IP_OK) return;
    const char *ka = "0123456789abcdef0123456789abcdef", *kb = "fedcba9876543210fedcba9876543210";
    int held;
    fuse_cache_lock(dir, ka, &held);
    CHECK(held >= 0, "no lock on %s", ka);
    locker same = { dir, ka, -1.0 }, other = { dir, kb, -1.0 };
    pthread_t t_same, t_other;
    pthread_create(&t_same, NULL, take_lock, &same);
    pthread_create(&t_other, NULL, take_lock, &other);
    pthread_join(t_other, NULL);
    struct timespec pause = { 0, 100 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    double released = now_ms();
    fuse_cache_unlock(held);
    pthread_join(t_same, NULL);
    CHECK(other.got_at >= 0 && other.got_at < released, "another key's lock waited for this one");
    CHECK(same.got_at >= released, "the same key's lock was had while held (%.1f ms before its release)",
          released - same.got_at);
}

/* A descriptor built before point_cuda existed is never asked for it, whatever lies past its end. */
static void test_old_descriptors(void)
{
    const reg_plugin *gray = registry_find(&reg, "grayscale");
    CHECK(gray && stage_point_cuda(gray->stage) != NULL, "grayscale offers no point function");
    if (!gray) return;
    ip_stage older = *gray->stage;
    older.struct_size = (uint32_t)offsetof(ip_stage, point_cuda);
    CHECK(stage_point_cuda(&older) == NULL, "a descriptor without point_cuda was read past its size");
    const reg_plugin *median = registry_find(&reg, "median");
    CHECK(median && stage_point_cuda(median->stage) == NULL, "median offers a point function");
}

/* The consumer of text's first group under another name with its parameter table reversed fuses
 * the same, to the byte of the source; without window_of (NULL, or a descriptor built before it)
 * it ends no group. The name and the table play no part. */
static void check_renamed(const char *text)
{
    const ip_shape shape = { 19, 11, 3, IP_U8 };
    plan p;
    if (!tu_build_plan(&reg, text, &shape, &p)) return;
    fuse_group g = fuse_group_at(&p, 0);
    char *want = NULL, *got = NULL, err[256] = "", label[128] = "";
    CHECK(g.kind > FUSE_POINT && fuse_source(&p, &g, &want, err, sizeof err) == IP_OK, "%s: not fused %s", text, err);
    plan_step *consumer = &p.steps[g.first + g.n_points];
    const reg_plugin *own = consumer->plugin;
    ip_stage copy = *own->stage;
    ip_param reversed[8];
    for (int k = 0; k < copy.n_params && copy.n_params <= 8; k++) reversed[k] = copy.params[copy.n_params - 1 - k];
    copy.name = "renamed";
    copy.params = reversed;
    reg_plugin renamed = *own;
    renamed.stage = &copy;
    consumer->plugin = &renamed;
    fuse_group h = fuse_group_at(&p, 0);
    CHECK(h.kind == g.kind && h.n_steps == g.n_steps && h.radius == g.radius && h.border == g.border &&
          fuse_counter_count(&p, &h) == fuse_counter_count(&p, &g), "%s renamed: kind %d, %d steps", text,
          (int)h.kind, h.n_steps);
    CHECK(h.kind == g.kind && fuse_source(&p, &h, &got, err, sizeof err) == IP_OK && want && got &&
          strcmp(got, want) == 0, "%s renamed: another source", text);
    fuse_group_label(&p, &h, label, sizeof label);
    CHECK(strstr(label, "+renamed") != NULL, "%s renamed: label %s", text, label);
    copy.window_of = NULL;
    CHECK(fuse_group_at(&p, 0).kind <= FUSE_POINT, "%s: fused without window_of", text);
    copy = *own->stage;
    copy.struct_size = (uint32_t)offsetof(ip_stage, window_of);
    CHECK(fuse_group_at(&p, 0).kind <= FUSE_POINT, "%s: window_of read past an old descriptor's size", text);
    consumer->plugin = own;
    free(want);
    free(got);
    plan_free(&p);
}

static void test_renamed_descriptors(void)
{
    static const char *const texts[] = {
        "grayscale | median border=zero",
        "grayscale | pointinv | mean radius=5 border=shrink",
        "grayscale | convolve kernel=\"90 1 90; 1 1 1; 90 1 90\" divisor=3 offset=0.5 border=replicate",
        "grayscale | entropy radius=2 levels=300 bins=9 base=2",
        "grayscale | entropy radius=3 output=u8",
        "grayscale | histogram bins=9",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) check_renamed(texts[i]);
}

int main(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR"), *tp = getenv("IMGPIPE_TEST_PLUGINS");
    if (!build || !tp) tu_skip("IMGPIPE_BUILD_DIR or IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    char dirs[1200], err[512];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins:%s/point", build, tp);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    nvrtc_lib *nvrtc = NULL;
    if (nvrtc_open(&nvrtc, err, sizeof err) != IP_OK) fprintf(stderr, "test_fuse: %s: compiles not checked\n", err);
    test_old_descriptors();
    test_groups(nvrtc);
    test_renamed_descriptors();
    test_window_defines();
    test_large_kernels(nvrtc);
    test_source_changes_key();
    test_cache();
    test_cache_lock();
    nvrtc_close(nvrtc);
    registry_free(&reg);
    if (!nvrtc && tu_failed == 0) tu_skip("NVRTC not found: the rest passed, the compiles were not checked");
    return tu_finish();
}
