/* SPDX-License-Identifier: Apache-2.0 */
// gpu/atomic.cuh: the one place XMalloc spells an atomic access, a relaxed
// access to a word others update, or a special register. Everything else
// calls these.
//
// - Ordered accesses (acquire, release, compare-and-swap loops) go through
//   cuda::atomic_ref at device scope: the xmc_atomic* views below.
// - Read-modify-writes that order nothing (counters, live bits, map fields)
//   are relaxed device-scope RMWs; xmc_atomic_add/or/and/max spell them with
//   CUDA's atomic functions, which compile to exactly that (and to a RED
//   where the result is unused).
// - Relaxed plain loads and stores that atomic_ref cannot express as one
//   instruction: a byte (atomic_ref<uint8_t> is emulated with a CAS loop on
//   the enclosing word) and a 32-byte row read as two vector loads. These and
//   the SM id below are the only inline PTX.
// - The lane id and the lane masks come from cuda::ptx.
#pragma once
#include <cstdint>
#include <cuda/atomic>
#include <cuda/ptx>

// ---- ordered accesses: device-scope atomic views of plain words -------------

using xmc_atomic32 = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>;
using xmc_atomic64 = cuda::atomic_ref<uint64_t, cuda::thread_scope_device>;
using xmc_atomic_u64 = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
using xmc_atomic_i32 = cuda::atomic_ref<int32_t, cuda::thread_scope_device>;
using xmc_atomic_int = cuda::atomic_ref<int, cuda::thread_scope_device>;   // spin locks

// ---- relaxed read-modify-writes; each returns the old value ------------------

__device__ __forceinline__ unsigned long long xmc_atomic_add(unsigned long long *p, unsigned long long v) {
  return atomicAdd(p, v);
}
__device__ __forceinline__ unsigned long long xmc_atomic_max(unsigned long long *p, unsigned long long v) {
  return atomicMax(p, v);
}
__device__ __forceinline__ uint64_t xmc_atomic_or(uint64_t *p, uint64_t v) {
  return atomicOr((unsigned long long *)p, (unsigned long long)v);
}
__device__ __forceinline__ uint64_t xmc_atomic_and(uint64_t *p, uint64_t v) {
  return atomicAnd((unsigned long long *)p, (unsigned long long)v);
}
__device__ __forceinline__ uint32_t xmc_atomic_or(uint32_t *p, uint32_t v) { return atomicOr(p, v); }
__device__ __forceinline__ uint32_t xmc_atomic_and(uint32_t *p, uint32_t v) { return atomicAnd(p, v); }

// ---- relaxed loads and stores outside atomic_ref -----------------------------

__device__ __forceinline__ uint32_t xmc_relaxed_load_u8(const uint8_t *p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u8 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
__device__ __forceinline__ void xmc_relaxed_store_u8(uint8_t *p, uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u8 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t xmc_relaxed_load_u32(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
// Eight words from a 32-byte-aligned row, as two 16-byte loads (each one
// access: the row is a hint read in one round trip).
__device__ __forceinline__ void xmc_relaxed_load_row8(const uint32_t *row, uint32_t v[8]) {
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]) : "l"(__cvta_generic_to_global(row)) : "memory");
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7]) : "l"(__cvta_generic_to_global(row + 4)) : "memory");
}

// ---- special registers -----------------------------------------------------------

__device__ __forceinline__ unsigned xmc_lane_id() { return cuda::ptx::get_sreg_laneid(); }
// %smid read as a volatile asm: cuda::ptx's non-volatile read lets the
// compiler hoist it in the allocation path, which then runs slower
// (docs/decisions/0061-gpu-atomics-layer.md).
__device__ __forceinline__ unsigned xmc_sm_id() {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}
__device__ __forceinline__ unsigned xmc_lanemask_eq() { return cuda::ptx::get_sreg_lanemask_eq(); }
__device__ __forceinline__ unsigned xmc_lanemask_lt() { return cuda::ptx::get_sreg_lanemask_lt(); }
