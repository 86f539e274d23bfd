#include <stddef.h>   /* pipeline.h uses size_t without including it */
#include "plan/pipeline.h"
#include "imgpipe/plugin.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pipelines are a few lines; the cap keeps positions in int and refuses stray binaries. */
#define PL_MAX_BYTES ((size_t)1 << 20)

typedef struct {
    const char *p, *end;
    int line, col;
    const char *source;
    char *err;
    size_t errlen;
} cursor;

static int at_eol(const cursor *c) { return c->p >= c->end || *c->p == '\n'; }
static int peek(const cursor *c) { return c->p < c->end ? (unsigned char)*c->p : -1; }
static int is_blank(int ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }
static int is_letter(int ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }
static int is_name_char(int ch) { return is_letter(ch) || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'; }
static int is_control(int ch) { return (ch >= 0 && ch < 0x20 && ch != '\t') || ch == 0x7f; }

/* Where a stage or an argument ends: blanks, end of line, comment, next stage. */
static int ends_token(const cursor *c)
{
    int ch = peek(c);
    return at_eol(c) || is_blank(ch) || ch == '#' || ch == '|';
}

/* Columns count characters: UTF-8 continuation bytes do not start a new column. */
static void advance(cursor *c)
{
    if (c->p >= c->end) return;
    char ch = *c->p++;
    if (ch == '\n') {
        c->line++;
        c->col = 1;
    } else if (c->p >= c->end || ((unsigned char)*c->p & 0xC0) != 0x80) {
        c->col++;
    }
}

static int fail_at(const cursor *c, int line, int col, const char *fmt, ...)
{
    if (!c->err || !c->errlen) return IP_EINVAL;
    int n = snprintf(c->err, c->errlen, "%s:%d:%d: ", c->source, line, col);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return IP_EINVAL;
}

static int fail_char(const cursor *c)
{
    int ch = peek(c);
    if (ch == 0) return fail_at(c, c->line, c->col, "unexpected NUL byte (is this a text file?)");
    if (ch >= 0x20 && ch < 0x7f) return fail_at(c, c->line, c->col, "unexpected character '%c'", ch);
    return fail_at(c, c->line, c->col, "unexpected byte 0x%02X", (unsigned)ch);
}

static int fail_nomem(const cursor *c)
{
    if (c->err && c->errlen) snprintf(c->err, c->errlen, "%s: out of memory", c->source);
    return IP_ENOMEM;
}

static char *copy_span(const char *s, size_t n)
{
    if (n == SIZE_MAX) return NULL;
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Makes room for one more element of an array that doubles as it grows. */
static int grow(void **items, int count, int *cap, size_t elem)
{
    if (count < *cap) return 0;
    if (*cap > INT32_MAX / 2) return -1;
    int new_cap = *cap ? *cap * 2 : 4;
    if ((size_t)new_cap > SIZE_MAX / elem) return -1;
    void *p = realloc(*items, (size_t)new_cap * elem);
    if (!p) return -1;
    *items = p;
    *cap = new_cap;
    return 0;
}

typedef struct {
    pl_pipeline *pl;
    int stage_cap, arg_cap;   /* capacity of pl->stages and of the last stage's args */
} builder;

static void skip_blanks(cursor *c)
{
    while (!at_eol(c) && is_blank(peek(c))) advance(c);
}

/* A comment runs to the end of the line; anything but NUL is allowed in it. */
static int skip_comment(cursor *c)
{
    while (!at_eol(c)) {
        if (peek(c) == 0) return fail_char(c);
        advance(c);
    }
    return IP_OK;
}

static int read_name(cursor *c, const char **start, size_t *len)
{
    if (!is_letter(peek(c))) return fail_char(c);
    *start = c->p;
    while (c->p < c->end && is_name_char(peek(c))) advance(c);
    *len = (size_t)(c->p - *start);
    return IP_OK;
}

/* A double-quoted value on one line, without escapes; the cursor is on the opening quote. */
static int read_quoted(cursor *c, const char **start, size_t *len)
{
    int line = c->line, col = c->col;
    advance(c);
    *start = c->p;
    for (;;) {
        int ch = peek(c);
        if (at_eol(c) || (ch == '\r' && (c->p + 1 >= c->end || c->p[1] == '\n')))
            return fail_at(c, line, col, "unterminated quote");
        if (ch == '"') break;
        if (is_control(ch)) return fail_char(c);
        advance(c);
    }
    *len = (size_t)(c->p - *start);
    advance(c);
    return ends_token(c) ? IP_OK : fail_char(c);
}

static int read_plain(cursor *c, const char **start, size_t *len)
{
    *start = c->p;
    while (!ends_token(c)) {
        int ch = peek(c);
        if (ch == '"' || is_control(ch)) return fail_char(c);
        advance(c);
    }
    *len = (size_t)(c->p - *start);
    return IP_OK;
}

static int add_arg(cursor *c, builder *b, const pl_arg *a, const char *key, size_t key_len,
                   const char *value, size_t value_len)
{
    pl_stage *st = &b->pl->stages[b->pl->n_stages - 1];
    if (grow((void **)&st->args, st->n_args, &b->arg_cap, sizeof *st->args)) return fail_nomem(c);
    pl_arg *slot = &st->args[st->n_args];
    *slot = *a;
    slot->key = copy_span(key, key_len);
    slot->value = copy_span(value, value_len);
    if (!slot->key || !slot->value) {
        free(slot->key);
        free(slot->value);
        return fail_nomem(c);
    }
    st->n_args++;
    return IP_OK;
}

/* key=value, the cursor on the key's first character. */
static int parse_arg(cursor *c, builder *b)
{
    pl_arg a = { NULL, NULL, c->line, c->col, 0 };
    const char *key, *value;
    size_t key_len, value_len = 0;
    int rc = read_name(c, &key, &key_len);
    if (rc) return rc;
    if (peek(c) != '=') return fail_at(c, a.line, a.col, "expected '=' after '%.*s'", (int)key_len, key);
    advance(c);
    a.value_col = c->col;
    if (peek(c) == '"')
        rc = read_quoted(c, &value, &value_len);
    else if (ends_token(c))
        return fail_at(c, a.line, a.col, "missing value for '%.*s'", (int)key_len, key);
    else
        rc = read_plain(c, &value, &value_len);
    if (rc) return rc;
    return add_arg(c, b, &a, key, key_len, value, value_len);
}

static int add_stage(cursor *c, builder *b, const char *name, size_t len, int line, int col)
{
    pl_pipeline *pl = b->pl;
    if (grow((void **)&pl->stages, pl->n_stages, &b->stage_cap, sizeof *pl->stages)) return fail_nomem(c);
    pl_stage *st = &pl->stages[pl->n_stages];
    memset(st, 0, sizeof *st);
    st->name = copy_span(name, len);
    if (!st->name) return fail_nomem(c);
    st->line = line;
    st->col = col;
    pl->n_stages++;
    b->arg_cap = 0;
    return IP_OK;
}

/* A stage name and its arguments, up to the end of the line, a comment or a '|'. */
static int parse_stage(cursor *c, builder *b)
{
    int line = c->line, col = c->col;
    const char *name;
    size_t len;
    int rc = read_name(c, &name, &len);
    if (rc) return rc;
    if (!ends_token(c)) return fail_char(c);
    rc = add_stage(c, b, name, len, line, col);
    for (;;) {
        if (rc) return rc;
        skip_blanks(c);
        if (ends_token(c)) return IP_OK;
        rc = parse_arg(c, b);
    }
}

/* One line: stages separated by '|', then an optional comment. */
static int parse_line(cursor *c, builder *b)
{
    int pipe_line = 0, pipe_col = 0;
    for (;;) {
        skip_blanks(c);
        if (at_eol(c) || peek(c) == '#') {
            if (pipe_line) return fail_at(c, pipe_line, pipe_col, "empty stage after '|'");
            int rc = skip_comment(c);
            if (rc) return rc;
            advance(c);
            return IP_OK;
        }
        if (peek(c) == '|') return fail_at(c, c->line, c->col, "empty stage before '|'");
        int rc = parse_stage(c, b);
        if (rc) return rc;
        pipe_line = 0;
        if (peek(c) == '|') {
            pipe_line = c->line;
            pipe_col = c->col;
            advance(c);
        }
    }
}

static int parse_span(const char *text, size_t len, const char *source, pl_pipeline *out,
                      char *err, size_t errlen)
{
    cursor c = { text, text + len, 1, 1, source, err, errlen };
    builder b = { out, 0, 0 };
    if (len > PL_MAX_BYTES) {
        if (err && errlen)
            snprintf(err, errlen, "%s: pipeline is larger than 1 MiB (%zu bytes)", source, len);
        return IP_ELIMIT;
    }
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) c.p += 3;   /* UTF-8 byte order mark */
    while (c.p < c.end) {
        int rc = parse_line(&c, &b);
        if (rc) return rc;
    }
    if (out->n_stages == 0) return fail_at(&c, 1, 1, "empty pipeline: no stages");
    return IP_OK;
}

static int parse_text(const char *text, size_t len, const char *source, pl_pipeline *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!source) source = "-e";
    out->source = copy_span(source, strlen(source));
    if (!out->source) {
        if (err && errlen) snprintf(err, errlen, "%s: out of memory", source);
        return IP_ENOMEM;
    }
    int rc = parse_span(text, len, source, out, err, errlen);
    if (rc) pl_free(out);
    return rc;
}

