/*
 * bench_kernels.c - the streaming kernels alone, for the gap analysis of
 * docs/performance.md: ns per element of every ISA built on this CPU for the
 * fp32 and bf16 kernels that dominate a batch-norm pass (run accum, run normalize,
 * row accum and row normalize over 64 channels), sweeping x (and y for the maps)
 * over four working sets: 8 KiB of x (one call of 2048 fp32 elements, or 32 rows x 64
 * channels: L1), 256 KiB (L2), 8 MiB (L3 on the machines met so far) and 64 MiB (the
 * memory-bound case), against the plain-read floor of the same x bytes (memcpy-free
 * reads, a sum of 64-bit words, on the same buffer and working set). Best of 15; the
 * first sweep warms the level. A map also writes y, so its floor (reads only) is a
 * lower bound: a map at 1.25x of it is at the floor of its traffic. The maps get the
 * float coefficients of the fp32/bf16 contract (sbn__map_coefs_float, kernels.h).
 * The isa "avx512_nt" rows are the maps of the table the ops take for data beyond the
 * cache (non-temporal stores; its row reductions prefetch the next block of 128 rows,
 * which calls of 32 rows never reach, so they are not timed here). The isa "avx512bf16"
 * rows, on CPUs with AVX512_BF16, are its maps (bf16 by the CPU's conversion). Last,
 * the isa "ref" rows time the benchmark reference's read-reduce kernels
 * (bench_ref.c: sum x and sum x*x in float lanes, as the peers reduce) on the same
 * sweep, as accum and row_accum64: the price of syncbn's double lanes, measured.
 * Then the slices table: one core's row_bwd_accum (the default table, fp32) over one
 * chunk of 2048 rows of 512 channels (the 2x512x32x32 channels-last backward, 8 MiB of
 * dy and x), read as T channel blocks one after another - the slice of every row that a
 * T-thread channel split gives each thread - against whole rows (T = 1): what the split
 * costs a core before any contention between cores. Last, the rows-from-memory table:
 * the chosen ISA's row_accum and row_bwd_accum over the whole 64 MiB (dy a second 64 MiB)
 * in chunks of 2048 rows, as the ops call them, of the default table and of the table
 * beyond the cache (whose row reductions prefetch the next block of short rows), taking
 * turns, best of ROWS_REPS: what the prefetch gains from memory at 16..256 channels.
 *   usage: bench_kernels
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "kernels/kernels.h"

#define BIG ((size_t)64 << 20) /* bytes swept by the memory-bound case */
#define REPS 15
#define LEVELS 4
static const size_t g_level_bytes[LEVELS] = {(size_t)8 << 10, (size_t)256 << 10,
                                             (size_t)8 << 20, BIG};
static const char *const g_level_names[LEVELS] = {"l1", "l2", "l3", "dram"};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct job {
    const sbn_kernels *k;
    int kd, family; /* 0 accum, 1 normalize, 2 row_accum, 3 row_normalize; k NULL: ref */
    const void *x;
    void *y;
    size_t n;       /* elements per call (runs) or rows per call (rows, 64 channels) */
} job;

/* Normalize coefficients in the fp64 form (mean, s, b): run maps use the first three, row
 * maps k_m[j] = g_coef[m * 64 + j]. The fp32/fp16/bf16 maps take the floats that
 * sbn__map_coefs_float derives from them (g_frun for runs, g_frow as g_coef for rows). */
/* The rows of the output: a kernel table (the default one of an ISA, the one beyond the
 * cache, or none: the reference's float sums, bench_ref.c) and the families it times (bit f
 * for family f of job). The table beyond the cache times only its maps: its row
 * reductions prefetch the next block of 128 rows, which calls of 32 rows never reach. */
