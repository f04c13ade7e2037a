/* SPDX-License-Identifier: Apache-2.0 */
// The kernel pool (meta.c) and the 8-degree trie (trie.c): pool cells are
// zeroed, distinct, aligned and reused, across chunk boundaries, and
// allocation fails cleanly when the pool is full; the trie's exact lookups,
// floor/ceil and ordered walk agree with a std::map over long random
// sequences at several key widths, its nodes go back to the pool as they
// empty, and an insert that finds no cell leaves the trie as it was.
extern "C" {
#include "meta.h"
#include "trie.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace {

// The pool's capacity in cells: next_fresh at this value means every cell
// has been handed out once.
constexpr uint32_t kPoolEnd = MMD_CELL_MAX_CHUNKS << MMD_CELL_CHUNK_SHIFT;

bool cell_is_zero(const mmd_meta_t &m, mmd_cell_t c) {
  const unsigned char *p = static_cast<const unsigned char *>(mmd_cell(&m, c));
  for (int i = 0; i < MMD_CELL_SIZE; i++)
    if (p[i] != 0) return false;
  return true;
}

// More than three chunks' worth: indices are distinct and nonzero, cells are
// zeroed, 64-byte aligned, and hold what is written to them (no two overlap).
TEST(Meta, CellsAreZeroedDistinctAlignedAcrossChunks) {
  mmd_meta_t m;
  mmd_meta_init(&m);
  const uint32_t n = 3 * MMD_CELL_CHUNK_CELLS + 5;
  std::vector<mmd_cell_t> cells;
  std::set<mmd_cell_t> seen;
  for (uint32_t i = 0; i < n; i++) {
    mmd_cell_t c = mmd_meta_alloc(&m);
    ASSERT_NE(c, 0u);
    ASSERT_TRUE(seen.insert(c).second) << "cell " << c << " handed out twice";
    ASSERT_EQ(reinterpret_cast<uintptr_t>(mmd_cell(&m, c)) % MMD_CELL_SIZE, 0u);
    ASSERT_TRUE(cell_is_zero(m, c));
    memset(mmd_cell(&m, c), int(c & 0xff), MMD_CELL_SIZE);
    cells.push_back(c);
  }
  EXPECT_EQ(m.live, n);
  EXPECT_EQ(m.nchunks, 4u);  // cells 1..n span chunks 0..3
  for (mmd_cell_t c : cells) {
    const unsigned char *p = static_cast<const unsigned char *>(mmd_cell(&m, c));
    for (int i = 0; i < MMD_CELL_SIZE; i++) ASSERT_EQ(p[i], c & 0xff) << "cell " << c;
  }
  mmd_meta_destroy(&m);
  EXPECT_EQ(m.nchunks, 0u);
  EXPECT_EQ(m.live, 0u);
}

// Freed cells come back (last freed first) and come back zeroed, before any
// fresh cell is used.
TEST(Meta, FreedCellsAreReusedZeroed) {
  mmd_meta_t m;
  mmd_meta_init(&m);
  std::vector<mmd_cell_t> cells;
  for (int i = 0; i < 100; i++) cells.push_back(mmd_meta_alloc(&m));
  uint32_t fresh = m.next_fresh;
  for (int i = 10; i < 20; i++) {
    memset(mmd_cell(&m, cells[i]), 0xa5, MMD_CELL_SIZE);
    mmd_meta_free(&m, cells[i]);
  }
  EXPECT_EQ(m.live, 90u);
  for (int i = 19; i >= 10; i--) {
    mmd_cell_t c = mmd_meta_alloc(&m);
    EXPECT_EQ(c, cells[i]);
    EXPECT_TRUE(cell_is_zero(m, c));
  }
  EXPECT_EQ(m.next_fresh, fresh);
  EXPECT_EQ(m.live, 100u);
  mmd_meta_destroy(&m);
}

// Filling 2^30 cells is not practical, so the test moves next_fresh to the
// end of the pool as if it had been: with no freed cell, alloc must fail
// and change nothing; one freed cell serves exactly one more alloc.
TEST(Meta, FullPoolFailsCleanly) {
  mmd_meta_t m;
  mmd_meta_init(&m);
  mmd_cell_t a = mmd_meta_alloc(&m);
  ASSERT_NE(a, 0u);
  uint32_t saved = m.next_fresh;
  m.next_fresh = kPoolEnd;
  EXPECT_EQ(mmd_meta_alloc(&m), 0u);
  EXPECT_EQ(m.live, 1u);
  EXPECT_EQ(m.nchunks, 1u);
  mmd_meta_free(&m, a);
  EXPECT_EQ(mmd_meta_alloc(&m), a);
  EXPECT_EQ(mmd_meta_alloc(&m), 0u);
  m.next_fresh = saved;
  EXPECT_NE(mmd_meta_alloc(&m), 0u);
  mmd_meta_destroy(&m);
}

// A trie over its own pool, freed at the end of the test.
struct Trie {
  mmd_meta_t meta;
  mmd_trie_t t;
  uint64_t max;
  explicit Trie(unsigned key_bits) {
    mmd_meta_init(&meta);
    mmd_trie_init(&t, &meta, key_bits);
    max = (1ull << (3 * t.levels)) - 1;
  }
  ~Trie() {
    mmd_trie_clear(&t);
    mmd_meta_destroy(&meta);
  }
};

std::vector<std::pair<uint64_t, uint64_t>> walk(const mmd_trie_t *t) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t k, v;
  for (bool ok = mmd_trie_first(t, &k, &v); ok; ok = mmd_trie_next(t, &k, &v)) out.push_back({k, v});
  return out;
}

