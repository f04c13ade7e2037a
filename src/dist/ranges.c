/* SPDX-License-Identifier: Apache-2.0 */
/* ranges.c: growable lists of (offset, length) byte ranges. */
#include <stdlib.h>
#include <string.h>
#include "ranges.h"
#include "manymalloc/myrmics.h"

void mmd_ranges_free(mmd_ranges_t *l) {
  free(l->r);
  l->r = NULL;
  l->n = l->cap = 0;
}

static int ranges_reserve(mmd_ranges_t *l, size_t want) {
  if (want <= l->cap) return 0;
  size_t cap = l->cap ? l->cap * 2 : 16;
  while (cap < want) cap *= 2;
  mmd_range_t *r = realloc(l->r, cap * sizeof *r);
  if (r == NULL) return SYS_ERR_NOMEM;
  l->r = r;
  l->cap = cap;
  return 0;
}

int mmd_ranges_add(mmd_ranges_t *l, uint64_t off, uint64_t len) {
  if (len == 0) return 0;
  if (l->n > 0 && l->r[l->n - 1].off + l->r[l->n - 1].len == off) {
    l->r[l->n - 1].len += len;
    return 0;
  }
  if (ranges_reserve(l, l->n + 1) != 0) return SYS_ERR_NOMEM;
  l->r[l->n++] = (mmd_range_t){off, len};
  return 0;
}

static int range_cmp(const void *a, const void *b) {
  const mmd_range_t *x = a, *y = b;
  return (x->off > y->off) - (x->off < y->off);
}

void mmd_ranges_normalize(mmd_ranges_t *l) {
  if (l->n < 2) return;
  qsort(l->r, l->n, sizeof *l->r, range_cmp);
  size_t out = 0;
  for (size_t i = 1; i < l->n; i++) {
    mmd_range_t *last = &l->r[out];
    uint64_t end = last->off + last->len;
    if (l->r[i].off <= end) {
      uint64_t iend = l->r[i].off + l->r[i].len;
      if (iend > end) last->len = iend - last->off;
    } else {
      l->r[++out] = l->r[i];
    }
  }
  l->n = out + 1;
}

uint64_t mmd_ranges_bytes(const mmd_ranges_t *l) {
  uint64_t sum = 0;
  for (size_t i = 0; i < l->n; i++) sum += l->r[i].len;
  return sum;
}

int mmd_ranges_split(mmd_ranges_t *l, uint64_t max) {
  size_t pieces = 0;
  for (size_t i = 0; i < l->n; i++) pieces += (l->r[i].len + max - 1) / max;
  if (pieces == l->n) return 0;
  if (ranges_reserve(l, pieces) != 0) return SYS_ERR_NOMEM;
  size_t out = pieces;
  for (size_t i = l->n; i-- > 0;) {  /* back to front, so nothing unread is overwritten */
    mmd_range_t r = l->r[i];
    size_t k = (r.len + max - 1) / max;
    for (size_t j = k; j-- > 0;) {
      uint64_t off = r.off + j * max;
      uint64_t len = (j + 1 == k) ? r.len - j * max : max;
      l->r[--out] = (mmd_range_t){off, len};
    }
  }
  l->n = pieces;
  return 0;
}

static bool ranges_sorted_copy(const mmd_ranges_t *l, mmd_ranges_t *copy) {
  *copy = (mmd_ranges_t){0};
  if (ranges_reserve(copy, l->n) != 0) return false;
  memcpy(copy->r, l->r, l->n * sizeof *l->r);
  copy->n = l->n;
  mmd_ranges_normalize(copy);
  return true;
}

bool mmd_ranges_overlap(const mmd_ranges_t *a, const mmd_ranges_t *b) {
  mmd_ranges_t x = {0}, y = {0};
  bool overlap = true;   /* what a failed copy answers: the caller takes the safe way */
  if (ranges_sorted_copy(a, &x) && ranges_sorted_copy(b, &y)) {
    overlap = false;
    for (size_t i = 0, j = 0; !overlap && i < x.n && j < y.n;) {
      if (x.r[i].off + x.r[i].len <= y.r[j].off) i++;
      else if (y.r[j].off + y.r[j].len <= x.r[i].off) j++;
      else overlap = true;
    }
  }
  mmd_ranges_free(&x);
  mmd_ranges_free(&y);
  return overlap;
}

void mmd_ranges_gaps(const mmd_ranges_t *have, const mmd_range_t *keep, size_t nkeep,
                     void (*fn)(void *ctx, uint64_t off, uint64_t len), void *ctx) {
  size_t j = 0;
  for (size_t i = 0; i < have->n; i++) {
    uint64_t at = have->r[i].off, end = at + have->r[i].len;
    while (j < nkeep && keep[j].off + keep[j].len <= at) j++;   /* behind: no later range needs it */
    for (size_t k = j; k < nkeep && keep[k].off < end && at < end; k++) {
      if (keep[k].off > at) fn(ctx, at, keep[k].off - at);
      uint64_t kend = keep[k].off + keep[k].len;
      if (kend > at) at = kend;
    }
    if (at < end) fn(ctx, at, end - at);
  }
}

/* The first range of a sorted, disjoint list that ends after off. */
static size_t ranges_first_after(const mmd_ranges_t *l, uint64_t off) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (l->r[mid].off + l->r[mid].len <= off) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int mmd_ranges_cut(mmd_ranges_t *l, uint64_t off, uint64_t len, uint64_t *cut) {
  uint64_t end = off + len;
  size_t i = ranges_first_after(l, off);
  *cut = 0;
  if (i == l->n || l->r[i].off >= end) return 0;
  mmd_range_t first = l->r[i];
  if (first.off < off && first.off + first.len > end) {   /* inside one range: split it */
    if (ranges_reserve(l, l->n + 1) != 0) return SYS_ERR_NOMEM;
    memmove(&l->r[i + 2], &l->r[i + 1], (l->n - i - 1) * sizeof *l->r);
    l->r[i].len = off - first.off;
    l->r[i + 1] = (mmd_range_t){end, first.off + first.len - end};
    l->n++;
    *cut = len;
    return 0;
  }
  if (first.off < off) {   /* the first keeps its head */
    *cut += first.off + first.len - off;
    l->r[i++].len = off - first.off;
  }
  size_t gone = i;
  for (; gone < l->n && l->r[gone].off + l->r[gone].len <= end; gone++) *cut += l->r[gone].len;
  if (gone < l->n && l->r[gone].off < end) {   /* the last keeps its tail */
    *cut += end - l->r[gone].off;
    l->r[gone].len -= end - l->r[gone].off;
    l->r[gone].off = end;
  }
  memmove(&l->r[i], &l->r[gone], (l->n - gone) * sizeof *l->r);
  l->n -= gone - i;
  return 0;
}
