/* The pipeline text: parsed, bound to the real plugins' parameter tables and planned on a few
 * shapes, as `imgpipe check -e TEXT` does. The plugins come from IMGPIPE_FUZZ_PLUGINS (default:
 * the build's plugin folder). */
#include <stdlib.h>
#include <string.h>
#include "fuzz_common.h"
#include "plan/pipeline.h"
#include "plan/plan.h"
#include "plan/registry.h"

#ifndef IMGPIPE_FUZZ_PLUGIN_DIR
#define IMGPIPE_FUZZ_PLUGIN_DIR "."
#endif

/* Loaded once: a harness process runs millions of inputs. */
static registry *plugins(void)
{
    static registry reg;
    static int loaded;
    if (!loaded) {
        char err[256];
        const char *dir = getenv("IMGPIPE_FUZZ_PLUGINS");
        if (registry_load(&reg, dir ? dir : IMGPIPE_FUZZ_PLUGIN_DIR, NULL, NULL, err, sizeof err) != IP_OK) abort();
        if (reg.n == 0) abort();   /* a harness without stages would fuzz only the parser */
        loaded = 1;
    }
    return &reg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ip_shape shapes[] = { { 64, 48, 3, IP_U8 }, { 1, 1, 1, IP_U16 }, { 7, 300, 4, IP_F32 },
                                       { 100000, 3, 2, IP_U8 } };
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    pl_pipeline pl;
    char err[1024];
    if (pl_parse(text, "-e", &pl, err, sizeof err) == IP_OK) {
        plan p;
        if (plan_build(plugins(), &pl, &p, err, sizeof err) == IP_OK) {
            ip_shape final;
            for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) plan_shapes(&p, &shapes[i], &final, err, sizeof err);
            plan_free(&p);
        }
        pl_free(&pl);
    }
    free(text);
    return 0;
}
