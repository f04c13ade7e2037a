/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: validating what the allocator hands out.
 *
 * Two checks, each its own half of this module:
 *  - the live-block index: every live block as an address interval in a
 *    treap, so a new block is checked against its neighbours for overlap in
 *    O(log n), which keeps traces of millions of requests cheap;
 *  - payload patterns: each block is filled with a pattern derived from
 *    (seed, offset) and the pattern is verified at free and across realloc,
 *    so a block handed out twice, or moved without its contents, is caught. */
#ifndef MMDRIVER_CHECK_H
#define MMDRIVER_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* ---- live-block index ---- */

typedef struct check_node_s {
  uintptr_t lo, hi;        /* the block's bytes [lo, hi) */
  int32_t   left, right;   /* children, -1 for none */
  uint32_t  prio;          /* heap priority of the treap */
} check_node_t;

typedef struct check_index_s {
  check_node_t *nodes;     /* one node per trace id: an id has at most one live block */
  size_t        num_ids;
  int32_t       root;      /* -1 when empty */
} check_index_t;

void check_index_init(check_index_t *ix, size_t num_ids);
void check_index_done(check_index_t *ix);
/* Adds block `id` = [p, p + size) (size 0 counts as 1 byte). Returns -1 on
 * success, else the id of a live block it overlaps (and adds nothing). */
int64_t check_index_insert(check_index_t *ix, uint32_t id, const void *p, size_t size);
void    check_index_remove(check_index_t *ix, uint32_t id);

/* ---- payload patterns ---- */

/* The pattern seed of block `id` in replay thread `thread`. */
uint64_t check_seed(unsigned thread, uint32_t id);
/* Writes the pattern over a block of `size` bytes (sampled for huge blocks). */
void     check_fill(void *p, uint64_t seed, size_t size);
/* Verifies the pattern written by check_fill(p, seed, size) on the bytes
 * below `limit`. Returns the offset of the first wrong byte, or SIZE_MAX. */
size_t   check_verify(const void *p, uint64_t seed, size_t size, size_t limit);

#endif /* MMDRIVER_CHECK_H */
