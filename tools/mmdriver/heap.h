/* mmdriver: what is known about the allocator serving this run.
 *
 * The driver is linked to libmanymalloc.so but may run under any allocator
 * preloaded in front of it, so everything here is looked up at run time:
 * which shared object `malloc` resolves to, and how to read its footprint
 * (bytes held from the OS) and make it return cached memory. */
#ifndef MMDRIVER_HEAP_H
#define MMDRIVER_HEAP_H

#include <stdbool.h>
#include <stddef.h>

/* With `force_rss`, the footprint is the resident set even on manymalloc. */
void        heap_probe(int force_rss);
/* Path of the shared object whose `malloc` serves the run. */
const char *heap_allocator(void);
/* How heap_footprint measures: "mm_stats bytes_mapped" or "anonymous RSS". */
const char *heap_footprint_method(void);
/* Bytes the allocator currently holds from the OS: manymalloc's own
 * bytes_mapped when it serves the run, else the process's resident
 * anonymous memory, exact (Anonymous in /proc/self/smaps_rollup). */
size_t      heap_footprint(void);
/* Whether the footprint may have grown since the last call (or since
 * heap_footprint_base): by RSS, whether the process took a page fault, the
 * only way the resident set grows; by mm_stats, always. Cheap (one
 * getrusage), so the driver asks after every request and reads the
 * footprint only when it may have grown, which finds the exact peak. */
bool        heap_footprint_moved(void);
/* What heap_footprint counts before a trace that the trace is not charged
 * for: with manymalloc the bytes of blocks live at that point (so a segment
 * mapped earlier counts in full and utilization never passes 100%), else
 * the resident anonymous memory itself (only its growth is charged). */
size_t      heap_footprint_base(void);
/* Asks the allocator to return free cached memory to the OS
 * (mm_collect, malloc_trim, jemalloc purge, mi_collect, tcmalloc release). */
void        heap_release(void);

#endif /* MMDRIVER_HEAP_H */
