/* SPDX-License-Identifier: Apache-2.0 */
// Slab pools (slab.c, over runs.c, trie.c and meta.c): slot rounding; every
// size class from 64 B to 4 KiB and large objects spanning slabs, none
// overlapping and all inside the slabs the pool was given; running out of
// free slabs and recovering; the error codes of a bad free; the counts
// against an independent model over 100k random operations; empty slabs
// going back to the Free Trie and coalescing; leases (leased slabs are not
// handed out, remote frees, sync, unlease, take_remote); and destruction
// giving back every run exactly once, in one step a slab run however many
// objects there are, with every kernel-pool cell returned.
//
// After every phase check_pool() walks the pool's tries and descriptors and
// checks them against each other and against the counts.
#include <manymalloc/myrmics.h>  // <mpi.h> first, outside extern "C"
extern "C" {
#include "meta.h"
#include "runs.h"
#include "slab.h"
#include "trie.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "trie_walk.h"

namespace {

using mmdtest::check_runs;
using mmdtest::walk;

using SlabRun = std::pair<uint64_t, uint64_t>;  // (first slab, slabs)
using SlabRuns = std::vector<SlabRun>;

mmd_slab_t *slab_of(const mmd_pool_t *p, mmd_cell_t cell) {
  return static_cast<mmd_slab_t *>(mmd_cell(p->meta, cell));
}

uint64_t nslots_of(uint64_t slot) { return slot <= MMD_SLAB_SIZE ? MMD_SLAB_SIZE / slot : 1; }

uint64_t mask_of(uint64_t nslots) { return nslots == 64 ? ~0ull : (1ull << nslots) - 1; }

uint64_t slabs_in(const SlabRuns &runs) {
  uint64_t n = 0;
  for (const SlabRun &r : runs) n += r.second;
  return n;
}

// The pool's structures agree with each other, with its counts and with the
// slabs it was given: every given slab is in exactly one used slab or free
// run, free runs never touch, every partial slab is on the list of its slot
// size and nothing else is.
void check_pool(const mmd_pool_t *p, const SlabRuns &given) {
  std::vector<SlabRun> spans;  // (first, end) of every used slab and free run
  uint64_t full = 0, partial = 0, leased = 0, leased_live = 0, objects = 0, bytes = 0;
  std::set<mmd_cell_t> partial_cells;
  for (auto [key, value] : walk(p->used)) {
    mmd_cell_t cell = mmd_cell_t(value);
    const mmd_slab_t *s = slab_of(p, cell);
    EXPECT_EQ(s->key, key);
    EXPECT_EQ(s->slot % MMD_SLOT_ALIGN, 0u) << "slab " << key;
    EXPECT_EQ(s->nslabs, mmd_slabs_for(s->slot)) << "slab " << key;
    EXPECT_EQ(s->nslots, nslots_of(s->slot)) << "slab " << key;
    uint64_t mask = mask_of(s->nslots);
    EXPECT_EQ(s->live & ~mask, 0u) << "slab " << key;
    EXPECT_EQ(uint64_t(__builtin_popcountll(s->live)), s->nlive) << "slab " << key;
    if (s->lease != MMD_NO_WORKER) {
      leased += s->nslabs;
      if (s->nlive > 0) leased_live += s->nslabs;
      EXPECT_EQ(s->remote & ~mask, 0u) << "slab " << key;
    } else {
      EXPECT_EQ(s->remote, 0u) << "slab " << key;
      EXPECT_GT(s->nlive, 0u) << "an empty slab is still in the Used Trie: " << key;
      if (s->nlive == s->nslots) full += s->nslabs;
      else {
        partial += s->nslabs;
        partial_cells.insert(cell);
      }
    }
    objects += s->nlive;
    bytes += uint64_t(s->nlive) * s->slot;
    spans.emplace_back(key, key + s->nslabs);
  }
  const uint64_t free_slabs = check_runs(p->free, spans);
  // The partial lists hold exactly the partial slabs, linked both ways.
  std::set<mmd_cell_t> listed;
  for (auto [k, head] : walk(p->partial)) {
    mmd_cell_t prev = 0;
    for (mmd_cell_t c = mmd_cell_t(head); c != 0; c = slab_of(p, c)->next) {
      const mmd_slab_t *s = slab_of(p, c);
      EXPECT_EQ(s->prev, prev) << "partial list of slot " << k * 64;
      EXPECT_EQ(s->slot, k * MMD_SLOT_ALIGN);
      EXPECT_TRUE(listed.insert(c).second) << "cell " << c << " listed twice";
      if (listed.size() > 1000000) break;
      prev = c;
    }
  }
  EXPECT_EQ(listed, partial_cells);

  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); i++)
    EXPECT_LE(spans[i - 1].second, spans[i].first) << "slabs held twice at " << spans[i].first;
  // Every span lies inside what was given (runs given apart may have
  // coalesced), and all given slabs are accounted for.
  std::vector<SlabRun> merged;  // (first, end)
  SlabRuns sorted = given;
  std::sort(sorted.begin(), sorted.end());
  for (const SlabRun &g : sorted) {
    if (!merged.empty() && merged.back().second == g.first) merged.back().second += g.second;
    else merged.emplace_back(g.first, g.first + g.second);
  }
  for (const SlabRun &s : spans) {
    bool inside = false;
    for (const SlabRun &g : merged) inside |= s.first >= g.first && s.second <= g.second;
    EXPECT_TRUE(inside) << "slabs [" << s.first << ", " << s.second << ") were never given";
  }
  uint64_t held = 0;
  for (const SlabRun &s : spans) held += s.second - s.first;
  EXPECT_EQ(held, slabs_in(given)) << "slabs lost or invented";

  EXPECT_EQ(p->n.slabs_full, full);
  EXPECT_EQ(p->n.slabs_partial, partial);
  EXPECT_EQ(p->n.slabs_leased, leased);
  EXPECT_EQ(p->n.slabs_leased_live, leased_live);
  EXPECT_EQ(p->n.slabs_free, free_slabs);
  EXPECT_EQ(p->n.live_objects, objects);
  EXPECT_EQ(p->n.live_bytes, bytes);
}

