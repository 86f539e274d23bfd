/* Pipeline text parser: valid files, every error message with its position, hostile input. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "imgpipe/plugin.h"
#include "plan/pipeline.h"

static char err[1024];

static int parse(const char *text, pl_pipeline *pl)
{
    err[0] = '\0';
    int rc = pl_parse(text, "t.pipe", pl, err, sizeof err);
    CHECK(rc == IP_OK, "parse of [%s] failed: %s", text, err);
    return rc;
}

static void expect_error(const char *text, const char *message)
{
    pl_pipeline pl;
    err[0] = '\0';
    int rc = pl_parse(text, "t.pipe", &pl, err, sizeof err);
    CHECK(rc == IP_EINVAL, "[%s] gave rc %d", text, rc);
    CHECK(strcmp(err, message) == 0, "[%s]: got \"%s\", want \"%s\"", text, err, message);
    CHECK(pl.n_stages == 0 && pl.stages == NULL, "failed parse left stages behind");
}

static void check_stage(const pl_stage *s, const char *name, int line, int col, int n_args)
{
    CHECK(strcmp(s->name, name) == 0, "name %s, want %s", s->name, name);
    CHECK(s->line == line && s->col == col, "%s at %d:%d, want %d:%d", name, s->line, s->col, line, col);
    CHECK(s->n_args == n_args, "%s has %d args, want %d", name, s->n_args, n_args);
}

static void check_arg(const pl_arg *a, const char *key, const char *value, int line, int col, int value_col)
{
    CHECK(strcmp(a->key, key) == 0, "key %s, want %s", a->key, key);
    CHECK(strcmp(a->value, value) == 0, "value [%s], want [%s]", a->value, value);
    CHECK(a->line == line && a->col == col && a->value_col == value_col, "%s at %d:%d value col %d, want %d:%d %d",
          key, a->line, a->col, a->value_col, line, col, value_col);
}

static void test_design_example(void)
{
    pl_pipeline pl;
    const char *text = "# denoise.pipe: remove salt-and-pepper noise from a colour photo\n"
                       "grayscale\n"
                       "median  radius=1            # 3x3\n"
                       "convolve kernel=gaussian3\n";
    if (parse(text, &pl)) return;
    CHECK(strcmp(pl.source, "t.pipe") == 0, "source %s", pl.source);
    CHECK(pl.n_stages == 3, "%d stages", pl.n_stages);
    if (pl.n_stages == 3) {
        check_stage(&pl.stages[0], "grayscale", 2, 1, 0);
        check_stage(&pl.stages[1], "median", 3, 1, 1);
        check_arg(&pl.stages[1].args[0], "radius", "1", 3, 9, 16);
        check_stage(&pl.stages[2], "convolve", 4, 1, 1);
        check_arg(&pl.stages[2].args[0], "kernel", "gaussian3", 4, 10, 17);
    }
    pl_free(&pl);
    CHECK(pl.stages == NULL && pl.source == NULL, "pl_free clears");
    pl_free(&pl);
}

static void test_quotes_and_pipes(void)
{
    pl_pipeline pl;
    if (parse("convolve kernel=\"1 2 1; 2 4 2; 1 2 1\" divisor=16 out=\"a#b|c\" e=\"\"", &pl)) return;
    check_stage(&pl.stages[0], "convolve", 1, 1, 4);
    if (pl.stages[0].n_args == 4) {
        check_arg(&pl.stages[0].args[0], "kernel", "1 2 1; 2 4 2; 1 2 1", 1, 10, 17);
        check_arg(&pl.stages[0].args[1], "divisor", "16", 1, 39, 47);
        check_arg(&pl.stages[0].args[2], "out", "a#b|c", 1, 50, 54);
        check_arg(&pl.stages[0].args[3], "e", "", 1, 62, 64);
    }
    pl_free(&pl);

    if (parse("grayscale | median radius=2|mean", &pl)) return;
    CHECK(pl.n_stages == 3, "%d stages", pl.n_stages);
    if (pl.n_stages == 3) {
        check_stage(&pl.stages[0], "grayscale", 1, 1, 0);
        check_stage(&pl.stages[1], "median", 1, 13, 1);
        check_arg(&pl.stages[1].args[0], "radius", "2", 1, 20, 27);
        check_stage(&pl.stages[2], "mean", 1, 29, 0);
    }
    pl_free(&pl);
}

static void test_whitespace_and_line_endings(void)
{
    pl_pipeline pl;
    /* tab = one column; CRLF endings; blank and comment lines; no final newline */
    if (parse("\r\n  \t\n# only a comment\r\n\tmedian\tradius=3 \t\r\ngrayscale\r\n\n  mean #x\r\nT_1-b k-2_x=v/w.png", &pl))
        return;
    CHECK(pl.n_stages == 4, "%d stages", pl.n_stages);
    if (pl.n_stages == 4) {
        check_stage(&pl.stages[0], "median", 4, 2, 1);
        check_arg(&pl.stages[0].args[0], "radius", "3", 4, 9, 16);
        check_stage(&pl.stages[1], "grayscale", 5, 1, 0);
        check_stage(&pl.stages[2], "mean", 7, 3, 0);
        check_stage(&pl.stages[3], "T_1-b", 8, 1, 1);
        check_arg(&pl.stages[3].args[0], "k-2_x", "v/w.png", 8, 7, 13);
    }
    pl_free(&pl);

    /* UTF-8: a byte order mark is skipped, and a column is a character, not a byte */
    if (parse("\xEF\xBB\xBF" "a p=\"\xC3\xA9t\xC3\xA9\" q=\xC3\xA9 r=1", &pl)) return;
    check_stage(&pl.stages[0], "a", 1, 1, 3);
    if (pl.stages[0].n_args == 3) {
        check_arg(&pl.stages[0].args[0], "p", "\xC3\xA9t\xC3\xA9", 1, 3, 5);
        check_arg(&pl.stages[0].args[1], "q", "\xC3\xA9", 1, 11, 13);
        check_arg(&pl.stages[0].args[2], "r", "1", 1, 15, 17);
    }
    pl_free(&pl);
}

