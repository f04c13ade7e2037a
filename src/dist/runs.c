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

/* Takes [k, k + n) off the bottom of run (k, len): the rest moves to k + n. */
static bool runs_take_bottom(mmd_trie_t *t, uint64_t k, uint64_t len, uint64_t n) {
  if (len > n && mmd_trie_insert(t, k + n, len - n) != 0) return false;
  mmd_trie_remove(t, k);
  return true;
}

static bool runs_first_fit_from(const mmd_trie_t *t, uint64_t from, uint64_t n, uint64_t *k,
                                uint64_t *len) {
  for (bool ok = mmd_trie_ceil(t, from, k, len); ok; ok = mmd_trie_next(t, k, len))
    if (*len >= n) return true;
  return false;
}

bool mmd_runs_take_near(mmd_trie_t *t, uint64_t n, uint64_t near, uint64_t *key) {
  uint64_t k, len;
  if (!runs_first_fit_from(t, near, n, &k, &len) && !runs_first_fit_from(t, 0, n, &k, &len))
    return false;
  if (!runs_take_bottom(t, k, len, n)) return false;
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
