#include "plan/args.h"
#include "plan/suggest.h"
#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every string and matrix handed to a plugin lives in one of these, freed together. */
typedef struct arena_block {
    struct arena_block *next;
    max_align_t data[];
} arena_block;

typedef struct {
    const ip_stage *stage;
    const pl_stage *ps;
    const char *source;
    arena_block *arena;
    char *err;
    size_t errlen;
} binder;

/* Where a value came from: the pipeline text, or the plugin's default_text. */
typedef struct {
    const ip_param *param;
    const char *text;
    int line, col;
    int is_default;
} origin;

/* '|'-separated words split into NUL-terminated strings. */
typedef struct {
    char *buf;
    const char **words;
    size_t n;
} wordlist;

static void *arena_alloc(binder *b, size_t size)
{
    if (size > SIZE_MAX - sizeof(arena_block)) return NULL;
    arena_block *blk = malloc(sizeof *blk + size);
    if (!blk) return NULL;
    blk->next = b->arena;
    b->arena = blk;
    return blk->data;
}

static char *arena_strdup(binder *b, const char *s)
{
    size_t n = strlen(s);
    if (n == SIZE_MAX) return NULL;
    char *d = arena_alloc(b, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static void arena_free(arena_block *blk)
{
    while (blk) {
        arena_block *next = blk->next;
        free(blk);
        blk = next;
    }
}

static int wordlist_split(const char *text, wordlist *wl)
{
    memset(wl, 0, sizeof *wl);
    if (!text) return 0;
    size_t len = strlen(text), n = 1;
    for (size_t k = 0; k < len; k++) n += text[k] == '|';
    wl->buf = malloc(len + 1);
    wl->words = n <= SIZE_MAX / sizeof *wl->words ? malloc(n * sizeof *wl->words) : NULL;
    if (!wl->buf || !wl->words) {
        free(wl->buf);
        free(wl->words);
        memset(wl, 0, sizeof *wl);
        return -1;
    }
    memcpy(wl->buf, text, len + 1);
    wl->words[wl->n++] = wl->buf;
    for (size_t k = 0; k < len; k++) {
        if (wl->buf[k] != '|') continue;
        wl->buf[k] = '\0';
        wl->words[wl->n++] = wl->buf + k + 1;
    }
    return 0;
}

static void wordlist_free(wordlist *wl)
{
    free(wl->buf);
    free(wl->words);
    memset(wl, 0, sizeof *wl);
}

static int wordlist_find(const wordlist *wl, const char *word)
{
    for (size_t k = 0; k < wl->n; k++)
        if (strcmp(wl->words[k], word) == 0) return (int)k;
    return -1;
}

/* Appends to a fixed buffer, truncating quietly; *used never passes cap - 1. */
static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    *used += (size_t)n < cap - *used ? (size_t)n : cap - *used - 1;
}

static void append_joined(char *buf, size_t cap, size_t *used, const char *const *words, size_t n)
{
    for (size_t k = 0; k < n; k++) append(buf, cap, used, "%s%s", k ? ", " : "", words[k]);
}

static int fail_nomem(binder *b)
{
    if (b->err && b->errlen) snprintf(b->err, b->errlen, "%s: out of memory", b->source);
    return IP_ENOMEM;
}

/* "SOURCE:LINE:COL: message"; a bad default is blamed on the plugin, at the stage's position. */
static int fail(binder *b, const origin *o, const char *fmt, ...)
{
    if (!b->err || !b->errlen) return IP_EINVAL;
    size_t used = 0;
    append(b->err, b->errlen, &used, "%s:%d:%d: ", b->source, o->line, o->col);
    if (o->is_default)
        append(b->err, b->errlen, &used, "stage '%s' has a bad default for '%s' (plugin bug): ",
               b->stage->name, o->param->name);
    if (used + 1 < b->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err + used, b->errlen - used, fmt, ap);
        va_end(ap);
    }
    return IP_EINVAL;
}

static int starts_number(const char *s)
{
    return (*s >= '0' && *s <= '9') || *s == '+' || *s == '-' || *s == '.';
}

/* A finite number spanning exactly [s, end); strtod stops at any separator by itself. */
static int parse_double_span(const char *s, const char *end, double *v)
{
    if (s == end || !starts_number(s)) return -1;
    char *stop;
    errno = 0;
    double d = strtod(s, &stop);
    if (stop != end || d != d || d > DBL_MAX || d < -DBL_MAX) return -1;
    *v = d;
    return 0;
}

/* Prints a range bound: integers without a decimal point. */
static void format_bound(char *buf, size_t cap, double v)
{
    if (v > -1e15 && v < 1e15 && (double)(long long)v == v)
        snprintf(buf, cap, "%lld", (long long)v);
    else
        snprintf(buf, cap, "%.15g", v);
}

