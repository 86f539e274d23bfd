/* Plugin discovery: search order, refused plugins (ABI, missing symbol, duplicates), one folder
 * or one file under two names. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "plan/registry.h"
#include "plan/stage_class.h"
#include "testutil.h"

static char dirs[7][512];

static int problem_mentions(const registry *r, const char *file, const char *reason)
{
    for (int i = 0; i < r->n_problems; i++)
        if (strstr(r->problems[i], file) && strstr(r->problems[i], reason)) return 1;
    return 0;
}

static void test_good_plugin(void)
{
    registry r;
    char err[256];
    CHECK(registry_load(&r, dirs[0], NULL, NULL, err, sizeof err) == IP_OK, "%s", err);
    const reg_plugin *p = registry_find(&r, "invert");
    CHECK(p != NULL, "invert not found");
    CHECK(p && strstr(p->path, "good/invert.so") != NULL, "path %s", p ? p->path : "");
    CHECK(r.n_problems == 0, "%d problems", r.n_problems);
    CHECK(registry_find(&r, "nothing") == NULL, "found a stage that does not exist");
    registry_free(&r);
}

static void test_refusals(void)
{
    registry r;
    char err[256], list[2100];
    snprintf(list, sizeof list, "%s:%s:%s", dirs[1], dirs[2], dirs[3]);
    CHECK(registry_load(&r, list, NULL, NULL, err, sizeof err) == IP_OK, "%s", err);
    CHECK(problem_mentions(&r, "oldabi.so", "built for plugin ABI version 99, this imgpipe needs version 1"),
          "ABI refusal missing");
    CHECK(problem_mentions(&r, "nosym.so", "does not export imgpipe_stage()"), "missing-symbol refusal missing");
    CHECK(problem_mentions(&r, "b_twin.so", "stage 'twin' is also provided by"), "duplicate refusal missing");
    const reg_plugin *twin = registry_find(&r, "twin");
    CHECK(twin && twin->shadowed_by && strstr(twin->shadowed_by, "b_twin.so"), "twin not marked as refused");
    CHECK(registry_find(&r, "oldabi") == NULL, "a plugin of another ABI was registered");
    CHECK(r.n_problems == 3, "expected 3 problems, got %d", r.n_problems);
    registry_free(&r);
}

/* --plugin-path first, then IMGPIPE_PLUGIN_PATH, then the default folder; each once. */
static void test_search_order(void)
{
    registry r;
    char err[256];
    CHECK(registry_load(&r, dirs[0], dirs[4], dirs[0], err, sizeof err) == IP_OK, "%s", err);
    CHECK(r.n_dirs == 2, "dirs %d", r.n_dirs);
    CHECK(r.n_dirs == 2 && strcmp(r.dirs[0], dirs[0]) == 0 && strcmp(r.dirs[1], dirs[4]) == 0, "order wrong");
    CHECK(registry_find(&r, "invert") && registry_find(&r, "failing"), "stages of both folders expected");
    registry_free(&r);
    CHECK(registry_load(&r, NULL, NULL, "/nonexistent/imgpipe", err, sizeof err) == IP_OK, "%s", err);
    CHECK(r.n == 0 && r.n_problems == 0, "a missing folder must be silent");
    registry_free(&r);
}

/* The default folder named again another way, and a plugin reached through a link beside its
 * file, load once and refuse nothing; two different files of one stage name are still refused. */
static void test_same_plugin_twice(void)
{
    registry r;
    char err[256], again[600], list[1300];
    snprintf(again, sizeof again, "%s/../good/./", dirs[0]);
    CHECK(registry_load(&r, again, NULL, dirs[0], err, sizeof err) == IP_OK, "%s", err);
    CHECK(r.n_dirs == 1 && r.n_problems == 0 && registry_find(&r, "invert"), "folder twice: %d folders, %d problems",
          r.n_dirs, r.n_problems);
    registry_free(&r);

    char tmp[] = "/tmp/imgpipe-reg-XXXXXX", link_path[600], target[600];
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    snprintf(link_path, sizeof link_path, "%s/another-name.so", tmp);
    snprintf(target, sizeof target, "%s/invert.so", dirs[0]);
    CHECK(symlink(target, link_path) == 0, "symlink %s", link_path);
    snprintf(list, sizeof list, "%s:%s", dirs[0], tmp);
    CHECK(registry_load(&r, list, NULL, NULL, err, sizeof err) == IP_OK, "%s", err);
    CHECK(r.n_problems == 0 && registry_find(&r, "invert"), "linked plugin: %d problems", r.n_problems);
    int inverts = 0;
    for (int i = 0; i < r.n; i++) inverts += strcmp(r.plugins[i].stage->name, "invert") == 0;
    CHECK(inverts == 1, "invert registered %d times", inverts);
    registry_free(&r);
    unlink(link_path);
    rmdir(tmp);
}

