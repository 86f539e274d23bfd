#include "plan/plan.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan/suggest.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void unknown_stage(const registry *reg, const pl_stage *ps, const char *source, char *err, size_t errlen)
{
    int n = 0;
    const char **names = registry_names(reg, &n);
    const char *near = names ? suggest_nearest(ps->name, names, (size_t)n) : NULL;
    if (near)
        snprintf(err, errlen, "%s:%d:%d: unknown stage '%s' (did you mean '%s'?)", source, ps->line, ps->col,
                 ps->name, near);
    else if (n == 0)
        snprintf(err, errlen, "%s:%d:%d: unknown stage '%s': no plugins were found (see 'imgpipe plugins')",
                 source, ps->line, ps->col, ps->name);
    else
        snprintf(err, errlen, "%s:%d:%d: unknown stage '%s' (run 'imgpipe plugins' for the list)", source,
                 ps->line, ps->col, ps->name);
    free(names);
}

static int build_step(const registry *reg, const pl_stage *ps, const char *source, plan_step *step,
                      char *err, size_t errlen)
{
    const reg_plugin *plugin = registry_find(reg, ps->name);
    if (!plugin) {
        unknown_stage(reg, ps, source, err, errlen);
        return IP_EINVAL;
    }
    if (plugin->shadowed_by) {
        snprintf(err, errlen, "%s:%d:%d: stage '%s' is provided by two plugins, %s and %s: remove one",
                 source, ps->line, ps->col, ps->name, plugin->path, plugin->shadowed_by);
        return IP_EINVAL;
    }
    step->plugin = plugin;
    step->line = ps->line;
    step->col = ps->col;
    int rc = args_bind(plugin->stage, ps, source, &step->args, err, errlen);
    if (rc != IP_OK) return rc;
    char msg[512] = "";
    rc = plugin->stage->create(step->args.values, &step->state, msg, sizeof msg);
    if (rc != IP_OK) {
        step->state = NULL;
        snprintf(err, errlen, "%s:%d:%d: %s: %s", source, ps->line, ps->col, ps->name,
                 msg[0] ? msg : "the plugin refused its arguments");
        return rc;
    }
    return IP_OK;
}

int plan_build(const registry *reg, const pl_pipeline *pl, plan *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (pl->n_stages <= 0) {
        snprintf(err, errlen, "%s:1:1: empty pipeline: no stages", pl->source);
        return IP_EINVAL;
    }
    out->steps = calloc((size_t)pl->n_stages, sizeof *out->steps);
    out->source = dup_str(pl->source);
    if (!out->steps || !out->source) {
        snprintf(err, errlen, "out of memory");
        plan_free(out);
        return IP_ENOMEM;
    }
    for (int i = 0; i < pl->n_stages; i++) {
        out->n = i + 1;
        int rc = build_step(reg, &pl->stages[i], pl->source, &out->steps[i], err, errlen);
        if (rc != IP_OK) {
            plan_free(out);
            return rc;
        }
    }
    return IP_OK;
}

void plan_shape_text(const ip_shape *s, char *buf, size_t len)
{
    const char *depth = s->dtype == IP_U8 ? "8-bit" : s->dtype == IP_U16 ? "16-bit" : "float";
    snprintf(buf, len, "%dx%d %d-channel %s", s->width, s->height, s->channels, depth);
}

static int shape_valid(const ip_shape *s)
{
    return s->width > 0 && s->height > 0 && s->channels >= 1 && s->channels <= 4 &&
           (s->dtype == IP_U8 || s->dtype == IP_U16 || s->dtype == IP_F32);
}

int plan_shapes(plan *p, const ip_shape *input, ip_shape *final, char *err, size_t errlen)
{
    ip_shape cur = *input;
    for (int i = 0; i < p->n; i++) {
        plan_step *st = &p->steps[i];
        const ip_stage *stage = st->plugin->stage;
        char msg[512] = "";
        memset(&st->needs, 0, sizeof st->needs);
        st->in = cur;
        int rc = stage->plan(st->state, &cur, &st->out, &st->needs, msg, sizeof msg);
        if (rc == IP_OK && !shape_valid(&st->out)) {
            snprintf(msg, sizeof msg, "the plugin planned an invalid output shape");
            rc = IP_EINVAL;
        }
        if (rc != IP_OK) {
            char shape[64];
            plan_shape_text(&cur, shape, sizeof shape);
            /* Plugins often start their message with their own name: do not say it twice. */
            size_t nlen = strlen(stage->name);
            int named = strncmp(msg, stage->name, nlen) == 0 && (msg[nlen] == ' ' || msg[nlen] == ':');
            snprintf(err, errlen, "%s:%d:%d: %s%s%s (input: %s)", p->source, st->line, st->col,
                     named ? "" : stage->name, named ? "" : ": ", msg[0] ? msg : "cannot take this input", shape);
            return rc ? rc : IP_EINVAL;
        }
        cur = st->out;
    }
    *final = cur;
    return IP_OK;
}

int plan_share(const plan *p, plan *copy)
{
    *copy = *p;
    copy->steps = malloc((size_t)(p->n > 0 ? p->n : 1) * sizeof *p->steps);
    if (!copy->steps) return IP_ENOMEM;
    if (p->n > 0) memcpy(copy->steps, p->steps, (size_t)p->n * sizeof *p->steps);
    return IP_OK;
}

void plan_unshare(plan *copy)
{
    free(copy->steps);
    copy->steps = NULL;
}

void plan_free(plan *p)
{
    for (int i = 0; i < p->n; i++) {
        plan_step *st = &p->steps[i];
        if (st->state && st->plugin) st->plugin->stage->destroy(st->state);
        if (st->plugin) args_free(&st->args);
    }
    free(p->steps);
    free(p->source);
    memset(p, 0, sizeof *p);
}
