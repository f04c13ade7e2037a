/* SPDX-License-Identifier: Apache-2.0 */
// mpi_tree_exhaustion.cc: a global space of 64 MiB (CTest sets
// MANYMALLOC_DIST_SPACE=64M) under a tree of schedulers, which trade it in
// 1 MiB pages. Every worker runs out (SYS_ERR_NOMEM, nothing crashes, every
// object whole and nobody else's); the workers of the first leaf free all
// they hold, and the workers of the last leaf get that memory (it flows
// back up and down another branch); then everything freed, every worker
// gets a share again, on its leaf and on the top.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <vector>

#include "exhaustion_regions.h"
#include "pattern.h"
#include "tree_shape.h"
#include "workers.h"

using namespace mmdtest;

namespace {

constexpr size_t kSpace = size_t(64) << 20;
constexpr size_t MiB = size_t(1) << 20;

const TreeShape &shape() {
  static const TreeShape s = TreeShape::from_env(nworkers());
  return s;
}
int my_leaf() { return shape().leaf_of_worker(me()); }

struct Obj {
  void *p;
  size_t size;
  uint64_t seed;
};

// Allocates objects of size in r until one fails with SYS_ERR_NOMEM (or
// limit bytes are reached); each is filled. Returns the bytes allocated.
size_t fill_until_nomem(rid_t r, size_t size, std::vector<Obj> *objs, size_t limit = kSpace) {
  size_t got = 0;
  for (size_t n = 0; got < limit; n++) {
    EXPECT_LE(n, kSpace / size) << "more " << size << "-B objects than the space holds";
    if (n > kSpace / size) break;
    void *p = sys_alloc(size, r);
    if (!p) {
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOMEM) << size << " B in region " << r;
      break;
    }
    const uint64_t seed = seed_of(uint64_t(me()) << 20 | size, objs->size());
    fill_pattern(p, size, seed);
    objs->push_back({p, size, seed});
    got += sys_usable_size(p);
  }
  return got;
}

int64_t sum_over_workers(int64_t v) {
  int64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT64_T, MPI_SUM, sys_worker_comm());
  return s;
}

void check_whole_and_disjoint(const std::vector<Obj> &objs) {
  std::vector<std::pair<uint64_t, uint64_t>> mine;
  for (const Obj &o : objs) {
    EXPECT_TRUE(HasPattern(o.p, o.size, o.seed));
    mine.push_back({word_of(o.p), word_of(o.p) + sys_usable_size(o.p)});
  }
  EXPECT_EQ(first_overlap(gather_intervals(mine)), "");
}

TEST(TreeExhaustion, FreedMemoryServesAnotherLeaf) {
  const TreeShape &t = shape();
  const bool first_leaf = my_leaf() == t.leaf_sched(0);
  const bool last_leaf = my_leaf() == t.leaf_sched(t.nleaves - 1);

  // Everyone runs out: big objects on its leaf, then in a region on the top,
  // then small ones on its leaf.
  const rid_t leaf = sys_ralloc(0, 0), top = sys_ralloc(0, 1);
  ASSERT_GT(leaf, 0) << sys_strerror(int(leaf));
  ASSERT_GT(top, 0) << sys_strerror(int(top));
  sys_region_stats_t s;
  ASSERT_EQ(sys_region_stats(leaf, 0, &s), SYS_OK);
  EXPECT_EQ(s.scheduler, my_leaf());
  ASSERT_EQ(sys_region_stats(top, 0, &s), SYS_OK);
  EXPECT_EQ(s.scheduler, 0);
  std::vector<Obj> objs;
  size_t mine = 0;
  mine += fill_until_nomem(leaf, MiB, &objs);
  mine += fill_until_nomem(top, 256 << 10, &objs);
  mine += fill_until_nomem(leaf, 16 << 10, &objs);
  mine += fill_until_nomem(leaf, 1 << 10, &objs);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  check_whole_and_disjoint(objs);
  const int64_t total = sum_over_workers(int64_t(mine));
  EXPECT_LE(total, int64_t(kSpace));
  EXPECT_GE(total, int64_t(kSpace) / 2) << "less than half the space could be allocated";

  // Still out of memory, everywhere, for a new 1 MiB object.
  EXPECT_EQ(sys_alloc(MiB, leaf), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOMEM);
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // The first leaf's workers free everything.
  sys_sched_stats_t before;
  ASSERT_EQ(sys_sched_stats(&before), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  int64_t freed = 0;
  if (first_leaf) {
    freed = int64_t(mine);
    ASSERT_EQ(sys_rfree(leaf), SYS_OK);
    ASSERT_EQ(sys_rfree(top), SYS_OK);
    objs.clear();
  }
  freed = sum_over_workers(freed);
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // The last leaf's workers get that memory, in their leaf's region.
  int64_t regained = 0;
  std::vector<Obj> more;
  if (last_leaf && !first_leaf) regained = int64_t(fill_until_nomem(leaf, MiB, &more, size_t(freed)));
  if (last_leaf && t.nleaves == 1) {
    const rid_t again = sys_ralloc(0, 0);
    ASSERT_GT(again, 0) << sys_strerror(int(again));
    regained = int64_t(fill_until_nomem(again, MiB, &more, size_t(freed) / size_t(nworkers())));
    EXPECT_EQ(sys_rfree(again), SYS_OK);
    more.clear();
  }
  regained = sum_over_workers(regained);
  EXPECT_GE(regained, freed / 2) << "of " << freed << " B freed on the first leaf, the last leaf got " << regained;
  for (const Obj &o : more) EXPECT_TRUE(HasPattern(o.p, o.size, o.seed));
  if (!first_leaf) check_whole_and_disjoint(objs);
  else check_whole_and_disjoint({});
  sys_sched_stats_t after;
  ASSERT_EQ(sys_sched_stats(&after), SYS_OK);
  if (t.levels() > 1) EXPECT_GT(after.returns, before.returns) << "no memory went back up the tree";
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // Everything freed: every worker gets a quarter of its share on its leaf,
  // and as much again on the top.
  if (!first_leaf) {
    ASSERT_EQ(sys_rfree(leaf), SYS_OK);
    ASSERT_EQ(sys_rfree(top), SYS_OK);
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);
  const size_t share = kSpace / 4 / size_t(nworkers());
  for (int hint : {0, 1}) {
    const rid_t r = sys_ralloc(0, hint);
    ASSERT_GT(r, 0) << sys_strerror(int(r));
    for (size_t got = 0; got < share; got += MiB) {
      void *p = sys_alloc(MiB, r);
      ASSERT_NE(p, nullptr) << "hint " << hint << ", after " << got << " B: " << sys_strerror(sys_last_error());
      fill_pattern(p, MiB, got);
    }
    std::vector<void *> small(64, nullptr);
    ASSERT_EQ(sys_balloc(512, r, 64, small.data()), SYS_OK) << sys_strerror(sys_last_error());
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);
}

TEST(TreeExhaustion, RegionsUntilTheSpaceRunsOutThenAllFreed) { RegionsUntilTheSpaceRunsOut(kSpace); }

}  // namespace
