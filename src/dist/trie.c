/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc dist: the 8-degree trie (trie.h).
 *
 * Owns the trie's nodes, each one kernel-pool cell.  Level 0 is the root and
 * consumes the key's most significant 3 bits; level levels-1 holds the
 * leaves.  An inner node is 8 child cells (0 = none) in the first 32 bytes
 * of its cell, a leaf is 8 values (0 = empty) filling the cell.  No node
 * is ever empty: remove frees nodes as they empty, which is what lets
 * floor/ceil jump to the extreme of any subtree without backtracking
 * inside it. */
#include <assert.h>

#include "trie.h"

#define MMD_TRIE_MAX_LEVELS 21  /* 63-bit keys */

static inline mmd_cell_t *mmd_trie_inner(const mmd_trie_t *t, mmd_cell_t node) {
  return (mmd_cell_t *)mmd_cell(t->meta, node);
}

static inline uint64_t *mmd_trie_leaf(const mmd_trie_t *t, mmd_cell_t node) {
  return (uint64_t *)mmd_cell(t->meta, node);
}

/* The bit position of the level-i digit of a key. */
static inline unsigned mmd_trie_shift(const mmd_trie_t *t, unsigned i) {
  return 3u * (t->levels - 1u - i);
}

static inline unsigned mmd_trie_digit(const mmd_trie_t *t, uint64_t key, unsigned i) {
  return (unsigned)(key >> mmd_trie_shift(t, i)) & 7u;
}

/* levels <= 21, so the key space is at most 2^63 and the shift is defined. */
static inline uint64_t mmd_trie_max(const mmd_trie_t *t) {
  return (1ull << (3u * t->levels)) - 1;
}

void mmd_trie_init(mmd_trie_t *t, mmd_meta_t *meta, unsigned key_bits) {
  assert(key_bits >= 1 && key_bits <= 63);
  t->meta = meta;
  t->root = 0;
  t->levels = (uint8_t)((key_bits + 2) / 3);
  t->count = 0;
}

static void mmd_trie_free(mmd_trie_t *t, mmd_cell_t node, unsigned i) {
  if (i + 1 < t->levels) {
    for (unsigned j = 0; j < 8; j++) {
      mmd_cell_t child = mmd_trie_inner(t, node)[j];
      if (child != 0) mmd_trie_free(t, child, i + 1);
    }
  }
  mmd_meta_free(t->meta, node);
}

void mmd_trie_clear(mmd_trie_t *t) {
  if (t->root != 0) mmd_trie_free(t, t->root, 0);
  t->root = 0;
  t->count = 0;
}

/* Follows key down from the root, recording the nodes met in path[];
 * returns how many exist (levels when the key's leaf does). */
static unsigned mmd_trie_descend(const mmd_trie_t *t, uint64_t key, mmd_cell_t *path) {
  unsigned d = 0;
  for (mmd_cell_t node = t->root; node != 0; ) {
    path[d] = node;
    if (++d == t->levels) break;
    node = mmd_trie_inner(t, node)[mmd_trie_digit(t, key, d - 1)];
  }
  return d;
}

/* Creates the missing nodes path[have..levels) of key.  Every cell is taken
 * before any is linked in, so running out of cells leaves the trie as it
 * was. */
static int mmd_trie_grow(mmd_trie_t *t, uint64_t key, mmd_cell_t *path, unsigned have) {
  for (unsigned i = have; i < t->levels; i++) {
    path[i] = mmd_meta_alloc(t->meta);
    if (path[i] == 0) {
      while (i-- > have) mmd_meta_free(t->meta, path[i]);
      return -1;
    }
  }
  for (unsigned i = have; i < t->levels; i++) {
    if (i == 0) t->root = path[0];
    else mmd_trie_inner(t, path[i - 1])[mmd_trie_digit(t, key, i - 1)] = path[i];
  }
  return 0;
}

int mmd_trie_insert(mmd_trie_t *t, uint64_t key, uint64_t value) {
  assert(value != 0);
  if (key > mmd_trie_max(t)) return -1;
  mmd_cell_t path[MMD_TRIE_MAX_LEVELS];
  unsigned have = mmd_trie_descend(t, key, path);
  if (have < t->levels && mmd_trie_grow(t, key, path, have) != 0) return -1;
  uint64_t *slot = &mmd_trie_leaf(t, path[t->levels - 1])[mmd_trie_digit(t, key, t->levels - 1)];
  if (*slot == 0) t->count++;
  *slot = value;
  return 0;
}

uint64_t mmd_trie_find(const mmd_trie_t *t, uint64_t key) {
  if (key > mmd_trie_max(t)) return 0;
  mmd_cell_t path[MMD_TRIE_MAX_LEVELS];
  if (mmd_trie_descend(t, key, path) < t->levels) return 0;
  return mmd_trie_leaf(t, path[t->levels - 1])[mmd_trie_digit(t, key, t->levels - 1)];
}

