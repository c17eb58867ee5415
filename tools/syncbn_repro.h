/*
 * syncbn_repro.h - the layer's reproducible mode in the `syncbn` command. A digest
 * of a training run's outputs that does not depend on how the batch is split over
 * the ranks: per step, the FNV-1a 64 hash of every sample's y and grad_input bytes
 * keyed by the step and the sample's global index, summed mod 2^64 over the ranks
 * with one exact allreduce-merge, then chained with the hash of the per-channel
 * outputs, which every rank must hold byte for byte (the merge also carries their
 * minimum and maximum hash). `syncbn verify --reproducible` compares such digests
 * for worlds of 1 to 16 ranks, random splits and pools, the forced-scalar kernels
 * (a re-execution of the command) or an MPI world, with W = 1's; `syncbn demo
 * --reproducible` digests the demo's own outputs through check_config.hook and
 * compares them with a W = 1 run of the same batch.
 */
#ifndef SYNCBN_TOOLS_REPRO_H
#define SYNCBN_TOOLS_REPRO_H

#include <stdint.h>

#include "syncbn_check.h"

/* The digest before the first step. */
#define REPRO_DIGEST_INIT 0xcbf29ce484222325ull

/* One rank's outputs of one step. */
typedef struct repro_step {
    int step;
    int64_t first;              /* the global index of this rank's first sample */
    const sbn_tensor *act[2];   /* y, grad_input: this rank's rows, each sample dense */
    const sbn_tensor *pc[6];    /* per-channel outputs (contiguous 1-D); NULL entries skipped */
    int64_t counters[2];        /* e.g. global_count, num_batches_tracked */
} repro_step;

/*
 * Folds one step into *digest: every rank of comm calls it in step (one
 * allreduce-merge); *agree becomes 0 when the ranks' per-channel outputs differ.
 */
sbn_status repro_fold_step(sbn_comm_t *comm, const repro_step *step, uint64_t *digest,
                           int *agree);

/*
 * syncbn verify --reproducible with backend "threads" or "mpi" (under mpirun, after
 * MPI_Init); print_digests: the hidden mode of the re-executed child (prints the
 * digests, no comparison). Prints one line per case and the summary on the printer
 * rank; returns the exit status (0 when every case passed).
 */
int repro_verify(const char *backend, int print_digests);

/* The state of demo --reproducible's hook: one digest per rank of this process. */
typedef struct repro_demo {
    int slots;             /* ranks in this process: the threads world, or 1 under MPI */
    uint64_t *digest;
    int *agree;
    sbn_status *status;    /* each rank's first failure of a fold, or SBN_OK */
} repro_demo;

/* Sets up the state for `slots` ranks and points cfg's hook at it; 0 when out of memory. */
int repro_demo_start(repro_demo *demo, int slots, check_config *cfg);
/*
 * After the demo's run: runs the same batch on one rank (threads, in this process;
 * under MPI on rank 0), prints both digests (printer) and whether they are equal,
 * frees the state. Returns 0 when equal (and every rank agreed), else 1; under MPI
 * every rank returns rank 0's verdict.
 */
int repro_demo_finish(repro_demo *demo, const check_config *cfg, int mpi, int printer);
/* Frees the state without comparing (a run that failed). */
void repro_demo_free(repro_demo *demo);

#endif /* SYNCBN_TOOLS_REPRO_H */