void give_nothing(void *, uint64_t, uint64_t, int32_t) {}

// A kernel pool and a slab pool over it, given the runs in `given`.
struct Pool {
  mmd_meta_t meta;
  mmd_pool_t p;
  SlabRuns given;
  uint64_t meta_live_before;
  explicit Pool(SlabRuns runs = {}, unsigned key_bits = 24) {
    mmd_meta_init(&meta);
    meta_live_before = meta.live;
    mmd_pool_init(&p, &meta, key_bits);
    for (const SlabRun &r : runs) add(r.first, r.second);
  }
  ~Pool() {
    mmd_pool_destroy(&p, give_nothing, nullptr);
    mmd_meta_destroy(&meta);
  }
  void add(uint64_t key, uint64_t n) {
    EXPECT_EQ(mmd_pool_add_free(&p, key, n), 0);
    given.emplace_back(key, n);
  }
  void check() const { check_pool(&p, given); }
};

// Live objects [off, off + slot): a new one must overlap none.
struct Objects {
  std::map<uint64_t, uint64_t> live;  // off -> slot
  bool overlaps(uint64_t off, uint64_t slot) const {
    auto it = live.lower_bound(off);
    if (it != live.end() && it->first < off + slot) return true;
    if (it != live.begin() && std::prev(it)->first + std::prev(it)->second > off) return true;
    return false;
  }
};

TEST(Slab, SlotsRoundTo64) {
  EXPECT_EQ(mmd_slot_of(0), 0u);
  EXPECT_EQ(mmd_slot_of(1), 64u);
  EXPECT_EQ(mmd_slot_of(63), 64u);
  EXPECT_EQ(mmd_slot_of(64), 64u);
  EXPECT_EQ(mmd_slot_of(65), 128u);
  EXPECT_EQ(mmd_slot_of(4095), 4096u);
  EXPECT_EQ(mmd_slot_of(4096), 4096u);
  EXPECT_EQ(mmd_slot_of(4097), 4160u);
  EXPECT_EQ(mmd_slot_of(50048), 50048u);
  EXPECT_EQ(mmd_slot_of(1u << 20), 1u << 20);
  EXPECT_EQ(mmd_slabs_for(64), 1u);
  EXPECT_EQ(mmd_slabs_for(4096), 1u);
  EXPECT_EQ(mmd_slabs_for(4160), 2u);
  EXPECT_EQ(mmd_slabs_for(50048), 13u);
  EXPECT_EQ(mmd_slabs_for(1u << 20), 256u);
}