/* Bit j set when slot j of a level-i node is in use.  Each kind is read
 * through its own type: reading an inner node as uint64_t words would break
 * strict aliasing, and the compiler may then reorder it past the store that
 * cleared a child. */
static unsigned mmd_trie_used(const mmd_trie_t *t, mmd_cell_t node, unsigned i) {
  unsigned mask = 0;
  if (i + 1 == t->levels) {
    const uint64_t *v = mmd_trie_leaf(t, node);
    for (unsigned j = 0; j < 8; j++) mask |= (unsigned)(v[j] != 0) << j;
  } else {
    const mmd_cell_t *c = mmd_trie_inner(t, node);
    for (unsigned j = 0; j < 8; j++) mask |= (unsigned)(c[j] != 0) << j;
  }
  return mask;
}

uint64_t mmd_trie_remove(mmd_trie_t *t, uint64_t key) {
  if (key > mmd_trie_max(t)) return 0;
  mmd_cell_t path[MMD_TRIE_MAX_LEVELS];
  if (mmd_trie_descend(t, key, path) < t->levels) return 0;
  unsigned i = t->levels - 1;
  uint64_t *slot = &mmd_trie_leaf(t, path[i])[mmd_trie_digit(t, key, i)];
  uint64_t value = *slot;
  if (value == 0) return 0;
  *slot = 0;
  t->count--;
  /* Walk back up, freeing each node the removal emptied. */
  while (mmd_trie_used(t, path[i], i) == 0) {
    mmd_meta_free(t->meta, path[i]);
    if (i == 0) { t->root = 0; break; }
    i--;
    mmd_trie_inner(t, path[i])[mmd_trie_digit(t, key, i)] = 0;
  }
  return value;
}

/* The lowest (up) or highest used slot of a nonzero mask. */
static inline unsigned mmd_trie_pick(unsigned mask, bool up) {
  return up ? (unsigned)__builtin_ctz(mask) : 31u - (unsigned)__builtin_clz(mask);
}

/* The smallest (up) or largest key under slot j of path node `node` at
 * level i, whose digits above level i are key's.  Subtrees are never
 * empty, so each level's extreme slot leads to a key. */
static void mmd_trie_edge(const mmd_trie_t *t, mmd_cell_t node, unsigned i, unsigned j,
                          uint64_t key, bool up, uint64_t *found, uint64_t *value) {
  unsigned above = mmd_trie_shift(t, i) + 3;  /* <= 63 */
  uint64_t k = (key >> above << above) | (uint64_t)j << mmd_trie_shift(t, i);
  for (; i + 1 < t->levels; i++) {
    node = mmd_trie_inner(t, node)[j];
    j = mmd_trie_pick(mmd_trie_used(t, node, i + 1), up);
    k |= (uint64_t)j << mmd_trie_shift(t, i + 1);
  }
  *found = k;
  *value = mmd_trie_leaf(t, node)[j];
}

/* Ceil (up) or floor.  Descends along key; where key's own branch runs
 * out, the deepest node on the path with a used slot beyond key's digit
 * (above it for ceil, below for floor) holds the answer: the nearest such
 * slot's subtree, entered at its extreme. */
static bool mmd_trie_near(const mmd_trie_t *t, uint64_t key, bool up,
                          uint64_t *found, uint64_t *value) {
  mmd_cell_t path[MMD_TRIE_MAX_LEVELS];
  unsigned d = mmd_trie_descend(t, key, path);
  unsigned last = t->levels - 1u;
  if (d == t->levels) {
    uint64_t v = mmd_trie_leaf(t, path[last])[mmd_trie_digit(t, key, last)];
    if (v != 0) { *found = key; *value = v; return true; }
  }
  for (unsigned i = d; i-- > 0; ) {
    unsigned k = mmd_trie_digit(t, key, i);
    unsigned beyond = up ? ~((2u << k) - 1) : (1u << k) - 1;
    unsigned mask = mmd_trie_used(t, path[i], i) & beyond;
    if (mask != 0) {
      mmd_trie_edge(t, path[i], i, mmd_trie_pick(mask, up), key, up, found, value);
      return true;
    }
  }
  return false;
}

bool mmd_trie_floor(const mmd_trie_t *t, uint64_t key, uint64_t *found, uint64_t *value) {
  uint64_t max = mmd_trie_max(t);
  return mmd_trie_near(t, key > max ? max : key, false, found, value);
}

bool mmd_trie_ceil(const mmd_trie_t *t, uint64_t key, uint64_t *found, uint64_t *value) {
  if (key > mmd_trie_max(t)) return false;
  return mmd_trie_near(t, key, true, found, value);
}
