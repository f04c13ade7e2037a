/* manymalloc common: the only place atomics are spelled.
 *
 * Every shared word is a plain uintptr_t/size_t reached through these
 * helpers, so the lock-free structures of src/common compile unchanged as
 * C11 (GCC/Clang __atomic builtins), host C++ and CUDA device code. */
#ifndef MM_COMMON_ATOMIC_H
#define MM_COMMON_ATOMIC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#if defined(__CUDACC__)
#define MM_HOST_DEVICE __host__ __device__
#else
#define MM_HOST_DEVICE
#endif

#if defined(__CUDA_ARCH__)
/* ---- device: volatile accesses fenced by __threadfence, CAS by atomicCAS ---- */
typedef unsigned long long mm_dev_word_t;

static __device__ __forceinline__ uintptr_t mm_atomic_load_acquire(const uintptr_t *p) {
  uintptr_t v = *(const volatile uintptr_t *)p;
  __threadfence();
  return v;
}
static __device__ __forceinline__ uintptr_t mm_atomic_load_relaxed(const uintptr_t *p) {
  return *(const volatile uintptr_t *)p;
}
static __device__ __forceinline__ void mm_atomic_store_release(uintptr_t *p, uintptr_t v) {
  __threadfence();
  *(volatile uintptr_t *)p = v;
}
static __device__ __forceinline__ void mm_atomic_store_relaxed(uintptr_t *p, uintptr_t v) {
  *(volatile uintptr_t *)p = v;
}
/* On failure *expected receives the current value, as with the host version. */
static __device__ __forceinline__ bool mm_atomic_cas(uintptr_t *p, uintptr_t *expected, uintptr_t desired) {
  uintptr_t seen = (uintptr_t)atomicCAS((mm_dev_word_t *)p, (mm_dev_word_t)*expected, (mm_dev_word_t)desired);
  if (seen == *expected) return true;
  *expected = seen;
  return false;
}
static __device__ __forceinline__ uintptr_t mm_atomic_exchange(uintptr_t *p, uintptr_t v) {
  return (uintptr_t)atomicExch((mm_dev_word_t *)p, (mm_dev_word_t)v);
}
static __device__ __forceinline__ uintptr_t mm_atomic_fetch_add(uintptr_t *p, uintptr_t v) {
  return (uintptr_t)atomicAdd((mm_dev_word_t *)p, (mm_dev_word_t)v);
}
static __device__ __forceinline__ uintptr_t mm_atomic_fetch_or(uintptr_t *p, uintptr_t v) {
  return (uintptr_t)atomicOr((mm_dev_word_t *)p, (mm_dev_word_t)v);
}
static __device__ __forceinline__ uintptr_t mm_atomic_fetch_and(uintptr_t *p, uintptr_t v) {
  return (uintptr_t)atomicAnd((mm_dev_word_t *)p, (mm_dev_word_t)v);
}
#else
/* ---- host: GCC/Clang builtins, valid in C11 and C++ alike ---- */
static inline uintptr_t mm_atomic_load_acquire(const uintptr_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline uintptr_t mm_atomic_load_relaxed(const uintptr_t *p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline void mm_atomic_store_release(uintptr_t *p, uintptr_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline void mm_atomic_store_relaxed(uintptr_t *p, uintptr_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
/* Strong CAS, acquire-release; on failure *expected receives the current value. */
static inline bool mm_atomic_cas(uintptr_t *p, uintptr_t *expected, uintptr_t desired) {
  return __atomic_compare_exchange_n(p, expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static inline uintptr_t mm_atomic_exchange(uintptr_t *p, uintptr_t v) {
  return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}
static inline uintptr_t mm_atomic_fetch_add(uintptr_t *p, uintptr_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
static inline uintptr_t mm_atomic_fetch_or(uintptr_t *p, uintptr_t v) {
  return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
}
static inline uintptr_t mm_atomic_fetch_and(uintptr_t *p, uintptr_t v) {
  return __atomic_fetch_and(p, v, __ATOMIC_ACQ_REL);
}
/* Raises *p to v where it is lower (a high-water mark). */
static inline void mm_atomic_raise(uintptr_t *p, uintptr_t v) {
  uintptr_t seen = mm_atomic_load_relaxed(p);
  while (v > seen && !mm_atomic_cas(p, &seen, v)) {}
}
#endif

#endif /* MM_COMMON_ATOMIC_H */