// Every slot size from 64 to 4096 (three slabs' worth each, from requests
// that are not multiples of 64), then large objects: slots are aligned in
// their slab, never straddle a slab, large objects start on a slab and span
// whole slabs, nothing overlaps and everything lies in the given slabs.
TEST(Slab, EverySizeClassAndLargeObjects) {
  const uint64_t base = 100, nslabs = 4000;
  Pool P({{base, nslabs}});
  Objects objs;
  std::vector<uint64_t> order;
  auto take = [&](uint64_t size) {
    uint64_t slot = mmd_slot_of(size), off = 0;
    ASSERT_EQ(mmd_pool_alloc(&P.p, slot, &off), 0) << "size " << size;
    ASSERT_EQ(off % MMD_SLOT_ALIGN, 0u);
    ASSERT_GE(off, base << MMD_SLAB_SHIFT) << "size " << size;
    ASSERT_LE(off + slot, (base + nslabs) << MMD_SLAB_SHIFT) << "size " << size;
    ASSERT_FALSE(objs.overlaps(off, slot)) << "size " << size << " at " << off;
    if (slot <= MMD_SLAB_SIZE) {
      ASSERT_EQ((off % MMD_SLAB_SIZE) % slot, 0u) << "size " << size;
      ASSERT_EQ(off >> MMD_SLAB_SHIFT, (off + slot - 1) >> MMD_SLAB_SHIFT) << "slot straddles slabs";
    } else {
      ASSERT_EQ(off % MMD_SLAB_SIZE, 0u) << "size " << size;
      mmd_cell_t c0, c1;
      const mmd_slab_t *s = mmd_pool_find(&P.p, off, &c0);
      ASSERT_NE(s, nullptr);
      ASSERT_EQ(mmd_pool_find(&P.p, off + slot - 1, &c1), s) << "the last byte of a large object";
      ASSERT_EQ(c0, c1);
      ASSERT_EQ(s->nslabs, mmd_slabs_for(slot));
      // Inside a large object but not at its start: not an object.
      ASSERT_EQ(mmd_pool_usable(&P.p, off + MMD_SLAB_SIZE), SYS_ERR_NOTOBJECT);
    }
    ASSERT_EQ(mmd_pool_usable(&P.p, off), int64_t(slot));
    objs.live[off] = slot;
    order.push_back(off);
  };
  for (uint64_t slot = 64; slot <= 4096; slot += 64) {
    uint64_t count = 2 * nslots_of(slot) + 1;
    for (uint64_t i = 0; i < count; i++) ASSERT_NO_FATAL_FAILURE(take(slot - (i % 64)));
  }
  for (uint64_t size : {4097ull, 8192ull, 50048ull, 1ull << 20, (1ull << 20) + 1})
    for (int i = 0; i < 2; i++) ASSERT_NO_FATAL_FAILURE(take(size));
  P.check();
  EXPECT_EQ(P.p.n.live_objects, objs.live.size());

  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  for (uint64_t off : order) {
    int32_t notify = 12345;
    ASSERT_EQ(mmd_pool_free(&P.p, off, &notify), 0) << off;
    ASSERT_EQ(notify, MMD_NO_WORKER);
  }
  P.check();
  EXPECT_EQ(P.p.n.live_objects, 0u);
  EXPECT_EQ(P.p.n.live_bytes, 0u);
  EXPECT_EQ(P.p.n.slabs_free, nslabs);
  EXPECT_EQ(walk(P.p.free), (std::vector<std::pair<uint64_t, uint64_t>>{{base, nslabs}}));
  EXPECT_EQ(P.p.used.count, 0u);
  EXPECT_EQ(P.p.partial.count, 0u);
}

TEST(Slab, EmptyUntilSlabsAreAdded) {
  Pool P;
  uint64_t off, live = P.meta.live;
  EXPECT_EQ(mmd_pool_alloc(&P.p, 64, &off), MMD_POOL_EMPTY);
  EXPECT_EQ(mmd_pool_alloc(&P.p, 8192, &off), MMD_POOL_EMPTY);
  EXPECT_EQ(P.meta.live, live) << "a failed allocation kept a cell";
  mmd_cell_t cells[4];
  EXPECT_EQ(mmd_pool_lease(&P.p, 64, 1, 4, cells), 0) << "nothing to lease";

  P.add(10, 1);
  for (int i = 0; i < 64; i++) ASSERT_EQ(mmd_pool_alloc(&P.p, 64, &off), 0);
  EXPECT_EQ(mmd_pool_alloc(&P.p, 64, &off), MMD_POOL_EMPTY);
  EXPECT_EQ(mmd_pool_alloc(&P.p, 128, &off), MMD_POOL_EMPTY);
  P.add(20, 1);
  ASSERT_EQ(mmd_pool_alloc(&P.p, 64, &off), 0);
  EXPECT_EQ(off >> MMD_SLAB_SHIFT, 20u);
  P.check();

  // Two slabs, but not adjacent: no room for a two-slab object.
  P.add(30, 1);
  P.add(32, 1);
  EXPECT_EQ(mmd_pool_alloc(&P.p, 8192, &off), MMD_POOL_EMPTY);
  EXPECT_EQ(P.p.free.count, 2u);
  P.add(31, 1);  // joins both neighbours
  EXPECT_EQ(P.p.free.count, 1u);
  ASSERT_EQ(mmd_pool_alloc(&P.p, 8192, &off), 0);
  EXPECT_GE(off >> MMD_SLAB_SHIFT, 30u);
  EXPECT_LE((off >> MMD_SLAB_SHIFT) + 2, 33u);
  EXPECT_EQ(P.p.n.slabs_free, 1u);
  P.check();
}

