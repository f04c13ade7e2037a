/* SPDX-License-Identifier: Apache-2.0 */
/* ranges.h: a growable list of (offset, length) byte ranges, made sorted and
 * disjoint by mmd_ranges_normalize(). Region packing builds one, the
 * transfer's datatype is made from one, and a worker's resident memory is
 * one. */
#ifndef MMD_RANGES_H
#define MMD_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mmd_range {
  uint64_t off;
  uint64_t len;
} mmd_range_t;

typedef struct mmd_ranges {
  mmd_range_t *r;
  size_t n, cap;
} mmd_ranges_t;

void mmd_ranges_free(mmd_ranges_t *l);
/* Appends [off, off + len), merging with the last range when they touch.
 * Returns 0 or SYS_ERR_NOMEM. */
int mmd_ranges_add(mmd_ranges_t *l, uint64_t off, uint64_t len);
/* Sorts and merges overlapping and adjacent ranges. */
void mmd_ranges_normalize(mmd_ranges_t *l);
/* Bytes covered (after normalize: without overlaps). */
uint64_t mmd_ranges_bytes(const mmd_ranges_t *l);
/* Splits every range longer than max into pieces of at most max bytes. */
int mmd_ranges_split(mmd_ranges_t *l, uint64_t max);
/* Whether a and b (in any order) share a byte; true also when memory for
 * the sorted copies runs out. */
bool mmd_ranges_overlap(const mmd_ranges_t *a, const mmd_ranges_t *b);
/* Takes [off, off + len) out of a sorted, disjoint list; *cut gets the
 * bytes removed. 0, or SYS_ERR_NOMEM (l unchanged) when a range split in
 * two finds no room. */
int mmd_ranges_cut(mmd_ranges_t *l, uint64_t off, uint64_t len, uint64_t *cut);
/* Calls fn with each part of the sorted, disjoint list have that no range
 * of the sorted, disjoint keep[0..nkeep) covers. */
void mmd_ranges_gaps(const mmd_ranges_t *have, const mmd_range_t *keep, size_t nkeep,
                     void (*fn)(void *ctx, uint64_t off, uint64_t len), void *ctx);

#endif