TEST(Trie, LevelsFollowKeyBits) {
  const unsigned bits[] = {1, 3, 4, 8, 24, 33, 62, 63};
  const unsigned levels[] = {1, 1, 2, 3, 8, 11, 21, 21};
  for (int i = 0; i < 8; i++) {
    Trie tr(bits[i]);
    EXPECT_EQ(tr.t.levels, levels[i]) << bits[i] << " bits";
    EXPECT_EQ(tr.t.root, 0u);
    EXPECT_EQ(tr.t.count, 0u);
  }
}

TEST(Trie, InsertFindReplaceRemove) {
  for (unsigned bits : {3u, 8u, 24u, 63u}) {
    SCOPED_TRACE(bits);
    Trie tr(bits);
    // The ends, both sides of a leaf boundary (8) where the width has one.
    std::set<uint64_t> keys = {0, 1, tr.max / 2, tr.max - 1, tr.max};
    if (tr.max > 8) keys.insert({7, 8});
    for (uint64_t k : keys) ASSERT_EQ(mmd_trie_insert(&tr.t, k, k + 100), 0);
    EXPECT_EQ(tr.t.count, keys.size());
    for (uint64_t k : keys) EXPECT_EQ(mmd_trie_find(&tr.t, k), k + 100) << k;
    for (uint64_t k : {uint64_t(2), tr.max - 2}) {
      if (!keys.count(k)) {
        EXPECT_EQ(mmd_trie_find(&tr.t, k), 0u) << k;
      }
    }
    // Replacing keeps the count.
    ASSERT_EQ(mmd_trie_insert(&tr.t, 1, 999), 0);
    EXPECT_EQ(tr.t.count, keys.size());
    EXPECT_EQ(mmd_trie_find(&tr.t, 1), 999u);
    EXPECT_EQ(mmd_trie_remove(&tr.t, 1), 999u);
    EXPECT_EQ(mmd_trie_remove(&tr.t, 1), 0u);
    EXPECT_EQ(mmd_trie_find(&tr.t, 1), 0u);
    EXPECT_EQ(mmd_trie_find(&tr.t, 0), 100u);
    EXPECT_EQ(mmd_trie_find(&tr.t, tr.max), tr.max + 100);
    EXPECT_EQ(tr.t.count, keys.size() - 1);
  }
}

// Keys beyond 3 * levels bits: insert/find/remove refuse them, floor
// answers with the largest key, ceil with nothing.
TEST(Trie, KeysOutOfRange) {
  for (unsigned bits : {3u, 8u, 24u, 63u}) {
    SCOPED_TRACE(bits);
    Trie tr(bits);
    ASSERT_EQ(mmd_trie_insert(&tr.t, tr.max, 5), 0);
    ASSERT_EQ(mmd_trie_insert(&tr.t, 3, 6), 0);
    uint64_t live = tr.meta.live;
    for (uint64_t k : {tr.max + 1, tr.max + 8, UINT64_MAX}) {  // max < 2^63: no wrap
      EXPECT_EQ(mmd_trie_insert(&tr.t, k, 1), -1);
      EXPECT_EQ(mmd_trie_find(&tr.t, k), 0u);
      EXPECT_EQ(mmd_trie_remove(&tr.t, k), 0u);
      uint64_t f = 0, v = 0;
      EXPECT_TRUE(mmd_trie_floor(&tr.t, k, &f, &v));
      EXPECT_EQ(f, tr.max);
      EXPECT_EQ(v, 5u);
      EXPECT_FALSE(mmd_trie_ceil(&tr.t, k, &f, &v));
    }
    EXPECT_EQ(tr.t.count, 2u);
    EXPECT_EQ(tr.meta.live, live);
  }
}

