/* Introspection: the registry's stages and their parameters, as `imgpipe plugins` shows them,
 * in a table made once (its strings live as long as the process). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api_internal.h"
#include "plan/suggest.h"

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static imgpipe_stage_info *table;
static int table_n;

static const char *type_text(ip_type t)
{
    static const char *const names[] = { "int", "float", "bool", "enum", "string", "matrix", "path" };
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

/* enum: "a|b|c"; numbers: "MIN..MAX", then "|word" for each word also allowed; else the words. */
static char *choices_text(const ip_param *pa)
{
    char buf[1024] = "";
    int numeric = (pa->type == IP_INT || pa->type == IP_FLOAT) && pa->min < pa->max;
    if (numeric) snprintf(buf, sizeof buf, "%.15g..%.15g", pa->min, pa->max);
    if (pa->choices && *pa->choices) {
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "%s%s", numeric ? "|" : "", pa->choices);
    }
    return strdup(buf);
}

static int fill_param(const ip_param *pa, imgpipe_param_info *out)
{
    out->name = pa->name ? pa->name : "";
    out->type = type_text(pa->type);
    out->default_value = pa->default_text ? pa->default_text : "";
    out->help = pa->help ? pa->help : "";
    char *choices = choices_text(pa);
    out->choices = choices;
    return choices ? IP_OK : IP_ENOMEM;
}

static int fill_stage(const ip_stage *s, imgpipe_stage_info *out)
{
    out->name = s->name;
    out->summary = s->summary ? s->summary : "";
    out->has_gpu = s->run_gpu != NULL;
    out->n_params = s->n_params;
    imgpipe_param_info *params = calloc(s->n_params > 0 ? (size_t)s->n_params : 1, sizeof *params);
    if (!params) return IP_ENOMEM;
    out->params = params;
    for (int i = 0; i < s->n_params; i++)
        if (fill_param(&s->params[i], &params[i]) != IP_OK) return IP_ENOMEM;
    return IP_OK;
}

/* Made on first use; a failure leaves nothing made, so the next call tries again. */
static int stage_table(imgpipe_error *err)
{
    const registry *reg;
    int rc = api_registry(&reg, err);
    if (rc != IP_OK) return rc;
    pthread_mutex_lock(&table_lock);
    if (!table) {
        imgpipe_stage_info *t = calloc(reg->n > 0 ? (size_t)reg->n : 1, sizeof *t);
        rc = t ? IP_OK : IP_ENOMEM;
        for (int i = 0; rc == IP_OK && i < reg->n; i++) rc = fill_stage(reg->plugins[i].stage, &t[i]);
        if (rc == IP_OK) {
            table = t;
            table_n = reg->n;
        } else {
            api_fail(err, IMGPIPE_ENOMEM, "out of memory");   /* what was made is left: a rare, small loss */
        }
    }
    pthread_mutex_unlock(&table_lock);
    return rc;
}

int imgpipe_stage_count(imgpipe_error *err)
{
    int rc = stage_table(err);
    if (rc != IP_OK) return -rc;
    api_ok(err);
    return table_n;
}

int imgpipe_stage_at(int index, imgpipe_stage_info *info, imgpipe_error *err)
{
    int rc = stage_table(err);
    if (rc != IP_OK) return rc;
    if (!info) return api_fail(err, IMGPIPE_EINVAL, "imgpipe_stage_at: info is NULL");
    if (index < 0 || index >= table_n)
        return api_fail(err, IMGPIPE_EINVAL, "imgpipe_stage_at: index %d is not in 0..%d", index, table_n - 1);
    *info = table[index];
    api_ok(err);
    return IMGPIPE_OK;
}

int imgpipe_stage_find(const char *name, imgpipe_stage_info *info, imgpipe_error *err)
{
    int rc = stage_table(err);
    if (rc != IP_OK) return rc;
    if (!name || !info) return api_fail(err, IMGPIPE_EINVAL, "imgpipe_stage_find: %s is NULL", name ? "info" : "name");
    for (int i = 0; i < table_n; i++) {
        if (strcmp(table[i].name, name) == 0) {
            *info = table[i];
            api_ok(err);
            return IMGPIPE_OK;
        }
    }
    const char **names = malloc((size_t)(table_n > 0 ? table_n : 1) * sizeof *names);
    if (!names) return api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    for (int i = 0; i < table_n; i++) names[i] = table[i].name;
    const char *near = suggest_nearest(name, names, (size_t)table_n);
    if (near) api_fail(err, IMGPIPE_EINVAL, "no stage named '%s' (did you mean '%s'?)", name, near);
    else api_fail(err, IMGPIPE_EINVAL, "no stage named '%s' (imgpipe_stage_count and imgpipe_stage_at list them)", name);
    if (err && near) snprintf(err->suggestion, sizeof err->suggestion, "%s", near);
    free(names);
    return IMGPIPE_EINVAL;
}
