/* SPDX-License-Identifier: Apache-2.0 */
// mpi_errors.cc: every documented failure returns its code, and the
// allocator keeps serving after it: each case ends by allocating, writing
// and freeing again (still_serving). Run with MANYMALLOC_DIST_QUIET=1; the
// error line itself is mpi_error_line.cc's.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "manifest.h"
#include "pattern.h"
#include "workers.h"

using namespace mmdtest;

namespace {

// A region ID no one was given: far above any that a test allocates.
constexpr rid_t kNeverAllocated = rid_t(1) << 40;

// The allocator still serves: a region, objects of several sizes written and
// checked, freed, and the region freed.
void still_serving() {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0) << sys_strerror(int(r));
  std::vector<void *> objs;
  for (size_t i = 0; i < 8; i++) {
    const size_t size = size_t(32) << i;
    void *p = sys_alloc(size, i % 2 ? r : 0);
    ASSERT_NE(p, nullptr) << sys_strerror(sys_last_error());
    fill_pattern(p, size, seed_of(uint64_t(me()), 77 + i));
    objs.push_back(p);
  }
  for (size_t i = 0; i < objs.size(); i++) {
    EXPECT_TRUE(HasPattern(objs[i], size_t(32) << i, seed_of(uint64_t(me()), 77 + i)));
    EXPECT_EQ(sys_free(objs[i]), SYS_OK);
  }
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(Errors, FreeOfAStackOrMallocPointerIsNotGlobal) {
  int on_stack = 0;
  EXPECT_EQ(sys_free(&on_stack), SYS_ERR_NOTGLOBAL);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOTGLOBAL);
  void *m = malloc(100);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(sys_free(m), SYS_ERR_NOTGLOBAL);
  free(m);
  EXPECT_EQ(sys_usable_size(&on_stack), 0u);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOTGLOBAL);
  EXPECT_EQ(sys_free(nullptr), SYS_OK);
  still_serving();
}

TEST(Errors, FreeInsideAnObjectIsNotAnObject) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  unsigned char *p = static_cast<unsigned char *>(sys_alloc(256, r));
  ASSERT_NE(p, nullptr);
  fill_pattern(p, 256, 5);
  unsigned char *big = static_cast<unsigned char *>(sys_alloc(100000, r));
  ASSERT_NE(big, nullptr);
  for (unsigned char *inside : {p + 1, p + 64, p + 255, big + 4096, big + 64})
    EXPECT_EQ(sys_free(inside), SYS_ERR_NOTOBJECT) << static_cast<void *>(inside);
  EXPECT_EQ(sys_usable_size(p + 64), 0u);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOTOBJECT);
  // The object itself was not touched.
  EXPECT_TRUE(HasPattern(p, 256, 5));
  EXPECT_EQ(sys_free(p), SYS_OK);
  EXPECT_EQ(sys_free(big), SYS_OK);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  still_serving();
}

TEST(Errors, DoubleFreeIsFreed) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  void *keep = sys_alloc(128, r);  // keeps the slab in use
  void *p = sys_alloc(128, r);
  ASSERT_NE(keep, nullptr);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(sys_free(p), SYS_OK);
  EXPECT_EQ(sys_free(p), SYS_ERR_FREED);
  EXPECT_EQ(sys_last_error(), SYS_ERR_FREED);
  EXPECT_EQ(sys_usable_size(p), 0u);
  EXPECT_EQ(sys_last_error(), SYS_ERR_FREED);
  sys_region_stats_t s;
  ASSERT_EQ(sys_region_stats(r, 0, &s), SYS_OK);
  EXPECT_EQ(s.live_objects, 1);
  // The slot is handed out again after all, once.
  void *again = sys_alloc(128, r);
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again, keep);
  EXPECT_EQ(sys_free(again), SYS_OK);
  EXPECT_EQ(sys_free(keep), SYS_OK);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  still_serving();
}