enum { DEFAULT, BEYOND, REF };
typedef struct variant {
    const char *name, *isa;
    int table;
    unsigned families;
} variant;
static const variant g_variants[] = {
    {"scalar", "scalar", DEFAULT, 0xF}, {"avx2", "avx2", DEFAULT, 0xF},
    {"avx512", "avx512", DEFAULT, 0xF}, {"avx512_nt", "avx512", BEYOND, 0xA},
    {"avx512bf16", "avx512bf16", DEFAULT, 0xA},
    {"ref", NULL, REF, 0x5},
};

static double g_coef[4 * 64];
static float g_frun[4], g_frow[4 * 64];
static double g_shift[64], g_a[16 * 64], g_b[16 * 64], g_acc[32];
static float g_fs0[64], g_fs1[64]; /* the reference's float sums */

static void derive_float_coefs(void)
{
    double k[4];
    float f[4];
    int j, m;
    (void)sbn__map_coefs_float(0, g_coef, g_frun);
    for (j = 0; j < 64; j++) {
        for (m = 0; m < 4; m++) k[m] = g_coef[m * 64 + j];
        (void)sbn__map_coefs_float(0, k, f);
        for (m = 0; m < 4; m++) g_frow[m * 64 + j] = f[m];
    }
}

static void call(const job *j, const char *x, char *y)
{
    int f64 = j->kd == SBN_KD_F64;
    if (!j->k) { /* the reference's float sums: plane (accum) or rows of 64 (row_accum) */
        if (j->family == 0)
            ref_plane_sums(j->kd == SBN_KD_BF16, x, (int64_t)j->n, g_fs0, g_fs1);
        else
            ref_rows_sums(j->kd == SBN_KD_BF16, x, (int64_t)j->n, 64, g_fs0, g_fs1);
        return;
    }
    switch (j->family) {
    case 0: j->k->accum[j->kd](x, j->n, 0, 0.25, g_acc); break;
    case 1: j->k->normalize[j->kd](x, j->n, f64 ? (const void *)g_coef : g_frun, y); break;
    case 2: j->k->row_accum[j->kd](x, 64, j->n, 64, 0, g_shift, g_a, g_b, 64, 0); break;
    default:
        j->k->row_normalize[j->kd](x, 64, j->n, 64, f64 ? (const void *)g_coef : g_frow, 64, y,
                                   64);
        break;
    }
}

/* ns per element of `total` elements processed in calls of per_call elements. */
static double time_job(const job *j, size_t per_call, size_t total, size_t es)
{
    double best = 1e30;
    int rep;
    for (rep = 0; rep < REPS; rep++) {
        double t0 = now(), t;
        size_t done;
        for (done = 0; done < total; done += per_call) {
            size_t off = total == per_call ? 0 : done * es;
            call(j, (const char *)j->x + off, (char *)j->y + off);
        }
        t = now() - t0;
        if (t < best) best = t;
    }
    return best * 1e9 / (double)total;
}

static double read_floor(const uint64_t *p, size_t words)
{
    double best = 1e30;
    volatile uint64_t sink = 0;
    int rep;
    for (rep = 0; rep < REPS; rep++) {
        double t0 = now(), t;
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        size_t i;
        for (i = 0; i + 4 <= words; i += 4) {
            s0 += p[i];
            s1 += p[i + 1];
            s2 += p[i + 2];
            s3 += p[i + 3];
        }
        sink += s0 + s1 + s2 + s3;
        t = now() - t0;
        if (t < best) best = t;
    }
    (void)sink;
    return best * 1e9;
}

#define SLICE_ROWS 2048
#define SLICE_CHANNELS 512

