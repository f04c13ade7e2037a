/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: what is known about the allocator serving this run.
 *
 * The driver is linked to libmanymalloc.so but may run under any allocator
 * preloaded in front of it, so everything here is looked up at run time:
 * which shared object `malloc` resolves to and how to make it return cached
 * memory. Every allocator's footprint is read the same way, from the
 * kernel, so that utilization compares like with like. */
#ifndef MMDRIVER_ALLOCATOR_H
#define MMDRIVER_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>

/* Finds the allocator serving this run (call once, before the others). */
void        allocator_probe(void);
/* Path of the shared object whose `malloc` serves the run. */
const char *allocator_path(void);
/* How allocator_footprint measures, for the report: "anonymous RSS". */
const char *allocator_footprint_method(void);
/* Bytes the allocator currently holds from the OS: the process's resident
 * anonymous memory, exact (Anonymous in /proc/self/smaps_rollup). */
size_t      allocator_footprint(void);
/* Whether the footprint may have grown since the last call (or since
 * allocator_footprint_base): whether the process took a page fault, the only way
 * the resident set grows. Cheap (one getrusage), so the driver asks after
 * every request and reads the footprint only when it may have grown, which
 * finds the exact peak. */
bool        allocator_footprint_moved(void);
/* The footprint before a trace, which the trace is not charged for: only
 * its growth is. */
size_t      allocator_footprint_base(void);
/* Asks the allocator to return free cached memory to the OS
 * (mm_collect, malloc_trim, jemalloc purge, mi_collect, tcmalloc release). */
void        allocator_release(void);

#endif /* MMDRIVER_ALLOCATOR_H */
