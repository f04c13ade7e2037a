/* SPDX-License-Identifier: Apache-2.0 */
// gpu/warp.cuh: the warp collectives XMalloc is built from, each over an
// explicit member mask so that they stay correct when the warp has diverged
// (Volta+ independent thread scheduling): every lane named in `mask` must call
// the same helper, and no helper assumes lockstep or a full warp.
#pragma once
#include <cstdint>
#include "atomic.cuh"

// A warp-uniform number that differs between the warps resident on one SM.
__device__ __forceinline__ unsigned xmc_warp_salt() {
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  return (tid >> 5) + block * ((blockDim.x * blockDim.y * blockDim.z + 31) >> 5);
}

// Votes of one group must not see another group. Two groups running this
// code under their own masks may be converged by the scheduler onto one
// instruction: __ballot_sync then sets the bits of the other group's lanes
// too, and a result the compiler believes warp-uniform may be kept in a
// uniform register that both groups share. So the results are masked with
// the group and spelled in terms of the calling lane (same value, but no
// longer provably uniform across the warp).
__device__ __forceinline__ unsigned xmc_warp_ballot(unsigned mask, bool pred) {
  const unsigned me = xmc_lanemask_eq();
  return (__ballot_sync(mask, pred) & mask & ~me) | (pred ? me : 0);
}

// Lanes of `mask` whose key equals the caller's (the caller included).
__device__ __forceinline__ unsigned xmc_warp_match(unsigned mask, uint64_t key) {
  return (__match_any_sync(mask, (unsigned long long)key) & mask) | xmc_lanemask_eq();
}

// Lowest lane of `mask`: the one that acts for the group.
__device__ __forceinline__ int xmc_warp_leader(unsigned mask) { return __ffs(mask) - 1; }

// Position of the calling lane among the lanes of `mask`.
__device__ __forceinline__ unsigned xmc_warp_rank(unsigned mask) { return __popc(mask & xmc_lanemask_lt()); }

__device__ __forceinline__ uint32_t xmc_warp_broadcast(unsigned mask, uint32_t v, int src) {
  return __shfl_sync(mask, v, src);
}
__device__ __forceinline__ uint64_t xmc_warp_broadcast(unsigned mask, uint64_t v, int src) {
  return __shfl_sync(mask, (unsigned long long)v, src);
}
__device__ __forceinline__ char *xmc_warp_broadcast(unsigned mask, char *p, int src) {
  return (char *)xmc_warp_broadcast(mask, (uint64_t)p, src);
}

// Bitwise or of `v` over the lanes of `mask`: one reduction for a whole
// warp (no other group can be converged with it), else one shuffle per lane
// (a shuffle names its source, so converged groups cannot mix).
__device__ __forceinline__ uint32_t xmc_warp_or(unsigned mask, uint32_t v) {
  if (mask == 0xffffffffu) return __reduce_or_sync(mask, v);
  uint32_t acc = 0;
  for (unsigned m = mask; m; m &= m - 1) acc |= __shfl_sync(mask, v, __ffs(m) - 1);
  return acc;
}

// The set of `index` (< 32) over the lanes of `mask`. Lanes that free
// together what they took together hold consecutive indices in lane order:
// then one shuffle and one ballot tell, else one shuffle per lane.
__device__ __forceinline__ uint32_t xmc_warp_bits(unsigned mask, unsigned index) {
  if (mask != 0xffffffffu) {  // a whole warp takes xmc_warp_or's one reduction
    const unsigned first = __shfl_sync(mask, index, __ffs(mask) - 1), n = __popc(mask);
    if (xmc_warp_ballot(mask, index == first + xmc_warp_rank(mask)) == mask) return ((1u << n) - 1) << first;
  }
  return xmc_warp_or(mask, 1u << index);
}

// Bit position of the n-th (from 0) set bit of `bits`, which has more than n.
__device__ __forceinline__ unsigned xmc_nth_set_bit(uint32_t bits, unsigned n) {
  for (unsigned i = 0; i < n; ++i) bits &= bits - 1;
  return __ffs(bits) - 1;
}
