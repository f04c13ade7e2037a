/* SPDX-License-Identifier: Apache-2.0 */
// Local regions (region.c) and region packing (pack.c): region IDs (unique,
// from 1, reused, exhausted); nested regions and the destruction of a
// subtree; mmd_region_of for every live object; allocation in many regions
// at once with no overlap; exhaustion of a small space and recovery; memory
// pressure taking free slabs back from regions that keep them; the Used and
// Free Ranges splitting and merging as slabs come and go; statistics with
// and without sub-regions; zombie runs of leased slabs; packing a region
// into the slab runs it uses; clipping a byte range to the memory regions
// hold; and the state after destroying a region of a million objects.
//
// check_regions() walks the Free and Used Ranges and every region's pool and
// checks that each slab of the space is in exactly one place and that the
// Used Ranges name exactly the slabs each region's pool holds.
#include <manymalloc/myrmics.h>  // <mpi.h> first, outside extern "C"
extern "C" {
#include "meta.h"
#include "ranges.h"
#include "region.h"
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

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

using SlabRun = std::pair<uint64_t, uint64_t>;  // (first slab, slabs)

struct UsedRun {
  uint64_t key, n;
  rid_t rid;
  bool operator==(const UsedRun &o) const { return key == o.key && n == o.n && rid == o.rid; }
};
std::ostream &operator<<(std::ostream &os, const UsedRun &u) {
  return os << "(" << u.key << ", " << u.n << ", rid " << u.rid << ")";
}

std::vector<UsedRun> used_runs(const mmd_regions_t &R) {
  std::vector<UsedRun> out;
  for (auto [k, v] : walk(R.used_ranges)) out.push_back({k, v >> 32, rid_t(v & 0xffffffffu)});
  return out;
}

std::vector<SlabRun> free_runs(const mmd_regions_t &R) {
  std::vector<SlabRun> out;
  for (auto [k, v] : walk(R.free_ranges)) out.emplace_back(k, v);
  return out;
}

std::vector<const mmd_region_t *> all_regions(const mmd_regions_t &R) {
  std::vector<const mmd_region_t *> out;
  for (const mmd_region_t *g = R.root; g; g = mmd_region_walk_next(g, R.root)) out.push_back(g);
  return out;
}

// The slab runs a region's pool holds: used slabs and free runs.
std::vector<SlabRun> pool_runs(const mmd_pool_t &p, bool with_free = true) {
  std::vector<SlabRun> out;
  for (auto [k, cell] : walk(p.used))
    out.emplace_back(k, static_cast<const mmd_slab_t *>(mmd_cell(p.meta, mmd_cell_t(cell)))->nslabs);
  if (with_free)
    for (auto [k, n] : walk(p.free)) out.emplace_back(k, n);
  std::sort(out.begin(), out.end());
  return out;
}

// Every slab of the space is free, held by exactly one region (as the Used
// Ranges say, with nothing stale in them), or one of `zombie` slabs; the
// counts agree.
void check_regions(const mmd_regions_t &R, uint64_t zombie = 0) {
  std::vector<SlabRun> spans;
  const uint64_t free_slabs = check_runs(R.free_ranges, spans);
  EXPECT_EQ(R.free_slabs, free_slabs);
  uint64_t used_slabs = 0;
  std::map<rid_t, uint64_t> used_by;
  for (const UsedRun &u : used_runs(R)) {
    EXPECT_GT(u.n, 0u);
    EXPECT_NE(mmd_region_get(&R, u.rid), nullptr) << "used range " << u << " of no region";
    used_slabs += u.n;
    used_by[u.rid] += u.n;
    spans.emplace_back(u.key, u.key + u.n);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); i++)
    EXPECT_LE(spans[i - 1].second, spans[i].first) << "slab " << spans[i].first << " is in two places";
  if (!spans.empty()) EXPECT_LE(spans.back().second, R.space_slabs);
  EXPECT_EQ(free_slabs + used_slabs + zombie, R.space_slabs) << "slabs lost or invented";

  auto regions = all_regions(R);
  EXPECT_EQ(regions.size(), R.nregions);
  size_t ring = 0;
  for (const mmd_region_t *g = R.trim_cursor; ring == 0 || g != R.trim_cursor; g = g->trim_next) {
    if (++ring > R.nregions + 1) break;
  }
  EXPECT_EQ(ring, R.nregions) << "the trim ring does not hold every region once";
  for (const mmd_region_t *g : regions) {
    EXPECT_EQ(mmd_region_get(&R, g->rid), g);
    uint64_t held = 0, wrong = 0, first_wrong = 0;
    for (auto [k, n] : pool_runs(g->pool)) {
      held += n;
      for (uint64_t s = k; s < k + n; s++) {
        if (mmd_region_of(&R, s << MMD_SLAB_SHIFT) != g && wrong++ == 0) first_wrong = s;
        if (s == k + 2 && n > 4) s = k + n - 3;  // ends of long runs only
      }
    }
    EXPECT_EQ(wrong, 0u) << "slabs of region " << g->rid << " that mmd_region_of maps elsewhere, the first "
                         << first_wrong;
    EXPECT_EQ(used_by[g->rid], held) << "the Used Ranges of region " << g->rid << " do not match its pool";
    const mmd_pool_counts_t &c = g->pool.n;
    uint64_t in_use = 0;
    for (auto [k, n] : pool_runs(g->pool, false)) in_use += n;
    EXPECT_EQ(c.slabs_full + c.slabs_partial + c.slabs_leased, in_use);
  }
}

// A scheduler's regions over space bytes, region IDs 1..max_rid.
struct Regions {
  mmd_regions_t R;
  uint64_t meta_live_at_init;
  explicit Regions(uint64_t space, rid_t max_rid = 1000) {
    EXPECT_EQ(mmd_regions_init(&R, space, max_rid, true), 0);
    meta_live_at_init = R.meta.live;
  }
  ~Regions() { mmd_regions_destroy(&R); }
  mmd_region_t *get(rid_t rid) { return mmd_region_get(&R, rid); }
  rid_t create(rid_t parent = 0) { return mmd_region_create(&R, parent, 0); }
  uint64_t alloc(rid_t rid, uint64_t size) {
    uint64_t off = ~0ull;
    EXPECT_EQ(mmd_region_alloc(&R, get(rid), size, &off), 0) << "size " << size << " in region " << rid;
    return off;
  }
  int free(uint64_t off) {
    int32_t notify = 77;
    int rc = mmd_region_free(&R, off, &notify);
    EXPECT_EQ(notify, MMD_NO_WORKER);
    return rc;
  }
};

TEST(Region, InitHasRootOnly) {
  Regions F(4 * MiB);
  EXPECT_EQ(F.R.space_slabs, 1024u);
  EXPECT_EQ(F.R.free_slabs, 1024u);
  EXPECT_EQ(F.R.nregions, 1u);
  ASSERT_NE(F.R.root, nullptr);
  EXPECT_EQ(F.R.root->rid, 0);
  EXPECT_EQ(F.get(0), F.R.root);
  EXPECT_EQ(F.get(1), nullptr);
  EXPECT_EQ(F.get(-1), nullptr);
  EXPECT_EQ(F.get(1000000), nullptr);
  EXPECT_EQ(mmd_region_of(&F.R, 0), nullptr);
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{0, 1024}}));
  check_regions(F.R);
}

