/*
 * test_kernels_dispatch.c - the kernel choice and its effect on whole ops:
 * SBN_FORCE_SCALAR=1 gives the scalar kernels, otherwise the widest variant this
 * CPU supports is chosen, once; and stats, batch_norm and batch_norm_backward
 * (training) on 3x5x4000 and 3x5x4001 fp32 and bf16 batches, contiguous and
 * channels-last, give the same bits with SBN_FORCE_SCALAR=1 (in a forked child,
 * which chooses its kernels afresh) as with the default choice.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "support/kernel_isas.h"
#include "support/support.h"
#include "syncbn/ops.h"

/* ---- dispatch ---- */

static void test_dispatch_force_scalar(void)
{
    const sbn_kernels *k;
    CHECK(setenv("SBN_FORCE_SCALAR", "1", 1) == 0);
    k = sbn__kernels(); /* the first call in this (forked) case chooses */
    CHECK(k != NULL);
    CHECK_MSG(strcmp(k->isa, "scalar") == 0, "SBN_FORCE_SCALAR=1 chose %s", k->isa);
    CHECK(k == sbn__kernels_for("scalar"));
    CHECK(sbn__kernels() == k); /* chosen once */
}

static void test_dispatch_widest(void)
{
    const sbn_kernels *k;
    const char *w = widest_isa();
    CHECK(unsetenv("SBN_FORCE_SCALAR") == 0);
    k = sbn__kernels();
    CHECK(k != NULL);
    printf("    widest supported ISA: %s, chosen: %s\n", w, k->isa);
    CHECK_MSG(strcmp(k->isa, w) == 0, "chose %s, the widest supported is %s", k->isa, w);
    CHECK(k == sbn__kernels_for(w));
    CHECK(sbn__kernels_for("no-such-isa") == NULL);
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
        CHECK_MSG(sbn__kernels_for("avx2") != NULL, "AVX2 CPU but no avx2 kernels built");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        CHECK_MSG(sbn__kernels_for("avx512") != NULL, "AVX-512 CPU but no avx512 kernels built");
#endif
}

static void test_dispatch_force_other_values(void)
{
    const sbn_kernels *k;
    CHECK(setenv("SBN_FORCE_SCALAR", "0", 1) == 0);
    k = sbn__kernels();
    CHECK_MSG(strcmp(k->isa, widest_isa()) == 0, "SBN_FORCE_SCALAR=0 chose %s", k->isa);
}

/* ---- whole ops: forced scalar vs default ---- */

#define OPS_N 3
#define OPS_C 5

/* Writes every output of stats, batch_norm (training) and batch_norm_backward
 * (training) on one batch to out as doubles; returns the count, or -1 on an error. */
static long run_ops(sbn_dtype dt, int channels_last, int64_t s, double *out)
{
    int64_t shape[3], numel, i;
    size_t es = sbn_dtype_size(dt), ws_bytes = 0, b = 0;
    void *xd, *dyd, *yd, *gid, *ws;
    float w[OPS_C], bias[OPS_C], rm[OPS_C], rv[OPS_C], sm[OPS_C], si[OPS_C], gw[OPS_C], gb[OPS_C];
    double mean[OPS_C], invstd[OPS_C];
    sbn_tensor x, dy, y, gi, tw, tb, trm, trv, tsm, tsi, tgw, tgb, tmean, tinv;
    long c = 0;
    int ok = 1;

    shape[0] = OPS_N;
    shape[1] = OPS_C;
    shape[2] = s;
    numel = OPS_N * OPS_C * s;
    xd = malloc((size_t)numel * es);
    dyd = malloc((size_t)numel * es);
    yd = calloc((size_t)numel, es);
    gid = calloc((size_t)numel, es);
    tsup_rng rng = tsup_rng_seed(0xB47C4ull); /* the same batch in both processes */
    for (i = 0; i < numel; i++) {
        float xv = (float)(3.0 + (double)(i % 7) + 2.0 * tsup_normal(&rng));
        float gv = (float)(0.5 * tsup_normal(&rng));
        if (dt == SBN_F32) {
            ((float *)xd)[i] = xv;
            ((float *)dyd)[i] = gv;
        } else {
            uint32_t u;
            memcpy(&u, &xv, 4);
            ((uint16_t *)xd)[i] = (uint16_t)(u >> 16);
            memcpy(&u, &gv, 4);
            ((uint16_t *)dyd)[i] = (uint16_t)(u >> 16);
        }
    }
    for (i = 0; i < OPS_C; i++) {
        w[i] = (float)(1.0 + 0.1 * (double)i);
        bias[i] = (float)(0.25 * (double)i - 0.5);
        rm[i] = 0.0f;
        rv[i] = 1.0f;
    }
    if (channels_last) {
        x = sbn_tensor_channels_last(xd, dt, 3, shape);
        dy = sbn_tensor_channels_last(dyd, dt, 3, shape);
        y = sbn_tensor_channels_last(yd, dt, 3, shape);
        gi = sbn_tensor_channels_last(gid, dt, 3, shape);
    } else {
        x = sbn_tensor_contiguous(xd, dt, 3, shape);
        dy = sbn_tensor_contiguous(dyd, dt, 3, shape);
        y = sbn_tensor_contiguous(yd, dt, 3, shape);
        gi = sbn_tensor_contiguous(gid, dt, 3, shape);
    }
    tw = sbn_tensor_1d(w, SBN_F32, OPS_C);
    tb = sbn_tensor_1d(bias, SBN_F32, OPS_C);
    trm = sbn_tensor_1d(rm, SBN_F32, OPS_C);
    trv = sbn_tensor_1d(rv, SBN_F32, OPS_C);
    tsm = sbn_tensor_1d(sm, SBN_F32, OPS_C);
    tsi = sbn_tensor_1d(si, SBN_F32, OPS_C);
    tgw = sbn_tensor_1d(gw, SBN_F32, OPS_C);
    tgb = sbn_tensor_1d(gb, SBN_F32, OPS_C);
    tmean = sbn_tensor_1d(mean, SBN_F64, OPS_C);
    tinv = sbn_tensor_1d(invstd, SBN_F64, OPS_C);

    ok = ok && sbn_stats_workspace_size(&x, &b) == SBN_OK;
    ws_bytes = b > ws_bytes ? b : ws_bytes;
    ok = ok && sbn_batch_norm_workspace_size(&x, &b) == SBN_OK;
    ws_bytes = b > ws_bytes ? b : ws_bytes;
    ok = ok && sbn_batch_norm_backward_workspace_size(&x, &b) == SBN_OK;
    ws_bytes = b > ws_bytes ? b : ws_bytes;
    ws = malloc(ws_bytes ? ws_bytes : 1);
    ok = ok && sbn_stats(&x, 1e-5, &tmean, &tinv, ws, ws_bytes, NULL) == SBN_OK;
    ok = ok && sbn_batch_norm(&x, &tw, &tb, 1, 0.1, 1e-5, &trm, &trv, &y, &tsm, &tsi, ws,
                              ws_bytes, NULL) == SBN_OK;
    ok = ok && sbn_batch_norm_backward(&dy, &x, &tw, &trm, &trv, &tsm, &tsi, 1, 1e-5, &gi, &tgw,
                                       &tgb, ws, ws_bytes, NULL) == SBN_OK;
    if (ok) {
        for (i = 0; i < OPS_C; i++) {
            out[c++] = mean[i];
            out[c++] = invstd[i];
            out[c++] = rm[i];
            out[c++] = rv[i];
            out[c++] = sm[i];
            out[c++] = si[i];
            out[c++] = gw[i];
            out[c++] = gb[i];
        }
        for (i = 0; i < numel; i++) {
            if (dt == SBN_F32) {
                out[c++] = ((float *)yd)[i];
                out[c++] = ((float *)gid)[i];
            } else {
                out[c++] = sbn__bf16_to_float(((uint16_t *)yd)[i]);
                out[c++] = sbn__bf16_to_float(((uint16_t *)gid)[i]);
            }
        }
    }
    free(ws);
    free(xd);
    free(dyd);
    free(yd);
    free(gid);
    return ok ? c : -1;
}

