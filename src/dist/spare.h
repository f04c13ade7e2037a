/* SPDX-License-Identifier: Apache-2.0 */
/* spare.h: a worker's spare pages, populated pages parked for reuse where
 * new memory arrives (spare.c). */
#ifndef MMD_SPARE_H
#define MMD_SPARE_H

#include <stdbool.h>
#include <stdint.h>

#define MMD_SPARE_MIN_RUN (16 * 4096ull)   /* bytes: smaller runs are not worth a move */

typedef struct mmd_spare {
  uintptr_t area;        /* where parked pages wait: cap bytes, a stack from area up */
  uint64_t cap;
  uint64_t used;         /* bytes parked */
  uint64_t last_use_ns;  /* when pages were last parked into an empty stack or placed */
  uint32_t places;       /* placements since the mapping count was last read */
  bool crowded;          /* too many mappings: placing pauses */
  bool off;              /* the kernel refused a move: parked pages go back, for good */
} mmd_spare_t;

void mmd_spare_init(mmd_spare_t *s);
void mmd_spare_destroy(mmd_spare_t *s);
/* Gives up the whole pages inside [base + off, base + off + len): parked
 * where there is room, back to the OS otherwise. */
void mmd_spare_discard(mmd_spare_t *s, uintptr_t base, uint64_t off, uint64_t len);
/* Gives the parked pages back if nothing used them for a second. */
void mmd_spare_expire(mmd_spare_t *s);
/* Readies [base + off, base + off + len) for data about to be written
 * over all of it: its whole pages that have none get parked ones, and
 * with populate the kernel makes the rest resident in one call. */
void mmd_spare_fill(mmd_spare_t *s, uintptr_t base, uint64_t off, uint64_t len, bool populate);

#endif