TEST(Errors, AllocInANonexistentOrFreedRegionIsNoRegion) {
  EXPECT_EQ(sys_alloc(64, kNeverAllocated), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  ASSERT_NE(sys_alloc(64, r), nullptr);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  {
    FrozenIds frozen;
    EXPECT_EQ(sys_alloc(64, r), nullptr);
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
    EXPECT_EQ(sys_alloc(100000, r), nullptr);
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
    void *objs[4] = {nullptr, nullptr, nullptr, nullptr};
    EXPECT_EQ(sys_balloc(64, r, 4, objs), SYS_ERR_NOREGION);
    EXPECT_EQ(sys_ralloc(r, 0), SYS_ERR_NOREGION);
    EXPECT_EQ(sys_ralloc(kNeverAllocated, 0), SYS_ERR_NOREGION);
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
    sys_region_stats_t s;
    EXPECT_EQ(sys_region_stats(r, 0, &s), SYS_ERR_NOREGION);
    EXPECT_EQ(sys_region_stats(kNeverAllocated, 1, &s), SYS_ERR_NOREGION);
  }
  still_serving();
}

TEST(Errors, RfreeOfAFreedRegionIsNoRegionAndOfTheRootIsRoot) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  {
    FrozenIds frozen;
    EXPECT_EQ(sys_rfree(r), SYS_ERR_NOREGION);
  }
  EXPECT_EQ(sys_rfree(kNeverAllocated), SYS_ERR_NOREGION);
  EXPECT_EQ(sys_rfree(0), SYS_ERR_ROOT);
  EXPECT_EQ(sys_last_error(), SYS_ERR_ROOT);
  // The root and what is in it survive the attempt.
  void *p = sys_alloc(64, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(sys_free(p), SYS_OK);
  still_serving();
}

TEST(Errors, BadArgumentsAreArg) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  EXPECT_EQ(sys_alloc(0, r), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_ARG);
  void *objs[4] = {nullptr, nullptr, nullptr, nullptr};
  EXPECT_EQ(sys_balloc(0, r, 4, objs), SYS_ERR_ARG);
  EXPECT_EQ(sys_balloc(64, r, 4, nullptr), SYS_ERR_ARG);
  EXPECT_EQ(sys_balloc(64, r, -1, objs), SYS_ERR_ARG);
  EXPECT_EQ(sys_region_stats(r, 0, nullptr), SYS_ERR_ARG);
  // Sizes past the space: out of memory, not a slot size that wraps to 0.
  for (size_t huge : {SIZE_MAX, SIZE_MAX - 63, size_t(1) << 62}) {
    EXPECT_EQ(sys_alloc(huge, r), nullptr) << huge;
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOMEM) << huge;
    EXPECT_EQ(sys_balloc(huge, r, 4, objs), SYS_ERR_NOMEM) << huge;
  }
  void *keep = sys_alloc(64, r);
  ASSERT_NE(keep, nullptr);
  EXPECT_EQ(sys_realloc(keep, SIZE_MAX, r), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOMEM);
  EXPECT_EQ(sys_free(keep), SYS_OK) << "a failed realloc freed the object";
  sys_region_stats_t s;
  ASSERT_EQ(sys_region_stats(r, 0, &s), SYS_OK);
  EXPECT_EQ(s.live_objects, 0) << "a failed balloc allocated objects";
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  still_serving();
}

TEST(Errors, FailedReallocLeavesTheObjectAsItWas) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  void *p = sys_alloc(300, r);
  ASSERT_NE(p, nullptr);
  fill_pattern(p, 300, 9);
  EXPECT_EQ(sys_realloc(p, 600, kNeverAllocated), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
  EXPECT_GE(sys_usable_size(p), 300u);
  EXPECT_TRUE(HasPattern(p, 300, 9));
  int on_stack = 0;
  EXPECT_EQ(sys_realloc(&on_stack, 100, r), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOTGLOBAL);
  EXPECT_EQ(sys_realloc(static_cast<char *>(p) + 64, 100, r), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOTOBJECT);
  EXPECT_TRUE(HasPattern(p, 300, 9));
  EXPECT_EQ(sys_free(p), SYS_OK);
  EXPECT_EQ(sys_realloc(p, 100, r), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_FREED);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  still_serving();
}