TEST(Region, CreateNestedIdsUniqueFromOne) {
  Regions F(4 * MiB, 100);
  rid_t a = mmd_region_create(&F.R, 0, 3);
  rid_t b = F.create(a), c = F.create(b), d = F.create(a), e = F.create(0);
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(c, 3);
  EXPECT_EQ(d, 4);
  EXPECT_EQ(e, 5);
  EXPECT_EQ(F.get(a)->level_hint, 3);
  EXPECT_EQ(F.get(a)->parent, F.R.root);
  EXPECT_EQ(F.get(b)->parent, F.get(a));
  EXPECT_EQ(F.get(c)->parent, F.get(b));
  EXPECT_EQ(F.get(d)->parent, F.get(a));
  EXPECT_EQ(F.get(e)->parent, F.R.root);
  EXPECT_EQ(F.R.nregions, 6u);
  std::set<rid_t> seen;
  for (const mmd_region_t *g : all_regions(F.R)) EXPECT_TRUE(seen.insert(g->rid).second);
  EXPECT_EQ(seen, (std::set<rid_t>{0, 1, 2, 3, 4, 5}));
  // The pre-order walk of a's subtree: a, then b's and d's subtrees.
  std::set<rid_t> sub;
  for (const mmd_region_t *g = F.get(a); g; g = mmd_region_walk_next(g, F.get(a))) sub.insert(g->rid);
  EXPECT_EQ(sub, (std::set<rid_t>{a, b, c, d}));
  EXPECT_EQ(mmd_region_walk_next(F.get(c), F.get(c)), nullptr);

  EXPECT_EQ(F.create(999), SYS_ERR_NOREGION);
  EXPECT_EQ(F.create(-1), SYS_ERR_NOREGION);
  EXPECT_EQ(F.create(1ll << 40), SYS_ERR_NOREGION);
  EXPECT_EQ(F.R.nregions, 6u);
  check_regions(F.R);
}

TEST(Region, IdsRunOutAndAreReused) {
  Regions F(1 * MiB, 3);
  EXPECT_EQ(F.create(), 1);
  EXPECT_EQ(F.create(), 2);
  EXPECT_EQ(F.create(), 3);
  EXPECT_EQ(F.create(), SYS_ERR_NOIDS);
  EXPECT_EQ(F.R.nregions, 4u);
  EXPECT_EQ(mmd_region_destroy(&F.R, 2), 0);
  EXPECT_EQ(F.create(1), 2);
  EXPECT_EQ(F.create(), SYS_ERR_NOIDS);
  check_regions(F.R);

  Regions G(1 * MiB, 0);
  EXPECT_EQ(G.create(), SYS_ERR_NOIDS);
}

// IDs are handed out upward and wrap: a freed ID comes back only once every
// other has been used, so a stale ID names no region for as long as possible.
TEST(Region, FreedIdsComeBackLast) {
  Regions F(1 * MiB, 4);
  EXPECT_EQ(F.create(), 1);
  EXPECT_EQ(F.create(), 2);
  EXPECT_EQ(mmd_region_destroy(&F.R, 1), 0);
  EXPECT_EQ(F.create(), 3);
  EXPECT_EQ(F.create(), 4);
  EXPECT_EQ(F.create(), 1);  // wrapped around
  EXPECT_EQ(F.create(), SYS_ERR_NOIDS);
  check_regions(F.R);
}

TEST(Region, DestroyFreesSubtree) {
  Regions F(16 * MiB, 100);
  rid_t a = F.create(), b = F.create(a), c = F.create(b), d = F.create(a), e = F.create();
  std::map<rid_t, std::vector<uint64_t>> objs;
  for (rid_t r : {a, b, c, d, e})
    for (uint64_t size : {64, 200, 4096, 50048}) objs[r].push_back(F.alloc(r, size));
  check_regions(F.R);

  EXPECT_EQ(mmd_region_destroy(&F.R, 0), SYS_ERR_ROOT);
  EXPECT_EQ(mmd_region_destroy(&F.R, a), 0);
  for (rid_t r : {a, b, c, d}) {
    EXPECT_EQ(F.get(r), nullptr) << r;
    for (uint64_t off : objs[r]) {
      EXPECT_EQ(mmd_region_of(&F.R, off), nullptr) << "object of destroyed region " << r;
      EXPECT_EQ(F.free(off), SYS_ERR_FREED);
    }
  }
  ASSERT_NE(F.get(e), nullptr);
  for (uint64_t off : objs[e]) EXPECT_EQ(mmd_region_of(&F.R, off), F.get(e));
  EXPECT_EQ(F.R.nregions, 2u);
  EXPECT_EQ(F.R.root->first_child, F.get(e));
  EXPECT_EQ(mmd_region_destroy(&F.R, a), SYS_ERR_NOREGION);
  EXPECT_EQ(mmd_region_destroy(&F.R, c), SYS_ERR_NOREGION);
  EXPECT_EQ(mmd_region_destroy(&F.R, 12345), SYS_ERR_NOREGION);
  EXPECT_EQ(mmd_region_destroy(&F.R, -3), SYS_ERR_NOREGION);
  check_regions(F.R);
  // IDs go on upward from the last one handed out (e's).
  EXPECT_EQ(F.create(), e + 1);
  EXPECT_EQ(F.create(e), e + 2);
  check_regions(F.R);
}

// A chain of nested regions deeper than any call stack would like.
TEST(Region, DestroyDeepChain) {
  Regions F(4 * MiB, 200000);
  rid_t top = F.create(), r = top;
  for (int i = 0; i < 100000; i++) r = F.create(r);
  F.alloc(r, 64);
  EXPECT_EQ(F.R.nregions, 100002u);
  EXPECT_EQ(mmd_region_destroy(&F.R, top), 0);
  EXPECT_EQ(F.R.nregions, 1u);
  EXPECT_EQ(F.R.free_slabs, F.R.space_slabs);
  EXPECT_EQ(F.create(), 100002);  // IDs go on upward; the freed ones come back last
}

