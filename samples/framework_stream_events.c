/*
 * framework_stream_events.c - what a training framework's NPU backend does around
 * one batch norm, as a CPU program with CANN's link line: it queries the devices
 * (count, run mode, SoC name, memory), makes an explicit context, a fast-launch
 * stream and timing events, copies pinned host data to the device with
 * aclrtMemcpyAsync, records an event, runs aclnnBatchNorm (training) on the
 * stream, records a second event, copies the output back asynchronously, waits for
 * the end event and the stream, and reads the elapsed time. A second host thread
 * joins the same context and runs aclnnBatchNormStats on its own stream at the
 * same time. The output is checked against batch norm computed in double here;
 * the statistics thread against the mean of the input.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_batch_norm.h"
#include "aclnnop/aclnn_batch_norm_stats.h"

#define CHECK_RET(cond, what)                                              \
    do {                                                                   \
        if (!(cond)) {                                                     \
            const char *msg_ = aclGetRecentErrMsg();                       \
            printf("%s failed: %s\n", what, msg_ ? msg_ : "(no message)"); \
            return 1;                                                      \
        }                                                                  \
    } while (0)

#define NB 2
#define NC 3
#define NHW 4
#define NX (NB * NC * NHW)

typedef struct stats_job {
    aclrtContext context;
    const float *input; /* device copy of x */
    float mean[NC];
    int failed;
} stats_job;

/* The second host thread: the framework's context, its own stream, one op. */
static void *stats_on_own_stream(void *arg)
{
    stats_job *job = (stats_job *)arg;
    int64_t x_shape[4] = {NB, NC, 2, 2}, x_strides[4] = {NC * NHW, NHW, 2, 1}, c_shape[1] = {NC},
            c_strides[1] = {1};
    float d_mean[NC], d_invstd[NC];
    aclrtStream stream = NULL;
    aclTensor *x, *mean, *invstd;
    aclOpExecutor *executor = NULL;
    uint64_t ws_size = 0;
    void *ws = NULL;
    job->failed = 1;
    if (aclrtSetCurrentContext(job->context) != ACL_SUCCESS) return NULL;
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) return NULL;
    x = aclCreateTensor(x_shape, 4, ACL_FLOAT, x_strides, 0, ACL_FORMAT_NCHW, x_shape, 4,
                        (void *)job->input);
    mean = aclCreateTensor(c_shape, 1, ACL_FLOAT, c_strides, 0, ACL_FORMAT_ND, c_shape, 1, d_mean);
    invstd =
        aclCreateTensor(c_shape, 1, ACL_FLOAT, c_strides, 0, ACL_FORMAT_ND, c_shape, 1, d_invstd);
    if (aclnnBatchNormStatsGetWorkspaceSize(x, 1e-5, mean, invstd, &ws_size, &executor) ==
            ACLNN_SUCCESS &&
        (ws_size == 0 || aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS) &&
        aclnnBatchNormStats(ws, ws_size, executor, stream) == ACLNN_SUCCESS &&
        aclrtSynchronizeStream(stream) == ACL_SUCCESS) {
        memcpy(job->mean, d_mean, sizeof d_mean);
        job->failed = 0;
    }
    if (ws != NULL) aclrtFree(ws);
    aclDestroyTensor(x);
    aclDestroyTensor(mean);
    aclDestroyTensor(invstd);
    aclrtDestroyStream(stream);
    return NULL;
}

