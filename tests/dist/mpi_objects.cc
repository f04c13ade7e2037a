/* SPDX-License-Identifier: Apache-2.0 */
// mpi_objects.cc: objects inside regions: sys_usable_size, sys_realloc in
// place, across sizes and across regions, and sys_balloc. Each worker works
// in regions of its own, all workers at once.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <algorithm>
#include <set>
#include <vector>

#include "pattern.h"
#include "workers.h"

using namespace mmdtest;

namespace {

int64_t live_objects(rid_t r) {
  sys_region_stats_t s;
  EXPECT_EQ(sys_region_stats(r, 0, &s), SYS_OK);
  return s.live_objects;
}

uint64_t seed(uint64_t serial) { return seed_of(uint64_t(me()), serial); }

TEST(Objects, UsableSizeCoversTheRequestAndAllOfItIsWritable) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  const std::vector<size_t> sizes = {1, 63, 64, 65, 100, 1000, 4000, 4096, 5000, 50048, size_t(1) << 20};
  std::vector<void *> objs;
  std::vector<size_t> usable;
  for (size_t i = 0; i < sizes.size(); i++) {
    void *p = sys_alloc(sizes[i], r);
    ASSERT_NE(p, nullptr) << sizes[i] << " B";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << sizes[i] << " B";
    const size_t u = sys_usable_size(p);
    EXPECT_GE(u, sizes[i]);
    EXPECT_EQ(u % 64, 0u) << sizes[i] << " B: usable " << u;
    objs.push_back(p);
    usable.push_back(u);
  }
  // The whole slot of each is its own: writing every byte of every one
  // leaves all the others intact.
  for (size_t i = 0; i < objs.size(); i++) fill_pattern(objs[i], usable[i], seed(i));
  for (size_t i = 0; i < objs.size(); i++) EXPECT_TRUE(HasPattern(objs[i], usable[i], seed(i)));
  for (void *p : objs) EXPECT_EQ(sys_free(p), SYS_OK);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

// Keeps a live neighbour in the same slab as the object it reallocates, so
// that the old slot cannot become part of the new object: freeing the old
// pointer after a move must then say SYS_ERR_FREED.
struct ReallocCase {
  rid_t r = 0;
  void *neighbour = nullptr;
  size_t neighbour_size = 0;
  void *p = nullptr;
  size_t size = 0;

  void start(size_t first_size) {
    r = sys_ralloc(0, 0);
    ASSERT_GT(r, 0);
    neighbour = sys_alloc(first_size, r);
    ASSERT_NE(neighbour, nullptr);
    neighbour_size = first_size;
    fill_pattern(neighbour, neighbour_size, seed(1000));
    p = sys_alloc(first_size, r);
    ASSERT_NE(p, nullptr);
    size = first_size;
    fill_pattern(p, size, seed(1001));
  }

  // Resizes p within its region and checks what must hold either way.
  void resize(size_t new_size) {
    void *q = sys_realloc(p, new_size, r);
    ASSERT_NE(q, nullptr) << size << " -> " << new_size << ": " << sys_strerror(sys_last_error());
    EXPECT_GE(sys_usable_size(q), new_size);
    EXPECT_TRUE(HasPattern(q, std::min(size, new_size), seed(1001))) << size << " -> " << new_size;
    if (q != p) EXPECT_EQ(sys_free(p), SYS_ERR_FREED) << "old pointer after a move";
    EXPECT_EQ(live_objects(r), 2);
    p = q;
    size = new_size;
    fill_pattern(p, size, seed(1001));
    EXPECT_TRUE(HasPattern(neighbour, neighbour_size, seed(1000)));
  }