TEST(Slab, BadFrees) {
  Pool P({{0, 64}});
  uint64_t a, b, c, big;
  ASSERT_EQ(mmd_pool_alloc(&P.p, 128, &a), 0);
  ASSERT_EQ(mmd_pool_alloc(&P.p, 128, &b), 0);
  ASSERT_EQ(mmd_pool_alloc(&P.p, 192, &c), 0);
  ASSERT_EQ(mmd_pool_alloc(&P.p, 3 * 4096, &big), 0);
  mmd_pool_counts_t before = P.p.n;
  int32_t notify;
  // Misaligned: not a slot start.
  EXPECT_EQ(mmd_pool_free(&P.p, a + 1, &notify), SYS_ERR_NOTOBJECT);
  EXPECT_EQ(mmd_pool_free(&P.p, a + 64, &notify), SYS_ERR_NOTOBJECT);
  // Past the last slot of a 192-B slab (21 slots, 64 bytes left over).
  uint64_t c_slab = c & ~(MMD_SLAB_SIZE - 1);
  EXPECT_EQ(mmd_pool_free(&P.p, c_slab + 21 * 192, &notify), SYS_ERR_NOTOBJECT);
  EXPECT_EQ(mmd_pool_usable(&P.p, c_slab + 21 * 192), SYS_ERR_NOTOBJECT);
  // Inside a large object.
  EXPECT_EQ(mmd_pool_free(&P.p, big + MMD_SLAB_SIZE, &notify), SYS_ERR_NOTOBJECT);
  EXPECT_EQ(mmd_pool_free(&P.p, big + 64, &notify), SYS_ERR_NOTOBJECT);
  // A slot never handed out in a partial slab.
  uint64_t a_slab = a & ~(MMD_SLAB_SIZE - 1);
  EXPECT_EQ(mmd_pool_free(&P.p, a_slab + 31 * 128, &notify), SYS_ERR_FREED);
  // An offset in a free slab, and one outside the pool.
  uint64_t free_key, free_len;
  ASSERT_TRUE(mmd_trie_first(&P.p.free, &free_key, &free_len));
  EXPECT_EQ(mmd_pool_free(&P.p, free_key << MMD_SLAB_SHIFT, &notify), SYS_ERR_FREED);
  EXPECT_EQ(mmd_pool_free(&P.p, 1000ull << MMD_SLAB_SHIFT, &notify), SYS_ERR_FREED);
  EXPECT_EQ(mmd_pool_usable(&P.p, 1000ull << MMD_SLAB_SHIFT), SYS_ERR_FREED);
  EXPECT_EQ(P.p.n.live_objects, before.live_objects);
  EXPECT_EQ(P.p.n.slabs_partial, before.slabs_partial);
  P.check();

  // Double free; and a free in a slab that went back to the Free Trie.
  ASSERT_EQ(mmd_pool_free(&P.p, a, &notify), 0);
  EXPECT_EQ(mmd_pool_free(&P.p, a, &notify), SYS_ERR_FREED);
  EXPECT_EQ(mmd_pool_usable(&P.p, a), SYS_ERR_FREED);
  ASSERT_EQ(mmd_pool_free(&P.p, b, &notify), 0);  // the slab is empty now
  EXPECT_EQ(mmd_pool_free(&P.p, b, &notify), SYS_ERR_FREED);
  EXPECT_EQ(mmd_pool_free(&P.p, a, &notify), SYS_ERR_FREED);
  ASSERT_EQ(mmd_pool_free(&P.p, big, &notify), 0);
  EXPECT_EQ(mmd_pool_free(&P.p, big, &notify), SYS_ERR_FREED);
  EXPECT_EQ(P.p.n.live_objects, 1u);
  P.check();
}

TEST(Slab, UsableSize) {
  Pool P({{0, 512}});
  for (uint64_t size : {1ull, 64ull, 65ull, 1000ull, 4096ull, 4097ull, 50048ull, 1ull << 20}) {
    uint64_t slot = mmd_slot_of(size), off;
    ASSERT_EQ(mmd_pool_alloc(&P.p, slot, &off), 0);
    EXPECT_EQ(mmd_pool_usable(&P.p, off), int64_t(slot)) << "size " << size;
    int32_t notify;
    ASSERT_EQ(mmd_pool_free(&P.p, off, &notify), 0);
    EXPECT_EQ(mmd_pool_usable(&P.p, off), SYS_ERR_FREED) << "size " << size;
  }
}