TEST(Trie, EmptyAndEdges) {
  Trie tr(24);
  uint64_t f = 1, v = 1;
  EXPECT_FALSE(mmd_trie_floor(&tr.t, tr.max, &f, &v));
  EXPECT_FALSE(mmd_trie_ceil(&tr.t, 0, &f, &v));
  EXPECT_FALSE(mmd_trie_first(&tr.t, &f, &v));
  ASSERT_EQ(mmd_trie_insert(&tr.t, 1000, 1), 0);
  EXPECT_FALSE(mmd_trie_floor(&tr.t, 999, &f, &v));
  EXPECT_FALSE(mmd_trie_ceil(&tr.t, 1001, &f, &v));
  EXPECT_TRUE(mmd_trie_floor(&tr.t, tr.max, &f, &v));
  EXPECT_EQ(f, 1000u);
  EXPECT_TRUE(mmd_trie_ceil(&tr.t, 0, &f, &v));
  EXPECT_EQ(f, 1000u);
  // The walk stops at the largest key even when it is the key space's max.
  ASSERT_EQ(mmd_trie_insert(&tr.t, tr.max, 2), 0);
  ASSERT_EQ(mmd_trie_insert(&tr.t, 0, 3), 0);
  auto w = walk(&tr.t);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].first, 0u);
  EXPECT_EQ(w[1].first, 1000u);
  EXPECT_EQ(w[2].first, tr.max);
}

// Exact node counts: a 24-bit trie has 8 levels, so one key costs 8 nodes,
// a key in the same leaf none more, a key in the next leaf one more; each
// node goes back to the pool when its last key goes.
TEST(Trie, NodesAreFreedAsTheyEmpty) {
  Trie tr(24);
  ASSERT_EQ(mmd_trie_insert(&tr.t, 0, 1), 0);
  EXPECT_EQ(tr.meta.live, 8u);
  ASSERT_EQ(mmd_trie_insert(&tr.t, 1, 1), 0);
  EXPECT_EQ(tr.meta.live, 8u);
  ASSERT_EQ(mmd_trie_insert(&tr.t, 8, 1), 0);
  EXPECT_EQ(tr.meta.live, 9u);
  ASSERT_EQ(mmd_trie_insert(&tr.t, tr.max, 1), 0);  // shares only the root
  EXPECT_EQ(tr.meta.live, 16u);
  EXPECT_EQ(mmd_trie_remove(&tr.t, tr.max), 1u);
  EXPECT_EQ(tr.meta.live, 9u);
  EXPECT_EQ(mmd_trie_remove(&tr.t, 8), 1u);
  EXPECT_EQ(tr.meta.live, 8u);
  EXPECT_EQ(mmd_trie_remove(&tr.t, 0), 1u);
  EXPECT_EQ(tr.meta.live, 8u);
  EXPECT_EQ(mmd_trie_remove(&tr.t, 1), 1u);
  EXPECT_EQ(tr.meta.live, 0u);
  EXPECT_EQ(tr.t.root, 0u);
  EXPECT_EQ(tr.t.count, 0u);
}

TEST(Trie, ClearFreesEveryNode) {
  Trie tr(33);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; i++) ASSERT_EQ(mmd_trie_insert(&tr.t, rng() & tr.max, i + 1), 0);
  EXPECT_GT(tr.meta.live, 0u);
  mmd_trie_clear(&tr.t);
  EXPECT_EQ(tr.meta.live, 0u);
  EXPECT_EQ(tr.t.root, 0u);
  EXPECT_EQ(tr.t.count, 0u);
  uint64_t f, v;
  EXPECT_FALSE(mmd_trie_first(&tr.t, &f, &v));
  // The trie is usable again, from recycled cells.
  ASSERT_EQ(mmd_trie_insert(&tr.t, 5, 9), 0);
  EXPECT_EQ(mmd_trie_find(&tr.t, 5), 9u);
}

