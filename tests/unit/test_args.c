/* Argument binding against a parameter table, and "did you mean" suggestions. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "imgpipe/plugin.h"
#include "plan/pipeline.h"
#include "plan/args.h"
#include "plan/suggest.h"

enum { P_RADIUS, P_BORDER, P_OFFSET, P_FLAG, P_DIVISOR, P_KERNEL, P_OUT, P_PLOT, P_SCALE, P_COUNT };

static const ip_param params[] = {
    { "radius", IP_INT, "1", 1, 15, NULL, "window radius" },
    { "border", IP_ENUM, "replicate", 0, 0, "replicate|reflect101|zero|shrink", "border" },
    { "offset", IP_FLOAT, "0", -255, 255, NULL, "added after dividing" },
    { "flag", IP_BOOL, "false", 0, 0, NULL, "a switch" },
    { "divisor", IP_INT, "auto", 0, 0, "auto", "kernel sum when auto" },
    { "kernel", IP_MATRIX, "box3", 0, 0, "box3|gaussian3|sobel-x", "weights" },
    { "out", IP_STRING, "{stem}.csv", 0, 0, NULL, "output name" },
    { "plot", IP_PATH, NULL, 0, 0, "none", "optional chart" },
    { "scale", IP_FLOAT, "1.5", 0, 0, "auto", "no range" },
};

static const ip_stage median_stage = { .abi_version = IP_ABI_VERSION, .struct_size = sizeof(ip_stage),
                                       .name = "median", .summary = "test stage", .params = params,
                                       .n_params = P_COUNT };
static const ip_stage bare_stage = { .abi_version = IP_ABI_VERSION, .struct_size = sizeof(ip_stage),
                                     .name = "transpose", .summary = "no parameters" };

static char err[2048];

/* Parses text and binds its stage number `which` against stage. */
static int bind_nth(const ip_stage *stage, const char *text, int which, args_bound *b)
{
    pl_pipeline pl;
    err[0] = '\0';
    memset(b, 0, sizeof *b);
    int rc = pl_parse(text, "t.pipe", &pl, err, sizeof err);
    CHECK(rc == IP_OK, "parse [%s]: %s", text, err);
    if (rc) return rc;
    rc = args_bind(stage, &pl.stages[which], pl.source, b, err, sizeof err);
    pl_free(&pl);
    return rc;
}

static int bind(const char *text, args_bound *b) { return bind_nth(&median_stage, text, 0, b); }

static void expect_error_in(const ip_stage *stage, const char *text, int which, const char *message)
{
    args_bound b;
    int rc = bind_nth(stage, text, which, &b);
    CHECK(rc == IP_EINVAL, "[%s] gave rc %d", text, rc);
    CHECK(strcmp(err, message) == 0, "[%s]: got \"%s\", want \"%s\"", text, err, message);
    CHECK(b.values == NULL && b.arena == NULL, "failed bind left memory");
}

static void expect_error(const char *text, const char *message) { expect_error_in(&median_stage, text, 0, message); }

static int str_is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

static void test_defaults(void)
{
    args_bound b;
    if (bind("median", &b) != IP_OK) return;
    const ip_value *v = b.values;
    CHECK(b.n == P_COUNT, "n %d", b.n);
    CHECK(v[P_RADIUS].i == 1 && v[P_RADIUS].f == 1.0 && v[P_RADIUS].choice == -1 && !v[P_RADIUS].s, "radius");
    CHECK(v[P_BORDER].i == 0 && v[P_BORDER].choice == 0 && str_is(v[P_BORDER].s, "replicate"), "border");
    CHECK(v[P_OFFSET].f == 0.0 && v[P_OFFSET].choice == -1, "offset");
    CHECK(v[P_FLAG].i == 0 && v[P_FLAG].choice == -1, "flag");
    CHECK(v[P_DIVISOR].choice == 0 && str_is(v[P_DIVISOR].s, "auto"), "divisor=auto");
    CHECK(v[P_KERNEL].choice == 0 && str_is(v[P_KERNEL].s, "box3") && v[P_KERNEL].m.v == NULL, "kernel word");
    CHECK(v[P_OUT].choice == -1 && str_is(v[P_OUT].s, "{stem}.csv"), "out");
    CHECK(v[P_PLOT].s == NULL && v[P_PLOT].choice == -1, "optional path without default");
    CHECK(v[P_SCALE].f == 1.5 && v[P_SCALE].choice == -1, "scale");
    args_free(&b);
    CHECK(b.values == NULL && b.arena == NULL, "args_free clears");
    args_free(&b);
}

