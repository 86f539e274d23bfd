/* One of two plugins that claim the same stage name. */
#include "imgpipe/plugin.h"

static int tw_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    (void)args; (void)err; (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int tw_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)state; (void)needs; (void)err; (void)errlen;
    *out = *in;
    return IP_OK;
}

static int tw_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state; (void)in; (void)out; (void)ex;
    return IP_OK;
}

static void tw_destroy(void *state) { (void)state; }

static const ip_stage tw_stage = { IP_ABI_VERSION, sizeof(ip_stage), "twin", "a_twin", NULL, 0,
                                   tw_create, tw_plan, tw_run, NULL, tw_destroy };

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &tw_stage; }