static void test_syntax_errors(void)
{
    expect_error("median radius 3", "t.pipe:1:8: expected '=' after 'radius'");
    expect_error("median radius", "t.pipe:1:8: expected '=' after 'radius'");
    expect_error("grayscale\nmedian\tradius:3", "t.pipe:2:8: expected '=' after 'radius'");
    expect_error("a k =1", "t.pipe:1:3: expected '=' after 'k'");

    expect_error("convolve kernel=\"1 2", "t.pipe:1:17: unterminated quote");
    expect_error("a k=\"x\ny\"", "t.pipe:1:5: unterminated quote");
    expect_error("a\r\nb k=\"x\r\n", "t.pipe:2:5: unterminated quote");

    expect_error("", "t.pipe:1:1: empty pipeline: no stages");
    expect_error("\n\n  # nothing here\n \t \r\n", "t.pipe:1:1: empty pipeline: no stages");

    expect_error("| a", "t.pipe:1:1: empty stage before '|'");
    expect_error("a || b", "t.pipe:1:4: empty stage before '|'");
    expect_error("x\na | | b", "t.pipe:2:5: empty stage before '|'");
    expect_error("a |", "t.pipe:1:3: empty stage after '|'");
    expect_error("a | # comment", "t.pipe:1:3: empty stage after '|'");

    expect_error("median radius=1 $x", "t.pipe:1:17: unexpected character '$'");
    expect_error("1median", "t.pipe:1:1: unexpected character '1'");
    expect_error("median=3", "t.pipe:1:7: unexpected character '='");
    expect_error("a k=\"x\"y", "t.pipe:1:8: unexpected character 'y'");
    expect_error("a k=x\"y\"", "t.pipe:1:6: unexpected character '\"'");
    expect_error("a _k=1", "t.pipe:1:3: unexpected character '_'");
    expect_error("a\x01", "t.pipe:1:2: unexpected byte 0x01");
    expect_error("a k=\"\x7f\"", "t.pipe:1:6: unexpected byte 0x7F");
    expect_error("\xC3\xA9", "t.pipe:1:1: unexpected byte 0xC3");

    expect_error("median radius=", "t.pipe:1:8: missing value for 'radius'");
    expect_error("median radius= border=zero", "t.pipe:1:8: missing value for 'radius'");
    expect_error("a k=# c", "t.pipe:1:3: missing value for 'k'");
    expect_error("a k=|b", "t.pipe:1:3: missing value for 'k'");
}

static char *write_file(const char *name, const char *data, size_t len)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f) return path;
    CHECK(fwrite(data, 1, len, f) == len, "short write");
    fclose(f);
    return path;
}