static void time_slices(void)
{
    const sbn_kernels *k = sbn__kernels();
    size_t n = (size_t)SLICE_ROWS * SLICE_CHANNELS, i;
    float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy);
    double *c = calloc(SLICE_CHANNELS, sizeof *c);
    double *a = calloc(16 * (size_t)SLICE_CHANNELS, sizeof *a);
    double *b = calloc(16 * (size_t)SLICE_CHANNELS, sizeof *b);
    int t, r, j;
    if (!x || !dy || !c || !a || !b) goto out;
    for (i = 0; i < n; i++) {
        x[i] = (float)(i % 97) * 0.01f;
        dy[i] = (float)(i % 89) * 0.02f - 0.5f;
    }
    printf("# slices: %s row_bwd_accum, fp32, %d rows x %d channels, read as T channel blocks\n"
           "threads,slice_bytes,ns_per_elem,x_whole_rows\n",
           k->isa, SLICE_ROWS, SLICE_CHANNELS);
    {
        double whole = 0.0;
        for (t = 1; t <= 16; t *= 2) {
            int cn = SLICE_CHANNELS / t;
            double best = 1e30;
            for (r = 0; r < REPS; r++) {
                double t0 = now();
                for (j = 0; j < t; j++)
                    k->row_bwd_accum[SBN_KD_F32](dy + j * cn, SLICE_CHANNELS, x + j * cn,
                                                 SLICE_CHANNELS, SLICE_ROWS, (size_t)cn, 0,
                                                 c + j * cn, a + j * cn, b + j * cn,
                                                 SLICE_CHANNELS, 1);
                t0 = now() - t0;
                if (t0 < best) best = t0;
            }
            best = best * 1e9 / (double)n;
            if (t == 1) whole = best;
            printf("%d,%d,%.4f,%.2f\n", t, cn * 4, best, best / whole);
        }
    }
out:
    free(x);
    free(dy);
    free(c);
    free(a);
    free(b);
}

#define ROWS_REPS 5
#define ROWS_CHUNK 2048

/* One pass of the row reduction (bwd: row_bwd_accum) of table k over `rows` rows of cn
 * channels at x (and dy), in chunks of ROWS_CHUNK rows; seconds. */
static double rows_pass(const sbn_kernels *k, int kd, int bwd, const char *dy, const char *x,
                        size_t rows, size_t cn, size_t es, const double *c, double *a, double *b)
{
    double t0 = now();
    size_t r;
    for (r = 0; r < rows; r += ROWS_CHUNK) {
        size_t m = rows - r < ROWS_CHUNK ? rows - r : ROWS_CHUNK, off = r * cn * es;
        if (bwd)
            k->row_bwd_accum[kd](dy + off, (int64_t)cn, x + off, (int64_t)cn, m, cn, 0, c, a, b,
                                 cn, 1);
        else
            k->row_accum[kd](x + off, (int64_t)cn, m, cn, 0, c, a, b, cn, 1);
    }
    return now() - t0;
}