int main(void)
{
    uint32_t devices = 0;
    aclrtRunMode mode = ACL_DEVICE;
    size_t mem_free = 0, mem_total = 0;
    aclrtContext context = NULL;
    aclrtStream stream = NULL;
    aclrtEvent start = NULL, end = NULL;
    int64_t x_shape[4] = {NB, NC, 2, 2}, x_strides[4] = {NC * NHW, NHW, 2, 1}, c_shape[1] = {NC},
            c_strides[1] = {1};
    float *host_x = NULL, *host_y = NULL, weight[NC] = {1.0f, 2.0f, 0.5f},
          bias[NC] = {0.0f, -1.0f, 3.0f}, rmean[NC] = {0, 0, 0}, rvar[NC] = {1, 1, 1};
    void *d_x = NULL, *d_y = NULL, *d_w = NULL, *d_b = NULL, *d_rm = NULL, *d_rv = NULL,
         *d_sm = NULL, *d_si = NULL, *ws = NULL;
    aclTensor *t_x, *t_y, *t_w, *t_b, *t_rm, *t_rv, *t_sm, *t_si;
    aclOpExecutor *executor = NULL;
    uint64_t ws_size = 0;
    float ms = -1.0f;
    stats_job job;
    pthread_t worker;
    int i, c, bad = 0;

    CHECK_RET(aclInit(NULL) == ACL_SUCCESS, "aclInit");
    CHECK_RET(aclrtGetDeviceCount(&devices) == ACL_SUCCESS && devices >= 1, "aclrtGetDeviceCount");
    CHECK_RET(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice");
    CHECK_RET(aclrtCreateContext(&context, 0) == ACL_SUCCESS, "aclrtCreateContext");
    CHECK_RET(aclrtGetRunMode(&mode) == ACL_SUCCESS, "aclrtGetRunMode");
    CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &mem_free, &mem_total) == ACL_SUCCESS,
              "aclrtGetMemInfo");
    printf("devices %u, run mode %s, soc %s, memory %zu MiB\n", devices,
           mode == ACL_HOST ? "host" : "device", aclrtGetSocName(), mem_total >> 20);
    CHECK_RET(aclrtCreateStreamWithConfig(&stream, 0, ACL_STREAM_FAST_LAUNCH) == ACL_SUCCESS,
              "aclrtCreateStreamWithConfig");
    CHECK_RET(aclrtCreateEventWithFlag(&start, ACL_EVENT_TIME_LINE) == ACL_SUCCESS &&
                  aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE) == ACL_SUCCESS,
              "aclrtCreateEventWithFlag");

    /* pinned host buffers and device buffers, filled with async copies */
    CHECK_RET(aclrtMallocHost((void **)&host_x, NX * sizeof(float)) == ACL_SUCCESS &&
                  aclrtMallocHost((void **)&host_y, NX * sizeof(float)) == ACL_SUCCESS,
              "aclrtMallocHost");
    for (i = 0; i < NX; i++) host_x[i] = (float)((i * 7) % 11) - 4.0f;
    {
        void **bufs[8] = {&d_x, &d_y, &d_w, &d_b, &d_rm, &d_rv, &d_sm, &d_si};
        const size_t sizes[8] = {NX * 4, NX * 4, NC * 4, NC * 4, NC * 4, NC * 4, NC * 4, NC * 4};
        for (i = 0; i < 8; i++)
            CHECK_RET(aclrtMalloc(bufs[i], sizes[i], ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
                      "aclrtMalloc");
    }
    CHECK_RET(aclrtMemcpyAsync(d_x, NX * 4, host_x, NX * 4, ACL_MEMCPY_HOST_TO_DEVICE, stream) ==
                      ACL_SUCCESS &&
                  aclrtMemcpyAsync(d_w, NC * 4, weight, NC * 4, ACL_MEMCPY_HOST_TO_DEVICE,
                                   stream) == ACL_SUCCESS &&
                  aclrtMemcpyAsync(d_b, NC * 4, bias, NC * 4, ACL_MEMCPY_HOST_TO_DEVICE,
                                   stream) == ACL_SUCCESS &&
                  aclrtMemcpyAsync(d_rm, NC * 4, rmean, NC * 4, ACL_MEMCPY_HOST_TO_DEVICE,
                                   stream) == ACL_SUCCESS &&
                  aclrtMemcpyAsync(d_rv, NC * 4, rvar, NC * 4, ACL_MEMCPY_HOST_TO_DEVICE,
                                   stream) == ACL_SUCCESS,
              "aclrtMemcpyAsync to the device");
    CHECK_RET(aclrtMemsetAsync(d_y, NX * 4, 0, NX * 4, stream) == ACL_SUCCESS, "aclrtMemsetAsync");

    t_x = aclCreateTensor(x_shape, 4, ACL_FLOAT, x_strides, 0, ACL_FORMAT_NCHW, x_shape, 4, d_x);
    t_y = aclCreateTensor(x_shape, 4, ACL_FLOAT, x_strides, 0, ACL_FORMAT_NCHW, x_shape, 4, d_y);
#define VECTOR(p) aclCreateTensor(c_shape, 1, ACL_FLOAT, c_strides, 0, ACL_FORMAT_ND, c_shape, 1, p)
    t_w = VECTOR(d_w);
    t_b = VECTOR(d_b);
    t_rm = VECTOR(d_rm);
    t_rv = VECTOR(d_rv);
    t_sm = VECTOR(d_sm);
    t_si = VECTOR(d_si);

    /* the statistics thread starts while the main thread runs its op */
    job.context = context;
    job.input = (const float *)d_x;
    CHECK_RET(pthread_create(&worker, NULL, stats_on_own_stream, &job) == 0, "pthread_create");

    CHECK_RET(aclrtRecordEvent(start, stream) == ACL_SUCCESS, "aclrtRecordEvent start");
    CHECK_RET(aclnnBatchNormGetWorkspaceSize(t_x, t_w, t_b, t_rm, t_rv, true, 0.1, 1e-5, t_y, t_sm,
                                             t_si, &ws_size, &executor) == ACLNN_SUCCESS,
              "aclnnBatchNormGetWorkspaceSize");
    if (ws_size > 0)
        CHECK_RET(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
                  "aclrtMalloc workspace");
    CHECK_RET(aclnnBatchNorm(ws, ws_size, executor, stream) == ACLNN_SUCCESS, "aclnnBatchNorm");
    CHECK_RET(aclrtRecordEvent(end, stream) == ACL_SUCCESS, "aclrtRecordEvent end");
    CHECK_RET(aclrtMemcpyAsync(host_y, NX * 4, d_y, NX * 4, ACL_MEMCPY_DEVICE_TO_HOST, stream) ==
                  ACL_SUCCESS,
              "aclrtMemcpyAsync to the host");
    CHECK_RET(aclrtSynchronizeEvent(end) == ACL_SUCCESS, "aclrtSynchronizeEvent");
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(stream, 1000) == ACL_SUCCESS,
              "aclrtSynchronizeStreamWithTimeout");
    CHECK_RET(aclrtEventElapsedTime(&ms, start, end) == ACL_SUCCESS && ms >= 0.0f,
              "aclrtEventElapsedTime");
    printf("aclnnBatchNorm on the stream: %.3f ms between the events\n", (double)ms);
    pthread_join(worker, NULL);
    CHECK_RET(!job.failed, "the statistics thread");

    /* batch norm in double, per channel */
    for (c = 0; c < NC; c++) {
        double sum = 0, sq = 0, mean, invstd;
        int n, k;
        for (n = 0; n < NB; n++)
            for (k = 0; k < NHW; k++) sum += host_x[(n * NC + c) * NHW + k];
        mean = sum / (NB * NHW);
        for (n = 0; n < NB; n++)
            for (k = 0; k < NHW; k++) {
                double d = host_x[(n * NC + c) * NHW + k] - mean;
                sq += d * d;
            }
        invstd = 1.0 / sqrt(sq / (NB * NHW) + 1e-5);
        for (n = 0; n < NB; n++)
            for (k = 0; k < NHW; k++) {
                int at = (n * NC + c) * NHW + k;
                double want = (host_x[at] - mean) * invstd * weight[c] + bias[c];
                if (fabs(host_y[at] - want) > 1e-5 * (1.0 + fabs(want))) {
                    printf("y[%d] = %.9g (expected %.9g)  MISMATCH\n", at, host_y[at], want);
                    bad++;
                }
            }
        printf("channel %d: mean %.6f (statistics thread %.6f)\n", c, mean, job.mean[c]);
        if (fabs(job.mean[c] - mean) > 1e-6) bad++;
    }

    aclDestroyTensor(t_x);
    aclDestroyTensor(t_y);
    aclDestroyTensor(t_w);
    aclDestroyTensor(t_b);
    aclDestroyTensor(t_rm);
    aclDestroyTensor(t_rv);
    aclDestroyTensor(t_sm);
    aclDestroyTensor(t_si);
    if (ws != NULL) aclrtFree(ws);
    aclrtFree(d_x);
    aclrtFree(d_y);
    aclrtFree(d_w);
    aclrtFree(d_b);
    aclrtFree(d_rm);
    aclrtFree(d_rv);
    aclrtFree(d_sm);
    aclrtFree(d_si);
    aclrtFreeHost(host_x);
    aclrtFreeHost(host_y);
    aclrtDestroyEvent(start);
    aclrtDestroyEvent(end);
    aclrtDestroyStream(stream);
    aclrtDestroyContext(context);
    aclrtResetDevice(0);
    aclFinalize();
    printf("%s\n", bad ? "FAILED" : "framework sample: all values match");
    return bad ? 1 : 0;
}
