/* The in-tree stages' cost hints (ip_cost): per input byte, measured by bench/stage-costs on the
 * H100 machine (16 cores; 8192x8192 u8 photographs, each stage alone, its --profile time: the
 * CPU's includes touching fresh output memory) on 2026-11-23 at commit caf9004. CPU:
 * core-nanoseconds (ms x 16 cores / samples); GPU: nanoseconds of the card. */
#ifndef IMGPIPE_PLUGIN_COST_H
#define IMGPIPE_PLUGIN_COST_H
#include "imgpipe/plugin.h"

static inline int cost_set(ip_cost *cost, double cpu_ns, double gpu_ns)
{
    cost->cpu_ns = cpu_ns;
    cost->gpu_ns = gpu_ns;
    return IP_OK;
}

/* The window's side, 2 * radius + 1, as a double: window stages' costs grow with its area. */
static inline double cost_side(int radius) { return 2.0 * radius + 1; }
#endif