// Many regions (some nested) allocating and freeing at once, now and then
// one destroyed and replaced: objects never overlap, each maps to its
// region, and the Ranges stay exact. At the end, with everything destroyed,
// the whole space is one free run again. With `pressure`, the space is
// small enough that allocations fail now and then (and regions trim each
// other), and then a free follows.
void interleaved_regions(uint64_t space, bool pressure, uint64_t seed, int ops) {
  Regions F(space, 10000);
  if (pressure) F.R.high_water = 8;
  std::mt19937_64 rng(seed);
  const uint64_t sizes[] = {64, 128, 192, 1000, 4096, 4097, 50048, 1 * MiB};
  std::map<uint64_t, std::pair<uint64_t, rid_t>> live;  // off -> (slot, rid)
  std::vector<uint64_t> offs;                           // the same, for random picks
  std::map<rid_t, rid_t> parent;                        // live regions (not the root)
  auto any_region = [&]() { return std::next(parent.begin(), long(rng() % parent.size()))->first; };
  for (int i = 0; i < 12; i++) {
    rid_t p = i % 3 == 0 || parent.empty() ? 0 : any_region();
    rid_t r = F.create(p);
    ASSERT_GT(r, 0);
    parent[r] = p;
  }
  auto overlaps = [&](uint64_t off, uint64_t slot) {
    auto it = live.lower_bound(off);
    if (it != live.end() && it->first < off + slot) return true;
    return it != live.begin() && std::prev(it)->first + std::prev(it)->second.first > off;
  };
  auto check_all = [&](int op) {
    for (auto &[off, e] : live) ASSERT_EQ(mmd_region_of(&F.R, off), F.get(e.second)) << "op " << op;
    check_regions(F.R);
    ASSERT_FALSE(::testing::Test::HasFailure()) << "op " << op;
  };
  int nomem = 0;
  bool must_free = false;
  for (int op = 0; op < ops; op++) {
    uint64_t dice = rng() % 1000;
    if (dice < 2) {  // destroy a region and its subtree, create two new ones
      rid_t r = any_region();
      std::set<rid_t> doomed = {r};
      for (bool grew = true; grew;) {
        grew = false;
        for (auto [c, p] : parent)
          if (doomed.count(p) && doomed.insert(c).second) grew = true;
      }
      ASSERT_EQ(mmd_region_destroy(&F.R, r), 0);
      for (auto it = live.begin(); it != live.end();)
        it = doomed.count(it->second.second) ? live.erase(it) : std::next(it);
      offs.clear();
      for (auto &[off, e] : live) offs.push_back(off);
      for (rid_t d : doomed) {
        EXPECT_EQ(F.get(d), nullptr);
        parent.erase(d);
      }
      for (int k = 0; k < 2; k++) {
        rid_t p = parent.empty() || rng() % 2 ? 0 : any_region();
        rid_t n = F.create(p);
        ASSERT_GT(n, 0);
        parent[n] = p;
      }
    } else if ((dice < 560 && !must_free) || live.empty()) {
      rid_t r = any_region();
      uint64_t size = sizes[rng() % std::size(sizes)];
      if (size == 1 * MiB && (pressure || rng() % 8)) size = 64;
      uint64_t off, slot = mmd_slot_of(size);
      int rc = mmd_region_alloc(&F.R, F.get(r), size, &off);
      if (pressure && rc == SYS_ERR_NOMEM) {
        nomem++;
        must_free = true;
        continue;
      }
      ASSERT_EQ(rc, 0) << "op " << op;
      ASSERT_FALSE(overlaps(off, slot)) << "op " << op << ": " << off;
      ASSERT_LE(off + slot, F.R.space_slabs << MMD_SLAB_SHIFT);
      ASSERT_EQ(mmd_region_of(&F.R, off), F.get(r)) << "op " << op;
      live[off] = {slot, r};
      offs.push_back(off);
    } else {
      size_t i = rng() % offs.size();
      uint64_t off = offs[i];
      offs[i] = offs.back();
      offs.pop_back();
      ASSERT_EQ(mmd_region_of(&F.R, off), F.get(live[off].second)) << "op " << op;
      ASSERT_EQ(F.free(off), 0) << "op " << op;
      ASSERT_EQ(F.free(off), SYS_ERR_FREED) << "op " << op;
      live.erase(off);
      must_free = must_free && rng() % 64 != 0;
    }
    if (op % 2000 == 1999) ASSERT_NO_FATAL_FAILURE(check_all(op));
  }
  if (pressure) EXPECT_GT(nomem, 0) << "the space was never exhausted";
  ASSERT_NO_FATAL_FAILURE(check_all(-1));
  while (F.R.root->first_child) ASSERT_EQ(mmd_region_destroy(&F.R, F.R.root->first_child->rid), 0);
  check_regions(F.R);
  EXPECT_EQ(F.R.nregions, 1u);
  EXPECT_EQ(F.R.free_slabs, F.R.space_slabs);
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{0, F.R.space_slabs}}));
  EXPECT_EQ(used_runs(F.R), std::vector<UsedRun>{}) << "stale Used Ranges";
  EXPECT_EQ(F.R.meta.live, F.meta_live_at_init) << "kernel-pool cells lost";
}

TEST(Region, InterleavedRegionsMatchModel) { interleaved_regions(1024 * MiB, false, 99, 60000); }

TEST(Region, InterleavedRegionsUnderPressure) {
  for (uint64_t seed : {1, 2, 3})
    ASSERT_NO_FATAL_FAILURE(interleaved_regions(4 * MiB, true, seed, 40000)) << "seed " << seed;
}

TEST(Region, AllocArguments) {
  Regions F(4 * MiB);
  rid_t a = F.create();
  uint64_t off;
  EXPECT_EQ(mmd_region_alloc(&F.R, F.get(a), 0, &off), SYS_ERR_ARG);
  EXPECT_EQ(mmd_region_alloc(&F.R, F.get(a), 4 * MiB + 1, &off), SYS_ERR_NOMEM);
  EXPECT_EQ(mmd_region_alloc(&F.R, F.get(a), 1ull << 62, &off), SYS_ERR_NOMEM);
  ASSERT_EQ(mmd_region_alloc(&F.R, F.get(a), 4 * MiB, &off), 0) << "the whole space in one object";
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(F.R.free_slabs, 0u);
  EXPECT_EQ(F.free(off + 64), SYS_ERR_NOTOBJECT);
  EXPECT_EQ(F.free(off), 0);
  EXPECT_EQ(F.free(off), SYS_ERR_FREED);
  EXPECT_EQ(F.free(8 * MiB), SYS_ERR_FREED) << "outside the space";
  check_regions(F.R);
}

// A 4 MiB space filled with 64-B objects: exactly 65536 fit; then freeing
// a whole slab's objects in one region lets another allocate (the slab is
// trimmed from the first region), and destroying a region frees all of it.
TEST(Region, ExhaustionAndRecovery) {
  Regions F(4 * MiB);
  rid_t a = F.create(), b = F.create();
  std::vector<uint64_t> offs;
  uint64_t off;
  int rc;
  while ((rc = mmd_region_alloc(&F.R, F.get(a), 64, &off)) == 0) offs.push_back(off);
  EXPECT_EQ(rc, SYS_ERR_NOMEM);
  EXPECT_EQ(offs.size(), 65536u);
  EXPECT_EQ(F.R.free_slabs, 0u);
  EXPECT_EQ(mmd_region_alloc(&F.R, F.get(b), 64, &off), SYS_ERR_NOMEM);
  EXPECT_EQ(mmd_region_alloc(&F.R, F.get(0), 64, &off), SYS_ERR_NOMEM);
  check_regions(F.R);

  // One object freed: a can reuse its slot, b still finds no slab.
  ASSERT_EQ(F.free(offs[100]), 0);
  EXPECT_EQ(mmd_region_alloc(&F.R, F.get(b), 64, &off), SYS_ERR_NOMEM);
  ASSERT_EQ(mmd_region_alloc(&F.R, F.get(a), 64, &off), 0);
  EXPECT_EQ(off, offs[100]);

  // A whole slab freed in a: a keeps it (below its high watermark) until
  // b's allocation puts the space under pressure.
  std::sort(offs.begin(), offs.end());
  uint64_t slab = offs[64 * 7] >> MMD_SLAB_SHIFT;
  for (int i = 0; i < 64; i++) ASSERT_EQ(F.free(offs[64 * 7 + i]), 0);
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, 1u);
  EXPECT_EQ(F.R.free_slabs, 0u);
  ASSERT_EQ(mmd_region_alloc(&F.R, F.get(b), 64, &off), 0) << "no trimming under pressure";
  EXPECT_EQ(off >> MMD_SLAB_SHIFT, slab);
  EXPECT_EQ(mmd_region_of(&F.R, off), F.get(b));
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, 0u);
  check_regions(F.R);

  EXPECT_EQ(mmd_region_destroy(&F.R, a), 0);
  check_regions(F.R);
  uint64_t more = 0;
  while (mmd_region_alloc(&F.R, F.get(b), 64, &off) == 0) more++;
  EXPECT_EQ(more, 65536u - 1);
  check_regions(F.R);
  EXPECT_EQ(mmd_region_destroy(&F.R, b), 0);
  EXPECT_EQ(F.R.free_slabs, F.R.space_slabs);
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{0, 1024}}));
}

