#include "io/deflate_walk.h"
#include <stdlib.h>
#include "deflate_walk_steps.h"

int deflate_walk_prefix(const uint8_t *data, size_t len, deflate_walk_result *out)
{
    dw_tables *tables = malloc(sizeof *tables);
    if (!tables) return -1;
    int rc = dw_walk(data, len, tables, &out->final_start, &out->end);
    free(tables);
    return rc;
}

int deflate_walk(const uint8_t *data, size_t len, deflate_walk_result *out)
{
    int rc = deflate_walk_prefix(data, len, out);
    /* The stream must fill the buffer exactly: nothing may follow the final block. */
    if (rc == 0 && (out->end + 7) / 8 != (uint64_t)len) rc = -1;
    return rc;
}

size_t deflate_make_joinable(uint8_t *buf, size_t len, const deflate_walk_result *w)
{
    buf[w->final_start >> 3] &= (uint8_t)~(1u << (w->final_start & 7));
    unsigned spare = (unsigned)((8 - (w->end & 7)) & 7);   /* zero bits padding the last byte */
    if (spare) buf[w->end >> 3] &= (uint8_t)((1u << (w->end & 7)) - 1);
    /* A stored block's header is three zero bits, then zero padding to the byte: the padding
     * already there holds it when it has three bits, else one more zero byte does. */
    if (spare < 3) buf[len++] = 0;
    buf[len++] = 0x00;
    buf[len++] = 0x00;
    buf[len++] = 0xFF;
    buf[len++] = 0xFF;
    return len;
}

int deflate_walk_fits(const deflate_walk_result *w, size_t len)
{
    return w->end != UINT64_MAX && w->end <= (uint64_t)len * 8 && w->final_start < w->end;
}

size_t deflate_join_walked(uint8_t *buf, const deflate_walk_result *w, int last)
{
    size_t len = (size_t)((w->end + 7) / 8);
    return last ? len : deflate_make_joinable(buf, len, w);
}

size_t deflate_join_piece(uint8_t *buf, size_t len, int last)
{
    deflate_walk_result w;
    if (deflate_walk_prefix(buf, len, &w)) return 0;
    return deflate_join_walked(buf, &w, last);
}
