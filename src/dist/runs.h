/* SPDX-License-Identifier: Apache-2.0 */
/* runs.h: tries of runs. A run [key, key + length) of slabs or of region IDs
 * is stored as key -> length; runs never touch (mmd_runs_add coalesces), so
 * the trie holds as few keys as possible. The Free Trie of a slab pool, the
 * Free Ranges and the Free Region IDs are such tries. */
#ifndef MMD_RUNS_H
#define MMD_RUNS_H

#include <stdbool.h>
#include "trie.h"

/* Adds [key, key + n), coalesced with its neighbours: 0 or SYS_ERR_NOMEM. */
int mmd_runs_add(mmd_trie_t *t, uint64_t key, uint64_t n);
/* Takes n from the top of the lowest run holding n (no trie node needed). */
bool mmd_runs_take_top_fit(mmd_trie_t *t, uint64_t n, uint64_t *key);
/* Takes [near, near + n) if it is free, else n from the bottom of the first
 * run after near that holds n (wrapping around to the lowest): a region's
 * memory stays together, and region IDs go upward. */
bool mmd_runs_take_near(mmd_trie_t *t, uint64_t n, uint64_t near, uint64_t *key);
/* Takes up to max from the top of the highest run. */
bool mmd_runs_take_highest(mmd_trie_t *t, uint64_t max, uint64_t *key, uint64_t *n);
/* Takes the lowest [key, key + n) with key a multiple of align. */
bool mmd_runs_take_aligned(mmd_trie_t *t, uint64_t n, uint64_t align, uint64_t *key);
/* Removes [key, key + n), whatever runs it spans. 0 or SYS_ERR_NOMEM. */
int mmd_runs_cut(mmd_trie_t *t, uint64_t key, uint64_t n);
/* The run holding key: true with its first key and length. */
bool mmd_runs_of(const mmd_trie_t *t, uint64_t key, uint64_t *first, uint64_t *n);

/* Tagged runs: key -> length << 32 | tag, where a run [key, key + length)
 * carries a 32-bit tag (a region ID, a child scheduler) and neighbours with
 * one tag merge. The Used Ranges and what a scheduler lent its children are
 * such tries. */
bool mmd_truns_of(const mmd_trie_t *t, uint64_t key, uint64_t *first, uint64_t *n, uint32_t *tag);
int mmd_truns_add(mmd_trie_t *t, uint64_t key, uint64_t n, uint32_t tag);
void mmd_truns_cut(mmd_trie_t *t, uint64_t key, uint64_t n);

#endif