static void test_given_values(void)
{
    args_bound b;
    const char *text = "median radius=15 border=zero offset=-2.5e1 flag=yes divisor=16 out=\"a b.csv\" "
                       "kernel=\"1 2 1; 2 4 2; 1 2 1\" plot=/tmp/p.png scale=auto";
    if (bind(text, &b) != IP_OK) return;
    const ip_value *v = b.values;
    CHECK(v[P_RADIUS].i == 15 && v[P_RADIUS].f == 15.0, "radius %lld", (long long)v[P_RADIUS].i);
    CHECK(v[P_BORDER].i == 2 && v[P_BORDER].choice == 2 && str_is(v[P_BORDER].s, "zero"), "border");
    CHECK(v[P_OFFSET].f == -25.0, "offset %g", v[P_OFFSET].f);
    CHECK(v[P_FLAG].i == 1, "flag");
    CHECK(v[P_DIVISOR].i == 16 && v[P_DIVISOR].f == 16.0 && v[P_DIVISOR].choice == -1 && !v[P_DIVISOR].s, "divisor");
    CHECK(str_is(v[P_OUT].s, "a b.csv"), "out %s", v[P_OUT].s);
    CHECK(str_is(v[P_PLOT].s, "/tmp/p.png") && v[P_PLOT].choice == -1, "plot");
    CHECK(v[P_SCALE].choice == 0 && str_is(v[P_SCALE].s, "auto"), "scale=auto");
    static const double want[9] = { 1, 2, 1, 2, 4, 2, 1, 2, 1 };
    const ip_matrix *m = &v[P_KERNEL].m;
    CHECK(m->v && m->rows == 3 && m->cols == 3 && v[P_KERNEL].choice == -1, "kernel %dx%d", m->rows, m->cols);
    if (m->v && m->rows == 3 && m->cols == 3)
        CHECK(memcmp(m->v, want, sizeof want) == 0, "kernel values");
    args_free(&b);

    if (bind("median plot=none kernel=sobel-x radius=07 offset=255 border=shrink", &b) != IP_OK) return;
    CHECK(str_is(b.values[P_PLOT].s, "none") && b.values[P_PLOT].choice == 0, "plot=none is the choice");
    CHECK(b.values[P_KERNEL].choice == 2 && b.values[P_KERNEL].m.v == NULL, "kernel=sobel-x");
    CHECK(b.values[P_OFFSET].f == 255.0 && b.values[P_BORDER].i == 3 && b.values[P_RADIUS].i == 7, "bounds are inclusive");
    args_free(&b);
    CHECK(bind("median radius=+1 offset=-255", &b) == IP_OK && b.values[P_RADIUS].i == 1, "+1: %s", err);
    args_free(&b);
}

static void test_bools(void)
{
    static const char *const words[] = { "true", "false", "yes", "no", "1", "0", "on", "off", "TRUE", "Off", "Yes" };
    static const int want[] = { 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1 };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        char text[64];
        args_bound b;
        snprintf(text, sizeof text, "median flag=%s", words[k]);
        int rc = bind(text, &b);
        CHECK(rc == IP_OK && b.values[P_FLAG].i == want[k], "flag=%s: %s", words[k], err);
        args_free(&b);
    }
}

static void check_matrix(const char *text, int rows, int cols, const double *want)
{
    char line[8192];
    args_bound b;
    snprintf(line, sizeof line, "median kernel=\"%s\"", text);
    if (bind(line, &b) != IP_OK) {
        CHECK(0, "kernel [%s]: %s", text, err);
        return;
    }
    const ip_matrix *m = &b.values[P_KERNEL].m;
    CHECK(m->rows == rows && m->cols == cols, "[%s] is %dx%d, want %dx%d", text, m->rows, m->cols, rows, cols);
    if (m->rows == rows && m->cols == cols)
        for (int k = 0; k < rows * cols; k++) CHECK(m->v[k] == want[k], "[%s][%d] = %g, want %g", text, k, m->v[k], want[k]);
    args_free(&b);
}