int pl_parse(const char *text, const char *source, pl_pipeline *out, char *err, size_t errlen)
{
    if (!text) text = "";
    return parse_text(text, strlen(text), source, out, err, errlen);
}

/* Reads at most PL_MAX_BYTES + 1 bytes, so an oversized file is seen without reading it all. */
static int read_limited(FILE *f, char *buf, size_t *len)
{
    size_t n = 0, cap = PL_MAX_BYTES + 1;
    while (n < cap) {
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0) break;
        n += got;
    }
    *len = n;
    return ferror(f) ? -1 : 0;
}

int pl_parse_file(const char *path, pl_pipeline *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return IP_EIO;
    }
    char *buf = malloc(PL_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        if (err && errlen) snprintf(err, errlen, "%s: out of memory", path);
        return IP_ENOMEM;
    }
    size_t len;
    errno = 0;
    int failed = read_limited(f, buf, &len);
    int read_errno = errno;
    fclose(f);
    int rc;
    if (failed) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(read_errno ? read_errno : EIO));
        rc = IP_EIO;
    } else if (len > PL_MAX_BYTES) {
        if (err && errlen) snprintf(err, errlen, "%s: pipeline file is larger than 1 MiB", path);
        rc = IP_ELIMIT;
    } else {
        rc = parse_text(buf, len, path, out, err, errlen);
    }
    free(buf);
    return rc;
}

void pl_free(pl_pipeline *p)
{
    if (!p) return;
    for (int s = 0; s < p->n_stages; s++) {
        pl_stage *st = &p->stages[s];
        for (int a = 0; a < st->n_args; a++) {
            free(st->args[a].key);
            free(st->args[a].value);
        }
        free(st->args);
        free(st->name);
    }
    free(p->stages);
    free(p->source);
    memset(p, 0, sizeof *p);
}
