/* SPDX-License-Identifier: Apache-2.0 */
// mpi_remote_free.cc: objects freed by a worker other than the one that
// allocated them. With leases (the default) worker 0 hands out their slots
// itself; worker 1's frees go through the scheduler into the slab's remote
// bits, and reach worker 0 with its next reply. Without leases every free is
// the scheduler's anyway: the same expectations hold.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <algorithm>
#include <set>
#include <vector>

#include "pattern.h"
#include "workers.h"

using namespace mmdtest;

namespace {

constexpr int kObjects = 600;
constexpr size_t kSize = 192;

int64_t live_objects(rid_t r) {
  sys_region_stats_t s;
  EXPECT_EQ(sys_region_stats(r, 0, &s), SYS_OK);
  return s.live_objects;
}

// Worker 0 allocates, sends the region and its objects to worker 1, which
// frees every other one (and one of them twice). Worker 0 then sees those
// slots free: its own frees of them fail, its stats count the rest, and its
// new allocations reuse the slots without touching a live object.
TEST(RemoteFree, FreesByAnotherWorkerReachTheSlabsHolder) {
  if (me() > 1) return;
  std::vector<void *> objs(kObjects, nullptr);
  rid_t r = 0;
  if (me() == 0) {
    r = sys_ralloc(0, 0);
    ASSERT_GT(r, 0);
    for (int i = 0; i < kObjects; i++) {
      objs[size_t(i)] = sys_alloc(kSize, r);
      ASSERT_NE(objs[size_t(i)], nullptr);
      fill_pattern(objs[size_t(i)], kSize, seed_of(0, uint64_t(i)));
    }
    ASSERT_EQ(sys_send(1, &r, 1, objs.data(), kObjects), SYS_OK);
    recv_words(1);   // worker 1 has freed its half
  } else {
    ASSERT_EQ(sys_recv(0, &r, 1, objs.data(), kObjects), SYS_OK);
    for (int i = 0; i < kObjects; i += 2) {
      ASSERT_TRUE(HasPattern(objs[size_t(i)], kSize, seed_of(0, uint64_t(i))));
      ASSERT_EQ(sys_free(objs[size_t(i)]), SYS_OK) << i;
    }
    EXPECT_EQ(sys_free(objs[0]), SYS_ERR_FREED) << "a second free by the same worker";
    send_words(0, {1});
  }
  if (me() == 1) return;

  // This round trip brings worker 0 the remote frees.
  EXPECT_EQ(live_objects(r), kObjects / 2);
  EXPECT_EQ(sys_free(objs[2]), SYS_ERR_FREED) << "a slot another worker freed";
  std::set<void *> live;
  for (int i = 1; i < kObjects; i += 2) live.insert(objs[size_t(i)]);
  for (int i = 0; i < kObjects / 2; i++) {
    void *p = sys_alloc(kSize, r);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(live.insert(p).second) << "a live object handed out again";
  }
  for (int i = 1; i < kObjects; i += 2)
    EXPECT_TRUE(HasPattern(objs[size_t(i)], kSize, seed_of(0, uint64_t(i)))) << i;
  EXPECT_EQ(live_objects(r), kObjects);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

}  // namespace