// A fills the space with slab-sized objects and frees them all: it keeps
// high_water free slabs. B then gets the whole space, the last slabs
// trimmed from A down to its low watermark; then a large object for A that
// needs 13 contiguous slabs B keeps free.
TEST(Region, MemoryPressureTrimsFreeSlabs) {
  Regions F(4 * MiB);
  rid_t a = F.create(), b = F.create();
  std::vector<uint64_t> offs;
  for (int i = 0; i < 1024; i++) offs.push_back(F.alloc(a, 4096));
  EXPECT_EQ(F.R.free_slabs, 0u);
  for (uint64_t off : offs) ASSERT_EQ(F.free(off), 0);
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, F.R.high_water);
  EXPECT_EQ(F.R.free_slabs, 1024u - F.R.high_water);
  check_regions(F.R);

  offs.clear();
  for (int i = 0; i < 1024; i++) {
    uint64_t off;
    ASSERT_EQ(mmd_region_alloc(&F.R, F.get(b), 4096, &off), 0) << "object " << i;
    offs.push_back(off);
  }
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, F.R.low_water);
  EXPECT_EQ(F.R.free_slabs, 0u);
  check_regions(F.R);

  // B frees 20 slabs in a row: it keeps them; A's 13-slab object takes them.
  std::sort(offs.begin(), offs.end());
  for (int i = 300; i < 320; i++) ASSERT_EQ(F.free(offs[i]), 0);
  EXPECT_EQ(F.get(b)->pool.n.slabs_free, 20u);
  EXPECT_EQ(F.R.free_slabs, 0u);
  uint64_t off;
  ASSERT_EQ(mmd_region_alloc(&F.R, F.get(a), 50048, &off), 0);
  EXPECT_GE(off, offs[300]);
  EXPECT_LE(off + 13 * 4096, offs[319] + 4096);
  EXPECT_EQ(mmd_region_of(&F.R, off), F.get(a));
  EXPECT_EQ(mmd_region_of(&F.R, off + 12 * 4096), F.get(a));
  check_regions(F.R);
}

// Pressure when the Free Ranges hold more slabs than a large object needs,
// but none of their runs is long enough: A keeps 32 contiguous free slabs
// (its high watermark) while the rest of the space is free in single slabs.
// B's 13-slab object fits only once A is trimmed, so it must be.
TEST(Region, PressureTrimsForAContiguousRun) {
  Regions F(4 * MiB);
  rid_t a = F.create(), b = F.create();
  std::vector<uint64_t> offs;
  for (int i = 0; i < 1024; i++) offs.push_back(F.alloc(a, 4096));
  std::sort(offs.begin(), offs.end());
  for (int i = 0; i < 32; i++) ASSERT_EQ(F.free(offs[size_t(i)]), 0);  // kept by a
  for (int i = 33; i < 1024; i += 2) ASSERT_EQ(F.free(offs[size_t(i)]), 0);  // given back
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, 32u);
  EXPECT_EQ(F.R.free_slabs, 496u);
  for (auto [k, n] : free_runs(F.R)) ASSERT_EQ(n, 1u) << "free run at " << k;
  check_regions(F.R);
  uint64_t off;
  ASSERT_EQ(mmd_region_alloc(&F.R, F.get(b), 50048, &off), 0)
      << "no trimming because the Free Ranges held enough slabs, though not in one run";
  EXPECT_LT(off >> MMD_SLAB_SHIFT, 32u);
  check_regions(F.R);
}

// The kernel pool running dry in the middle of a refill (the run taken from
// the Free Ranges, the region's pool unable to take it): the allocation
// fails, and the Free Ranges, the Used Ranges and free_slabs are as before.
TEST(Region, RefillFailingForMetadataLeavesRangesExact) {
  Regions F(4 * MiB);
  F.R.refill_slabs = 1;
  F.R.high_water = 0;
  rid_t a = F.create(), b = F.create();
  std::vector<uint64_t> offs;
  for (int i = 0; i < 1024; i++) offs.push_back(F.alloc(b, 4096));
  std::sort(offs.begin(), offs.end());
  for (int i : {100, 102, 104}) ASSERT_EQ(F.free(offs[size_t(i)]), 0);
  ASSERT_EQ(free_runs(F.R), (std::vector<SlabRun>{{100, 1}, {102, 1}, {104, 1}}));
  check_regions(F.R);
  auto used_before = used_runs(F.R);

  // Leave the kernel pool one cell: enough for the slab descriptor that
  // mmd_pool_alloc takes and gives back, not for a's empty Free Trie.
  mmd_meta_t &m = F.R.meta;
  std::vector<mmd_cell_t> held;
  while (m.free_list != 0) held.push_back(mmd_meta_alloc(&m));
  mmd_cell_t spare = mmd_meta_alloc(&m);
  ASSERT_NE(spare, 0u);
  const uint32_t next_fresh = m.next_fresh;
  m.next_fresh = MMD_CELL_MAX_CHUNKS << MMD_CELL_CHUNK_SHIFT;  // no fresh cells
  mmd_meta_free(&m, spare);
  uint64_t off;
  EXPECT_EQ(mmd_region_alloc(&F.R, F.get(a), 4096, &off), SYS_ERR_NOMEM);
  m.next_fresh = next_fresh;
  for (mmd_cell_t c : held) mmd_meta_free(&m, c);

  EXPECT_EQ(F.R.free_slabs, 3u) << "free_slabs counts a run given back but never taken off";
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{100, 1}, {102, 1}, {104, 1}}));
  EXPECT_EQ(used_runs(F.R), used_before) << "a Used Ranges entry of a run the region never got";
  EXPECT_EQ(mmd_region_of(&F.R, 100ull << MMD_SLAB_SHIFT), nullptr);
  check_regions(F.R);
  // With cells again, the allocation succeeds.
  ASSERT_EQ(mmd_region_alloc(&F.R, F.get(a), 4096, &off), 0);
  EXPECT_EQ(mmd_region_of(&F.R, off), F.get(a));
  check_regions(F.R);
}

