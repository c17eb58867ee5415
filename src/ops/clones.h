/*
 * clones.h - SBN_CHANNEL_LOOP, the attribute of the ops' per-channel loops (finishing the
 * statistics, the map's coefficients and their float copies): on x86 with GCC or clang
 * the function is compiled once per vector ISA (target_clones; the loader picks the
 * widest this CPU runs). The library is built for the baseline ISA, two doubles a
 * vector, and with thousands of channels over a few rows these loops - divisions,
 * conversions and range tests a channel at a time, vectorised across channels - are
 * much of a step; with eight doubles a vector they take a fraction of it. Every clone
 * gives the same bits: IEEE operations each rounded once, no reassociation, and no
 * contraction into fused multiply-adds (src/ops is compiled with -ffp-contract=off, which
 * the FMA units of the wider clones would otherwise invite).
 */
#ifndef SBN_OPS_CLONES_H
#define SBN_OPS_CLONES_H

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(SBN_NO_CLONES)
#define SBN_CHANNEL_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SBN_CHANNEL_LOOP
#endif

#endif /* SBN_OPS_CLONES_H */