/* A descriptor built before stage classes (struct_size ends at destroy) loads and is global; a
 * reduction without its functions is refused; the in-tree stages declare their classes. */
static void test_classes(void)
{
    registry r;
    char err[256], list[1100];
    snprintf(list, sizeof list, "%s:%s", dirs[5], dirs[6]);
    CHECK(registry_load(&r, list, NULL, NULL, err, sizeof err) == IP_OK, "%s", err);
    const reg_plugin *old = registry_find(&r, "oldinvert");
    CHECK(old != NULL, "a plugin of the first descriptor size was not loaded");
    CHECK(old && old->stage->struct_size < sizeof(ip_stage), "oldinvert's descriptor is not the old size");
    CHECK(old && stage_declared_class(old->stage) == IP_CLASS_GLOBAL && stage_use_class(old->stage, NULL) == IP_CLASS_GLOBAL,
          "an old plugin must be global");
    CHECK(old && strstr(stage_class_text(old->stage), "built before stage classes"), "old plugin text");
    CHECK(registry_find(&r, "badreduce") == NULL, "a reduction without reduce functions was registered");
    CHECK(problem_mentions(&r, "badreduce.so", "reduction class without"), "reduction refusal missing");
    registry_free(&r);

    const char *build = getenv("IMGPIPE_BUILD_DIR");
    if (!build) return;
    char in_tree[600];
    snprintf(in_tree, sizeof in_tree, "%s/lib/imgpipe/plugins", build);
    CHECK(registry_load(&r, in_tree, NULL, NULL, err, sizeof err) == IP_OK, "%s", err);
    static const struct { const char *name; ip_stage_class c; } want[] = {
        { "grayscale", IP_CLASS_POINT }, { "median", IP_CLASS_AREA }, { "mean", IP_CLASS_AREA },
        { "convolve", IP_CLASS_AREA }, { "entropy", IP_CLASS_AREA }, { "histogram", IP_CLASS_REDUCTION },
        { "transpose", IP_CLASS_GLOBAL },
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const reg_plugin *p = registry_find(&r, want[i].name);
        CHECK(p && stage_declared_class(p->stage) == want[i].c, "%s: class %s", want[i].name,
              p ? stage_class_name(stage_declared_class(p->stage)) : "(not found)");
    }
    registry_free(&r);
}

/* An old descriptor has no hints (and is not read past its end for them); every in-tree stage has a
 * cost hint, and the five that fused kernels compute a window. */
static void test_hints(void)
{
    registry r;
    char err[256];
    ip_window w;
    CHECK(registry_load(&r, dirs[5], NULL, NULL, err, sizeof err) == IP_OK, "%s", err);
    const reg_plugin *old = registry_find(&r, "oldinvert");
    CHECK(old && stage_cost_hook(old->stage) == NULL, "an old descriptor has a cost hint");
    CHECK(old && !stage_window(old->stage, NULL, NULL, &w) && w.kind == IP_WINDOW_NONE, "an old descriptor has a window");
    registry_free(&r);

    const char *build = getenv("IMGPIPE_BUILD_DIR");
    if (!build) return;
    char in_tree[600];
    snprintf(in_tree, sizeof in_tree, "%s/lib/imgpipe/plugins", build);
    CHECK(registry_load(&r, in_tree, NULL, NULL, err, sizeof err) == IP_OK, "%s", err);
    static const struct { const char *name; int window; } want[] = {
        { "grayscale", 0 }, { "median", 1 }, { "mean", 1 }, { "convolve", 1 }, { "entropy", 1 }, { "histogram", 1 },
        { "transpose", 0 },
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const reg_plugin *p = registry_find(&r, want[i].name);
        CHECK(p && stage_cost_hook(p->stage) != NULL, "%s has no cost hint", want[i].name);
        CHECK(p && (p->stage->window_of != NULL) == want[i].window, "%s: window_of %s", want[i].name,
              p && p->stage->window_of ? "set" : "not set");
    }
    registry_free(&r);
}

int main(void)
{
    const char *base = getenv("IMGPIPE_TEST_PLUGINS");
    if (!base) tu_skip("IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    const char *names[7] = { "good", "badabi", "nosym", "dup", "failing", "oldsize", "badclass" };
    for (int i = 0; i < 7; i++) snprintf(dirs[i], sizeof dirs[i], "%s/%s", base, names[i]);
    test_good_plugin();
    test_refusals();
    test_search_order();
    test_same_plugin_twice();
    test_classes();
    test_hints();
    return tu_finish();
}