  void finish() {
    EXPECT_EQ(sys_free(p), SYS_OK);
    EXPECT_EQ(sys_free(neighbour), SYS_OK);
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  }
};

TEST(Objects, ReallocWithinTheSlotKeepsThePointer) {
  ReallocCase c;
  ASSERT_NO_FATAL_FAILURE(c.start(100));
  const size_t slot = sys_usable_size(c.p);
  void *before = c.p;
  // Growing up to the slot's size and shrinking within it fit where the
  // object is: the header allows a move, but copying an object that fits
  // would make every such realloc a round trip and a copy for nothing.
  ASSERT_NO_FATAL_FAILURE(c.resize(slot));
  EXPECT_EQ(c.p, before);
  ASSERT_NO_FATAL_FAILURE(c.resize(slot - 63));
  EXPECT_EQ(c.p, before);
  c.finish();
}

TEST(Objects, ReallocGrowsAndShrinksAcrossSizesKeepingContents) {
  ReallocCase c;
  ASSERT_NO_FATAL_FAILURE(c.start(100));
  for (size_t s : {size_t(10000), size_t(50048), size_t(1) << 20, size_t(3000), size_t(64), size_t(200)})
    ASSERT_NO_FATAL_FAILURE(c.resize(s));
  c.finish();
}

TEST(Objects, ReallocToAnotherRegionMovesTheObject) {
  ReallocCase c;
  ASSERT_NO_FATAL_FAILURE(c.start(300));
  const rid_t dest = sys_ralloc(0, 0);
  ASSERT_GT(dest, 0);
  void *q = sys_realloc(c.p, 500, dest);
  ASSERT_NE(q, nullptr) << sys_strerror(sys_last_error());
  EXPECT_NE(q, c.p);
  EXPECT_TRUE(HasPattern(q, 300, seed(1001)));
  EXPECT_GE(sys_usable_size(q), 500u);
  EXPECT_EQ(live_objects(c.r), 1);
  EXPECT_EQ(live_objects(dest), 1);
  EXPECT_EQ(sys_free(c.p), SYS_ERR_FREED);

  // Same size, other region: a move too.
  void *back = sys_realloc(q, 500, c.r);
  ASSERT_NE(back, nullptr);
  EXPECT_NE(back, q);
  EXPECT_TRUE(HasPattern(back, 300, seed(1001)));
  EXPECT_EQ(live_objects(c.r), 2);
  EXPECT_EQ(live_objects(dest), 0);
  EXPECT_EQ(sys_free(q), SYS_ERR_FREED);

  // Freeing the region the object went to frees it with it.
  void *again = sys_realloc(back, 700, dest);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(sys_rfree(dest), SYS_OK);
  EXPECT_EQ(live_objects(c.r), 1);
  c.p = nullptr;
  c.finish();
}

TEST(Objects, ReallocOfNullAllocatesAndToSizeZeroFrees) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  void *p = sys_realloc(nullptr, 700, r);
  ASSERT_NE(p, nullptr);
  EXPECT_GE(sys_usable_size(p), 700u);
  EXPECT_EQ(live_objects(r), 1);
  fill_pattern(p, 700, seed(1));
  EXPECT_TRUE(HasPattern(p, 700, seed(1)));

  EXPECT_EQ(sys_realloc(p, 0, r), nullptr);
  EXPECT_EQ(live_objects(r), 0);
  EXPECT_EQ(sys_free(p), SYS_ERR_FREED);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(Objects, BallocGivesDistinctAlignedWritableObjects) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  constexpr int kCount = 1000;
  constexpr size_t kSize = 200;
  std::vector<void *> objs(kCount, nullptr);
  ASSERT_EQ(sys_balloc(kSize, r, kCount, objs.data()), SYS_OK);
  EXPECT_EQ(live_objects(r), kCount);

  std::vector<std::pair<uintptr_t, size_t>> spans;
  for (int i = 0; i < kCount; i++) {
    ASSERT_NE(objs[size_t(i)], nullptr) << i;
    const uintptr_t a = reinterpret_cast<uintptr_t>(objs[size_t(i)]);
    EXPECT_EQ(a % 64, 0u) << i;
    const size_t u = sys_usable_size(objs[size_t(i)]);
    EXPECT_GE(u, kSize) << i;
    spans.push_back({a, u});
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); i++)
    EXPECT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first) << "objects overlap";

  for (int i = 0; i < kCount; i++) fill_pattern(objs[size_t(i)], kSize, seed(uint64_t(i)));
  for (int i = 0; i < kCount; i++) EXPECT_TRUE(HasPattern(objs[size_t(i)], kSize, seed(uint64_t(i))));
  for (int i = 0; i < kCount; i += 2) ASSERT_EQ(sys_free(objs[size_t(i)]), SYS_OK);
  EXPECT_EQ(live_objects(r), kCount / 2);
  for (int i = 1; i < kCount; i += 2) EXPECT_TRUE(HasPattern(objs[size_t(i)], kSize, seed(uint64_t(i))));

  // A second batch of large objects in the same region.
  std::vector<void *> big(8, nullptr);
  ASSERT_EQ(sys_balloc(50048, r, 8, big.data()), SYS_OK);
  for (size_t i = 0; i < big.size(); i++) fill_pattern(big[i], 50048, seed(5000 + i));
  for (size_t i = 0; i < big.size(); i++) EXPECT_TRUE(HasPattern(big[i], 50048, seed(5000 + i)));
  EXPECT_EQ(std::set<void *>(big.begin(), big.end()).size(), big.size());
  EXPECT_EQ(live_objects(r), kCount / 2 + 8);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

// More objects than one reply carries through the scheduler (2^20): all of
// them, each once, and each writable to its last byte.
TEST(Objects, BallocOfMoreThanOneReplyHolds) {
  if (me() != 0) return;
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  constexpr int kCount = (1 << 20) + 4321;
  std::vector<void *> objs(kCount, nullptr);
  ASSERT_EQ(sys_balloc(64, r, kCount, objs.data()), SYS_OK);
  EXPECT_EQ(live_objects(r), kCount);
  std::vector<void *> sorted(objs);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "an object handed out twice";
  EXPECT_NE(sorted.front(), nullptr);
  for (int i = 0; i < kCount; i++) static_cast<uint64_t *>(objs[size_t(i)])[7] = uint64_t(i);
  for (int i = 0; i < kCount; i++) ASSERT_EQ(static_cast<uint64_t *>(objs[size_t(i)])[7], uint64_t(i)) << i;
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

}  // namespace
