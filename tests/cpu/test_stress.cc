/* SPDX-License-Identifier: Apache-2.0 */
// Multi-threaded stress: 16 threads allocate blocks of random sizes, tag
// them, free their own, and hand blocks to each other through shared inboxes
// so that a large share of frees is remote. Two independent checks catch a
// block handed out twice: a concurrent set of live addresses (an address
// returned while still live fails at once) and, between phases, a sorted sweep
// of every live block for overlapping ranges. Tags catch stray writes. A
// second run does the same with large blocks only, which the threads' frees
// cache for one another.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "support/tagged_block.h"
#include "support/test_sizes.h"

using namespace mmtest;

namespace {

constexpr int kMaxThreads = 16;
constexpr size_t kReallocLimit = 4096;  // realloc'd blocks stay fully tagged

// The addresses of all live blocks, sharded so that the check itself does not
// serialise the threads.
class LiveSet {
 public:
  bool insert(void *p) {
    Shard &s = shard(p);
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.set.insert(p).second;
  }
  bool erase(void *p) {
    Shard &s = shard(p);
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.set.erase(p) == 1;
  }

 private:
  struct Shard {
    std::mutex mutex;
    std::unordered_set<void *> set;
  };
  static constexpr size_t kShards = 64;
  Shard &shard(void *p) { return shards_[(reinterpret_cast<uintptr_t>(p) >> 4) % kShards]; }
  Shard shards_[kShards];
};

// Blocks handed to a thread by the others; it frees or adopts them.
struct Inbox {
  std::mutex mutex;
  std::vector<Block> blocks;
};

// Failures seen by the worker threads, reported by the test thread.
class Failures {
 public:
  void add(const std::string &what) {
    count_++;
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_.size() < 10) first_.push_back(what);
  }
  void report() {
    for (const std::string &f : first_) ADD_FAILURE() << f;
    EXPECT_EQ(count_.load(), 0) << "failures in worker threads";
  }

 private:
  std::atomic<long> count_{0};
  std::mutex mutex_;
  std::vector<std::string> first_;
};

struct Shared {
  LiveSet live;
  Inbox inbox[kMaxThreads];
  Failures failures;
};

std::string describe(const char *what, const Block &b) {
  char buf[160];
  snprintf(buf, sizeof buf, "%s: block %p size %zu owner %u seq %u", what, b.p, b.size,
           unsigned(b.tag >> 32), unsigned(b.tag));
  return buf;
}

// Mostly small sizes, some medium, a few spans and, rarer, large blocks
// (mappings of their own, which the threads' frees cache for one another).
size_t random_size(std::mt19937_64 &rng) {
  const unsigned kind = rng() % 1000;
  if (kind < 900) return 16 + rng() % 1009;
  if (kind < 990) return KiB + rng() % (63 * KiB);
  if (kind < 998) return 64 * KiB + rng() % (960 * KiB);
  return MiB + 1 + rng() % (7 * MiB);
}

// Large blocks only, on both sides of the 8 MiB up to which the cache takes
// every freed mapping (above it, only what its room allows).
size_t random_large_size(std::mt19937_64 &rng) { return MiB + 1 + rng() % (11 * MiB); }

// Large blocks of 1-32 MiB: a small one takes the front of a big cached
// mapping (the rest cached apart), and the front joins the rest again at
// its free, while other threads take and free either part.
size_t random_split_size(std::mt19937_64 &rng) { return MiB + 1 + rng() % (31 * MiB); }

// Span blocks of 32 KiB - 768 KiB beside small blocks: with more threads
// than MANYMALLOC_SHRINK_THREADS, the heap's growth is owed and matched
// from the free runs left once the purge delay is over, while the threads
// cut, free and merge runs (and hand them over) meanwhile.
size_t random_span_size(std::mt19937_64 &rng) {
  return rng() % 10 < 7 ? 32 * KiB + 1 + rng() % (736 * KiB) : 16 + rng() % (4 * KiB);
}

// What a run does: its threads, phases, operations per thread and phase,
// the live blocks a thread keeps at most, and the sizes it asks for.
struct Profile {
  int threads, phases, ops_per_phase;
  size_t max_owned;
  size_t (*size)(std::mt19937_64 &);
};

