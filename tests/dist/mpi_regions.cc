/* SPDX-License-Identifier: Apache-2.0 */
// mpi_regions.cc: regions as each worker sees them: the worker layout,
// sys_ralloc under the root and nested, sys_rfree of a sub-tree, and what
// sys_region_stats reports. Every worker runs each case at once, on regions
// of its own, so the cases also run against each other.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <set>
#include <vector>

#include "pattern.h"
#include "tree_shape.h"
#include "workers.h"

using namespace mmdtest;

namespace {

sys_region_stats_t stats_of(rid_t r, int with_subregions) {
  sys_region_stats_t s;
  memset(&s, 0xff, sizeof s);
  EXPECT_EQ(sys_region_stats(r, with_subregions, &s), SYS_OK) << "region " << r;
  return s;
}

// On one host the ranks go leaf by leaf: a leaf scheduler, then its
// workers; the levels above take the last ranks. With one scheduler: rank 0,
// then the workers in rank order.
TEST(Workers, LayoutIsLeafByLeafInRankOrder) {
  int rank = -1, world = 0, wrank = -1, wsize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(sys_worker_comm(), &wrank);
  MPI_Comm_size(sys_worker_comm(), &wsize);
  const int nsched = TreeShape::from_env(0).nsched;
  const TreeShape t = TreeShape::from_env(world - nsched);
  const int id = sys_worker_id();
  int leaf = 0;
  while (id >= t.leaf_first[size_t(leaf)] + t.leaf_workers[size_t(leaf)]) leaf++;
  EXPECT_EQ(rank, t.leaf_first[size_t(leaf)] + leaf + 1 + (id - t.leaf_first[size_t(leaf)]));
  EXPECT_EQ(sys_num_workers(), world - nsched);
  EXPECT_EQ(wrank, id);
  EXPECT_EQ(wsize, sys_num_workers());
}

TEST(Regions, RallocUnderRootAndNestedGivesDistinctIdsOnEveryWorker) {
  const rid_t top = sys_ralloc(0, 0);
  ASSERT_GT(top, 0);
  const rid_t child = sys_ralloc(top, 0);
  ASSERT_GT(child, 0);
  const rid_t grandchild = sys_ralloc(child, 2);
  ASSERT_GT(grandchild, 0);
  const rid_t hinted = sys_ralloc(0, 1);
  ASSERT_GT(hinted, 0);
  const std::vector<rid_t> mine = {top, child, grandchild, hinted};
  EXPECT_EQ(std::set<rid_t>(mine.begin(), mine.end()).size(), mine.size());

  // Region IDs are global: no two workers are given the same one.
  std::vector<rid_t> all(mine.size() * size_t(nworkers()));
  MPI_Allgather(mine.data(), int(mine.size()), MPI_INT64_T, all.data(), int(mine.size()), MPI_INT64_T,
                sys_worker_comm());
  EXPECT_EQ(std::set<rid_t>(all.begin(), all.end()).size(), all.size());

  // An object in each level of the tree, each keeping its bytes.
  std::vector<void *> objs;
  for (size_t i = 0; i < mine.size(); i++) {
    void *p = sys_alloc(300, mine[i]);
    ASSERT_NE(p, nullptr) << "region " << mine[i] << ": " << sys_strerror(sys_last_error());
    fill_pattern(p, 300, seed_of(uint64_t(me()), i));
    objs.push_back(p);
  }
  for (size_t i = 0; i < objs.size(); i++) EXPECT_TRUE(HasPattern(objs[i], 300, seed_of(uint64_t(me()), i)));

  EXPECT_EQ(stats_of(top, 1).subregions, 2);
  EXPECT_EQ(stats_of(child, 1).subregions, 1);
  EXPECT_EQ(stats_of(grandchild, 1).subregions, 0);
  EXPECT_EQ(stats_of(top, 1).live_objects, 3);
  EXPECT_EQ(stats_of(top, 0).live_objects, 1);
  EXPECT_EQ(sys_rfree(top), SYS_OK);
  EXPECT_EQ(sys_rfree(hinted), SYS_OK);
}

TEST(Regions, FreeingASubRegionFreesItsChildrenAndKeepsItsParent) {
  const rid_t top = sys_ralloc(0, 0);
  ASSERT_GT(top, 0);
  const rid_t mid = sys_ralloc(top, 0);
  ASSERT_GT(mid, 0);
  const rid_t leaf = sys_ralloc(mid, 0);
  ASSERT_GT(leaf, 0);
  const rid_t leaf_sibling = sys_ralloc(mid, 0);
  ASSERT_GT(leaf_sibling, 0);
  const rid_t other = sys_ralloc(top, 0);
  ASSERT_GT(other, 0);

  std::vector<void *> kept;
  for (int i = 0; i < 20; i++) {
    void *p = sys_alloc(size_t(64 + 40 * i), i % 2 ? top : other);
    ASSERT_NE(p, nullptr);
    fill_pattern(p, size_t(64 + 40 * i), seed_of(uint64_t(me()), uint64_t(i)));
    kept.push_back(p);
    ASSERT_NE(sys_alloc(100, i % 3 == 0 ? mid : i % 3 == 1 ? leaf : leaf_sibling), nullptr);
  }
  EXPECT_EQ(stats_of(top, 1).subregions, 4);

  EXPECT_EQ(sys_rfree(mid), SYS_OK);
  {
    FrozenIds frozen;
    for (rid_t gone : {mid, leaf, leaf_sibling}) {
      EXPECT_EQ(sys_alloc(64, gone), nullptr) << "region " << gone;
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      EXPECT_EQ(sys_ralloc(gone, 0), SYS_ERR_NOREGION);
      EXPECT_EQ(sys_rfree(gone), SYS_ERR_NOREGION);
      sys_region_stats_t s;
      EXPECT_EQ(sys_region_stats(gone, 1, &s), SYS_ERR_NOREGION);
    }
  }

  // The parent and its other child are untouched and still serve.
  for (size_t i = 0; i < kept.size(); i++)
    EXPECT_TRUE(HasPattern(kept[i], 64 + 40 * i, seed_of(uint64_t(me()), i)));
  EXPECT_EQ(stats_of(top, 1).subregions, 1);
  EXPECT_EQ(stats_of(top, 0).live_objects, 10);
  EXPECT_EQ(stats_of(other, 0).live_objects, 10);
  void *p = sys_alloc(64, other);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(sys_rfree(top), SYS_OK);
  FrozenIds frozen;
  EXPECT_EQ(sys_alloc(64, other), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
}

TEST(Regions, RootRegionServesObjects) {
  std::vector<void *> objs;
  for (int i = 0; i < 50; i++) {
    void *p = sys_alloc(size_t(1 + 97 * i), 0);
    ASSERT_NE(p, nullptr);
    fill_pattern(p, size_t(1 + 97 * i), seed_of(uint64_t(me()), uint64_t(i)));
    objs.push_back(p);
  }
  for (size_t i = 0; i < objs.size(); i++) {
    EXPECT_TRUE(HasPattern(objs[i], 1 + 97 * i, seed_of(uint64_t(me()), i)));
    EXPECT_EQ(sys_free(objs[i]), SYS_OK);
  }
}

TEST(Regions, NoAddressIsGivenToTwoWorkers) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  std::vector<std::pair<uint64_t, uint64_t>> mine;
  for (int i = 0; i < 300; i++) {
    const size_t size = i % 10 == 0 ? 20000 : size_t(8 + 13 * i);
    void *p = sys_alloc(size, i % 2 ? r : 0);
    ASSERT_NE(p, nullptr);
    mine.push_back({word_of(p), word_of(p) + sys_usable_size(p)});
  }
  EXPECT_EQ(first_overlap(gather_intervals(mine)), "");
  for (const auto &iv : mine) EXPECT_EQ(sys_free(ptr_of<void>(iv.first)), SYS_OK);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

// No slab holds a slot and a send would move nothing.
void expect_holds_nothing(const sys_region_stats_t &s) {
  EXPECT_EQ(s.live_objects, 0);
  EXPECT_EQ(s.live_bytes, 0);
  EXPECT_EQ(s.slabs_full, 0);
  EXPECT_EQ(s.slabs_partial, 0);
  EXPECT_EQ(s.transfer_bytes, 0);
  EXPECT_EQ(s.transfer_ranges, 0);
}

TEST(Stats, EmptyRegionHoldsNothing) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  const sys_region_stats_t s = stats_of(r, 1);
  expect_holds_nothing(s);
  EXPECT_EQ(s.subregions, 0);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(Stats, CountLiveObjectsAndBytesThroughAllocationsAndFrees) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  const rid_t sub = sys_ralloc(r, 0);
  ASSERT_GT(sub, 0);
  std::vector<void *> objs;
  int64_t bytes = 0;
  for (int i = 0; i < 40; i++) {
    void *p = sys_alloc(size_t(30 + 50 * i), r);
    ASSERT_NE(p, nullptr);
    bytes += int64_t(sys_usable_size(p));
    objs.push_back(p);
  }
  int64_t sub_bytes = 0;
  for (int i = 0; i < 7; i++) {
    void *p = sys_alloc(1000, sub);
    ASSERT_NE(p, nullptr);
    sub_bytes += int64_t(sys_usable_size(p));
  }

  sys_region_stats_t s = stats_of(r, 0);
  EXPECT_EQ(s.live_objects, 40);
  EXPECT_EQ(s.live_bytes, bytes);
  EXPECT_GE(s.slabs_full + s.slabs_partial, 1);
  EXPECT_GT(s.transfer_bytes, 0);
  EXPECT_EQ(s.transfer_bytes % 4096, 0);
  EXPECT_GE(s.transfer_bytes, s.live_bytes);
  EXPECT_GE(s.transfer_ranges, 1);

  const sys_region_stats_t all = stats_of(r, 1);
  EXPECT_EQ(all.live_objects, 47);
  EXPECT_EQ(all.live_bytes, bytes + sub_bytes);
  EXPECT_GT(all.transfer_bytes, s.transfer_bytes);
  EXPECT_EQ(all.transfer_bytes % 4096, 0);
  EXPECT_EQ(all.subregions, 1);

  for (size_t i = 0; i < objs.size(); i += 2) {
    bytes -= int64_t(sys_usable_size(objs[i]));
    ASSERT_EQ(sys_free(objs[i]), SYS_OK);
  }
  s = stats_of(r, 0);
  EXPECT_EQ(s.live_objects, 20);
  EXPECT_EQ(s.live_bytes, bytes);
  for (size_t i = 1; i < objs.size(); i += 2) ASSERT_EQ(sys_free(objs[i]), SYS_OK);
  expect_holds_nothing(stats_of(r, 0));
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(Stats, LargeObjectSlabsCountAsFullAndTravel) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  void *big = sys_alloc(size_t(1) << 20, r);
  ASSERT_NE(big, nullptr);
  const sys_region_stats_t s = stats_of(r, 0);
  EXPECT_EQ(s.live_objects, 1);
  EXPECT_GE(s.live_bytes, int64_t(1) << 20);
  EXPECT_GE(s.slabs_full, (int64_t(1) << 20) / 4096);
  EXPECT_GE(s.transfer_bytes, int64_t(1) << 20);
  EXPECT_EQ(s.transfer_bytes % 4096, 0);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

}  // namespace