// 100k allocations and frees of several sizes, in phases that grow and
// shrink the live set: the pool's counts against a model that derives the
// state of every slab from the live objects alone.
TEST(Slab, CountsMatchModelOverRandomSequence) {
  const uint64_t nslabs = 1u << 17;
  Pool P({{0, nslabs}});
  const uint64_t sizes[] = {64, 100, 192, 1024, 1536, 4096, 4100, 50048};
  std::mt19937_64 rng(2024);
  Objects objs;
  std::vector<uint64_t> live;  // for picking a random victim
  auto model_check = [&](uint64_t op) {
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> slabs;  // first slab -> (slot, objects)
    uint64_t bytes = 0;
    for (auto [off, slot] : objs.live) {
      auto &e = slabs[off >> MMD_SLAB_SHIFT];
      e.first = slot;
      e.second++;
      bytes += slot;
    }
    uint64_t full = 0, partial = 0;
    for (auto &[key, e] : slabs) {
      if (e.second == nslots_of(e.first)) full += mmd_slabs_for(e.first);
      else partial += mmd_slabs_for(e.first);
    }
    ASSERT_EQ(P.p.n.live_objects, objs.live.size()) << "op " << op;
    ASSERT_EQ(P.p.n.live_bytes, bytes) << "op " << op;
    ASSERT_EQ(P.p.n.slabs_full, full) << "op " << op;
    ASSERT_EQ(P.p.n.slabs_partial, partial) << "op " << op;
    ASSERT_EQ(P.p.n.slabs_free, nslabs - full - partial) << "op " << op;
    ASSERT_EQ(P.p.n.slabs_leased, 0u);
  };
  for (uint64_t op = 0; op < 100000; op++) {
    double p_alloc = (op / 10000) % 2 == 0 ? 0.7 : 0.35;
    bool do_alloc = live.empty() || (live.size() < 20000 && std::uniform_real_distribution<>()(rng) < p_alloc);
    if (do_alloc) {
      uint64_t slot = mmd_slot_of(sizes[rng() % std::size(sizes)]), off;
      ASSERT_EQ(mmd_pool_alloc(&P.p, slot, &off), 0) << "op " << op;
      ASSERT_FALSE(objs.overlaps(off, slot)) << "op " << op;
      ASSERT_LE(off + slot, nslabs << MMD_SLAB_SHIFT);
      objs.live[off] = slot;
      live.push_back(off);
    } else {
      size_t i = rng() % live.size();
      uint64_t off = live[i];
      live[i] = live.back();
      live.pop_back();
      int32_t notify;
      ASSERT_EQ(mmd_pool_usable(&P.p, off), int64_t(objs.live[off])) << "op " << op;
      ASSERT_EQ(mmd_pool_free(&P.p, off, &notify), 0) << "op " << op;
      objs.live.erase(off);
    }
    if (op % 1000 == 999) ASSERT_NO_FATAL_FAILURE(model_check(op));
    if (op % 20000 == 19999) {
      P.check();
      ASSERT_FALSE(::testing::Test::HasFailure());
    }
  }
  for (uint64_t off : live) {
    int32_t notify;
    ASSERT_EQ(mmd_pool_free(&P.p, off, &notify), 0);
  }
  objs.live.clear();
  ASSERT_NO_FATAL_FAILURE(model_check(100000));
  EXPECT_EQ(P.p.free.count, 1u) << "the free slabs did not coalesce back into one run";
  P.check();
}

// A slab whose last object is freed leaves the Used Trie and joins the Free
// Trie, coalesced with its free neighbours.
TEST(Slab, EmptiedSlabsReturnToFreeTrieAndCoalesce) {
  Pool P({{0, 64}});
  std::map<uint64_t, std::vector<uint64_t>> by_slab;
  for (int i = 0; i < 64 * 10; i++) {
    uint64_t off;
    ASSERT_EQ(mmd_pool_alloc(&P.p, 64, &off), 0);
    by_slab[off >> MMD_SLAB_SHIFT].push_back(off);
  }
  ASSERT_EQ(by_slab.size(), 10u);
  EXPECT_EQ(P.p.n.slabs_full, 10u);
  EXPECT_EQ(P.p.n.slabs_free, 54u);
  // Empty a slab in the middle of the ten.
  auto mid = std::next(by_slab.begin(), 4);
  uint64_t key = mid->first;
  int32_t notify;
  for (size_t i = 0; i + 1 < mid->second.size(); i++) ASSERT_EQ(mmd_pool_free(&P.p, mid->second[i], &notify), 0);
  EXPECT_EQ(P.p.n.slabs_partial, 1u);
  EXPECT_EQ(P.p.n.slabs_free, 54u);
  ASSERT_EQ(mmd_pool_free(&P.p, mid->second.back(), &notify), 0);
  EXPECT_EQ(P.p.n.slabs_partial, 0u);
  EXPECT_EQ(P.p.n.slabs_free, 55u);
  EXPECT_EQ(mmd_trie_find(&P.p.free, key), 1u) << "the emptied slab is not a free run of its own";
  mmd_cell_t cell;
  EXPECT_EQ(mmd_pool_find(&P.p, key << MMD_SLAB_SHIFT, &cell), nullptr);
  EXPECT_EQ(cell, 0u);
  by_slab.erase(mid);
  P.check();
  for (auto &[k, offs] : by_slab)
    for (uint64_t off : offs) ASSERT_EQ(mmd_pool_free(&P.p, off, &notify), 0);
  EXPECT_EQ(walk(P.p.free), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 64}}));
  EXPECT_EQ(P.p.n.slabs_free, 64u);
  P.check();
}