static void check_ops_forced_vs_default(sbn_dtype dt)
{
    static const int64_t spatial[] = {4000, 4001};
    size_t cap = 4 * (size_t)(8 * OPS_C + 2 * OPS_N * OPS_C * 4001); /* four runs */
    int layout, si;
    double *forced = mmap(NULL, cap * sizeof(double), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    double *dflt = malloc(cap * sizeof(double));
    long count[4];
    pid_t pid;
    int status = 0;
    CHECK(forced != MAP_FAILED && dflt != NULL);

    /* The child chooses its kernels afresh (no sbn__kernels() call before the fork). */
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        size_t at = 0;
        int bad = setenv("SBN_FORCE_SCALAR", "1", 1) != 0 ||
                  strcmp(sbn__kernels()->isa, "scalar") != 0;
        for (layout = 0; layout < 2 && !bad; layout++)
            for (si = 0; si < 2 && !bad; si++) {
                long got = run_ops(dt, layout, spatial[si], forced + at);
                bad = got < 0;
                at += got > 0 ? (size_t)got : 0;
            }
        _exit(bad ? 3 : 0);
    }
    while (waitpid(pid, &status, 0) < 0) {
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the forced-scalar child failed (status %d)", status);

    CHECK(unsetenv("SBN_FORCE_SCALAR") == 0);
    printf("    %s: forced scalar vs %s\n", sbn_dtype_name(dt), sbn__kernels()->isa);
    CHECK(strcmp(sbn__kernels()->isa, widest_isa()) == 0);
    {
        size_t at = 0;
        int k = 0;
        for (layout = 0; layout < 2; layout++)
            for (si = 0; si < 2; si++, k++) {
                long j, d;
                count[k] = run_ops(dt, layout, spatial[si], dflt + at);
                CHECK_MSG(count[k] > 0, "op failed: %s", sbn_last_error());
                d = first_diff(forced + at, dflt + at, (size_t)count[k], sizeof(double));
                j = d;
                CHECK_MSG(d < 0,
                          "%s %s s=%lld: output value %ld differs: default %a, forced scalar %a "
                          "(%ld per-channel values come first)",
                          sbn_dtype_name(dt), layout ? "channels_last" : "contiguous",
                          (long long)spatial[si], j, dflt[at + (size_t)j],
                          forced[at + (size_t)j], (long)(8 * OPS_C));
                at += (size_t)count[k];
            }
    }
    munmap(forced, cap * sizeof(double));
    free(dflt);
}

static void test_ops_forced_scalar_f32(void)
{
    check_ops_forced_vs_default(SBN_F32);
}

static void test_ops_forced_scalar_bf16(void)
{
    check_ops_forced_vs_default(SBN_BF16);
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(test_dispatch_force_scalar),
        SBN_TEST_CASE(test_dispatch_widest),
        SBN_TEST_CASE(test_dispatch_force_other_values),
        SBN_TEST_CASE(test_ops_forced_scalar_f32),
        SBN_TEST_CASE(test_ops_forced_scalar_bf16),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