TEST(Errors, SendOfAnUnknownRegionFailsOnBothSides) {
  if (me() == 0) {
    rid_t regs[1] = {kNeverAllocated};
    EXPECT_EQ(sys_send(1, regs, 1, nullptr, 0), SYS_ERR_NOREGION);
    rid_t freed = sys_ralloc(0, 0);
    ASSERT_GT(freed, 0);
    ASSERT_EQ(sys_rfree(freed), SYS_OK);
    EXPECT_EQ(sys_send(1, &freed, 1, nullptr, 0), SYS_ERR_NOREGION);
  } else if (me() == 1) {
    rid_t reg = 0;
    EXPECT_EQ(sys_recv(0, &reg, 1, nullptr, 0), SYS_ERR_PEER);
    EXPECT_EQ(sys_recv(0, &reg, 1, nullptr, 0), SYS_ERR_PEER);
  }
  // The pair still talks afterwards.
  rid_t r = 0;
  if (me() <= 1) {
    Manifest m;
    if (me() == 0) {
      r = sys_ralloc(0, 0);
      ASSERT_GT(r, 0);
      void *p = sys_alloc(1000, r);
      ASSERT_NE(p, nullptr);
      m.fill(p, 1000, 11);
      send_manifest(1, m);
      EXPECT_EQ(sys_send(1, &r, 1, nullptr, 0), SYS_OK);
    } else {
      m = recv_manifest(0);
      EXPECT_EQ(sys_recv(0, &r, 1, nullptr, 0), SYS_OK);
      EXPECT_TRUE(m.intact());
    }
  }
  sys_barrier();
  if (me() == 0) EXPECT_EQ(sys_rfree(r), SYS_OK);
  still_serving();
}

