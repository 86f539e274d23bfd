/* Plugin discovery: search order, refused plugins (ABI, missing symbol, duplicates). */
#include <stdlib.h>
#include <string.h>
#include "registry.h"
#include "testutil.h"

static char dirs[5][512];

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

int main(void)
{
    const char *base = getenv("IMGPIPE_TEST_PLUGINS");
    if (!base) tu_skip("IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    const char *names[5] = { "good", "badabi", "nosym", "dup", "failing" };
    for (int i = 0; i < 5; i++) snprintf(dirs[i], sizeof dirs[i], "%s/%s", base, names[i]);
    test_good_plugin();
    test_refusals();
    test_search_order();
    return tu_finish();
}
