/* Plans from pipeline text for the executor tests (CHECKs what fails). */
#ifndef IMGPIPE_PLAN_TESTUTIL_H
#define IMGPIPE_PLAN_TESTUTIL_H
#include "plan/plan.h"
#include "plan/registry.h"

/* Builds text's plan and plans its shapes for shape; 1 on success (free it with plan_free). */
int tu_build_plan(const registry *reg, const char *text, const ip_shape *shape, plan *p);
#endif
