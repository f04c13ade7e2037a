/* SPDX-License-Identifier: Apache-2.0 */
// mpi_stress.cc: every worker runs a seeded random sequence of ralloc,
// rfree, alloc, free, realloc and balloc, then trades region trees and loose
// objects with a random partner, round after round, checked against its
// model (stress_model.h) at each checkpoint: every byte of every live
// object, the statistics of its own regions, and no address live in two
// places across all workers. MMD_STRESS_SEED and MMD_STRESS_ROUNDS change
// the run; a failure names the seed.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "pattern.h"
#include "stress_model.h"
#include "workers.h"

using namespace mmdtest;

namespace {

uint64_t env_or(const char *name, uint64_t fallback) {
  const char *s = getenv(name);
  return s && *s ? strtoull(s, nullptr, 0) : fallback;
}

constexpr int kOpsPerRound = 200;
constexpr size_t kMaxObjects = 500;  // beyond it, frees are preferred

class Stress {
 public:
  explicit Stress(uint64_t seed) : rng_(seed_of(seed, uint64_t(me()))), seed_(seed) {}

  StressModel model;

  // One random operation, checked.
  void step() {
    const int dice = int(rng_() % 100);
    if (dice < 8) return ralloc();
    if (dice < 11) return rfree();
    if (model.objects.empty()) return alloc();
    if (dice < 45 && model.objects.size() < kMaxObjects) return alloc();
    if (dice < 75) return free_one();
    if (dice < 90) return realloc();
    if (model.objects.size() < kMaxObjects) return balloc();
    free_one();
  }

  // Sends a top-level region tree (usually) and up to 3 loose objects to peer.
  void send_to(int peer) {
    std::vector<rid_t> tops;
    for (const auto &kv : model.regions)
      if (kv.second.parent == 0) tops.push_back(kv.first);
    rid_t top = 0;
    if (!tops.empty() && rng_() % 5 != 0) top = tops[rng_() % tops.size()];
    const std::set<rid_t> tree = top ? model.subtree(top) : std::set<rid_t>{};

    std::vector<void *> loose;
    std::vector<uint64_t> loose_words;
    for (int i = 0, want = int(rng_() % 4); i < want && !model.objects.empty(); i++) {
      auto it = std::next(model.objects.begin(), long(rng_() % model.objects.size()));
      if (tree.count(it->second.region) || std::count(loose.begin(), loose.end(), ptr_of<void>(it->first)))
        continue;
      loose.push_back(ptr_of<void>(it->first));
      loose_words.insert(loose_words.end(), {it->first, uint64_t(it->second.usable), it->second.seed});
    }
    if (!top && loose.empty()) {  // something must travel
      ASSERT_NO_FATAL_FAILURE(alloc_in(0, 100));
      auto it = model.objects.begin();
      while (it->second.region != 0) ++it;
      loose.push_back(ptr_of<void>(it->first));
      loose_words.insert(loose_words.end(), {it->first, uint64_t(it->second.usable), it->second.seed});
    }
    send_words(peer, top ? model.export_subtree(top) : std::vector<uint64_t>{0});
    send_words(peer, loose_words);
    ASSERT_EQ(sys_send(peer, top ? &top : nullptr, top ? 1 : 0, loose.data(), int(loose.size())), SYS_OK)
        << "to worker " << peer << ", seed " << seed_;
  }

