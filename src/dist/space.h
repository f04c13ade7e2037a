/* SPDX-License-Identifier: Apache-2.0 */
/* space.h: the global address space, one range reserved at the same
 * address in every process. */
#ifndef MMD_SPACE_H
#define MMD_SPACE_H

#include <stdbool.h>
#include <stdint.h>

/* Reserves size bytes at the first candidate base every process can map:
 * agree(ok) must return true iff ok on every process (a collective).
 * 0 and *base, or SYS_ERR_NOMEM when no candidate suits all. */
int mmd_space_reserve(uint64_t size, bool (*agree)(bool ok), uintptr_t *base);
void mmd_space_unreserve(uintptr_t base, uint64_t size);
/* Gives the whole OS pages inside [base + off, base + off + len) back. */
void mmd_space_discard(uintptr_t base, uint64_t off, uint64_t len);
/* Makes the pages of [base + off, base + off + len) resident and writable
 * ahead of a transfer into them. */
void mmd_space_prefault(uintptr_t base, uint64_t off, uint64_t len);

#endif