static int check_range(binder *b, const origin *o, double v)
{
    const ip_param *p = o->param;
    if (!(p->min < p->max) || (v >= p->min && v <= p->max)) return IP_OK;
    char lo[40], hi[40];
    format_bound(lo, sizeof lo, p->min);
    format_bound(hi, sizeof hi, p->max);
    return fail(b, o, "%s=%s is out of range (%s to %s)", p->name, o->text, lo, hi);
}

/* A word from the parameter's choices: sets choice and s; 1 when found, 0 when not, -1 on no memory. */
static int bind_choice_word(binder *b, const origin *o, ip_value *v)
{
    wordlist wl;
    if (wordlist_split(o->param->choices, &wl)) return -1;
    int idx = wordlist_find(&wl, o->text);
    wordlist_free(&wl);
    if (idx < 0) return 0;
    v->choice = idx;
    v->s = arena_strdup(b, o->text);
    return v->s ? 1 : -1;
}

/* The choices as "a, b, c" for a message. */
static int describe_choices(const char *choices, char *buf, size_t cap)
{
    wordlist wl;
    size_t used = 0;
    buf[0] = '\0';
    if (!choices) return 0;
    if (wordlist_split(choices, &wl)) return -1;
    append_joined(buf, cap, &used, wl.words, wl.n);
    wordlist_free(&wl);
    return 0;
}

/* " - did you mean 'a'?" when one of the choices is near the given word, else "". */
static int describe_suggestion(const char *choices, const char *given, char *buf, size_t cap)
{
    wordlist wl;
    buf[0] = '\0';
    if (!choices) return 0;
    if (wordlist_split(choices, &wl)) return -1;
    const char *near = suggest_nearest(given, wl.words, wl.n);
    if (near) snprintf(buf, cap, " - did you mean '%s'?", near);
    wordlist_free(&wl);
    return 0;
}

/* The message tail for a number parameter that also takes words: " (or one of: auto)". */
static int number_hint(binder *b, const origin *o, char *buf, size_t cap)
{
    char list[512], near[256];
    buf[0] = '\0';
    if (!o->param->choices) return 0;
    if (describe_choices(o->param->choices, list, sizeof list) ||
        describe_suggestion(o->param->choices, o->text, near, sizeof near))
        return fail_nomem(b);
    snprintf(buf, cap, " (or one of: %s)%s", list, near);
    return 0;
}

static int bind_int(binder *b, const origin *o, ip_value *v)
{
    int found = bind_choice_word(b, o, v);
    if (found) return found < 0 ? fail_nomem(b) : IP_OK;
    const char *s = o->text;
    char *stop = NULL;
    long long n = 0;
    int ok = starts_number(s) && *s != '.';
    errno = 0;
    if (ok) {
        n = strtoll(s, &stop, 10);
        ok = stop != s && *stop == '\0';
    }
    if (!ok) {
        char hint[800];
        if (number_hint(b, o, hint, sizeof hint)) return IP_ENOMEM;
        return fail(b, o, "%s expects an integer, not '%s'%s", o->param->name, s, hint);
    }
    if (errno == ERANGE) {
        if (o->param->min < o->param->max) return check_range(b, o, n < 0 ? -1e300 : 1e300);
        return fail(b, o, "%s=%s does not fit in 64 bits", o->param->name, s);
    }
    v->i = n;
    v->f = (double)n;
    return check_range(b, o, (double)n);
}

static int bind_float(binder *b, const origin *o, ip_value *v)
{
    int found = bind_choice_word(b, o, v);
    if (found) return found < 0 ? fail_nomem(b) : IP_OK;
    double d;
    if (parse_double_span(o->text, o->text + strlen(o->text), &d)) {
        char hint[800];
        if (number_hint(b, o, hint, sizeof hint)) return IP_ENOMEM;
        return fail(b, o, "%s expects a number, not '%s'%s", o->param->name, o->text, hint);
    }
    v->f = d;
    return check_range(b, o, d);
}

static int equals_lower(const char *s, const char *lower)
{
    for (; *s && *lower; s++, lower++) {
        char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
        if (c != *lower) return 0;
    }
    return *s == *lower;
}

static int bind_bool(binder *b, const origin *o, ip_value *v)
{
    static const char *const yes[] = { "true", "yes", "1", "on" };
    static const char *const no[] = { "false", "no", "0", "off" };
    for (size_t k = 0; k < 4; k++) {
        if (equals_lower(o->text, yes[k]) || equals_lower(o->text, no[k])) {
            v->i = equals_lower(o->text, yes[k]);
            v->f = (double)v->i;
            return IP_OK;
        }
    }
    return fail(b, o, "%s expects true or false, not '%s'", o->param->name, o->text);
}