  // Receives what send_to sent: adopts the region tree, checks every byte.
  void recv_from(int peer) {
    const std::vector<uint64_t> tree = recv_words(peer);
    const std::vector<uint64_t> loose = recv_words(peer);
    rid_t regs[2] = {0, 0};
    void *objs[4] = {nullptr, nullptr, nullptr, nullptr};
    ASSERT_EQ(sys_recv(peer, regs, 2, objs, 4), SYS_OK) << "from worker " << peer << ", seed " << seed_;
    EXPECT_EQ(regs[0], tree[0] ? rid_t(tree[1]) : SYS_NO_REGION);
    EXPECT_EQ(regs[1], SYS_NO_REGION);
    for (size_t i = 0; i < 4; i++)
      EXPECT_EQ(objs[i], 3 * i < loose.size() ? ptr_of<void>(loose[3 * i]) : nullptr) << "object " << i;
    for (size_t i = 0; i + 3 <= loose.size(); i += 3)
      EXPECT_TRUE(HasPattern(ptr_of<void>(loose[i]), size_t(loose[i + 1]), loose[i + 2]))
          << "loose object from worker " << peer << ", seed " << seed_;
    StressModel arrived;
    arrived.import_subtree(tree);
    EXPECT_TRUE(arrived.intact()) << "region tree from worker " << peer << ", seed " << seed_;
    model.import_subtree(tree);
  }

  // Everything this worker holds, freed.
  void release_all() {
    while (!model.regions.empty()) {
      rid_t top = model.regions.begin()->first;
      while (model.regions.at(top).parent != 0) top = model.regions.at(top).parent;
      ASSERT_EQ(sys_rfree(top), SYS_OK);
      model.drop_subtree(top);
    }
    for (const auto &kv : model.objects) ASSERT_EQ(sys_free(ptr_of<void>(kv.first)), SYS_OK);
    model.objects.clear();
  }

 private:
  size_t size() {
    const int d = int(rng_() % 100);
    if (d < 60) return 1 + rng_() % 256;
    if (d < 85) return 257 + rng_() % 3840;
    if (d < 97) return 4097 + rng_() % 61440;
    return 65537 + rng_() % 234464;
  }

  rid_t region() {
    if (model.regions.empty() || rng_() % 4 == 0) return 0;
    return std::next(model.regions.begin(), long(rng_() % model.regions.size()))->first;
  }

  uint64_t next_seed() { return seed_of(uint64_t(me()) << 32 | seed_, serial_++); }

  void alloc_in(rid_t r, size_t bytes) {
    void *p = sys_alloc(bytes, r);
    ASSERT_NE(p, nullptr) << bytes << " B in " << r << ": " << sys_strerror(sys_last_error()) << ", seed "
                          << seed_;
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    ASSERT_GE(sys_usable_size(p), bytes);
    ASSERT_EQ(model.objects.count(word_of(p)), 0u) << p << " handed out twice, seed " << seed_;
    model.add_object(p, r, next_seed());
  }

  void alloc() { alloc_in(region(), size()); }

  void ralloc() {
    rid_t parent = region();
    const rid_t r = sys_ralloc(parent, int(rng_() % 3));
    ASSERT_GT(r, 0) << sys_strerror(int(r)) << ", seed " << seed_;
    ASSERT_EQ(model.regions.count(r), 0u) << "region " << r << " given twice";
    model.regions[r] = {parent, true};
  }

  void rfree() {
    if (model.regions.empty()) return;
    const rid_t r = std::next(model.regions.begin(), long(rng_() % model.regions.size()))->first;
    // What the freed ID answers now is not checked here: another worker's
    // sys_ralloc may already have it back (mpi_errors.cc checks it).
    ASSERT_EQ(sys_rfree(r), SYS_OK) << "region " << r << ", seed " << seed_;
    model.drop_subtree(r);
  }

  std::map<uint64_t, ModelObject>::iterator any_object() {
    return std::next(model.objects.begin(), long(rng_() % model.objects.size()));
  }

  void free_one() {
    auto it = any_object();
    ASSERT_TRUE(HasPattern(ptr_of<void>(it->first), it->second.usable, it->second.seed)) << "seed " << seed_;
    ASSERT_EQ(sys_free(ptr_of<void>(it->first)), SYS_OK) << "seed " << seed_;
    model.objects.erase(it);
  }

