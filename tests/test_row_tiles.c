/*
 * test_row_tiles.c - the row path's tiles (channel_map.c: channels-last rows too wide
 * for the L1 with their coefficients are mapped SBN_ROW_TILE channels x
 * SBN_ROW_TILE_ROWS rows at a time) give the bits of whole rows. Each case runs a
 * training step (forward, backward, eval; support/train_pair.h) with tiles off, then
 * on (forced) and by size, with no pool and pools of 2 and 3 threads, and compares
 * every output byte. Shapes: rows wider than one tile and not a multiple of it
 * (2053, 1100 channels: a short last tile), row counts not a multiple of the tile's
 * rows, rows split between threads, f32, bf16, f16 and f64, 4-D channels-last and
 * 2-D (N, C).
 */
#include <stdio.h>

#include "harness/harness.h"
#include "ops/plan.h"
#include "support/support.h"
#include "support/train_pair.h"

static void row_tiles_bits_equal_whole_rows(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 4, {4, 2053, 3, 3}, TSUP_CHANNELS_LAST},  /* 36 rows: 16 + 16 + 4 */
        {SBN_BF16, 4, {3, 2050, 3, 3}, TSUP_CHANNELS_LAST}, /* 27 rows */
        {SBN_F16, 4, {5, 1100, 2, 4}, TSUP_CHANNELS_LAST},  /* tiles 512, 512, 76 */
        {SBN_F64, 4, {2, 1030, 3, 5}, TSUP_CHANNELS_LAST},  /* double coefficients */
        {SBN_F32, 2, {37, 1500, 0, 0}, TSUP_CHANNELS_FIRST}, /* (N, C): rows already */
        {SBN_F32, 4, {2, 40, 3, 3}, TSUP_CHANNELS_LAST},    /* narrow: one tile a row */
        {SBN_F32, 2, {3, 8300, 0, 0}, TSUP_CHANNELS_FIRST},  /* few wide rows: maps split */
        {SBN_BF16, 2, {2, 16700, 0, 0}, TSUP_CHANNELS_FIRST}, /* the channels (plan.c) */
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tsup_step_check_setting(&cases[i], 23, sbn__row_tiles_set, "tiles");
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(row_tiles_bits_equal_whole_rows),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