TEST(Errors, SendOfAnObjectThatIsNotLiveFailsOnBothSides) {
  if (me() == 0) {
    const rid_t r = sys_ralloc(0, 0);
    ASSERT_GT(r, 0);
    void *keep = sys_alloc(512, r);
    void *gone = sys_alloc(512, r);
    ASSERT_NE(keep, nullptr);
    ASSERT_NE(gone, nullptr);
    ASSERT_EQ(sys_free(gone), SYS_OK);
    void *bad[2] = {keep, gone};
    EXPECT_EQ(sys_send(1, nullptr, 0, bad, 2), SYS_ERR_FREED);
    void *inside[1] = {static_cast<char *>(keep) + 64};
    EXPECT_EQ(sys_send(1, nullptr, 0, inside, 1), SYS_ERR_NOTOBJECT);
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else if (me() == 1) {
    void *objs[2];
    EXPECT_EQ(sys_recv(0, nullptr, 0, objs, 2), SYS_ERR_PEER);
    EXPECT_EQ(sys_recv(0, nullptr, 0, objs, 2), SYS_ERR_PEER);
  }
  still_serving();
}

TEST(Errors, RecvIntoArraysTooSmallIsTruncateButTheDataArrives) {
  if (me() == 0) {
    Manifest m;
    std::vector<rid_t> regs;
    std::vector<void *> loose;
    for (int i = 0; i < 3; i++) {
      regs.push_back(sys_ralloc(0, 0));
      ASSERT_GT(regs.back(), 0);
      for (int j = 0; j < 5; j++) {
        void *p = sys_alloc(size_t(100 * (j + 1)), regs.back());
        ASSERT_NE(p, nullptr);
        m.fill(p, size_t(100 * (j + 1)), seed_of(0, uint64_t(10 * i + j)));
        if (j == 0) loose.push_back(p);
      }
    }
    send_manifest(1, m);
    send_words(1, {uint64_t(regs[0]), uint64_t(regs[1]), word_of(loose[0])});
    EXPECT_EQ(sys_send(1, regs.data(), 3, loose.data(), 3), SYS_OK);
    sys_barrier();
    for (rid_t r : regs) EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else {
    if (me() == 1) {
      const Manifest m = recv_manifest(0);
      const std::vector<uint64_t> first = recv_words(0);
      rid_t regs[2] = {0, 0};
      void *objs[1] = {nullptr};
      EXPECT_EQ(sys_recv(0, regs, 2, objs, 1), SYS_ERR_TRUNCATE);
      EXPECT_EQ(sys_last_error(), SYS_ERR_TRUNCATE);
      EXPECT_EQ(regs[0], rid_t(first[0]));
      EXPECT_EQ(regs[1], rid_t(first[1]));
      EXPECT_EQ(objs[0], ptr_of<void>(first[2]));
      EXPECT_TRUE(m.intact()) << "all three regions arrive though two are named";
    }
    sys_barrier();
  }
  still_serving();
}

TEST(Errors, InvalidPeerIsPeer) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  rid_t regs[1] = {r};
  for (int peer : {-1, nworkers(), nworkers() + 5, -1000}) {
    EXPECT_EQ(sys_send(peer, regs, 1, nullptr, 0), SYS_ERR_PEER) << "to " << peer;
    rid_t got = 0;
    EXPECT_EQ(sys_recv(peer, &got, 1, nullptr, 0), SYS_ERR_PEER) << "from " << peer;
  }
  EXPECT_EQ(sys_last_error(), SYS_ERR_PEER);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  still_serving();
}

TEST(Errors, RegionFreedByAnotherWorkerIsGoneForAllocationsAfterABarrier) {
  // Worker 0 makes the regions and frees them; worker 1 allocates in them
  // (on the lease path, from memory it holds) before the free.
  rid_t regs[2] = {0, 0};
  std::vector<void *> mine;
  if (me() == 0) {
    regs[0] = sys_ralloc(0, 0);
    ASSERT_GT(regs[0], 0);
    regs[1] = sys_ralloc(regs[0], 0);
    ASSERT_GT(regs[1], 0);
    ASSERT_EQ(sys_send(1, regs, 2, nullptr, 0), SYS_OK);
  } else if (me() == 1) {
    ASSERT_EQ(sys_recv(0, regs, 2, nullptr, 0), SYS_OK);
    for (int i = 0; i < 50; i++) {
      void *p = sys_alloc(size_t(64 + 64 * (i % 5)), regs[i % 2]);
      ASSERT_NE(p, nullptr) << sys_strerror(sys_last_error());
      fill_pattern(p, 64, uint64_t(i));
      mine.push_back(p);
    }
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);
  if (me() == 0) EXPECT_EQ(sys_rfree(regs[0]), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  if (me() == 1) {
    for (rid_t r : regs) {
      EXPECT_EQ(sys_alloc(64, r), nullptr) << "region " << r;
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      EXPECT_EQ(sys_alloc(64000, r), nullptr);
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      EXPECT_EQ(sys_ralloc(r, 0), SYS_ERR_NOREGION);
    }
    // Its objects went with the region; nothing else has been allocated
    // since, so the old addresses are not live objects.
    const int rc = sys_free(mine[0]);
    EXPECT_TRUE(rc == SYS_ERR_FREED || rc == SYS_ERR_NOTOBJECT) << sys_strerror(rc);
    EXPECT_EQ(sys_rfree(regs[0]), SYS_ERR_NOREGION);
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);
  still_serving();
}

TEST(Errors, StrerrorNamesEveryCodeDistinctly) {
  std::set<std::string> names;
  for (int code = SYS_OK; code >= SYS_ERR_ROOT; code--) {
    const char *s = sys_strerror(code);
    ASSERT_NE(s, nullptr) << code;
    EXPECT_NE(std::string(s), "") << code;
    names.insert(s);
  }
  EXPECT_EQ(names.size(), size_t(1 - SYS_ERR_ROOT));
  EXPECT_NE(sys_strerror(-999), nullptr);
  EXPECT_NE(sys_strerror(42), nullptr);
}

}  // namespace
