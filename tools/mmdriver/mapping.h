/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: the driver's own memory, taken straight from the OS.
 *
 * Everything the driver keeps per trace (ops, id tables, the live-block
 * index) is mapped here instead of malloc'ed, so the allocator under test
 * serves only the trace's requests and its footprint is not inflated by the
 * driver's bookkeeping. */
#ifndef MMDRIVER_MAPPING_H
#define MMDRIVER_MAPPING_H

#include <stddef.h>

/* Zeroed memory, faulted in at once so that touching it later does not
 * count as the allocator's resident growth. Exits the driver when the OS
 * refuses. */
void *mapping_alloc(size_t size);
void  mapping_free(void *p, size_t size);
/* Resizes a mapping from `old_size` to `new_size` bytes, keeping its contents. */
void *mapping_resize(void *p, size_t old_size, size_t new_size);
/* Faults in `bytes` of the calling thread's stack below the caller, so that
 * the replay's own calls do not grow the resident memory charged to it. */
void  mapping_prefault_stack(size_t bytes);

#endif /* MMDRIVER_MAPPING_H */