static void time_rows_from_memory(const char *x, const char *dy)
{
    static const size_t cns[] = {16, 32, 64, 128, 256};
    static const int kds[] = {SBN_KD_F32, SBN_KD_BF16};
    const sbn_kernels *k[2] = {sbn__kernels(), sbn__kernels_streaming()};
    double *a = malloc(16 * 256 * sizeof *a), *b = malloc(16 * 256 * sizeof *b);
    double *c = calloc(256, sizeof *c);
    size_t ci;
    int d, bwd, rep, v;
    if (!a || !b || !c) goto out;
    printf("# rows from memory: %s row reductions, %zu MiB a tensor in chunks of %d rows, the "
           "default table against the one beyond the cache (%s)\n"
           "dtype,kernel,channels,default_ns_per_elem,beyond_ns_per_elem,default_x_beyond\n",
           k[0]->isa, BIG >> 20, ROWS_CHUNK, k[1]->isa);
    for (d = 0; d < 2; d++)
        for (bwd = 0; bwd < 2; bwd++)
            for (ci = 0; ci < sizeof cns / sizeof cns[0]; ci++) {
                size_t es = kds[d] == SBN_KD_F32 ? 4 : 2, rows = BIG / es / cns[ci];
                double best[2] = {1e30, 1e30}, ns[2];
                for (rep = 0; rep < ROWS_REPS; rep++)
                    for (v = 0; v < 2; v++) { /* in turn, the first of a pair alternating */
                        int t = (rep & 1) ^ v;
                        double s = rows_pass(k[t], kds[d], bwd, dy, x, rows, cns[ci], es, c, a, b);
                        if (s < best[t]) best[t] = s;
                    }
                for (v = 0; v < 2; v++) ns[v] = best[v] * 1e9 / (double)(rows * cns[ci]);
                printf("%s,%s,%zu,%.3f,%.3f,%.2f\n", d ? "bf16" : "f32",
                       bwd ? "row_bwd_accum" : "row_accum", cns[ci], ns[0], ns[1], ns[0] / ns[1]);
            }
out:
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    static const char *const fams[] = {"accum", "normalize", "row_accum64", "row_normalize64"};
    static const int kds[] = {SBN_KD_F32, SBN_KD_BF16};
    char *x = aligned_alloc(4096, BIG), *y = aligned_alloc(4096, BIG);
    double floor_ns[LEVELS];
    size_t i;
    int a, f, d, l;
    if (!x || !y) return 1;
    for (i = 0; i < 4 * 64; i++) /* generic coefficients, like a mean and invstd * weight */
        g_coef[i] = 0.4873 + 0.8498 * (double)((i * 37) % 64) / 64.0;
    derive_float_coefs();
    for (i = 0; i < BIG / 2; i++) { /* bf16 values in [0, 1); read as fp32, normal floats */
        float v = (float)(i % 1000) * 0.001f;
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        ((uint16_t *)x)[i] = (uint16_t)(u >> 16);
    }
    memset(y, 0, BIG);
    for (l = 0; l < LEVELS; l++) { /* ns per byte of a plain read of the level's working set */
        floor_ns[l] = read_floor((const uint64_t *)x, g_level_bytes[l] / 8) /
                      (double)g_level_bytes[l];
        printf("# plain read of %zu KiB (%s): %.1f GB/s = f32 %.4f ns, bf16 %.4f ns per element\n",
               g_level_bytes[l] >> 10, g_level_names[l], 1.0 / floor_ns[l], 4 * floor_ns[l],
               2 * floor_ns[l]);
    }
    printf("isa,dtype,kernel,l1_ns_per_elem,l2_ns_per_elem,l3_ns_per_elem,dram_ns_per_elem,"
           "l1_x_floor,l2_x_floor,l3_x_floor,dram_x_floor\n");
    for (a = 0; a < (int)(sizeof g_variants / sizeof g_variants[0]); a++) {
        const variant *v = &g_variants[a];
        const sbn_kernels *k = v->table == REF      ? NULL
                               : v->table == BEYOND ? sbn__kernels_streaming_for(v->isa)
                                                    : sbn__kernels_for(v->isa);
        if (!k && v->table != REF) continue; /* not built, or not on this CPU */
        for (d = 0; d < 2; d++)
            for (f = 0; f < 4; f++) {
                size_t es = kds[d] == SBN_KD_F32 ? 4 : 2, rows = f >= 2;
                size_t per_call = rows ? 32 : 2048, call_elems = rows ? 32 * 64 : 2048;
                double ns[LEVELS];
                job j;
                if (!(v->families & (1u << f))) continue;
                j.k = k;
                j.kd = kds[d];
                j.family = f;
                j.x = x;
                j.y = y;
                j.n = per_call;
                for (l = 0; l < LEVELS; l++) {
                    size_t total = g_level_bytes[l] / es / call_elems * call_elems;
                    if (total < call_elems) total = call_elems;
                    ns[l] = time_job(&j, call_elems, total, es);
                }
                printf("%s,%s,%s", v->name, d ? "bf16" : "f32", fams[f]);
                for (l = 0; l < LEVELS; l++) printf(",%.3f", ns[l]);
                for (l = 0; l < LEVELS; l++) printf(",%.2f", ns[l] / (floor_ns[l] * (double)es));
                printf("\n");
            }
    }
    time_slices();
    time_rows_from_memory(x, y);
    free(x);
    free(y);
    return 0;
}
