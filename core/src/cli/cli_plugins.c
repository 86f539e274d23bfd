/* imgpipe plugins [STAGE] and imgpipe new-plugin NAME [DIR]: what the registry holds, and a new
 * stage's source from the template. */
#define _POSIX_C_SOURCE 200809L
#include "cli/cli_plugins.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/newplugin.h"
#include "plan/registry.h"
#include "plan/stage_class.h"

int cli_load_registry(const cli_options *o, registry *reg)
{
    char default_dir[PATH_MAX], err[256];
    const char *dflt = registry_default_dir(default_dir, sizeof default_dir) == IP_OK ? default_dir : NULL;
    if (registry_load(reg, o->plugin_path, getenv("IMGPIPE_PLUGIN_PATH"), dflt, err, sizeof err) != IP_OK) {
        cli_fail("%s", err);
        return CLI_USAGE;
    }
    for (int i = 0; i < reg->n_problems; i++) fprintf(stderr, "imgpipe: warning: plugin refused: %s\n", reg->problems[i]);
    return CLI_OK;
}

static const char *type_name(ip_type t)
{
    static const char *const names[] = { "int", "float", "bool", "choice", "text", "matrix", "path" };
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

/* "a|b|c" as "a, b, c" */
static void choices_text(const char *choices, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *c = choices; *c && n + 3 < len; c++) {
        if (*c == '|') {
            buf[n++] = ',';
            buf[n++] = ' ';
        } else {
            buf[n++] = *c;
        }
    }
    buf[n] = '\0';
}

static void print_param(const ip_param *pa)
{
    char range[256] = "", words[200] = "";
    if (pa->choices) choices_text(pa->choices, words, sizeof words);
    if (pa->choices && pa->type == IP_ENUM) snprintf(range, sizeof range, "one of %s", words);
    else if (pa->min < pa->max && pa->type == IP_INT) snprintf(range, sizeof range, "%.0f to %.0f", pa->min, pa->max);
    else if (pa->min < pa->max) snprintf(range, sizeof range, "%g to %g", pa->min, pa->max);
    if (pa->choices && pa->type != IP_ENUM) {
        size_t used = strlen(range);
        snprintf(range + used, sizeof range - used, "%sor %s", used ? ", " : "", words);
    }
    printf("  %-10s %-7s default %-12s %s\n", pa->name, type_name(pa->type),
           pa->default_text && *pa->default_text ? pa->default_text : "(none)", range);
    if (pa->help) printf("  %-10s %s\n", "", pa->help);
}

int cli_cmd_plugins(const cli_options *o)
{
    if (o->n_positional > 1) return cli_usage_error("plugins takes at most one STAGE");
    registry reg;
    int rc = cli_load_registry(o, &reg);
    if (rc) return rc;
    if (o->n_positional == 0) {
        for (int i = 0; i < reg.n; i++)
            printf("%-12s %s\n", reg.plugins[i].stage->name, reg.plugins[i].stage->summary ? reg.plugins[i].stage->summary : "");
        if (reg.n == 0) {
            cli_fail("no plugins found; searched:");
            for (int i = 0; i < reg.n_dirs; i++) fprintf(stderr, "  %s\n", reg.dirs[i]);
            rc = CLI_USAGE;
        }
    } else {
        const reg_plugin *pl = registry_find(&reg, o->positional[0]);
        if (!pl) {
            cli_fail("no stage named '%s' (run 'imgpipe plugins' for the list)", o->positional[0]);
            rc = CLI_USAGE;
        } else {
            const ip_stage *s = pl->stage;
            printf("%s: %s\n  plugin: %s\n  GPU path: %s\n  class: %s\n%sparameters:%s\n", s->name,
                   s->summary ? s->summary : "", pl->path, s->run_gpu ? "yes" : "no", stage_class_text(s),
                   stage_point_cuda(s) ? "  fusion: offers its per-pixel function (CUDA source, see --no-fuse)\n" : "",
                   s->n_params ? "" : " none");
            for (int i = 0; i < s->n_params; i++) print_param(&s->params[i]);
        }
    }
    registry_free(&reg);
    return rc;
}

int cli_cmd_new_plugin(const cli_options *o)
{
    if (o->n_positional < 1 || o->n_positional > 2) return cli_usage_error("new-plugin needs NAME and optionally DIR");
    const char *name = o->positional[0], *dir = o->n_positional == 2 ? o->positional[1] : name;
    char err[1024], prefix[4096];
    int rc = newplugin_write(name, dir, err, sizeof err);
    if (rc != IP_OK) {
        cli_fail("%s", err);
        return rc == IP_EINVAL ? CLI_USAGE : CLI_IMAGE_FAILED;
    }
    if (newplugin_prefix(prefix, sizeof prefix, err, sizeof err) != IP_OK) snprintf(prefix, sizeof prefix, "PREFIX");
    printf("wrote %s: build it with: cmake -S %s -B %s/build -DCMAKE_PREFIX_PATH=%s && cmake --build %s/build\n",
           dir, dir, dir, prefix, dir);
    return CLI_OK;
}

