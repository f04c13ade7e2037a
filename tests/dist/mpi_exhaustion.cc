/* SPDX-License-Identifier: Apache-2.0 */
// mpi_exhaustion.cc: a global space of 64 MiB (CTest sets
// MANYMALLOC_DIST_SPACE=64M) run out of by all workers at once: allocation
// ends in SYS_ERR_NOMEM without a crash, every object handed out before is
// whole and nobody else's, and freeing gives the space back.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <vector>

#include "exhaustion_regions.h"
#include "pattern.h"
#include "workers.h"

using namespace mmdtest;

namespace {

constexpr size_t kSpace = size_t(64) << 20;

struct Obj {
  void *p;
  size_t size;
  uint64_t seed;
};

// Allocates objects of size in r until one fails; each is filled. Fails the
// case if the allocator hands out more than the space holds.
void fill_until_nomem(rid_t r, size_t size, std::vector<Obj> *objs) {
  for (size_t n = 0;; n++) {
    ASSERT_LE(n, kSpace / size) << "more " << size << "-B objects than the space holds";
    void *p = sys_alloc(size, r);
    if (!p) {
      ASSERT_EQ(sys_last_error(), SYS_ERR_NOMEM) << size << " B";
      return;
    }
    const uint64_t seed = seed_of(uint64_t(me()), objs->size());
    fill_pattern(p, size, seed);
    objs->push_back({p, size, seed});
  }
}

TEST(Exhaustion, AllWorkersRunOutThenFreeingGivesTheSpaceBack) {
  rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  std::vector<Obj> objs;
  for (size_t size : {size_t(256) << 10, size_t(16) << 10, size_t(1) << 10})
    ASSERT_NO_FATAL_FAILURE(fill_until_nomem(r, size, &objs));
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // Every object is whole and no address went to two workers.
  std::vector<std::pair<uint64_t, uint64_t>> mine;
  int64_t bytes = 0;
  for (const Obj &o : objs) {
    EXPECT_TRUE(HasPattern(o.p, o.size, o.seed));
    mine.push_back({word_of(o.p), word_of(o.p) + sys_usable_size(o.p)});
    bytes += int64_t(mine.back().second - mine.back().first);
  }
  EXPECT_EQ(first_overlap(gather_intervals(mine)), "");
  int64_t total = 0;
  MPI_Allreduce(&bytes, &total, 1, MPI_INT64_T, MPI_SUM, sys_worker_comm());
  EXPECT_LE(total, int64_t(kSpace));
  EXPECT_GE(total, int64_t(kSpace) / 2) << "less than half the space could be allocated";

  // A region asked for now either comes or says NOMEM; either way nothing
  // breaks, and an allocation in it succeeds or says NOMEM.
  const rid_t late = sys_ralloc(0, 0);
  EXPECT_TRUE(late > 0 || late == SYS_ERR_NOMEM) << sys_strerror(int(late));
  if (late > 0) {
    void *p = sys_alloc(size_t(256) << 10, late);
    EXPECT_TRUE(p != nullptr || sys_last_error() == SYS_ERR_NOMEM) << sys_strerror(sys_last_error());
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // Half the objects freed: the region serves again from what it got back.
  std::vector<Obj> kept;
  for (size_t i = 0; i < objs.size(); i++) {
    if (i % 2) {
      kept.push_back(objs[i]);
    } else {
      ASSERT_EQ(sys_free(objs[i].p), SYS_OK);
    }
  }
  void *again = sys_alloc(size_t(256) << 10, r);
  ASSERT_NE(again, nullptr) << sys_strerror(sys_last_error());
  fill_pattern(again, size_t(256) << 10, 1);
  for (const Obj &o : kept) EXPECT_TRUE(HasPattern(o.p, o.size, o.seed));
  EXPECT_TRUE(HasPattern(again, size_t(256) << 10, 1));

  // Every region freed: a new one takes a quarter of the space.
  ASSERT_EQ(sys_rfree(r), SYS_OK);
  if (late > 0) EXPECT_EQ(sys_rfree(late), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0) << sys_strerror(int(r));
  const size_t share = kSpace / 4 / size_t(nworkers());
  for (size_t got = 0; got < share; got += size_t(1) << 20) {
    void *p = sys_alloc(size_t(1) << 20, r);
    ASSERT_NE(p, nullptr) << "after " << got << " B: " << sys_strerror(sys_last_error());
    fill_pattern(p, size_t(1) << 20, got);
  }
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
}

TEST(Exhaustion, BallocBeyondTheSpaceAllocatesNothing) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  if (me() == 0) {
    std::vector<void *> objs(100, nullptr);
    EXPECT_EQ(sys_balloc(size_t(1) << 20, r, 100, objs.data()), SYS_ERR_NOMEM);
    sys_region_stats_t s;
    ASSERT_EQ(sys_region_stats(r, 0, &s), SYS_OK);
    EXPECT_EQ(s.live_objects, 0);
    EXPECT_EQ(sys_balloc(size_t(1) << 20, r, 8, objs.data()), SYS_OK)
        << "what the failed balloc took is back";
    for (int i = 0; i < 8; i++) fill_pattern(objs[size_t(i)], size_t(1) << 20, uint64_t(i));
    for (int i = 0; i < 8; i++) EXPECT_TRUE(HasPattern(objs[size_t(i)], size_t(1) << 20, uint64_t(i)));
  }
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(Exhaustion, RegionsUntilTheSpaceRunsOutThenAllFreed) { RegionsUntilTheSpaceRunsOut(kSpace); }

}  // namespace
