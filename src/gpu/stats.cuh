/* SPDX-License-Identifier: Apache-2.0 */
// gpu/stats.cuh: allocation counters, one set per SM so that the lanes that
// count (group leaders, slow paths) never meet on one shared line;
// xmcGetStats sums them on the host.
#pragma once
#include "heap.cuh"
#include "warp.cuh"

__device__ __forceinline__ xmc_sm_stats *xmc_stats_here() {
  return &xmc_c_heap.stats[xmc_sm_id() % xmc_stat_slots];
}

__device__ __forceinline__ void xmc_stats_add(unsigned long long *counter, unsigned long long n) {
  if (n) xmc_atomic_add(counter, n);
}

// `n` (> 0) blocks of class `cls` came back: counted per class, and in the
// total that the reclaimer watches for frees since its last pass.
__device__ __forceinline__ void xmc_stats_count_frees(xmc_sm_stats *st, int cls, unsigned long long n) {
  xmc_atomic_add(&st->frees[cls], n);
  xmc_atomic_add(&st->frees_total, n);
}