static int bind_enum(binder *b, const origin *o, ip_value *v)
{
    int found = bind_choice_word(b, o, v);
    if (found < 0) return fail_nomem(b);
    if (found) {
        v->i = v->choice;
        v->f = v->choice;
        return IP_OK;
    }
    char list[512], near[256];
    if (describe_choices(o->param->choices, list, sizeof list) ||
        describe_suggestion(o->param->choices, o->text, near, sizeof near))
        return fail_nomem(b);
    return fail(b, o, "%s must be one of: %s (not '%s')%s", o->param->name, list, o->text, near);
}

static int bind_text(binder *b, const origin *o, ip_value *v)
{
    int found = bind_choice_word(b, o, v);
    if (found < 0) return fail_nomem(b);
    if (!found) v->s = arena_strdup(b, o->text);
    return v->s ? IP_OK : fail_nomem(b);
}

static int is_matrix_sep(char c) { return c == ' ' || c == '\t' || c == ','; }

/* Counts the values of the row starting at s (up to ';' or the end); checks each is a number. */
static int matrix_row(binder *b, const origin *o, const char *s, const char **row_end, double *out,
                      int *count)
{
    int n = 0;
    while (*s && *s != ';') {
        if (is_matrix_sep(*s)) {
            s++;
            continue;
        }
        const char *end = s;
        while (*end && *end != ';' && !is_matrix_sep(*end)) end++;
        double d;
        if (parse_double_span(s, end, &d))
            return fail(b, o, "%s: '%.*s' is not a number", o->param->name, (int)(end - s), s);
        if (out) out[n] = d;
        n++;
        s = end;
    }
    *row_end = s;
    *count = n;
    return IP_OK;
}

static int only_blanks(const char *s)
{
    while (is_matrix_sep(*s)) s++;
    return *s == '\0';
}

/* Walks the rows once to check them and size the matrix, again (out != NULL) to fill it.
 * A ';' at the very end is allowed: "1 2; 3 4;". */
static int matrix_walk(binder *b, const origin *o, double *out, int *rows, int *cols)
{
    const char *s = o->text;
    int r = 0, width = 0;
    for (;;) {
        const char *end = s;
        int n = 0;
        int rc = matrix_row(b, o, s, &end, out ? out + (size_t)r * (size_t)width : NULL, &n);
        if (rc) return rc;
        if (r == 0) width = n;
        if (n != width && !(n == 0 && *end == '\0' && r > 0))
            return fail(b, o, "%s: rows must have equal lengths (row %d has %d value%s, row 1 has %d)",
                        o->param->name, r + 1, n, n == 1 ? "" : "s", width);
        if (n > 0) r++;
        if (*end == '\0' || (width > 0 && only_blanks(end + 1))) break;
        s = end + 1;
    }
    if (width == 0) return fail(b, o, "%s: empty matrix", o->param->name);
    *rows = r;
    *cols = width;
    return IP_OK;
}

static int bind_matrix(binder *b, const origin *o, ip_value *v)
{
    int found = bind_choice_word(b, o, v);
    if (found) return found < 0 ? fail_nomem(b) : IP_OK;
    if (o->param->choices && ((*o->text >= 'a' && *o->text <= 'z') || (*o->text >= 'A' && *o->text <= 'Z'))) {
        char list[512], near[256];
        if (describe_choices(o->param->choices, list, sizeof list) ||
            describe_suggestion(o->param->choices, o->text, near, sizeof near))
            return fail_nomem(b);
        return fail(b, o, "%s must be a matrix or one of: %s (not '%s')%s", o->param->name, list,
                    o->text, near);
    }
    int rows, cols;
    int rc = matrix_walk(b, o, NULL, &rows, &cols);
    if (rc) return rc;
    size_t count = (size_t)rows * (size_t)cols;
    if (count > SIZE_MAX / sizeof(double)) return fail_nomem(b);
    double *values = arena_alloc(b, count * sizeof(double));
    if (!values) return fail_nomem(b);
    rc = matrix_walk(b, o, values, &rows, &cols);
    if (rc) return rc;
    v->m.v = values;
    v->m.rows = rows;
    v->m.cols = cols;
    return IP_OK;
}

static int bind_value(binder *b, const origin *o, ip_value *v)
{
    memset(v, 0, sizeof *v);
    v->choice = -1;
    switch (o->param->type) {
    case IP_INT: return bind_int(b, o, v);
    case IP_FLOAT: return bind_float(b, o, v);
    case IP_BOOL: return bind_bool(b, o, v);
    case IP_ENUM: return bind_enum(b, o, v);
    case IP_STRING:
    case IP_PATH: return bind_text(b, o, v);
    case IP_MATRIX: return bind_matrix(b, o, v);
    }
    return fail(b, o, "parameter '%s' has an unknown type %d (plugin bug)", o->param->name,
                (int)o->param->type);
}

