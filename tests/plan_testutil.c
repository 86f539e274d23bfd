#include "plan_testutil.h"
#include "plan/pipeline.h"
#include "testutil.h"

int tu_build_plan(const registry *reg, const char *text, const ip_shape *shape, plan *p)
{
    pl_pipeline pl;
    char err[1024];
    ip_shape final;
    if (pl_parse(text, "-e", &pl, err, sizeof err) != IP_OK) {
        CHECK(0, "%s: %s", text, err);
        return 0;
    }
    int rc = plan_build(reg, &pl, p, err, sizeof err);
    pl_free(&pl);
    if (rc == IP_OK && (rc = plan_shapes(p, shape, &final, err, sizeof err)) != IP_OK) plan_free(p);
    CHECK(rc == IP_OK, "%s: %s", text, err);
    return rc == IP_OK;
}