TEST(Slab, TakeFreeTakesTheTopOfTheHighestRun) {
  Pool P({{0, 10}, {20, 5}});
  uint64_t key, n;
  ASSERT_TRUE(mmd_pool_take_free(&P.p, 3, &key, &n));
  EXPECT_EQ(key, 22u);
  EXPECT_EQ(n, 3u);
  ASSERT_TRUE(mmd_pool_take_free(&P.p, 10, &key, &n));
  EXPECT_EQ(key, 20u);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(P.p.n.slabs_free, 10u);
  EXPECT_FALSE(mmd_pool_take_free(&P.p, 0, &key, &n));
  ASSERT_TRUE(mmd_pool_take_free(&P.p, 100, &key, &n));
  EXPECT_EQ(key, 0u);
  EXPECT_EQ(n, 10u);
  EXPECT_FALSE(mmd_pool_take_free(&P.p, 1, &key, &n));
  EXPECT_EQ(P.p.n.slabs_free, 0u);
}

// Leases: partial slabs first, then fresh ones; leased slabs are never handed
// out by mmd_pool_alloc; frees in them are recorded as remote bits, the
// holder notified on the first; take_remote and sync; unlease returns the
// slots freed twice and puts the slab in the state its bitmap says.
TEST(Slab, LeaseSyncUnlease) {
  Pool P({{0, 16}});
  const int32_t w = 3;
  uint64_t a;
  ASSERT_EQ(mmd_pool_alloc(&P.p, 128, &a), 0);  // a partial 128-B slab, slot 0
  mmd_cell_t pcell;
  ASSERT_NE(mmd_pool_find(&P.p, a, &pcell), nullptr);
  ASSERT_EQ(mmd_pool_find(&P.p, a, &pcell)->live, 1u);

  mmd_cell_t cells[3];
  ASSERT_EQ(mmd_pool_lease(&P.p, 128, w, 3, cells), 3);
  EXPECT_EQ(cells[0], pcell) << "the partial slab is not leased first";
  std::set<uint64_t> leased_keys;
  for (mmd_cell_t c : cells) {
    const mmd_slab_t *s = slab_of(&P.p, c);
    EXPECT_EQ(s->lease, w);
    EXPECT_EQ(s->slot, 128u);
    EXPECT_EQ(s->remote, 0u);
    leased_keys.insert(s->key);
  }
  EXPECT_EQ(leased_keys.size(), 3u);
  EXPECT_EQ(P.p.n.slabs_leased, 3u);
  EXPECT_EQ(P.p.n.slabs_leased_live, 1u) << "only the partial slab holds a slot";
  EXPECT_EQ(P.p.n.slabs_partial, 0u);
  EXPECT_EQ(P.p.n.slabs_free, 13u);
  EXPECT_EQ(P.p.n.live_objects, 1u);  // as last known
  P.check();

  // Allocation never takes a slot in a leased slab.
  std::vector<uint64_t> mine;
  for (int i = 0; i < 100; i++) {
    uint64_t off;
    ASSERT_EQ(mmd_pool_alloc(&P.p, 128, &off), 0);
    ASSERT_EQ(leased_keys.count(off >> MMD_SLAB_SHIFT), 0u) << "allocated in a leased slab";
    mine.push_back(off);
  }
  P.check();

  // Remote frees in the leased slab holding a (the worker allocated 0..9).
  const uint64_t L = a & ~(MMD_SLAB_SIZE - 1);
  int32_t notify = 99;
  ASSERT_EQ(mmd_pool_free(&P.p, a, &notify), 0);
  EXPECT_EQ(notify, w) << "the first remote free must notify the holder";
  EXPECT_EQ(mmd_pool_free(&P.p, a, &notify), SYS_ERR_FREED);
  EXPECT_EQ(notify, MMD_NO_WORKER);
  ASSERT_EQ(mmd_pool_free(&P.p, L + 128, &notify), 0);
  EXPECT_EQ(notify, MMD_NO_WORKER) << "only the first remote bits notify";
  EXPECT_EQ(mmd_pool_free(&P.p, L + 129, &notify), SYS_ERR_NOTOBJECT);
  EXPECT_EQ(mmd_pool_usable(&P.p, a), SYS_ERR_FREED);
  EXPECT_EQ(slab_of(&P.p, pcell)->remote, 0b11u);
  // Counted free at once (slot 0 was live as last known), before the holder hears.
  EXPECT_EQ(slab_of(&P.p, pcell)->live, 0u);
  EXPECT_EQ(P.p.n.live_objects, 100u);

  EXPECT_EQ(mmd_pool_take_remote(&P.p, pcell), 0b11u);
  EXPECT_EQ(slab_of(&P.p, pcell)->remote, 0u);
  EXPECT_EQ(slab_of(&P.p, pcell)->live, 0u);
  EXPECT_EQ(P.p.n.live_objects, 100u);
  EXPECT_EQ(P.p.n.slabs_leased_live, 0u);
  ASSERT_EQ(mmd_pool_free(&P.p, L + 5 * 128, &notify), 0);
  EXPECT_EQ(notify, w) << "the first remote free since take_remote must notify";
  P.check();

  // The worker reports slots 0..9 taken: slot 5, freed through the
  // scheduler, is not live.
  mmd_pool_sync(&P.p, pcell, 0x3ffu);
  EXPECT_EQ(slab_of(&P.p, pcell)->live, 0x3ffu & ~(1u << 5));
  EXPECT_EQ(slab_of(&P.p, pcell)->nlive, 9u);
  EXPECT_EQ(slab_of(&P.p, pcell)->lease, w);
  EXPECT_EQ(P.p.n.live_objects, 109u);
  EXPECT_EQ(P.p.n.slabs_leased, 3u);
  EXPECT_EQ(P.p.n.slabs_leased_live, 1u);
  // Usable sizes in a leased slab follow the holder's last report.
  EXPECT_EQ(mmd_pool_usable(&P.p, L + 2 * 128), 128);
  EXPECT_EQ(mmd_pool_usable(&P.p, L + 5 * 128), SYS_ERR_FREED);
  EXPECT_EQ(mmd_pool_usable(&P.p, L + 20 * 128), SYS_ERR_FREED);
  P.check();

  // Unlease with bits 0..3 and 6..9: slot 5 was freed by the worker too
  // (freed twice) and slot 12, never the worker's, is freed remotely now.
  ASSERT_EQ(mmd_pool_free(&P.p, L + 12 * 128, &notify), 0);
  const uint64_t bits = 0x3ffu & ~(0b11u << 4);
  EXPECT_EQ(mmd_pool_unlease(&P.p, pcell, bits), 2);
  const mmd_slab_t *s = slab_of(&P.p, pcell);
  EXPECT_EQ(s->lease, MMD_NO_WORKER);
  EXPECT_EQ(s->remote, 0u);
  EXPECT_EQ(s->live, bits);
  EXPECT_EQ(s->nlive, 8u);
  EXPECT_EQ(P.p.n.slabs_leased, 2u);
  EXPECT_EQ(P.p.n.slabs_leased_live, 0u);
  EXPECT_EQ(P.p.n.live_objects, 108u);
  P.check();
  // The slab is partial again: its lowest free slot is handed out.
  uint64_t off;
  ASSERT_EQ(mmd_pool_alloc(&P.p, 128, &off), 0);
  EXPECT_EQ(off, L + 4 * 128);

  // Unlease with nothing taken: the slab is free again; with every bit (and
  // bits past its slots): full.
  uint64_t k1 = slab_of(&P.p, cells[1])->key;
  uint64_t free_before = P.p.n.slabs_free;
  EXPECT_EQ(mmd_pool_unlease(&P.p, cells[1], 0), 0);
  EXPECT_EQ(P.p.n.slabs_free, free_before + 1);
  mmd_cell_t none;
  EXPECT_EQ(mmd_pool_find(&P.p, k1 << MMD_SLAB_SHIFT, &none), nullptr);
  uint64_t full_before = P.p.n.slabs_full;
  EXPECT_EQ(mmd_pool_unlease(&P.p, cells[2], ~0ull), 0);
  EXPECT_EQ(slab_of(&P.p, cells[2])->nlive, 32u);
  EXPECT_EQ(slab_of(&P.p, cells[2])->live, 0xffffffffu);
  EXPECT_EQ(P.p.n.slabs_full, full_before + 1);
  EXPECT_EQ(P.p.n.slabs_leased, 0u);
  P.check();
}