// With high_water 0 every emptied slab goes straight back to the Free
// Ranges: the Used Ranges split around it, and merge again when the region
// takes the hole back. A region whose pool then gives back a free run
// spanning two Used Ranges entries must leave nothing of it behind.
TEST(Region, UsedRangesSplitAndMerge) {
  Regions F(16 * 4 * KiB);  // 16 slabs
  F.R.high_water = 0;
  rid_t a = F.create();
  std::vector<uint64_t> offs;
  for (int i = 0; i < 16; i++) offs.push_back(F.alloc(a, 4096));
  std::sort(offs.begin(), offs.end());
  ASSERT_EQ(offs.front(), 0u);
  EXPECT_EQ(used_runs(F.R), (std::vector<UsedRun>{{0, 16, a}}));
  EXPECT_EQ(F.R.free_slabs, 0u);

  ASSERT_EQ(F.free(offs[5]), 0);
  EXPECT_EQ(used_runs(F.R), (std::vector<UsedRun>{{0, 5, a}, {6, 10, a}}));
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{5, 1}}));
  EXPECT_EQ(mmd_region_of(&F.R, offs[5]), nullptr);
  EXPECT_EQ(mmd_region_of(&F.R, offs[4]), F.get(a));
  EXPECT_EQ(mmd_region_of(&F.R, offs[6]), F.get(a));
  ASSERT_EQ(F.free(offs[6]), 0);
  EXPECT_EQ(used_runs(F.R), (std::vector<UsedRun>{{0, 5, a}, {7, 9, a}}));
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{5, 2}}));
  check_regions(F.R);

  // The only free slabs are 5 and 6: a takes them back one at a time.
  EXPECT_EQ(F.alloc(a, 4096), offs[5]);
  EXPECT_EQ(used_runs(F.R), (std::vector<UsedRun>{{0, 6, a}, {7, 9, a}}));
  EXPECT_EQ(F.alloc(a, 4096), offs[6]);
  EXPECT_EQ(used_runs(F.R), (std::vector<UsedRun>{{0, 16, a}}))
      << "adjacent Used Ranges of one region are not merged";
  check_regions(F.R);

  // Slabs 6 and 7, on either side of where a's runs met, free in a's pool
  // at once; destroying a gives them back as one run.
  F.R.high_water = 2;
  ASSERT_EQ(F.free(offs[6]), 0);
  ASSERT_EQ(F.free(offs[7]), 0);
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, 2u);
  check_regions(F.R);
  EXPECT_EQ(mmd_region_destroy(&F.R, a), 0);
  EXPECT_EQ(used_runs(F.R), std::vector<UsedRun>{}) << "stale Used Ranges after destroy";
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{0, 16}}));
  EXPECT_EQ(F.R.free_slabs, 16u);
  rid_t b = F.create();
  EXPECT_GT(b, a);  // a freed ID comes back only after the others
  for (int i = 0; i < 16; i++)
    EXPECT_EQ(mmd_region_of(&F.R, uint64_t(i) << MMD_SLAB_SHIFT), nullptr)
        << "slab " << i << " maps to a region that holds nothing";
  check_regions(F.R);
}

// The same harm reached through ordinary use: a region's memory taken out
// of order (a lower run after a higher one) leaves two Used Ranges entries
// that meet; the pressure trimmer then gives back one free run across the
// meeting point. Another region that takes that memory must own it: its
// objects map to it and can be freed.
TEST(Region, TrimmedRunAcrossUsedRangesGoesToItsNewOwner) {
  Regions F(64 * 4 * KiB);  // 64 slabs, refills of 16
  rid_t a = F.create(), b = F.create(), c = F.create();
  std::vector<uint64_t> in_a;
  in_a.push_back(F.alloc(a, 4096));  // a: [0, 16)
  uint64_t in_b = F.alloc(b, 4096);  // b: [16, 32)
  ASSERT_EQ(in_b >> MMD_SLAB_SHIFT, 31u);
  for (int i = 1; i < 17; i++) in_a.push_back(F.alloc(a, 4096));  // a: [32, 48)
  ASSERT_EQ(mmd_region_destroy(&F.R, b), 0);                      // [16, 32) free again
  for (int i = 17; i < 64; i++) in_a.push_back(F.alloc(a, 4096));  // a: [48, 64), then [16, 32)
  EXPECT_EQ(F.R.free_slabs, 0u);
  check_regions(F.R);
  // a frees slabs 16..47: it keeps them, one free run of its pool.
  std::sort(in_a.begin(), in_a.end());
  for (int i = 16; i < 48; i++) ASSERT_EQ(F.free(in_a[size_t(i)]), 0);
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, 32u);
  EXPECT_EQ(F.R.free_slabs, 0u);
  check_regions(F.R);
  // c allocates: the trimmer takes [16, 48) from a, c takes it.
  std::vector<uint64_t> in_c;
  for (int i = 0; i < 20; i++) in_c.push_back(F.alloc(c, 4096));
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, 0u);
  for (uint64_t off : in_c) {
    EXPECT_GE(off >> MMD_SLAB_SHIFT, 16u);
    EXPECT_LT(off >> MMD_SLAB_SHIFT, 48u);
    EXPECT_EQ(mmd_region_of(&F.R, off), F.get(c)) << "c's object at slab " << (off >> MMD_SLAB_SHIFT);
  }
  check_regions(F.R);
  for (uint64_t off : in_c) EXPECT_EQ(F.free(off), 0) << "c's object at slab " << (off >> MMD_SLAB_SHIFT);
  EXPECT_EQ(mmd_region_destroy(&F.R, a), 0);
  EXPECT_EQ(mmd_region_destroy(&F.R, c), 0);
  EXPECT_EQ(used_runs(F.R), std::vector<UsedRun>{}) << "stale Used Ranges after destroy";
  EXPECT_EQ(F.R.free_slabs, 64u);
}

TEST(Region, CountsWithAndWithoutSubregions) {
  Regions F(16 * MiB);
  rid_t a = F.create(), a1 = F.create(a), a11 = F.create(a1), a2 = F.create(a);
  for (int i = 0; i < 3; i++) F.alloc(a, 64);
  for (int i = 0; i < 2; i++) F.alloc(a1, 4096);
  F.alloc(a11, 50048);
  for (int i = 0; i < 5; i++) F.alloc(a2, 192);
  mmd_pool_counts_t c;
  uint64_t sub;
  mmd_region_counts(F.get(a), 0, &c, &sub);
  EXPECT_EQ(sub, 3u);
  EXPECT_EQ(c.live_objects, 3u);
  EXPECT_EQ(c.live_bytes, 3u * 64);
  EXPECT_EQ(c.slabs_full, 0u);
  EXPECT_EQ(c.slabs_partial, 1u);
  EXPECT_EQ(c.slabs_free, 15u);  // one refill of 16 slabs
  mmd_region_counts(F.get(a), 1, &c, &sub);
  EXPECT_EQ(sub, 3u);
  EXPECT_EQ(c.live_objects, 3u + 2 + 1 + 5);
  EXPECT_EQ(c.live_bytes, 3u * 64 + 2 * 4096 + 50048 + 5 * 192);
  EXPECT_EQ(c.slabs_full, 2u + 13);
  EXPECT_EQ(c.slabs_partial, 2u);
  EXPECT_EQ(c.slabs_free, 15u + 14 + 3 + 15);
  EXPECT_EQ(c.slabs_leased, 0u);
  mmd_region_counts(F.get(a1), 1, &c, &sub);
  EXPECT_EQ(sub, 1u);
  EXPECT_EQ(c.live_objects, 3u);
  mmd_region_counts(F.get(a11), 1, &c, &sub);
  EXPECT_EQ(sub, 0u);
  EXPECT_EQ(c.slabs_full, 13u);
  mmd_region_counts(F.R.root, 1, &c, &sub);
  EXPECT_EQ(sub, 4u);
  EXPECT_EQ(c.live_objects, 11u);
}