static void test_files(void)
{
    pl_pipeline pl;
    char want[5000];

    const char *path = write_file("ok.pipe", "grayscale\r\nmedian radius=2\r\n", 28);
    int rc = pl_parse_file(path, &pl, err, sizeof err);
    CHECK(rc == IP_OK, "file parse: %s", err);
    if (rc == IP_OK) {
        CHECK(pl.n_stages == 2 && strcmp(pl.source, path) == 0, "file source %s", pl.source);
        check_arg(&pl.stages[1].args[0], "radius", "2", 2, 8, 15);
        pl_free(&pl);
    }

    path = write_file("nul.pipe", "grayscale\nmed\0ian\n", 18);
    rc = pl_parse_file(path, &pl, err, sizeof err);
    snprintf(want, sizeof want, "%s:2:4: unexpected NUL byte (is this a text file?)", path);
    CHECK(rc == IP_EINVAL && strcmp(err, want) == 0, "NUL: %d %s", rc, err);
    path = write_file("nulc.pipe", "grayscale # \0\n", 14);
    rc = pl_parse_file(path, &pl, err, sizeof err);
    snprintf(want, sizeof want, "%s:1:13: unexpected NUL byte (is this a text file?)", path);
    CHECK(rc == IP_EINVAL && strcmp(err, want) == 0, "NUL in comment: %d %s", rc, err);

    size_t big = (size_t)1 << 20;
    char *data = malloc(big + 1);
    CHECK(data != NULL, "malloc");
    if (!data) return;
    /* exactly 1 MiB is accepted: a long comment line, then a stage */
    memset(data, '#', big);
    memcpy(data + big - 11, "\ngrayscale\n", 11);
    path = write_file("max.pipe", data, big);
    rc = pl_parse_file(path, &pl, err, sizeof err);
    CHECK(rc == IP_OK && pl.n_stages == 1 && pl.stages[0].line == 2, "1 MiB file: %d %s", rc, err);
    if (rc == IP_OK) pl_free(&pl);
    data[big] = '\n';
    path = write_file("big.pipe", data, big + 1);
    rc = pl_parse_file(path, &pl, err, sizeof err);
    snprintf(want, sizeof want, "%s: pipeline file is larger than 1 MiB", path);
    CHECK(rc == IP_ELIMIT && strcmp(err, want) == 0, "big file: %d %s", rc, err);
    data[big] = '\0';
    rc = pl_parse(data, "-e", &pl, err, sizeof err);
    CHECK(rc == IP_OK, "1 MiB text: %s", err);
    if (rc == IP_OK) pl_free(&pl);
    free(data);

    snprintf(want, sizeof want, "%s/no-such.pipe", tu_tmpdir());
    rc = pl_parse_file(want, &pl, err, sizeof err);
    CHECK(rc == IP_EIO && strstr(err, "no-such.pipe: cannot open: ") != NULL, "missing file: %d %s", rc, err);
    rc = pl_parse_file(tu_tmpdir(), &pl, err, sizeof err);
    CHECK(rc == IP_EIO && strstr(err, ": cannot read: ") != NULL, "directory: %d %s", rc, err);
}

/* A 300k-character name and value parse whole; positions stay exact past them. */
static void test_long_line(void)
{
    size_t n = 300000;
    char *text = malloc(2 * n + 32);
    CHECK(text != NULL, "malloc");
    if (!text) return;
    memset(text, 'a', n);
    memcpy(text + n, " k=", 3);
    memset(text + n + 3, 'v', n);
    strcpy(text + 2 * n + 3, " z=1");
    pl_pipeline pl;
    if (parse(text, &pl) == IP_OK) {
        CHECK(strlen(pl.stages[0].name) == n && pl.stages[0].n_args == 2, "long name");
        CHECK(strlen(pl.stages[0].args[0].value) == n, "long value");
        CHECK(pl.stages[0].args[1].col == (int)(2 * n + 5), "col %d", pl.stages[0].args[1].col);
        pl_free(&pl);
    }
    free(text);
}

/* Random text from the grammar's own characters: every result is a clean success or one
 * error naming a position inside the text. */
static void test_random_input(void)
{
    static const char alphabet[] = "ak1=\"| #\t\n\r;,_-\xC3\xA9\x01$";
    tu_rng rng;
    tu_seed(&rng, 20261123);
    char text[80];
    int ok = 0, failed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = tu_next(&rng) % (sizeof text - 1);
        int lines = 1;
        for (size_t k = 0; k < len; k++) {
            text[k] = alphabet[tu_next(&rng) % (sizeof alphabet - 1)];
            lines += text[k] == '\n';
        }
        text[len] = '\0';
        pl_pipeline pl;
        err[0] = '\0';
        int rc = pl_parse(text, "fz", &pl, err, sizeof err);
        if (rc == IP_OK) {
            ok++;
            int good = pl.n_stages > 0;
            for (int s = 0; s < pl.n_stages; s++) good = good && pl.stages[s].name[0] >= 'A';
            CHECK(good, "odd success on [%s]", text);
            pl_free(&pl);
            continue;
        }
        failed++;
        int line = 0, col = 0;
        CHECK(rc == IP_EINVAL && sscanf(err, "fz:%d:%d: ", &line, &col) == 2 && line >= 1 &&
                  line <= lines && col >= 1 && col <= (int)len + 1,
              "rc %d, error \"%s\" for [%s]", rc, err, text);
    }
    CHECK(ok > 100 && failed > 100, "random inputs: %d parsed, %d refused", ok, failed);
}

int main(void)
{
    test_design_example();
    test_quotes_and_pipes();
    test_whitespace_and_line_endings();
    test_syntax_errors();
    test_files();
    test_long_line();
    test_random_input();
    return tu_finish();
}
