/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: malloc-lab traces (.rep) in memory.
 *
 * A trace is 4 integer header lines (classically suggested_heap_size,
 * num_ids, num_ops, weight; only num_ops is read, as a size hint) and then
 * one request per line: `a id size`, `r id size`, `f id`.  The ops array lives in
 * memory mapped directly from the OS so that the allocator under test sees
 * only the trace's own requests. */
#ifndef MMDRIVER_TRACE_H
#define MMDRIVER_TRACE_H

#include <stddef.h>
#include <stdint.h>

typedef enum trace_kind_e { TRACE_ALLOC, TRACE_REALLOC, TRACE_FREE } trace_kind_t;

typedef struct trace_op_s {
  uint64_t size;   /* requested bytes (0 for a free) */
  uint32_t id;     /* block id, < trace_t.num_ids */
  uint32_t kind;   /* a trace_kind_t */
} trace_op_t;

typedef struct trace_s {
  const char *path;
  size_t      num_ids;  /* largest id + 1 */
  size_t      num_ops;  /* requests actually read */
  trace_op_t *ops;
} trace_t;

/* Reads and checks `path`: every `f` names a live id, every `a` a dead one.
 * On error prints `path:line: reason` to stderr and returns 0. */
int  trace_load(trace_t *t, const char *path);
void trace_unload(trace_t *t);

#endif /* MMDRIVER_TRACE_H */