struct Zombie {
  rid_t rid;
  uint64_t key, n;
  int32_t worker;
};

void record_zombie(void *ctx, rid_t rid, uint64_t key, uint64_t n, int32_t worker) {
  static_cast<std::vector<Zombie> *>(ctx)->push_back({rid, key, n, worker});
}

bool in_free_ranges(const mmd_regions_t &R, uint64_t key) {
  for (auto [k, n] : free_runs(R))
    if (key >= k && key < k + n) return true;
  return false;
}

// A destroyed region's leased slabs go to the zombie callback, not to the
// Free Ranges, until mmd_regions_release.
TEST(Region, ZombieRunsWaitForRelease) {
  std::vector<Zombie> zombies;
  Regions F(4 * MiB);
  F.R.zombie = record_zombie;
  F.R.zombie_ctx = &zombies;
  rid_t a = F.create(), a1 = F.create(a);
  F.alloc(a, 64);
  F.alloc(a1, 4096);
  mmd_cell_t cells[3];
  ASSERT_EQ(mmd_region_lease(&F.R, F.get(a), 128, 7, 2, cells), 2);
  ASSERT_EQ(mmd_region_lease(&F.R, F.get(a1), 64, 5, 1, cells + 2), 1);
  std::map<uint64_t, std::pair<rid_t, int32_t>> leased;
  leased[static_cast<mmd_slab_t *>(mmd_cell(&F.R.meta, cells[0]))->key] = {a, 7};
  leased[static_cast<mmd_slab_t *>(mmd_cell(&F.R.meta, cells[1]))->key] = {a, 7};
  leased[static_cast<mmd_slab_t *>(mmd_cell(&F.R.meta, cells[2]))->key] = {a1, 5};
  EXPECT_EQ(F.get(a)->pool.n.slabs_leased, 2u);
  check_regions(F.R);

  ASSERT_EQ(mmd_region_destroy(&F.R, a), 0);
  ASSERT_GE(zombies.size(), 2u) << "two holders, two runs at least";
  ASSERT_LE(zombies.size(), 3u);
  uint64_t zombie_slabs = 0;
  for (const Zombie &z : zombies) {
    for (uint64_t k = z.key; k < z.key + z.n; k++) {  // adjacent slabs of one holder come as one run
      ASSERT_EQ(leased.count(k), 1u) << k;
      EXPECT_EQ(z.rid, leased[k].first);
      EXPECT_EQ(z.worker, leased[k].second);
      EXPECT_FALSE(in_free_ranges(F.R, k)) << "a zombie run is free before its release";
      EXPECT_EQ(mmd_region_of(&F.R, k << MMD_SLAB_SHIFT), nullptr);
    }
    zombie_slabs += z.n;
  }
  EXPECT_EQ(zombie_slabs, 3u);
  EXPECT_EQ(F.R.free_slabs, F.R.space_slabs - 3);
  check_regions(F.R, 3);
  // The space is short of the zombies: a new region cannot have them.
  rid_t b = F.create();
  uint64_t off;
  int n = 0;
  while (mmd_region_alloc(&F.R, F.get(b), 4096, &off) == 0) {
    ASSERT_EQ(leased.count(off >> MMD_SLAB_SHIFT), 0u) << "a zombie slab was handed out";
    n++;
  }
  EXPECT_EQ(n, 1024 - 3);
  ASSERT_EQ(mmd_region_destroy(&F.R, b), 0);

  for (const Zombie &z : zombies) mmd_regions_release(&F.R, z.key, z.n);
  EXPECT_EQ(F.R.free_slabs, F.R.space_slabs);
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{0, 1024}}));
  check_regions(F.R);

  // Without a zombie callback, leased runs are free at once.
  F.R.zombie = nullptr;
  rid_t c = F.create();
  ASSERT_EQ(mmd_region_lease(&F.R, F.get(c), 64, 2, 1, cells), 1);
  ASSERT_EQ(mmd_region_destroy(&F.R, c), 0);
  EXPECT_EQ(F.R.free_slabs, F.R.space_slabs);
  check_regions(F.R);
}

// Unleasing a slab with nothing taken trims the region to its high
// watermark (0 here): the slab is back in the Free Ranges.
TEST(Region, UnleaseTrims) {
  Regions F(4 * MiB);
  F.R.high_water = 0;
  rid_t a = F.create();
  mmd_cell_t cell;
  ASSERT_EQ(mmd_region_lease(&F.R, F.get(a), 256, 1, 1, &cell), 1);
  EXPECT_EQ(F.R.free_slabs, 1024u - 16);
  EXPECT_EQ(mmd_region_unlease(&F.R, F.get(a), cell, 0), 0);
  EXPECT_EQ(F.get(a)->pool.n.slabs_free, 0u);
  EXPECT_EQ(F.R.free_slabs, 1024u);
  check_regions(F.R);
}

// ---- packing ------------------------------------------------------------

using ByteRanges = std::vector<std::pair<uint64_t, uint64_t>>;  // (off, len)

ByteRanges to_vec(const mmd_ranges_t &l) {
  ByteRanges v;
  for (size_t i = 0; i < l.n; i++) v.emplace_back(l.r[i].off, l.r[i].len);
  return v;
}

// Slab keys -> coalesced byte ranges.
ByteRanges slabs_to_ranges(const std::set<uint64_t> &slabs) {
  ByteRanges v;
  for (uint64_t s : slabs) {
    if (!v.empty() && v.back().first + v.back().second == s << MMD_SLAB_SHIFT) v.back().second += MMD_SLAB_SIZE;
    else v.emplace_back(s << MMD_SLAB_SHIFT, MMD_SLAB_SIZE);
  }
  return v;
}