TEST(Slab, LeaseGivesWhatItCanWhenShort) {
  Pool P({{0, 2}});
  mmd_cell_t cells[5];
  EXPECT_EQ(mmd_pool_lease(&P.p, 64, 1, 5, cells), 2);
  EXPECT_EQ(P.p.n.slabs_leased, 2u);
  EXPECT_EQ(mmd_pool_lease(&P.p, 64, 1, 1, cells), 0);
  uint64_t off;
  EXPECT_EQ(mmd_pool_alloc(&P.p, 64, &off), MMD_POOL_EMPTY) << "a leased slab was handed out";
  P.check();
}

struct Given {
  uint64_t key, n;
  int32_t lease;
};

void record_give(void *ctx, uint64_t key, uint64_t n, int32_t lease) {
  static_cast<std::vector<Given> *>(ctx)->push_back({key, n, lease});
}

// Destroy gives back every run exactly once (used, leased and free), and
// every kernel-pool cell the pool took.
TEST(Slab, DestroyGivesEveryRunOnceAndEveryCell) {
  mmd_meta_t meta;
  mmd_meta_init(&meta);
  mmd_cell_t other = mmd_meta_alloc(&meta);  // not the pool's: must stay
  const uint64_t live_before = meta.live;
  mmd_pool_t p;
  mmd_pool_init(&p, &meta, 20);
  SlabRuns given = {{0, 1000}, {2000, 1000}, {5000, 7}};
  for (const SlabRun &r : given) ASSERT_EQ(mmd_pool_add_free(&p, r.first, r.second), 0);
  std::mt19937_64 rng(5);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 600; i++) {
    uint64_t size = std::vector<uint64_t>{64, 320, 4096, 9000}[rng() % 4], off;
    if (mmd_pool_alloc(&p, mmd_slot_of(size), &off) != 0) break;
    offs.push_back(off);
  }
  for (size_t i = 0; i < offs.size(); i += 3) {
    int32_t notify;
    ASSERT_EQ(mmd_pool_free(&p, offs[i], &notify), 0);
  }
  mmd_cell_t cells[2];
  ASSERT_EQ(mmd_pool_lease(&p, 256, 4, 2, cells), 2);
  std::set<uint64_t> leased = {slab_of(&p, cells[0])->key, slab_of(&p, cells[1])->key};
  check_pool(&p, given);
  const uint64_t runs = p.used.count + p.free.count;

  std::vector<Given> out;
  mmd_pool_destroy(&p, record_give, &out);
  EXPECT_LE(out.size(), runs) << "adjacent slabs of one holder come as one run";
  std::vector<SlabRun> spans;
  for (const Given &g : out) {
    spans.emplace_back(g.key, g.key + g.n);
    for (uint64_t k = g.key; k < g.key + g.n; k++)
      EXPECT_EQ(g.lease, leased.count(k) ? 4 : MMD_NO_WORKER) << "slab " << k << " of run " << g.key;
  }
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0;
  for (size_t i = 0; i < spans.size(); i++) {
    if (i > 0) EXPECT_LE(spans[i - 1].second, spans[i].first) << "given twice at " << spans[i].first;
    total += spans[i].second - spans[i].first;
    bool inside = false;
    for (const SlabRun &r : given) inside |= spans[i].first >= r.first && spans[i].second <= r.first + r.second;
    EXPECT_TRUE(inside) << spans[i].first;
  }
  EXPECT_EQ(total, slabs_in(given));
  EXPECT_EQ(meta.live, live_before) << "kernel-pool cells kept after destroy";
  EXPECT_EQ(p.used.root, 0u);
  EXPECT_EQ(p.partial.root, 0u);
  EXPECT_EQ(p.free.root, 0u);
  EXPECT_EQ(p.n.live_objects, 0u);
  EXPECT_EQ(p.n.slabs_free, 0u);
  mmd_meta_free(&meta, other);
  EXPECT_EQ(meta.live, 0u);
  mmd_meta_destroy(&meta);
}

