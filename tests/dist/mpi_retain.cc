/* SPDX-License-Identifier: Apache-2.0 */
// mpi_retain.cc: freed memory a worker retains (retain.c), run with a short
// MANYMALLOC_DIST_RETAIN_MS. Two workers rebuild, swap and free regions
// round after round at the addresses the last round freed, pausing at random
// so that retained memory is given back at every point of a round: memory
// allocated or received again must never go with it. Then one worker checks
// that a freed region's pages stay until two turns of the delay have passed
// and are gone after.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "manifest.h"
#include "pattern.h"
#include "rss.h"
#include "workers.h"

using namespace mmdtest;

namespace {

int retain_ms() {
  const char *v = getenv("MANYMALLOC_DIST_RETAIN_MS");
  return v ? atoi(v) : 0;
}

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A region of objects of random sizes, some from one sys_balloc, filled.
rid_t build(int round, std::mt19937_64 &rng, Manifest &m) {
  rid_t r = sys_ralloc(0, 0);
  if (r <= 0) return r;
  std::uniform_int_distribution<int> size(1, 160);
  for (int j = 0; j < 96; j++) {
    size_t bytes = size_t(size(rng)) * 64;
    void *p = sys_alloc(bytes, r);
    if (p == nullptr) return SYS_ERR_NOMEM;
    m.fill(p, bytes, seed_of(uint64_t(me() * 1000 + round), uint64_t(j)));
  }
  void *objs[32];
  if (sys_balloc(256, r, 32, objs) != SYS_OK) return SYS_ERR_NOMEM;
  for (int j = 0; j < 32; j++) m.fill(objs[j], 256, seed_of(uint64_t(me() * 1000 + round), uint64_t(100 + j)));
  return r;
}

TEST(Retain, MemoryUsedAgainIsNeverGivenBack) {
  ASSERT_GT(retain_ms(), 0) << "run with MANYMALLOC_DIST_RETAIN_MS set";
  if (me() > 1) return;
  const int peer = 1 - me();
  std::mt19937_64 rng(uint64_t(me()) + 5);
  std::uniform_int_distribution<int> pause(0, retain_ms());
  for (int round = 0; round < 60; round++) {
    Manifest mine;
    rid_t r = build(round, rng, mine);
    ASSERT_GT(r, 0) << "round " << round;
    pause_ms(pause(rng));
    ASSERT_TRUE(mine.intact()) << "round " << round << ": own region, before sending";
    send_manifest(peer, mine);
    const Manifest theirs = recv_manifest(peer);
    rid_t got = 0;
    ASSERT_EQ(sys_sendrecv(peer, &r, 1, nullptr, 0, &got, 1, nullptr, 0), SYS_OK) << "round " << round;
    ASSERT_TRUE(theirs.intact()) << "round " << round << ": received";
    pause_ms(pause(rng));
    ASSERT_EQ(sys_barrier(), SYS_OK);   // a call: retained memory may go here
    ASSERT_TRUE(theirs.intact()) << "round " << round << ": received, after a call";
    ASSERT_TRUE(mine.intact()) << "round " << round << ": own region, after a call";
    ASSERT_EQ(sys_barrier(), SYS_OK);   // both have read the other's copy
    ASSERT_EQ(sys_rfree(r), SYS_OK) << "round " << round;
  }
}

TEST(Retain, FreedPagesStayForTheDelayThenGoBack) {
  if (me() != 0) return;
  constexpr size_t kObject = size_t(64) << 10;
  constexpr int kObjects = 768;   // 48 MiB
  constexpr int64_t kBytes = int64_t(kObject) * kObjects, kSlack = int64_t(8) << 20;
  const int64_t before = resident_bytes();
  rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  for (int j = 0; j < kObjects; j++) {
    void *p = sys_alloc(kObject, r);
    ASSERT_NE(p, nullptr);
    fill_pattern(p, kObject, uint64_t(j));
  }
  const int64_t built = resident_bytes();
  ASSERT_GT(built - before, kBytes - kSlack);
  ASSERT_EQ(sys_rfree(r), SYS_OK);
  const int64_t freed = resident_bytes();
  EXPECT_GT(freed, built - kSlack) << "freed pages went back before the delay";
  sys_sched_stats_t st;
  for (int turn = 0; turn < 2; turn++) {   // each call after half the delay turns once
    pause_ms(retain_ms() + 10);
    ASSERT_EQ(sys_sched_stats(&st), SYS_OK);
  }
  const int64_t after = resident_bytes();
  EXPECT_LT(after, freed - kBytes + kSlack) << "freed pages stayed past the delay: " << (freed >> 20) << " MiB, then "
                                            << (after >> 20) << " MiB";
}

}  // namespace