struct PackWorld {
  Regions F{256 * MiB};
  rid_t a, a1, a2, a21;
  std::map<uint64_t, std::pair<uint64_t, rid_t>> live;  // off -> (slot, rid)
  PackWorld() {
    rid_t pad = F.create();  // holds the first slabs until the end: a hole below everything
    F.alloc(pad, 4096);
    a = F.create();
    a1 = F.create(a);
    a2 = F.create(a);
    a21 = F.create(a2);
    rid_t other = F.create();
    std::mt19937_64 rng(3);
    const uint64_t sizes[] = {64, 192, 1024, 4096, 4160, 50048};
    rid_t rs[] = {a, a1, a2, a21, other};
    for (int i = 0; i < 6000; i++) {
      rid_t r = rs[rng() % 5];
      uint64_t size = sizes[rng() % 6];
      live[F.alloc(r, size)] = {mmd_slot_of(size), r};
    }
    // Free most of it, unevenly, so that slabs empty and regions have holes.
    for (auto it = live.begin(); it != live.end();) {
      if (rng() % 10 < 7) {
        EXPECT_EQ(F.free(it->first), 0);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    EXPECT_EQ(mmd_region_destroy(&F.R, pad), 0);
  }
  // Slabs live objects of the given regions touch.
  std::set<uint64_t> slabs_of(const std::set<rid_t> &rids) const {
    std::set<uint64_t> s;
    for (auto &[off, e] : live)
      if (rids.count(e.second))
        for (uint64_t k = off >> MMD_SLAB_SHIFT; k <= (off + e.first - 1) >> MMD_SLAB_SHIFT; k++) s.insert(k);
    return s;
  }
};

TEST(Pack, RegionIsExactlyItsSlabsInUse) {
  PackWorld W;
  check_regions(W.F.R);
  mmd_ranges_t out{};
  ASSERT_EQ(mmd_pack_region(W.F.get(W.a2), 0, &out), 0);
  EXPECT_EQ(to_vec(out), slabs_to_ranges(W.slabs_of({W.a2}))) << "a region alone";
  mmd_ranges_free(&out);
  ASSERT_EQ(mmd_pack_region(W.F.get(W.a21), 1, &out), 0);
  EXPECT_EQ(to_vec(out), slabs_to_ranges(W.slabs_of({W.a21}))) << "a leaf with subregions";
  mmd_ranges_free(&out);

  ASSERT_EQ(mmd_pack_region(W.F.get(W.a), 1, &out), 0);
  auto want = slabs_to_ranges(W.slabs_of({W.a, W.a1, W.a2, W.a21}));
  uint64_t want_bytes = 0;
  for (auto [o, l] : want) want_bytes += l;
  EXPECT_EQ(mmd_ranges_bytes(&out), want_bytes) << "a slab packed twice or missed";
  for (size_t i = 1; i < out.n; i++)  // each region's runs are in order and coalesced
    if (out.r[i].off > out.r[i - 1].off) EXPECT_GT(out.r[i].off, out.r[i - 1].off + out.r[i - 1].len);
  mmd_ranges_normalize(&out);
  EXPECT_EQ(to_vec(out), want) << "a with all its subregions";
  mmd_ranges_free(&out);

  // An empty region packs to nothing.
  rid_t e = W.F.create(W.a21);
  ASSERT_EQ(mmd_pack_region(W.F.get(e), 1, &out), 0);
  EXPECT_EQ(out.n, 0u);
  ASSERT_EQ(mmd_pack_region(W.F.get(W.a21), 1, &out), 0);
  EXPECT_EQ(to_vec(out), slabs_to_ranges(W.slabs_of({W.a21})));
  mmd_ranges_free(&out);
}

// A large object and a full region: runs longer than one slab coalesce.
TEST(Pack, CoalescesAdjacentSlabs) {
  Regions F(16 * MiB);
  rid_t a = F.create();
  uint64_t big = F.alloc(a, 1 * MiB);
  std::vector<uint64_t> small;
  for (int i = 0; i < 64 * 3; i++) small.push_back(F.alloc(a, 64));
  mmd_ranges_t out{};
  ASSERT_EQ(mmd_pack_region(F.get(a), 0, &out), 0);
  uint64_t bytes = mmd_ranges_bytes(&out);
  EXPECT_EQ(bytes, 1 * MiB + 3 * 4096);
  EXPECT_LE(out.n, 2u);
  bool big_found = false;
  for (size_t i = 0; i < out.n; i++) big_found |= out.r[i].off <= big && out.r[i].off + out.r[i].len >= big + MiB;
  EXPECT_TRUE(big_found);
  mmd_ranges_free(&out);
}

// A pool keeps its last pack until its slabs change: after every kind of
// change (an object allocated or freed, a slab leased, reported, emptied,
// given back), packing again gives exactly the slabs in use then, for a
// region alone and with the sub-region that changed under it.
TEST(Pack, RepackFollowsEveryChange) {
  Regions F(64 * MiB);
  rid_t a = F.create(), a1 = F.create(a);
  rid_t rs[] = {a, a1};
  std::map<uint64_t, std::pair<uint64_t, rid_t>> objects;  // off -> (slot, rid), slabs not leased
  struct Leased { mmd_cell_t cell; uint64_t key, bits; rid_t rid; };
  std::vector<Leased> leased;
  auto expect = [&](std::set<rid_t> rids) {
    std::set<uint64_t> slabs;
    for (auto &[off, e] : objects)
      if (rids.count(e.second))
        for (uint64_t k = off >> MMD_SLAB_SHIFT; k <= (off + e.first - 1) >> MMD_SLAB_SHIFT; k++) slabs.insert(k);
    for (auto &l : leased)
      if (rids.count(l.rid) && l.bits) slabs.insert(l.key);
    return slabs_to_ranges(slabs);
  };
  auto packed = [&](rid_t r, int with_sub) {
    mmd_ranges_t out{};
    EXPECT_EQ(mmd_pack_region(F.get(r), with_sub, &out), 0);
    mmd_ranges_normalize(&out);
    ByteRanges v = to_vec(out);
    mmd_ranges_free(&out);
    return v;
  };
  std::mt19937_64 rng(11);
  const uint64_t sizes[] = {64, 256, 4096, 12288};
  for (int step = 0; step < 3000; step++) {
    rid_t r = rs[rng() % 2];
    unsigned op = rng() % 10;
    if (op < 4 || objects.empty()) {
      uint64_t size = sizes[rng() % 4];
      objects[F.alloc(r, size)] = {mmd_slot_of(size), r};
    } else if (op < 7) {
      auto it = std::next(objects.begin(), (long)(rng() % objects.size()));
      ASSERT_EQ(F.free(it->first), 0);
      objects.erase(it);
    } else if (op == 7) {
      mmd_cell_t cell;
      ASSERT_EQ(mmd_region_lease(&F.R, F.get(r), 64, 3, 1, &cell), 1);
      leased.push_back({cell, static_cast<mmd_slab_t *>(mmd_cell(&F.R.meta, cell))->key, 0, r});
      for (uint64_t off = leased.back().key << MMD_SLAB_SHIFT; off < (leased.back().key + 1) << MMD_SLAB_SHIFT; off += 64)
        objects.erase(off);  // a partial slab leased: its slots are the lease's now
      leased.back().bits = static_cast<mmd_slab_t *>(mmd_cell(&F.R.meta, cell))->live;
    } else if (!leased.empty()) {
      size_t i = rng() % leased.size();
      Leased l = leased[i];
      uint64_t bits = rng() % 3 == 0 ? 0 : rng();
      if (op == 8) {
        mmd_pool_sync(&F.get(l.rid)->pool, l.cell, bits);
        leased[i].bits = bits;
      } else {
        ASSERT_EQ(mmd_region_unlease(&F.R, F.get(l.rid), l.cell, bits), 0);
        for (int b = 0; b < 64; b++)
          if (bits >> b & 1) objects[(l.key << MMD_SLAB_SHIFT) + 64 * b] = {64, l.rid};
        leased.erase(leased.begin() + (long)i);
      }
    }
    if (step % 7 == 0 || op >= 7) {
      ASSERT_EQ(packed(a1, 0), expect({a1})) << "step " << step;
      ASSERT_EQ(packed(a, 0), expect({a})) << "step " << step;
      ASSERT_EQ(packed(a, 1), expect({a, a1})) << "step " << step;
    }
  }
}

bool keep_every_region(void *, const mmd_region_t *) { return true; }
bool keep_one_region(void *ctx, const mmd_region_t *g) { return g == ctx; }

// mmd_pack_live_part keeps of [off, off + len) exactly the bytes some
// region's slabs (used or kept free) cover.
TEST(Pack, LivePartClipsToUsedRanges) {
  PackWorld W;
  mmd_regions_t &R = W.F.R;
  std::set<uint64_t> held;
  for (const mmd_region_t *g : all_regions(R))
    for (auto [k, n] : pool_runs(g->pool))
      for (uint64_t s = k; s < k + n; s++) held.insert(s);
  ASSERT_FALSE(held.empty());
  ASSERT_GT(*held.begin(), 0u) << "no free slabs below the regions' memory";
  const uint64_t space = R.space_slabs << MMD_SLAB_SHIFT;
  std::mt19937_64 rng(11);
  auto expect_window = [&](uint64_t off, uint64_t len) {
    ByteRanges want;
    for (auto [o, l] : slabs_to_ranges(held)) {
      uint64_t lo = std::max(o, off), hi = std::min(o + l, off + len);
      if (lo < hi) want.emplace_back(lo, hi - lo);
    }
    mmd_ranges_t out{};
    ASSERT_EQ(mmd_pack_live_part(&R, off, len, keep_every_region, nullptr, &out), 0);
    mmd_ranges_normalize(&out);
    EXPECT_EQ(to_vec(out), want) << "window [" << off << ", " << off + len << ")";
    mmd_ranges_free(&out);
  };
  uint64_t first = *held.begin() << MMD_SLAB_SHIFT, last = (*held.rbegin() + 1) << MMD_SLAB_SHIFT;
  ASSERT_NO_FATAL_FAILURE(expect_window(0, space));
  ASSERT_NO_FATAL_FAILURE(expect_window(first + 100, 5000));
  ASSERT_NO_FATAL_FAILURE(expect_window(0, first + 1));
  ASSERT_NO_FATAL_FAILURE(expect_window(last - 1, 10 * MiB));
  ASSERT_NO_FATAL_FAILURE(expect_window(last, 10 * MiB));
  ASSERT_NO_FATAL_FAILURE(expect_window(first, 0));
  for (int i = 0; i < 300; i++) {
    uint64_t off = rng() % last, len = 1 + rng() % (4 * MiB);
    ASSERT_NO_FATAL_FAILURE(expect_window(off, len));
  }
}

// With a predicate, only the chosen region's slabs count as live: a copy of
// memory another region holds is not the worker's to keep.
TEST(Pack, LivePartKeepsOnlyChosenRegions) {
  PackWorld W;
  mmd_regions_t &R = W.F.R;
  std::vector<const mmd_region_t *> regions = all_regions(R);
  const mmd_region_t *chosen = nullptr;
  for (const mmd_region_t *g : regions)
    if (!pool_runs(g->pool).empty() && g->rid != 0) chosen = g;
  ASSERT_NE(chosen, nullptr);
  std::set<uint64_t> held, others;
  for (const mmd_region_t *g : regions)
    for (auto [k, n] : pool_runs(g->pool))
      for (uint64_t s = k; s < k + n; s++) (g == chosen ? held : others).insert(s);
  ASSERT_FALSE(others.empty()) << "the world needs memory of other regions for this test";
  mmd_ranges_t out{};
  ASSERT_EQ(mmd_pack_live_part(&R, 0, R.space_slabs << MMD_SLAB_SHIFT, keep_one_region,
                               const_cast<mmd_region_t *>(chosen), &out), 0);
  mmd_ranges_normalize(&out);
  EXPECT_EQ(to_vec(out), slabs_to_ranges(held));
  mmd_ranges_free(&out);
}

// ---- scale ---------------------------------------------------------------

// A region of a million 64-B objects (with a sub-region of its own objects)
// destroyed: the space is whole again, every kernel-pool cell returned.
TEST(Region, DestroyMillionObjects) {
  Regions F(64 * MiB);
  const uint64_t live_before = F.R.meta.live;
  rid_t a = F.create(), a1 = F.create(a);
  for (int i = 0; i < 1000000; i++) {
    uint64_t off;
    ASSERT_EQ(mmd_region_alloc(&F.R, F.get(i % 10 ? a : a1), 64, &off), 0) << i;
  }
  mmd_pool_counts_t c;
  uint64_t sub;
  mmd_region_counts(F.get(a), 1, &c, &sub);
  EXPECT_EQ(c.live_objects, 1000000u);
  EXPECT_EQ(c.slabs_full + c.slabs_partial, 900000u / 64 + 100000u / 64 + 2);
  check_regions(F.R);
  ASSERT_EQ(mmd_region_destroy(&F.R, a), 0);
  EXPECT_EQ(F.R.free_slabs, F.R.space_slabs);
  EXPECT_EQ(free_runs(F.R), (std::vector<SlabRun>{{0, F.R.space_slabs}}));
  EXPECT_EQ(used_runs(F.R), std::vector<UsedRun>{});
  EXPECT_EQ(F.R.meta.live, live_before);
  EXPECT_EQ(F.R.nregions, 1u);
}

// Region IDs are int64; the Used Ranges keep 32 bits of them. A scheduler
// given IDs past 2^32 must either refuse them at init or still map its
// objects to the right region.
TEST(Region, IdsPast32Bits) {
  mmd_regions_t R;
  const rid_t max_rid = (1ll << 33);
  int rc = mmd_regions_init(&R, 4 * MiB, max_rid, true);
  if (rc != 0) {
    SUCCEED() << "refused at init";
    return;
  }
  // Hand out the IDs from 2^32 + 5 on.
  uint64_t k, n;
  ASSERT_TRUE(mmd_trie_first(&R.free_ids, &k, &n));
  ASSERT_NE(mmd_trie_remove(&R.free_ids, k), 0u);
  ASSERT_EQ(mmd_runs_add(&R.free_ids, (1ull << 32) + 5, 10), 0);
  rid_t a = mmd_region_create(&R, 0, 0);
  ASSERT_EQ(a, (1ll << 32) + 5);
  uint64_t off;
  ASSERT_EQ(mmd_region_alloc(&R, mmd_region_get(&R, a), 64, &off), 0);
  EXPECT_EQ(mmd_region_of(&R, off), mmd_region_get(&R, a)) << "the Used Ranges lost the ID's high bits";
  int32_t notify;
  EXPECT_EQ(mmd_region_free(&R, off, &notify), 0);
  mmd_regions_destroy(&R);
}

}  // namespace
