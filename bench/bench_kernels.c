/*
 * bench_kernels.c - the streaming kernels alone, for the gap analysis of
 * docs/performance.md: ns per element of every ISA built on this CPU for the
 * fp32 and bf16 kernels that dominate a batch-norm pass (run accum, run normalize,
 * row accum and row normalize over 64 channels), once on data that stays in the L1
 * cache (2048 elements, or 32 rows x 64 channels) and once streaming over 64 MiB
 * (the memory-bound case), against the byte floor of the same sweep measured with
 * memcpy-free plain reads (a sum of 64-bit words) on the same buffer. Best of 15.
 *   usage: bench_kernels
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"

#define BIG ((size_t)64 << 20) /* bytes swept by the memory-bound case */
#define REPS 15

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct job {
    const sbn_kernels *k;
    int kd, family; /* 0 accum, 1 normalize, 2 row_accum, 3 row_normalize */
    const void *x;
    void *y;
    size_t n;       /* elements per call (runs) or rows per call (rows, 64 channels) */
} job;

static double g_coef[4 * 64]; /* run maps use the first four; row maps k_m[j] = g_coef[m * 64 + j] */
static double g_shift[64], g_a[16 * 64], g_b[16 * 64], g_acc[32];

static void call(const job *j, const char *x, char *y)
{
    switch (j->family) {
    case 0: j->k->accum[j->kd](x, j->n, 0, 0.25, g_acc); break;
    case 1: j->k->normalize[j->kd](x, j->n, g_coef, y); break;
    case 2: j->k->row_accum[j->kd](x, 64, j->n, 64, 0, g_shift, g_a, g_b, 64); break;
    default: j->k->row_normalize[j->kd](x, 64, j->n, 64, g_coef, 64, y, 64); break;
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

int main(void)
{
    static const char *const isas[] = {"scalar", "avx2", "avx512"};
    static const char *const fams[] = {"accum", "normalize", "row_accum64", "row_normalize64"};
    static const int kds[] = {SBN_KD_F32, SBN_KD_BF16};
    char *x = aligned_alloc(4096, BIG), *y = aligned_alloc(4096, BIG);
    double floor_ns;
    size_t i;
    int a, f, d;
    if (!x || !y) return 1;
    for (i = 0; i < 4 * 64; i++) /* generic coefficients, like a mean and invstd * weight */
        g_coef[i] = 0.4873 + 0.8498 * (double)((i * 37) % 64) / 64.0;
    for (i = 0; i < BIG / 4; i++) ((float *)x)[i] = (float)(i % 1000) * 0.001f; /* also valid bf16 pairs */
    memset(y, 0, BIG);
    floor_ns = read_floor((const uint64_t *)x, BIG / 8);
    printf("# plain read of 64 MiB: %.3f ms = %.1f GB/s (floor per element: f32 %.3f ns, bf16 %.3f ns"
           " per read)\n", floor_ns * 1e-6, (double)BIG / floor_ns, floor_ns / (double)(BIG / 4),
           floor_ns / (double)(BIG / 2));
    printf("isa,dtype,kernel,l1_ns_per_elem,dram_ns_per_elem\n");
    for (a = 0; a < 3; a++) {
        const sbn_kernels *k = sbn__kernels_for(isas[a]);
        if (!k) continue;
        for (d = 0; d < 2; d++)
            for (f = 0; f < 4; f++) {
                size_t es = kds[d] == SBN_KD_F32 ? 4 : 2, rows = f >= 2;
                size_t per_call = rows ? 32 : 2048, call_elems = rows ? 32 * 64 : 2048;
                job j;
                double l1, dram;
                j.k = k;
                j.kd = kds[d];
                j.family = f;
                j.x = x;
                j.y = y;
                j.n = per_call;
                l1 = time_job(&j, call_elems, call_elems, es) ;
                dram = time_job(&j, call_elems, BIG / es / call_elems * call_elems, es);
                printf("%s,%s,%s,%.3f,%.3f\n", isas[a], d ? "bf16" : "f32", fams[f], l1, dram);
            }
    }
    free(x);
    free(y);
    return 0;
}
