/* Claims an ABI version this imgpipe does not speak. */
#include "imgpipe/plugin.h"

static const ip_stage old_stage = { 99, sizeof(ip_stage), "oldabi", "built for another ABI", NULL, 0,
                                    NULL, NULL, NULL, NULL, NULL };

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &old_stage; }
