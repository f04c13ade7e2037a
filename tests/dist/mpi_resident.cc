// mpi_resident.cc: copies of regions that a worker received, and regions it
// freed itself, go back to the OS once they are dead. Worker 0 sends 200
// regions of 4 MiB to worker 1 and frees each after sending it; between
// rounds it keeps untouched filler objects alive, so that the freed space is
// taken by them and each new region lands at new addresses. If dead copies
// stayed, worker 1 would end with some 800 MiB resident.
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
constexpr int64_t kBound = int64_t(64) << 20;

TEST(Resident, DeadCopiesAndFreedRegionsGoBackToTheOs) {
  if (me() > 1) return;
  int64_t baseline = 0, peak = 0;
  std::set<uint64_t> addresses;  // distinct addresses of received objects
  if (me() == 0) {
    // Every region is built first, at addresses of its own; nothing is
    // allocated afterwards, so no live region takes over a freed one's
    // memory and each copy the receiver holds is dead once it is freed.
    std::vector<rid_t> regions;
    std::vector<Manifest> manifests(kRounds);
    for (int round = 0; round < kRounds; round++) {
      regions.push_back(sys_ralloc(0, 0));
      ASSERT_GT(regions.back(), 0) << "round " << round;
      for (int j = 0; j < kObjectsPerRound; j++) {
        void *p = sys_alloc(kObject, regions.back());
        ASSERT_NE(p, nullptr) << "round " << round;
        manifests[round].fill(p, kObject, seed_of(uint64_t(round), uint64_t(j)));
      }
    }
    for (int round = 0; round < kRounds; round++) {
      rid_t r = regions[round];
      send_manifest(1, manifests[round]);
      ASSERT_EQ(sys_send(1, &r, 1, nullptr, 0), SYS_OK) << "round " << round;
      recv_words(1);
      ASSERT_EQ(sys_rfree(r), SYS_OK) << "round " << round;
      if (round == kWarmup) baseline = resident_bytes();
      // The sender's own pages go back with each sys_rfree.
      if (round >= kWarmup) peak = std::max(peak, resident_bytes() - (int64_t(kRounds - round) << 22));
    }
  } else {
    for (int round = 0; round < kRounds; round++) {
      const Manifest m = recv_manifest(0);
      rid_t r = 0;
      ASSERT_EQ(sys_recv(0, &r, 1, nullptr, 0), SYS_OK) << "round " << round;
      // Not fatal: worker 0 waits for the word that follows.
      EXPECT_TRUE(m.intact()) << "round " << round;
      send_words(0, {uint64_t(round)});
      for (size_t i = 0; i < m.count(); i++) addresses.insert(word_of(m.address(i)));
      if (round == kWarmup) baseline = resident_bytes();
      if (round >= kWarmup) peak = std::max(peak, resident_bytes());
    }
    // Without new addresses each round, a receiver that never gave a copy
    // back would pass as well: the test needs them.
    EXPECT_GE(int64_t(addresses.size() * kObject), int64_t(256) << 20)
        << "the regions reused too few addresses apart for this test to tell";
  }
  ASSERT_GT(baseline, 0);
  EXPECT_LT(peak - baseline, kBound) << "worker " << me() << ": resident grew from " << (baseline >> 20)
                                     << " MiB to " << (peak >> 20) << " MiB over the rounds";
}

}  // namespace