constexpr Profile kMixed{kMaxThreads, 4, 25000, 600, random_size};
constexpr Profile kLargeOnly{8, 3, 200, 4, random_large_size};
constexpr Profile kLargeSplit{4, 3, 150, 2, random_split_size};
constexpr Profile kSpans{8, 3, 4000, 100, random_span_size};

class Worker {
 public:
  Worker(Shared &shared, const Profile &profile, uint32_t id) : shared_(shared), profile_(profile), id_(id) {}

  void run_phase(int phase) {
    std::mt19937_64 rng(id_ * 1000003u + uint32_t(phase));
    for (int op = 0; op < profile_.ops_per_phase; op++) {
      const unsigned kind = rng() % 100;
      if (kind < 45 && owned_.size() < profile_.max_owned)
        allocate(rng);
      else if (kind < 52 && !owned_.empty())
        reallocate(rng);
      else if (kind < 77 && !owned_.empty())
        release(take(rng() % owned_.size()));
      else if (kind < 95 && !owned_.empty())
        hand_over(take(rng() % owned_.size()), (id_ + 1 + rng() % (profile_.threads - 1)) % profile_.threads);
      else
        drain_inbox(rng);
      // Now and then return cached memory while the others keep going.
      if (op % 5000 == 4999) mm_collect();
    }
  }

  // Frees everything it holds or was handed; the other threads are done.
  void finish() {
    for (const Block &b : receive()) release(b);
    while (!owned_.empty()) release(take(owned_.size() - 1));
  }

  const std::vector<Block> &owned() const { return owned_; }

 private:
  uint64_t next_tag() { return tag_make(id_, seq_++); }

  // Mostly malloc; some calloc (recycled memory must come back zeroed) and
  // some aligned blocks, which take other paths through the allocator.
  void allocate(std::mt19937_64 &rng) {
    const size_t size = profile_.size(rng);
    const unsigned api = rng() % 20;
    const size_t alignment = size_t(32) << (rng() % 8);
    Block b{api == 0   ? mm_calloc(1, size)
            : api == 1 ? mm_aligned_alloc(alignment, size)
                       : mm_malloc(size),
            size, next_tag()};
    if (b.p == nullptr) return shared_.failures.add("allocation returned NULL");
    if (!shared_.live.insert(b.p)) shared_.failures.add(describe("address handed out twice", b));
    if (api == 0 && !zeroed(b)) shared_.failures.add(describe("calloc block not zeroed", b));
    if (api == 1 && reinterpret_cast<uintptr_t>(b.p) % alignment != 0)
      shared_.failures.add(describe("aligned block misaligned", b));
    tag_fill(b.p, b.size, b.tag);
    owned_.push_back(b);
  }

  static bool zeroed(const Block &b) {
    const unsigned char *p = static_cast<const unsigned char *>(b.p);
    return std::all_of(p, p + b.size, [](unsigned char c) { return c == 0; });
  }

  // Grows or shrinks a small block; the kept prefix must survive the move.
  void reallocate(std::mt19937_64 &rng) {
    Block &b = owned_[rng() % owned_.size()];
    if (b.size > kReallocLimit) return;
    if (!block_intact(b)) shared_.failures.add(describe("corrupted before realloc", b));
    const size_t size = 1 + rng() % kReallocLimit;
    shared_.live.erase(b.p);
    void *q = mm_realloc(b.p, size);
    if (q == nullptr) return shared_.failures.add("realloc returned NULL");
    const Block moved{q, size, b.tag};
    if (!tag_check(q, std::min(size, b.size), b.tag))
      shared_.failures.add(describe("realloc lost content", moved));
    if (!shared_.live.insert(q))
      shared_.failures.add(describe("realloc gave a live address", moved));
    b = {q, size, next_tag()};
    tag_fill(b.p, b.size, b.tag);
  }

  Block take(size_t index) {
    const Block b = owned_[index];
    owned_[index] = owned_.back();
    owned_.pop_back();
    return b;
  }

  void release(const Block &b) {
    if (!block_intact(b)) shared_.failures.add(describe("corrupted block", b));
    if (!shared_.live.erase(b.p)) shared_.failures.add(describe("freed block was not live", b));
    mm_free(b.p);
  }

