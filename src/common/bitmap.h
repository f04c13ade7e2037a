/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc common: atomic bitmaps.
 *
 * A bitmap is an array of uintptr_t words; every update is a single atomic
 * fetch_or/fetch_and, so concurrent setters and clearers of different bits
 * (or the same bit) never lose an update.  Used for the registry of segments
 * over the address space and for the per-segment "allocated" bits of the
 * checked mode. */
#ifndef MM_COMMON_BITMAP_H
#define MM_COMMON_BITMAP_H

#include "common/atomic.h"

#define MM_BITMAP_WORD_BITS (8 * sizeof(uintptr_t))

static inline uintptr_t mm_bitmap_mask(size_t bit) {
  return (uintptr_t)1 << (bit % MM_BITMAP_WORD_BITS);
}

/* Sets `bit`; returns whether it was already set. */
static inline bool mm_bitmap_set(uintptr_t *map, size_t bit) {
  uintptr_t m = mm_bitmap_mask(bit);
  return (mm_atomic_fetch_or(&map[bit / MM_BITMAP_WORD_BITS], m) & m) != 0;
}

/* Clears `bit`; returns whether it was set. */
static inline bool mm_bitmap_clear(uintptr_t *map, size_t bit) {
  uintptr_t m = mm_bitmap_mask(bit);
  return (mm_atomic_fetch_and(&map[bit / MM_BITMAP_WORD_BITS], ~m) & m) != 0;
}

static inline bool mm_bitmap_test(const uintptr_t *map, size_t bit) {
  return (mm_atomic_load_acquire(&map[bit / MM_BITMAP_WORD_BITS]) & mm_bitmap_mask(bit)) != 0;
}

#endif /* MM_COMMON_BITMAP_H */