// The cost of destruction: a million 64-B objects fill 15625 slabs; destroy
// makes one give call a run of adjacent slabs (here the used slabs, taken
// together from the top of the free run, and what is left of it), not one
// an object or a slab.
TEST(Slab, DestroyCostIsPerRunNotPerObject) {
  mmd_meta_t meta;
  mmd_meta_init(&meta);
  mmd_pool_t p;
  mmd_pool_init(&p, &meta, 20);
  const uint64_t nslabs = 1u << 14, nobj = 1000000;
  ASSERT_EQ(mmd_pool_add_free(&p, 0, nslabs), 0);
  for (uint64_t i = 0; i < nobj; i++) {
    uint64_t off;
    ASSERT_EQ(mmd_pool_alloc(&p, 64, &off), 0) << i;
  }
  EXPECT_EQ(p.n.live_objects, nobj);
  EXPECT_EQ(p.n.slabs_full, nobj / 64);
  EXPECT_EQ(p.used.count, nobj / 64);
  EXPECT_EQ(p.free.count, 1u);
  const uint64_t runs = p.used.count + p.free.count;
  std::vector<Given> out;
  out.reserve(runs + 1);
  mmd_pool_destroy(&p, record_give, &out);
  EXPECT_LT(runs, nobj / 60);
  EXPECT_EQ(out.size(), 2u);
  uint64_t total = 0;
  for (const Given &g : out) total += g.n;
  EXPECT_EQ(total, nslabs);
  EXPECT_EQ(meta.live, 0u);
  mmd_meta_destroy(&meta);
}

}  // namespace