  void hand_over(const Block &b, uint32_t to) {
    Inbox &inbox = shared_.inbox[to];
    std::lock_guard<std::mutex> lock(inbox.mutex);
    inbox.blocks.push_back(b);
  }

  std::vector<Block> receive() {
    std::vector<Block> received;
    Inbox &inbox = shared_.inbox[id_];
    std::lock_guard<std::mutex> lock(inbox.mutex);
    received.swap(inbox.blocks);
    return received;
  }

  // Frees most blocks received, keeps some to free later among its own.
  void drain_inbox(std::mt19937_64 &rng) {
    for (const Block &b : receive()) {
      if (rng() % 4 == 0 && owned_.size() < profile_.max_owned)
        owned_.push_back(b);
      else
        release(b);
    }
  }

  Shared &shared_;
  const Profile &profile_;
  uint32_t id_;
  uint32_t seq_ = 0;
  std::vector<Block> owned_;
};

// Every live block, owned or in transit, sorted by address: neighbours must
// not overlap and every tag must be intact.
void check_live_blocks(Shared &shared, const std::vector<Worker> &workers) {
  std::vector<Block> all;
  for (const Worker &w : workers) all.insert(all.end(), w.owned().begin(), w.owned().end());
  for (Inbox &inbox : shared.inbox) all.insert(all.end(), inbox.blocks.begin(), inbox.blocks.end());
  std::sort(all.begin(), all.end(), [](const Block &a, const Block &b) { return a.p < b.p; });
  for (size_t i = 0; i < all.size(); i++) {
    EXPECT_TRUE(block_intact(all[i])) << describe("corrupted", all[i]);
    if (i + 1 < all.size()) {
      const uintptr_t end = reinterpret_cast<uintptr_t>(all[i].p) + all[i].size;
      EXPECT_LE(end, reinterpret_cast<uintptr_t>(all[i + 1].p))
          << describe("overlaps the next block", all[i]) << "; " << describe("next", all[i + 1]);
    }
  }
}

void run_stress(const Profile &profile) {
  Shared shared;
  std::vector<Worker> workers;
  for (uint32_t id = 0; id < uint32_t(profile.threads); id++) workers.emplace_back(shared, profile, id);
  mm_stats_t before, after;
  mm_stats_get(&before);
  for (int phase = 0; phase < profile.phases; phase++) {
    // Threads are new in every phase: blocks outlive the threads that made them.
    std::vector<std::thread> threads;
    for (Worker &w : workers) threads.emplace_back([&w, phase] { w.run_phase(phase); });
    for (std::thread &t : threads) t.join();
    check_live_blocks(shared, workers);
  }
  for (Worker &w : workers) w.finish();
  mm_stats_get(&after);
  shared.failures.report();
  // Every block is freed, most of them remotely: the counters must know. The
  // slack is for the test's own containers when malloc is manymalloc too.
  EXPECT_LE(after.bytes_in_use, before.bytes_in_use + MiB)
      << "in use before: " << before.bytes_in_use << ", after: " << after.bytes_in_use;
  EXPECT_GE(after.bytes_in_use_peak, before.bytes_in_use + size_t(profile.threads) * KiB);
}

TEST(Stress, ThreadsWithRemoteFreesNeverShareABlock) { run_stress(kMixed); }

// 8 threads of large blocks only: the cache, its bound and the room it gets
// while many threads have heaps, shared by threads that free each other's
// blocks and, at each phase's end, exit holding theirs.
TEST(Stress, ThreadsWithRemoteFreesOfLargeBlocksNeverShareOne) { run_stress(kLargeOnly); }

// 4 threads of large blocks of 1-32 MiB: cached mappings cut for smaller
// blocks and joined again at their frees, across threads.
TEST(Stress, LargeMappingsSplitAndJoinedAcrossThreadsNeverShareABlock) { run_stress(kLargeSplit); }

// 8 threads of span blocks: growth owed and matched after the delay from
// runs that other frees keep changing.
TEST(Stress, SpanGrowthMatchedAfterTheDelayNeverTouchesALiveBlock) { run_stress(kSpans); }

}  // namespace