static void test_matrices(void)
{
    static const double one[] = { 5 };
    static const double two_by_three[] = { 1, 2, 3, 4, 5, 6 };
    static const double mixed[] = { 1, -25, 0.5, 4 };
    static const double row[] = { 1, 2, 3, 4, 5, 6, 7 };
    static const double column[] = { 1, 2, 3, 4, 5 };
    check_matrix("5", 1, 1, one);
    check_matrix("1,2,3;4,5,6", 2, 3, two_by_three);
    check_matrix(" 1, 2 ,3 ;\t4 5,6 ; ", 2, 3, two_by_three);
    check_matrix("1, -2.5e1 ; .5 +4;", 2, 2, mixed);
    check_matrix("1 2 3 4 5 6 7", 1, 7, row);
    check_matrix("1;2;3;4;5", 5, 1, column);

    /* random shapes and values, printed exactly and separated every way the grammar allows */
    static const char *const seps[] = { " ", ",", ", ", "\t", " , " };
    tu_rng rng;
    tu_seed(&rng, 77);
    for (int iter = 0; iter < 40; iter++) {
        int rows = 1 + (int)(tu_next(&rng) % 6), cols = 1 + (int)(tu_next(&rng) % 7);
        double want[42];
        char text[4096];
        size_t used = 0;
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                double x = ((double)tu_next(&rng) - 2147483648.0) / 65536.0;
                want[r * cols + c] = x;
                used += (size_t)snprintf(text + used, sizeof text - used, "%s%.17g", c ? seps[tu_next(&rng) % 5] : "", x);
            }
            if (r + 1 < rows) used += (size_t)snprintf(text + used, sizeof text - used, ";");
        }
        check_matrix(text, rows, cols, want);
    }
}

static void test_random_ints(void)
{
    tu_rng rng;
    tu_seed(&rng, 5);
    for (int iter = 0; iter < 200; iter++) {
        long long n = (long long)(tu_next(&rng) % 41) - 20;
        char text[64], want[128];
        args_bound b;
        snprintf(text, sizeof text, "median radius=%lld", n);
        int rc = bind(text, &b);
        if (n >= 1 && n <= 15) {
            CHECK(rc == IP_OK && b.values[P_RADIUS].i == n && b.values[P_RADIUS].f == (double)n, "radius=%lld", n);
            args_free(&b);
        } else {
            snprintf(want, sizeof want, "t.pipe:1:15: radius=%lld is out of range (1 to 15)", n);
            CHECK(rc == IP_EINVAL && strcmp(err, want) == 0, "radius=%lld: %s", n, err);
        }
    }
}

static void test_errors(void)
{
    expect_error("median radus=2", "t.pipe:1:8: unknown parameter 'radus' for stage 'median' (did you mean 'radius'?)");
    expect_error("median zzz=2",
                 "t.pipe:1:8: unknown parameter 'zzz' for stage 'median' "
                 "(parameters: radius, border, offset, flag, divisor, kernel, out, plot, scale)");
    expect_error_in(&bare_stage, "transpose x=1",
                    0, "t.pipe:1:11: unknown parameter 'x' for stage 'transpose' (it takes no parameters)");
    expect_error("median radius=2 radius=3", "t.pipe:1:17: parameter 'radius' given twice");
    expect_error("median radius=abc", "t.pipe:1:15: radius expects an integer, not 'abc'");
    expect_error("median radius=2.5", "t.pipe:1:15: radius expects an integer, not '2.5'");
    expect_error("median radius=\"\"", "t.pipe:1:15: radius expects an integer, not ''");
    expect_error("median radius=\" 3\"", "t.pipe:1:15: radius expects an integer, not ' 3'");
    expect_error("median radius=-", "t.pipe:1:15: radius expects an integer, not '-'");
    expect_error("median out=\"x\" radius=\"abc\"", "t.pipe:1:23: radius expects an integer, not 'abc'");
    expect_error_in(&median_stage, "grayscale\nmedian radius=0", 1, "t.pipe:2:15: radius=0 is out of range (1 to 15)");
    expect_error("median radius=99", "t.pipe:1:15: radius=99 is out of range (1 to 15)");
    expect_error("median radius=99999999999999999999",
                 "t.pipe:1:15: radius=99999999999999999999 is out of range (1 to 15)");
    expect_error("median divisor=99999999999999999999", "t.pipe:1:16: divisor=99999999999999999999 does not fit in 64 bits");
    expect_error("median divisor=abc", "t.pipe:1:16: divisor expects an integer, not 'abc' (or one of: auto)");
    expect_error("median divisor=atuo", "t.pipe:1:16: divisor expects an integer, not 'atuo' (or one of: auto) - did you mean 'auto'?");
    expect_error("median offset=x1", "t.pipe:1:15: offset expects a number, not 'x1'");
    expect_error("median offset=nan", "t.pipe:1:15: offset expects a number, not 'nan'");
    expect_error("median offset=-inf", "t.pipe:1:15: offset expects a number, not '-inf'");
    expect_error("median offset=1.5.2", "t.pipe:1:15: offset expects a number, not '1.5.2'");
    expect_error("median offset=300", "t.pipe:1:15: offset=300 is out of range (-255 to 255)");
    expect_error("median offset=-255.5", "t.pipe:1:15: offset=-255.5 is out of range (-255 to 255)");
    expect_error("median flag=maybe", "t.pipe:1:13: flag expects true or false, not 'maybe'");
    expect_error("median border=mirror",
                 "t.pipe:1:15: border must be one of: replicate, reflect101, zero, shrink (not 'mirror')");
    expect_error("median border=reflect10",
                 "t.pipe:1:15: border must be one of: replicate, reflect101, zero, shrink (not 'reflect10')"
                 " - did you mean 'reflect101'?");
    expect_error("median kernel=\"1 2 3; 4 5\"",
                 "t.pipe:1:15: kernel: rows must have equal lengths (row 2 has 2 values, row 1 has 3)");
    expect_error("median kernel=\"1 2; 3 4; 5\"",
                 "t.pipe:1:15: kernel: rows must have equal lengths (row 3 has 1 value, row 1 has 2)");
    expect_error("median kernel=\"1 2;;3 4\"",
                 "t.pipe:1:15: kernel: rows must have equal lengths (row 2 has 0 values, row 1 has 2)");
    expect_error("median kernel=\"1 x 3\"", "t.pipe:1:15: kernel: 'x' is not a number");
    expect_error("median kernel=\"1 2; 3 4e\"", "t.pipe:1:15: kernel: '4e' is not a number");
    expect_error("median kernel=\"\"", "t.pipe:1:15: kernel: empty matrix");
    expect_error("median kernel=\" ; , \"", "t.pipe:1:15: kernel: empty matrix");
    expect_error("median kernel=gausian3",
                 "t.pipe:1:15: kernel must be a matrix or one of: box3, gaussian3, sobel-x (not 'gausian3')"
                 " - did you mean 'gaussian3'?");
}

