/* SPDX-License-Identifier: Apache-2.0 */
/* trie.h: the 8-degree trie of the paper (Sect. 3.2): exact, nearest
 * (floor/ceil) and ordered lookups on integer keys, in constant time for a
 * given key width. A node is one 64-byte kernel-pool cell: an inner node
 * holds 8 32-bit cell indices, a leaf holds 8 64-bit values. */
#ifndef MMD_TRIE_H
#define MMD_TRIE_H

#include <stdbool.h>
#include <stdint.h>
#include "meta.h"

typedef struct mmd_trie {
  mmd_meta_t *meta;   /* the pool its nodes come from */
  mmd_cell_t root;    /* 0 while empty */
  uint8_t levels;     /* key_bits / 3, rounded up; keys have 3 * levels bits */
  uint64_t count;     /* keys stored */
} mmd_trie_t;

/* An empty trie for keys below 2^key_bits (1 <= key_bits <= 63). */
void mmd_trie_init(mmd_trie_t *t, mmd_meta_t *meta, unsigned key_bits);
/* Frees every node; the trie is empty afterwards. */
void mmd_trie_clear(mmd_trie_t *t);

/* Stores value (nonzero) under key, replacing what was there. Returns 0, or
 * -1 when the kernel pool has no cell for a node (the trie is unchanged). */
int mmd_trie_insert(mmd_trie_t *t, uint64_t key, uint64_t value);
/* The value under key, 0 if none. */
uint64_t mmd_trie_find(const mmd_trie_t *t, uint64_t key);
/* Removes key; returns its value, 0 if it was absent. Empty nodes are freed. */
uint64_t mmd_trie_remove(mmd_trie_t *t, uint64_t key);
/* The largest key <= key (floor) or smallest key >= key (ceil) present:
 * true and *found / *value set, or false. */
bool mmd_trie_floor(const mmd_trie_t *t, uint64_t key, uint64_t *found, uint64_t *value);
bool mmd_trie_ceil(const mmd_trie_t *t, uint64_t key, uint64_t *found, uint64_t *value);

/* Ordered walk: for (ok = mmd_trie_first(t, &k, &v); ok; ok = mmd_trie_next(t, &k, &v)) */
static inline bool mmd_trie_first(const mmd_trie_t *t, uint64_t *key, uint64_t *value) {
  return mmd_trie_ceil(t, 0, key, value);
}
static inline bool mmd_trie_next(const mmd_trie_t *t, uint64_t *key, uint64_t *value) {
  uint64_t max = t->levels ? (3u * t->levels >= 64 ? UINT64_MAX : (1ull << (3u * t->levels)) - 1) : 0;
  return *key < max && mmd_trie_ceil(t, *key + 1, key, value);
}

/* The key width that holds every key up to max_value (at least 3). */
static inline unsigned mmd_trie_bits_for(uint64_t max_value) {
  unsigned bits = 3;
  while (bits < 63 && (max_value >> bits) != 0) bits++;
  return bits;
}

#endif
