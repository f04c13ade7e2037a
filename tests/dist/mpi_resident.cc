/* SPDX-License-Identifier: Apache-2.0 */
// mpi_resident.cc: copies of regions that a worker received, and regions it
// freed itself, go back to the OS once they are dead. Worker 0 sends regions
// of 4 MiB to worker 1, one a round, and frees each once worker 1 has checked
// it; each lands at new addresses. If dead copies stayed, worker 1 would end
// with every region it ever received resident. Run with
// MANYMALLOC_DIST_RETAIN_MS=0, so that dead memory goes back at once rather
// than after the retention delay (mpi_retain.cc tests that).
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <algorithm>
#include <set>
#include <vector>

#include "manifest.h"
#include "pattern.h"
#include "rss.h"
#include "workers.h"

using namespace mmdtest;

namespace {

constexpr int kRounds = 72;  // 288 MiB sent in all
constexpr int kWarmup = 10;  // rounds before the baseline, for MPI's own buffers
constexpr size_t kObject = size_t(64) << 10;
constexpr int kObjectsPerRound = 64;  // 4 MiB a round
constexpr int64_t kRegionBytes = int64_t(kObject) * kObjectsPerRound;
constexpr int64_t kBound = int64_t(64) << 20;

struct Growth {
  int64_t baseline = 0, peak = 0;
  // Resident bytes at this round, less what the caller says is still live.
  void sample(int round, int64_t live = 0) {
    if (round == kWarmup) baseline = resident_bytes() - live;
    if (round >= kWarmup) peak = std::max(peak, resident_bytes() - live);
  }
  void expect_bounded() const {
    ASSERT_GT(baseline, 0);
    EXPECT_LT(peak - baseline, kBound) << "worker " << me() << ": resident grew from " << (baseline >> 20)
                                       << " MiB to " << (peak >> 20) << " MiB over the rounds";
  }
};

rid_t build_region(int round, Manifest &m) {
  rid_t r = sys_ralloc(0, 0);
  for (int j = 0; r > 0 && j < kObjectsPerRound; j++) {
    void *p = sys_alloc(kObject, r);
    if (p == nullptr) return SYS_ERR_NOMEM;
    m.fill(p, kObject, seed_of(uint64_t(round), uint64_t(j)));
  }
  return r;
}

// Sends region r, waits for worker 1's check, frees r.
void send_and_free(int round, rid_t r, const Manifest &m) {
  send_manifest(1, m);
  ASSERT_EQ(sys_send(1, &r, 1, nullptr, 0), SYS_OK) << "round " << round;
  recv_words(1);
  ASSERT_EQ(sys_rfree(r), SYS_OK) << "round " << round;
}

// Worker 1's side of both tests: receive, check every byte, report back.
void receive_rounds() {
  Growth g;
  std::set<uint64_t> addresses;  // distinct addresses of received objects
  for (int round = 0; round < kRounds; round++) {
    const Manifest m = recv_manifest(0);
    rid_t r = 0;
    ASSERT_EQ(sys_recv(0, &r, 1, nullptr, 0), SYS_OK) << "round " << round;
    EXPECT_TRUE(m.intact()) << "round " << round;  // not fatal: worker 0 waits for the word
    send_words(0, {uint64_t(round)});
    for (size_t i = 0; i < m.count(); i++) addresses.insert(word_of(m.address(i)));
    g.sample(round);
  }
  // Without new addresses each round, a receiver that never gave a copy
  // back would pass as well: the test needs them.
  EXPECT_GE(int64_t(addresses.size() * kObject), int64_t(256) << 20)
      << "the regions reused too few addresses apart for this test to tell";
  g.expect_bounded();
}

// Every region is built first, at addresses of its own; nothing is allocated
// afterwards, so each copy worker 1 holds is dead once its region is freed.
TEST(Resident, DeadCopiesAndFreedRegionsGoBackToTheOs) {
  if (me() > 1) return;
  if (me() == 1) return receive_rounds();
  std::vector<rid_t> regions;
  std::vector<Manifest> manifests(kRounds);
  for (int round = 0; round < kRounds; round++) {
    regions.push_back(build_region(round, manifests[round]));
    ASSERT_GT(regions.back(), 0) << "round " << round;
  }
  Growth g;
  for (int round = 0; round < kRounds; round++) {
    ASSERT_NO_FATAL_FAILURE(send_and_free(round, regions[round], manifests[round]));
    g.sample(round, int64_t(kRounds - round - 1) * kRegionBytes);  // its own pages go with each sys_rfree
  }
  g.expect_bounded();
}

// Between rounds worker 0 grows a filler region it never writes, which takes
// over the memory of the regions freed before: worker 1's copies of that
// memory are dead too, though a live region now holds it.
TEST(Resident, CopiesOfMemoryAnotherRegionTookOverGoBack) {
  if (me() > 1) return;
  if (me() == 1) return receive_rounds();
  const rid_t filler = sys_ralloc(0, 0);
  ASSERT_GT(filler, 0);
  Growth g;
  for (int round = 0; round < kRounds; round++) {
    for (int i = 0; i < 4; i++) ASSERT_NE(sys_alloc(size_t(1) << 20, filler), nullptr) << "round " << round;
    Manifest m;
    rid_t r = build_region(round, m);
    ASSERT_GT(r, 0) << "round " << round;
    ASSERT_NO_FATAL_FAILURE(send_and_free(round, r, m));
    g.sample(round);
  }
  EXPECT_EQ(sys_rfree(filler), SYS_OK);
  g.expect_bounded();
}

}  // namespace
