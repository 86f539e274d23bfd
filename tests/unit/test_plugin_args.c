/* plugin.h's helpers for plugin authors: ip_arg / IP_ARG (arguments by name, NULL for a name the
 * table lacks), IP_COUNT and IP_GPU_ENTRY; and the window stages' create reading by name, so that
 * reordering a parameter table changes nothing. */
#include <stdlib.h>
#include "imgpipe/plugin.h"
#include "../../plugins/common/window.h"
#include "testutil.h"

static const ip_param table[] = {
    { "radius", IP_INT, "1", 1, 25, NULL, "r" },
    { "border", IP_ENUM, "zero", 0, 0, ADAPT_BORDER_CHOICES, "b" },
    { "scale", IP_FLOAT, "1.5", 0, 0, NULL, "s" },
};

/* The same parameters in another order. */
static const ip_param reordered[] = {
    { "scale", IP_FLOAT, "1.5", 0, 0, NULL, "s" },
    { "border", IP_ENUM, "zero", 0, 0, ADAPT_BORDER_CHOICES, "b" },
    { "radius", IP_INT, "1", 1, 25, NULL, "r" },
};

static void test_by_name(void)
{
    const ip_value args[3] = { { .i = 7 }, { .i = 2 }, { .f = 0.25 } };
    CHECK(IP_COUNT(table) == 3 && IP_COUNT(reordered) == 3, "IP_COUNT %d %d", IP_COUNT(table), IP_COUNT(reordered));
    CHECK(IP_ARG(table, args, "radius") == &args[0], "radius is not the first argument");
    CHECK(IP_ARG(table, args, "border") == &args[1], "border is not the second argument");
    CHECK(IP_ARG(table, args, "scale") == &args[2] && IP_ARG(table, args, "scale")->f == 0.25, "scale");
    CHECK(IP_ARG(reordered, args, "radius") == &args[2] && IP_ARG(reordered, args, "scale") == &args[0],
          "the reordered table's positions were not followed");
}

static void test_unknown(void)
{
    const ip_value args[3] = { { .i = 1 }, { .i = 2 }, { .i = 3 } };
    CHECK(IP_ARG(table, args, "radiu") == NULL, "a prefix of a name was found");
    CHECK(IP_ARG(table, args, "Radius") == NULL, "names are compared case-blind");
    CHECK(IP_ARG(table, args, "") == NULL, "the empty name was found");
    CHECK(ip_arg(table, 3, args, NULL) == NULL, "a NULL name was found");
    CHECK(ip_arg(table, 2, args, "scale") == NULL, "a name past n_params was found");
    CHECK(ip_arg(NULL, 0, args, "radius") == NULL && ip_arg(table, 3, NULL, "radius") == NULL,
          "a missing table or argument array gave an argument");
}

static int fake_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state, (void)in, (void)out, (void)ex;
    return IP_OK;
}

static void test_gpu_entry(void)
{
    int (*entry)(const void *, const ip_image *, ip_image *, const ip_exec *) = IP_GPU_ENTRY(fake_gpu);
#ifdef IMGPIPE_HAVE_CUDA
    CHECK(entry == fake_gpu, "IP_GPU_ENTRY dropped the function in a CUDA build");
#else
    CHECK(entry == NULL, "IP_GPU_ENTRY kept the function in a build without CUDA");
    (void)fake_gpu;
#endif
}

/* window_create reads radius and border wherever the table has them, and refuses a table without. */
static void test_window_create(void)
{
    const ip_value in_order[3] = { { .i = 5 }, { .i = IP_BORDER_SHRINK }, { .f = 1 } };
    const ip_value other_order[3] = { { .f = 1 }, { .i = IP_BORDER_ZERO }, { .i = 9 } };
    void *state = NULL;
    char err[128] = "";
    CHECK(window_create(table, IP_COUNT(table), in_order, &state, err, sizeof err) == IP_OK, "%s", err);
    const window_state *s = state;
    CHECK(s && s->radius == 5 && s->border == IPK_SHRINK, "radius %d border %d", s ? s->radius : -1,
          s ? (int)s->border : -1);
    free(state);
    state = NULL;
    CHECK(window_create(reordered, IP_COUNT(reordered), other_order, &state, err, sizeof err) == IP_OK, "%s", err);
    s = state;
    CHECK(s && s->radius == 9 && s->border == IPK_ZERO, "reordered: radius %d border %d", s ? s->radius : -1,
          s ? (int)s->border : -1);
    free(state);
    state = NULL;
    err[0] = '\0';
    CHECK(window_create(table + 1, 2, in_order, &state, err, sizeof err) == IP_EINVAL && !state && err[0],
          "a table without radius was accepted");
}

int main(void)
{
    test_by_name();
    test_unknown();
    test_gpu_entry();
    test_window_create();
    return tu_finish();
}