/* A plugin's table is code too: bad defaults and missing ones are reported, not trusted. */
static void test_plugin_defaults(void)
{
    static const ip_param bad_int[] = { { "radius", IP_INT, "abc", 1, 15, NULL, "" } };
    static const ip_param bad_range[] = { { "radius", IP_INT, "0", 1, 15, NULL, "" } };
    static const ip_param bad_matrix[] = { { "k", IP_MATRIX, "1 2; 3", 0, 0, NULL, "" } };
    static const ip_param required[] = { { "n", IP_INT, NULL, 0, 0, NULL, "" } };
    static const ip_param no_choices[] = { { "mode", IP_ENUM, "a", 0, 0, NULL, "" } };
    ip_stage st = { .abi_version = IP_ABI_VERSION, .struct_size = sizeof(ip_stage), .name = "bad", .summary = "",
                    .params = bad_int, .n_params = 1 };
    expect_error_in(&st, "bad", 0,
                    "t.pipe:1:1: stage 'bad' has a bad default for 'radius' (plugin bug): radius expects an integer, not 'abc'");
    st.params = bad_range;
    expect_error_in(&st, "x\n  bad", 1,
                    "t.pipe:2:3: stage 'bad' has a bad default for 'radius' (plugin bug): radius=0 is out of range (1 to 15)");
    args_bound b;
    CHECK(bind_nth(&st, "bad radius=3", 0, &b) == IP_OK && b.values[0].i == 3, "given value hides the bad default");
    args_free(&b);
    st.params = bad_matrix;
    expect_error_in(&st, "bad", 0,
                    "t.pipe:1:1: stage 'bad' has a bad default for 'k' (plugin bug): "
                    "k: rows must have equal lengths (row 2 has 1 value, row 1 has 2)");
    st.params = required;
    expect_error_in(&st, "bad", 0, "t.pipe:1:1: stage 'bad' needs parameter 'n'");
    st.params = no_choices;
    expect_error_in(&st, "bad", 0, "t.pipe:1:1: stage 'bad' has a malformed parameter 1 (plugin bug)");
    st.n_params = -1;
    expect_error_in(&st, "bad", 0, "t.pipe:1:1: stage 'bad' has a malformed parameter table (plugin bug)");

    CHECK(bind_nth(&bare_stage, "transpose", 0, &b) == IP_OK && b.n == 0, "no parameters: %s", err);
    args_free(&b);
}