// An insert that needs more nodes than the pool can give. The pool is made
// full by moving next_fresh to its end (as in Meta.FullPoolFailsCleanly),
// with `spare` cells on the free list, fewer than the insert needs: the
// insert fails, those cells go back to the pool, and the trie's keys,
// count, root and walk are as before.
TEST(Trie, FailedInsertLeavesTrieUnchanged) {
  Trie tr(24);  // 8 levels
  const uint64_t keys[] = {0, 9, 4096, tr.max};
  for (uint64_t k : keys) ASSERT_EQ(mmd_trie_insert(&tr.t, k, k + 1), 0);
  const auto before = walk(&tr.t);
  const mmd_cell_t root = tr.t.root;
  const uint64_t live = tr.meta.live;
  // Key 1 << 21 (top digit 1) shares only the root with the others: it
  // needs 7 nodes.
  const uint64_t key = 1ull << 21;
  for (unsigned spare = 0; spare < 7; spare++) {
    SCOPED_TRACE(spare);
    std::vector<mmd_cell_t> cells;
    for (unsigned i = 0; i < spare; i++) cells.push_back(mmd_meta_alloc(&tr.meta));
    const uint32_t saved = tr.meta.next_fresh;  // after the spare cells, which may be fresh
    tr.meta.next_fresh = kPoolEnd;
    for (mmd_cell_t c : cells) mmd_meta_free(&tr.meta, c);

    EXPECT_EQ(mmd_trie_insert(&tr.t, key, 1), -1);
    EXPECT_EQ(tr.meta.live, live);
    EXPECT_EQ(tr.t.root, root);
    EXPECT_EQ(tr.t.count, 4u);
    EXPECT_EQ(mmd_trie_find(&tr.t, key), 0u);
    EXPECT_EQ(walk(&tr.t), before);
    // Replacing a present key needs no cell, so it still works.
    EXPECT_EQ(mmd_trie_insert(&tr.t, 9, 10), 0);
    // Exactly the spare cells are left, then nothing.
    for (unsigned i = 0; i < spare; i++) cells[i] = mmd_meta_alloc(&tr.meta);
    EXPECT_EQ(std::count(cells.begin(), cells.end(), 0u), 0);
    EXPECT_EQ(mmd_meta_alloc(&tr.meta), 0u);
    for (mmd_cell_t c : cells) mmd_meta_free(&tr.meta, c);
    tr.meta.next_fresh = saved;
  }
  // A key needing one node fits in one spare cell (its leaf's parent is there).
  mmd_cell_t c = mmd_meta_alloc(&tr.meta);
  const uint32_t saved = tr.meta.next_fresh;
  tr.meta.next_fresh = kPoolEnd;
  mmd_meta_free(&tr.meta, c);
  EXPECT_EQ(mmd_trie_insert(&tr.t, 16, 17), 0);
  EXPECT_EQ(mmd_trie_find(&tr.t, 16), 17u);
  EXPECT_EQ(mmd_trie_find(&tr.t, 0), 1u);
  tr.meta.next_fresh = saved;
  // The empty trie needs all 8 nodes at once; with 7 spare, it fails and
  // the root stays 0.
  Trie empty(24);
  std::vector<mmd_cell_t> cells;
  for (int i = 0; i < 7; i++) cells.push_back(mmd_meta_alloc(&empty.meta));
  const uint32_t esaved = empty.meta.next_fresh;
  empty.meta.next_fresh = kPoolEnd;
  for (mmd_cell_t e : cells) mmd_meta_free(&empty.meta, e);
  EXPECT_EQ(mmd_trie_insert(&empty.t, 5, 1), -1);
  EXPECT_EQ(empty.t.root, 0u);
  EXPECT_EQ(empty.t.count, 0u);
  EXPECT_EQ(empty.meta.live, 0u);
  empty.meta.next_fresh = esaved;
  EXPECT_EQ(mmd_trie_insert(&empty.t, 5, 1), 0);
}

// Keys that exercise the trie's shape: clustered keys fill whole leaves and
// subtrees (so removals free nodes and floor/ceil cross siblings at every
// level), uniform keys spread out, and 0 and the max are drawn often.
class KeyGen {
 public:
  KeyGen(uint64_t max, uint64_t seed) : max_(max), rng_(seed) {
    for (int i = 0; i < 8; i++) bases_.push_back(rng_() & max_);
  }
  uint64_t next(const std::vector<uint64_t> &seen) {
    switch (rng_() % 8) {
      case 0: return rng_() & max_;
      case 1: return (rng_() & 1) ? 0 : max_;
      case 2: return rng_() % 64 & max_;
      case 3: return max_ - (rng_() % 64 & max_);
      case 4:
        if (!seen.empty()) return near(seen[rng_() % seen.size()]);
        return rng_() & max_;
      default: return near(bases_[rng_() % bases_.size()]);
    }
  }
  uint64_t rng() { return rng_(); }

