/* SPDX-License-Identifier: Apache-2.0 */
/* runs.c: tries of coalesced runs (see runs.h). */
#include "runs.h"
#include "manymalloc/myrmics.h"

int mmd_runs_add(mmd_trie_t *t, uint64_t key, uint64_t n) {
  uint64_t next = mmd_trie_find(t, key + n);
  uint64_t prev_key, prev_len;
  if (key > 0 && mmd_trie_floor(t, key - 1, &prev_key, &prev_len) && prev_key + prev_len == key) {
    if (next) mmd_trie_remove(t, key + n);
    mmd_trie_insert(t, prev_key, prev_len + n + next); /* the key exists: no node needed */
    return 0;
  }
  if (mmd_trie_insert(t, key, n + next) != 0) return SYS_ERR_NOMEM;
  if (next) mmd_trie_remove(t, key + n);
  return 0;
}

bool mmd_runs_take_top_fit(mmd_trie_t *t, uint64_t n, uint64_t *key) {
  uint64_t k, len;
  for (bool ok = mmd_trie_first(t, &k, &len); ok; ok = mmd_trie_next(t, &k, &len)) {
    if (len < n) continue;
    if (len == n) mmd_trie_remove(t, k);
    else mmd_trie_insert(t, k, len - n);
    *key = k + len - n;
    return true;
  }
  return false;
}

static bool runs_first_fit_from(const mmd_trie_t *t, uint64_t from, uint64_t n, uint64_t *k,
                                uint64_t *len) {
  for (bool ok = mmd_trie_ceil(t, from, k, len); ok; ok = mmd_trie_next(t, k, len))
    if (*len >= n) return true;
  return false;
}

/* Takes [at, at + n) out of the run (k, len) holding it. */
static bool runs_take_inside(mmd_trie_t *t, uint64_t k, uint64_t len, uint64_t at, uint64_t n) {
  if (at + n < k + len && mmd_trie_insert(t, at + n, k + len - at - n) != 0) return false;
  if (at > k) mmd_trie_insert(t, k, at - k);   /* the key exists: no node */
  else mmd_trie_remove(t, k);
  return true;
}

bool mmd_runs_take_near(mmd_trie_t *t, uint64_t n, uint64_t near, uint64_t *key) {
  uint64_t k, len;
  if (mmd_trie_floor(t, near, &k, &len) && near < k + len && k + len - near >= n &&
      runs_take_inside(t, k, len, near, n)) {
    *key = near;
    return true;
  }
  if (!runs_first_fit_from(t, near, n, &k, &len) && !runs_first_fit_from(t, 0, n, &k, &len))
    return false;
  if (!runs_take_inside(t, k, len, k, n)) return false;
  *key = k;
  return true;
}

bool mmd_runs_take_highest(mmd_trie_t *t, uint64_t max, uint64_t *key, uint64_t *n) {
  uint64_t k, len;
  if (max == 0 || !mmd_trie_floor(t, UINT64_MAX, &k, &len)) return false;
  uint64_t take = len < max ? len : max;
  if (take == len) mmd_trie_remove(t, k);
  else mmd_trie_insert(t, k, len - take);
  *key = k + len - take;
  *n = take;
  return true;
}

bool mmd_runs_take_aligned(mmd_trie_t *t, uint64_t n, uint64_t align, uint64_t *key) {
  uint64_t k, len;
  for (bool ok = mmd_trie_first(t, &k, &len); ok; ok = mmd_trie_next(t, &k, &len)) {
    uint64_t at = (k + align - 1) / align * align;
    if (at + n <= k + len && runs_take_inside(t, k, len, at, n)) {
      *key = at;
      return true;
    }
  }
  return false;
}

bool mmd_runs_of(const mmd_trie_t *t, uint64_t key, uint64_t *first, uint64_t *n) {
  return mmd_trie_floor(t, key, first, n) && key < *first + *n;
}

int mmd_runs_cut(mmd_trie_t *t, uint64_t key, uint64_t n) {
  uint64_t end = key + n, k, len;
  while (key < end) {
    if (!mmd_runs_of(t, key, &k, &len)) {
      if (!mmd_trie_ceil(t, key, &k, &len) || k >= end) return 0;
      key = k;
      continue;
    }
    uint64_t cut = end < k + len ? end - key : k + len - key;
    if (!runs_take_inside(t, k, len, key, cut)) return SYS_ERR_NOMEM;
    key += cut;
  }
  return 0;
}

/* ---------------------------------------------------------------------------
 * Tagged runs
 * ------------------------------------------------------------------------- */

#define TRUNS_TAG_BITS 32
#define TRUNS_TAG_MASK ((1ull << TRUNS_TAG_BITS) - 1)

static inline uint64_t truns_value(uint64_t n, uint32_t tag) { return n << TRUNS_TAG_BITS | tag; }

bool mmd_truns_of(const mmd_trie_t *t, uint64_t key, uint64_t *first, uint64_t *n, uint32_t *tag) {
  uint64_t v;
  if (!mmd_trie_floor(t, key, first, &v)) return false;
  *n = v >> TRUNS_TAG_BITS;
  *tag = (uint32_t)(v & TRUNS_TAG_MASK);
  return key < *first + *n;
}

int mmd_truns_add(mmd_trie_t *t, uint64_t key, uint64_t n, uint32_t tag) {
  uint64_t first, len, next = mmd_trie_find(t, key + n), next_len = 0;
  uint32_t owner;
  if (next != 0 && (uint32_t)(next & TRUNS_TAG_MASK) == tag)
    next_len = next >> TRUNS_TAG_BITS;  /* the run after has the tag too: merge it */
  if (key > 0 && mmd_truns_of(t, key - 1, &first, &len, &owner) && owner == tag) {
    if (next_len) mmd_trie_remove(t, key + n);
    mmd_trie_insert(t, first, truns_value(len + n + next_len, tag)); /* exists: no node */
    return 0;
  }
  if (mmd_trie_insert(t, key, truns_value(n + next_len, tag)) != 0) return SYS_ERR_NOMEM;
  if (next_len) mmd_trie_remove(t, key + n);
  return 0;
}

void mmd_truns_cut(mmd_trie_t *t, uint64_t key, uint64_t n) {
  uint64_t end = key + n, first, len, v;
  uint32_t tag;
  while (key < end) {
    if (!mmd_truns_of(t, key, &first, &len, &tag)) {
      if (!mmd_trie_ceil(t, key, &first, &v) || first >= end) return;
      key = first;
      continue;
    }
    uint64_t run_end = first + len;
    if (end < run_end) mmd_trie_insert(t, end, truns_value(run_end - end, tag));
    if (key > first) mmd_trie_insert(t, first, truns_value(key - first, tag));
    else mmd_trie_remove(t, first);
    key = run_end;
  }
}