/* Independent reference: the full-matrix optimal string alignment distance. */
static int reference_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b), d[16][16];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++) {
        for (int j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

static void test_suggestions(void)
{
    static const char *const stages[] = { "grayscale", "histogram", "median", "mean", "convolve", "entropy", "transpose" };
    static const char *const kernels[] = { "box3", "gaussian3", "gaussian5", "sharpen", "laplacian", "sobel-x", "sobel-y" };
    static const char *const names[] = { "radius", "border" };
    const char *s;
    CHECK(str_is(s = suggest_nearest("medain", stages, 7), "median"), "medain -> %s", s ? s : "NULL");
    CHECK(str_is(s = suggest_nearest("radus", names, 2), "radius"), "radus -> %s", s ? s : "NULL");
    CHECK(str_is(s = suggest_nearest("gausian3", kernels, 7), "gaussian3"), "gausian3 -> %s", s ? s : "NULL");
    CHECK(str_is(s = suggest_nearest("grayscal", stages, 7), "grayscale"), "grayscal -> %s", s ? s : "NULL");
    CHECK(str_is(s = suggest_nearest("sobel-z", kernels, 7), "sobel-x"), "first of equals wins: %s", s ? s : "NULL");
    CHECK(str_is(s = suggest_nearest("median", stages, 7), "median"), "exact -> %s", s ? s : "NULL");
    CHECK((s = suggest_nearest("xyz", stages, 7)) == NULL, "xyz -> %s", s);
    CHECK((s = suggest_nearest("xyz", kernels, 7)) == NULL, "xyz -> %s", s);
    CHECK((s = suggest_nearest("blur", stages, 7)) == NULL, "blur -> %s", s);
    CHECK((s = suggest_nearest("mdn", stages, 7)) == NULL, "mdn (distance 3) -> %s", s);
    CHECK((s = suggest_nearest("medxyz", stages, 7)) == NULL, "medxyz (distance 3 > 6/3) -> %s", s);
    CHECK(str_is(s = suggest_nearest("medxyn", stages, 7), "median"), "medxyn (distance 2) -> %s", s ? s : "NULL");
    CHECK(suggest_nearest("a", NULL, 0) == NULL && suggest_nearest("a", stages, 0) == NULL, "no candidates");

    CHECK(suggest_distance("kitten", "sitting") == 3, "kitten");
    CHECK(suggest_distance("ab", "ba") == 1, "transposition");
    CHECK(suggest_distance("", "abc") == 3 && suggest_distance("abc", "") == 3, "empty");
    CHECK(suggest_distance("ca", "abc") == 3, "OSA, not unrestricted Damerau");
    tu_rng rng;
    tu_seed(&rng, 99);
    for (int iter = 0; iter < 2000; iter++) {
        char a[12], b[12];
        size_t la = tu_next(&rng) % 12, lb = tu_next(&rng) % 12;
        for (size_t k = 0; k < la; k++) a[k] = "abc"[tu_next(&rng) % 3];
        for (size_t k = 0; k < lb; k++) b[k] = "abc"[tu_next(&rng) % 3];
        a[la] = b[lb] = '\0';
        int got = suggest_distance(a, b), want = reference_distance(a, b);
        CHECK(got == want, "distance(%s, %s) = %d, want %d", a, b, got, want);
    }
}

/* Random values for every parameter type: a clean bind or one error on that value. */
static void test_random_values(void)
{
    static const char *const keys[] = { "radius", "offset", "flag", "border", "kernel", "divisor", "out" };
    static const char alphabet[] = "0123456789.-+e,; \txa";
    tu_rng rng;
    tu_seed(&rng, 4242);
    int ok = 0, refused = 0;
    for (int iter = 0; iter < 3000; iter++) {
        char value[24], text[96], prefix[32];
        size_t len = 1 + tu_next(&rng) % (sizeof value - 1);
        for (size_t k = 0; k < len; k++) value[k] = alphabet[tu_next(&rng) % (sizeof alphabet - 1)];
        value[len] = '\0';
        const char *key = keys[tu_next(&rng) % 7];
        snprintf(text, sizeof text, "median %s=\"%s\"", key, value);
        snprintf(prefix, sizeof prefix, "t.pipe:1:%d: ", (int)strlen(key) + 9);
        args_bound b;
        int rc = bind(text, &b);
        if (rc == IP_OK) {
            ok++;
            args_free(&b);
            continue;
        }
        refused++;
        CHECK(rc == IP_EINVAL && strncmp(err, prefix, strlen(prefix)) == 0, "[%s]: %d %s", text, rc, err);
    }
    CHECK(ok > 100 && refused > 100, "random values: %d bound, %d refused", ok, refused);
}

int main(void)
{
    test_defaults();
    test_given_values();
    test_bools();
    test_matrices();
    test_random_ints();
    test_errors();
    test_plugin_defaults();
    test_suggestions();
    test_random_values();
    return tu_finish();
}