 private:
  uint64_t near(uint64_t k) {
    uint64_t d = rng_() % 600;
    if (rng_() & 1) return max_ - k < d ? max_ : k + d;
    return k < d ? 0 : k - d;
  }
  uint64_t max_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> bases_;
};

void check_near(const mmd_trie_t *t, const std::map<uint64_t, uint64_t> &model, uint64_t max, uint64_t q) {
  uint64_t f = 0, v = 0;
  // floor: the largest key <= min(q, max)
  uint64_t qf = q > max ? max : q;
  auto it = model.upper_bound(qf);
  bool has = it != model.begin();
  ASSERT_EQ(mmd_trie_floor(t, q, &f, &v), has) << "floor " << q;
  if (has) {
    --it;
    ASSERT_EQ(f, it->first) << "floor " << q;
    ASSERT_EQ(v, it->second) << "floor " << q;
  }
  // ceil: the smallest key >= q, none beyond max
  it = model.lower_bound(q);
  has = q <= max && it != model.end();
  ASSERT_EQ(mmd_trie_ceil(t, q, &f, &v), has) << "ceil " << q;
  if (has) {
    ASSERT_EQ(f, it->first) << "ceil " << q;
    ASSERT_EQ(v, it->second) << "ceil " << q;
  }
}

void check_walk(const mmd_trie_t *t, const std::map<uint64_t, uint64_t> &model) {
  std::vector<std::pair<uint64_t, uint64_t>> want(model.begin(), model.end());
  ASSERT_EQ(walk(t), want);
}

// 100k random operations per key width against a std::map: every answer
// must match, and removing every key at the end frees every node.
TEST(Trie, MatchesMapModel) {
  for (unsigned bits : {3u, 8u, 24u, 33u, 63u}) {
    SCOPED_TRACE(bits);
    Trie tr(bits);
    std::map<uint64_t, uint64_t> model;
    std::vector<uint64_t> seen;
    KeyGen gen(tr.max, 1000 + bits);
    for (int op = 0; op < 100000; op++) {
      uint64_t k = gen.next(seen);
      uint64_t r = gen.rng() % 100;
      if (r < 40) {
        uint64_t v = gen.rng() | 1;
        ASSERT_EQ(mmd_trie_insert(&tr.t, k, v), 0);
        model[k] = v;
        seen.push_back(k);
      } else if (r < 65) {
        auto it = model.find(k);
        uint64_t want = it == model.end() ? 0 : it->second;
        if (it != model.end()) model.erase(it);
        ASSERT_EQ(mmd_trie_remove(&tr.t, k), want) << "remove " << k;
      } else if (r < 75) {
        auto it = model.find(k);
        ASSERT_EQ(mmd_trie_find(&tr.t, k), it == model.end() ? 0 : it->second) << "find " << k;
      } else {
        // Now and then a query beyond the key space (max < 2^63: no wrap).
        uint64_t q = r >= 98 ? tr.max + 1 + (r == 99 ? UINT64_MAX - tr.max - 1 : gen.rng() % 1000) : k;
        check_near(&tr.t, model, tr.max, q);
        if (HasFatalFailure()) return;
      }
      ASSERT_EQ(tr.t.count, model.size());
      if (op % 10000 == 9999) {
        check_walk(&tr.t, model);
        if (HasFatalFailure()) return;
      }
    }
    check_walk(&tr.t, model);
    if (HasFatalFailure()) return;
    // Remove everything, half in key order and half from the top, so both
    // ends of the trie are pruned.
    while (!model.empty()) {
      auto it = (model.size() & 1) ? model.begin() : std::prev(model.end());
      ASSERT_EQ(mmd_trie_remove(&tr.t, it->first), it->second);
      model.erase(it);
    }
    EXPECT_EQ(tr.t.count, 0u);
    EXPECT_EQ(tr.t.root, 0u);
    EXPECT_EQ(tr.meta.live, 0u);
  }
}

}  // namespace