  void realloc() {
    auto it = any_object();
    const ModelObject old = it->second;
    const uint64_t at = it->first;
    const size_t bytes = size();
    const rid_t r = rng_() % 10 < 7 ? old.region : region();
    void *q = sys_realloc(ptr_of<void>(at), bytes, r);
    ASSERT_NE(q, nullptr) << sys_strerror(sys_last_error()) << ", seed " << seed_;
    ASSERT_GE(sys_usable_size(q), bytes);
    ASSERT_TRUE(HasPattern(q, std::min(old.usable, bytes), old.seed))
        << "contents after realloc, seed " << seed_;
    model.objects.erase(at);
    ASSERT_EQ(model.objects.count(word_of(q)), 0u) << q << " handed out twice, seed " << seed_;
    model.add_object(q, r, next_seed());
  }

  void balloc() {
    const int n = 1 + int(rng_() % 16);
    const size_t bytes = 1 + rng_() % 2048;
    const rid_t r = region();
    std::vector<void *> objs(static_cast<size_t>(n), nullptr);
    ASSERT_EQ(sys_balloc(bytes, r, n, objs.data()), SYS_OK)
        << sys_strerror(sys_last_error()) << ", seed " << seed_;
    for (void *p : objs) {
      ASSERT_GE(sys_usable_size(p), bytes);
      ASSERT_EQ(model.objects.count(word_of(p)), 0u) << p << " handed out twice, seed " << seed_;
      model.add_object(p, r, next_seed());
    }
  }

  std::mt19937_64 rng_;
  uint64_t seed_;
  uint64_t serial_ = 0;
};

// Every worker at once: bytes, statistics, and no live interval in two places.
void checkpoint(const Stress &s, const char *when, uint64_t seed) {
  EXPECT_TRUE(s.model.intact()) << when << ", seed " << seed;
  EXPECT_TRUE(s.model.stats_agree()) << when << ", seed " << seed;
  EXPECT_EQ(first_overlap(gather_intervals(s.model.intervals())), "") << when << ", seed " << seed;
  EXPECT_EQ(sys_barrier(), SYS_OK);
}

TEST(Stress, RandomWorkersAgainstTheirModels) {
  const uint64_t seed = env_or("MMD_STRESS_SEED", 1);
  const int rounds = int(env_or("MMD_STRESS_ROUNDS", 30));
  Stress s(seed);
  for (int round = 0; round < rounds; round++) {
    for (int i = 0; i < kOpsPerRound; i++) ASSERT_NO_FATAL_FAILURE(s.step()) << "round " << round;
    checkpoint(s, "after the operations", seed);

    // The same random pairing on every worker; an odd one out waits.
    std::vector<int> order(static_cast<size_t>(nworkers()));
    for (int w = 0; w < nworkers(); w++) order[size_t(w)] = w;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed_of(seed, uint64_t(round))));
    const size_t at = size_t(std::find(order.begin(), order.end(), me()) - order.begin());
    if ((at ^ 1) < order.size()) {
      const int peer = order[at ^ 1];
      if (at % 2 == 0) {
        ASSERT_NO_FATAL_FAILURE(s.send_to(peer));
        ASSERT_NO_FATAL_FAILURE(s.recv_from(peer));
      } else {
        ASSERT_NO_FATAL_FAILURE(s.recv_from(peer));
        ASSERT_NO_FATAL_FAILURE(s.send_to(peer));
      }
    }
    checkpoint(s, "after the exchange", seed);
  }
  ASSERT_NO_FATAL_FAILURE(s.release_all());
  EXPECT_EQ(sys_barrier(), SYS_OK);
  // Everything went back: each worker gets a fresh 4 MiB region.
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  void *p = sys_alloc(size_t(4) << 20, r);
  ASSERT_NE(p, nullptr);
  fill_pattern(p, size_t(4) << 20, 3);
  EXPECT_TRUE(HasPattern(p, size_t(4) << 20, 3));
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

}  // namespace
