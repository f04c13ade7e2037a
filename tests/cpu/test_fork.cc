/* SPDX-License-Identifier: Apache-2.0 */
// fork from a threaded program: worker threads allocate and free while the
// main thread forks; the child (one thread, whatever the others were doing
// inside the allocator) must be able to check, free and allocate blocks,
// including blocks the parent's workers made, start a thread, and exit.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "support/tagged_block.h"
#include "support/subprocess.h"
#include "support/test_sizes.h"

using namespace mmtest;

namespace {

constexpr int kWorkers = 4;
constexpr int kForks = 32;
constexpr size_t kPoolCapacity = 4096;

// Blocks shared by the workers. Its storage is reserved up front: no thread
// allocates through another allocator while the main thread forks.
struct Pool {
  std::mutex mutex;
  std::vector<Block> blocks;
};

size_t random_size(std::mt19937_64 &rng) {
  return rng() % 50 == 0 ? 64 * KiB + rng() % MiB : 1 + rng() % 2048;
}

void worker(Pool &pool, uint32_t id, const std::atomic<bool> &stop, std::atomic<long> &bad,
            std::atomic<int> &started) {
  started++;
  std::mt19937_64 rng(id);
  for (uint32_t seq = 0; !stop.load(std::memory_order_relaxed); seq++) {
    if (seq % 2000 == 1999) mm_collect();  // forks may land inside it too
    const size_t size = random_size(rng);
    Block b = block_new(size, tag_make(id, seq));
    if (b.p == nullptr) {
      bad++;
      continue;
    }
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.blocks.size() == kPoolCapacity) {
      // The pool is full: free a random block, usually one from another thread.
      Block &old = pool.blocks[rng() % kPoolCapacity];
      if (!block_intact(old)) bad++;
      mm_free(old.p);
      old = b;
    } else {
      pool.blocks.push_back(b);
    }
  }
}

// What the child checks, as its exit status.
enum ChildOutcome { kChildOk = 0, kChildCorrupted, kChildOutOfMemory };

int child_body(std::vector<Block> &blocks) {
  for (size_t i = 0; i < blocks.size(); i++) {
    if (!block_intact(blocks[i])) return kChildCorrupted;
    if (i % 2 == 0) mm_free(blocks[i].p);  // made by threads that do not exist here
  }
  std::atomic<int> outcome{kChildOk};
  auto churn = [&outcome](uint32_t id) {
    std::mt19937_64 rng(id);
    std::vector<Block> mine;
    for (uint32_t i = 0; i < 2000; i++) {
      const size_t size = random_size(rng);
      Block b = block_new(size, tag_make(id, i));
      if (b.p == nullptr) return outcome.store(kChildOutOfMemory);
      mine.push_back(b);
    }
    for (const Block &b : mine) {
      if (!block_intact(b)) outcome.store(kChildCorrupted);
      mm_free(b.p);
    }
  };
  std::thread t(churn, 1000);
  churn(1001);
  t.join();
  for (size_t i = 1; i < blocks.size(); i += 2) mm_free(blocks[i].p);
  return outcome.load();
}

TEST(Fork, ChildOfThreadedProgramCanAllocate) {
  Pool pool;
  pool.blocks.reserve(kPoolCapacity);
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0};
  std::atomic<int> started{0};
  std::vector<std::thread> workers;
  for (uint32_t id = 0; id < kWorkers; id++)
    workers.emplace_back(worker, std::ref(pool), id, std::cref(stop), std::ref(bad),
                         std::ref(started));
  // Thread start-up allocates through the process's malloc, in the asan preset
  // the sanitizer's, which takes no locks around fork: fork only once every
  // worker runs, so that what the child may inherit mid-call is manymalloc.
  while (started.load() < kWorkers) std::this_thread::yield();

  for (int round = 0; round < kForks; round++) {
    while (true) {  // fork once the pool has blocks from every worker's churn
      std::lock_guard<std::mutex> lock(pool.mutex);
      if (pool.blocks.size() >= kPoolCapacity / 4 * (round % 4 + 1)) break;
    }
    // The pool is locked across fork so the child sees it consistent; the
    // allocator gets no such help: workers are mid-call in it.
    pool.mutex.lock();
    const int status = run_forked(
        [&pool] {
          pool.mutex.unlock();
          return child_body(pool.blocks);
        },
        20);
    pool.mutex.unlock();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kChildOk)
        << "fork " << round << ": " << status_string(status);
  }
  stop = true;
  for (std::thread &t : workers) t.join();
  for (const Block &b : pool.blocks) {
    EXPECT_TRUE(block_intact(b));
    mm_free(b.p);
  }
  EXPECT_EQ(bad.load(), 0) << "worker blocks corrupted or not allocated";
}

}  // namespace
