/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc common: the only place the host's atomics are spelled.
 *
 * src/common holds the host's lock-free primitives (this file, bitmap.h,
 * seq_fifo.h), for any part that runs threads on the CPU.  Every shared
 * word is a plain uintptr_t reached through these helpers (GCC/Clang
 * __atomic builtins), valid in C11 and C++ alike.  The GPU spells its
 * atomics in src/gpu. */
#ifndef MM_COMMON_ATOMIC_H
#define MM_COMMON_ATOMIC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

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

#endif /* MM_COMMON_ATOMIC_H */
