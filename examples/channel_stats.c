/*
 * channel_stats.c - the README's C example: a program built against an installed syncbn with
 * pkg-config. It computes the per-channel mean and 1/sqrt(var + eps) of a 4x2 batch with
 * sbn_stats (ops.h: x is N x C, channel axis 1; mean_c = sum_n x[n][c] / N) on the calling
 * thread, and prints them, or the library's sentence when the call is refused.
 * tests/install/test_install.sh builds it with the README's line and runs it.
 */
#include <stdio.h>
#include <stdlib.h>

#include <syncbn/ops.h>

int main(void)
{
    float x[8] = {1, 10, 2, 20, 3, 30, 6, 60}, mean[2], invstd[2];
    int64_t shape[2] = {4, 2};
    sbn_tensor tx = sbn_tensor_contiguous(x, SBN_F32, 2, shape);
    sbn_tensor tm = sbn_tensor_1d(mean, SBN_F32, 2), ti = sbn_tensor_1d(invstd, SBN_F32, 2);
    size_t bytes = 0;
    void *workspace;
    sbn_status s = sbn_stats_workspace_size(&tx, &bytes);
    if (SBN_FAILED(s)) {
        fprintf(stderr, "%s: %s\n", sbn_status_name(s), sbn_last_error());
        return 1;
    }
    workspace = malloc(bytes ? bytes : 1);
    s = sbn_stats(&tx, 1e-5, &tm, &ti, workspace, bytes, NULL); /* NULL pool: serial */
    free(workspace);
    if (SBN_FAILED(s)) {
        fprintf(stderr, "%s: %s\n", sbn_status_name(s), sbn_last_error());
        return 1;
    }
    printf("syncbn %s: mean %g %g, invstd %g %g\n", sbn_version(), mean[0], mean[1], invstd[0],
           invstd[1]);
    return mean[0] == 3.0f && mean[1] == 30.0f ? 0 : 1;
}