static int find_param(const ip_stage *stage, const char *key)
{
    for (int k = 0; k < stage->n_params; k++)
        if (strcmp(stage->params[k].name, key) == 0) return k;
    return -1;
}

static int fail_unknown(binder *b, const pl_arg *a)
{
    const ip_stage *st = b->stage;
    origin o = { NULL, a->key, a->line, a->col, 0 };
    if (st->n_params <= 0)
        return fail(b, &o, "unknown parameter '%s' for stage '%s' (it takes no parameters)", a->key, st->name);
    const char **names = malloc((size_t)st->n_params * sizeof *names);
    if (!names) return fail_nomem(b);
    for (int k = 0; k < st->n_params; k++) names[k] = st->params[k].name;
    const char *near = suggest_nearest(a->key, names, (size_t)st->n_params);
    int rc;
    if (near) {
        rc = fail(b, &o, "unknown parameter '%s' for stage '%s' (did you mean '%s'?)", a->key, st->name, near);
    } else {
        char list[512];
        size_t used = 0;
        list[0] = '\0';
        append_joined(list, sizeof list, &used, names, (size_t)st->n_params);
        rc = fail(b, &o, "unknown parameter '%s' for stage '%s' (parameters: %s)", a->key, st->name, list);
    }
    free(names);
    return rc;
}

/* The arguments in text order, so the first mistake on the line is the one reported. */
static int bind_given(binder *b, ip_value *values, int *given)
{
    for (int k = 0; k < b->ps->n_args; k++) {
        const pl_arg *a = &b->ps->args[k];
        int idx = find_param(b->stage, a->key);
        if (idx < 0) return fail_unknown(b, a);
        if (given[idx]) {
            origin o = { NULL, a->key, a->line, a->col, 0 };
            return fail(b, &o, "parameter '%s' given twice", a->key);
        }
        given[idx] = 1;
        origin o = { &b->stage->params[idx], a->value, a->line, a->value_col, 0 };
        int rc = bind_value(b, &o, &values[idx]);
        if (rc) return rc;
    }
    return IP_OK;
}

/* Parameters not given take their default; one without a default is optional only for
 * text, paths and matrices (left NULL), and required otherwise. */
static int bind_defaults(binder *b, ip_value *values, const int *given)
{
    for (int k = 0; k < b->stage->n_params; k++) {
        if (given[k]) continue;
        const ip_param *p = &b->stage->params[k];
        origin o = { p, p->default_text, b->ps->line, b->ps->col, 1 };
        if (p->default_text) {
            int rc = bind_value(b, &o, &values[k]);
            if (rc) return rc;
            continue;
        }
        memset(&values[k], 0, sizeof values[k]);
        values[k].choice = -1;
        if (p->type != IP_STRING && p->type != IP_PATH && p->type != IP_MATRIX) {
            o.is_default = 0;
            return fail(b, &o, "stage '%s' needs parameter '%s'", b->stage->name, p->name);
        }
    }
    return IP_OK;
}

/* Catches a malformed table before it is trusted: the plugin is untrusted code too. */
static int check_table(binder *b)
{
    const ip_stage *st = b->stage;
    origin o = { NULL, "", b->ps->line, b->ps->col, 0 };
    if (!st->name) return fail(b, &o, "a stage has no name (plugin bug)");
    if (st->n_params < 0 || (st->n_params > 0 && !st->params))
        return fail(b, &o, "stage '%s' has a malformed parameter table (plugin bug)", st->name);
    for (int k = 0; k < st->n_params; k++) {
        const ip_param *p = &st->params[k];
        if (!p->name || (p->type == IP_ENUM && !p->choices))
            return fail(b, &o, "stage '%s' has a malformed parameter %d (plugin bug)", st->name, k + 1);
    }
    return IP_OK;
}

int args_bind(const ip_stage *stage, const pl_stage *ps, const char *source,
              args_bound *out, char *err, size_t errlen)
{
    binder b = { stage, ps, source ? source : "-e", NULL, err, errlen };
    memset(out, 0, sizeof *out);
    int rc = check_table(&b);
    if (rc) return rc;
    size_t n = (size_t)stage->n_params;
    ip_value *values = calloc(n ? n : 1, sizeof *values);
    int *given = calloc(n ? n : 1, sizeof *given);
    if (!values || !given) {
        rc = fail_nomem(&b);
    } else {
        rc = bind_given(&b, values, given);
        if (!rc) rc = bind_defaults(&b, values, given);
    }
    free(given);
    if (rc) {
        free(values);
        arena_free(b.arena);
        return rc;
    }
    out->values = values;
    out->n = stage->n_params;
    out->arena = b.arena;
    return IP_OK;
}

void args_free(args_bound *b)
{
    if (!b) return;
    free(b->values);
    arena_free(b->arena);
    memset(b, 0, sizeof *b);
}
