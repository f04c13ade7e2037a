/* SPDX-License-Identifier: Apache-2.0 */
// The bounded lock-free FIFO (seq_fifo.h): full and empty at the edges of its
// capacity, FIFO order over many laps, and under contention of several
// producers and consumers every value comes out exactly once and each
// producer's values in the order they went in.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/seq_fifo.h"

namespace {

// A queue with its own storage.
struct Fifo {
  explicit Fifo(uintptr_t capacity) : cells(capacity) {
    mm_seq_fifo_init(&q, cells.data(), capacity);
  }
  bool push(uintptr_t v) { return mm_seq_fifo_push(&q, v); }
  bool pop(uintptr_t *v) { return mm_seq_fifo_pop(&q, v); }
  std::vector<mm_fifo_cell_t> cells;
  mm_seq_fifo_t q;
};

TEST(SeqFifo, FullAndEmptyAtCapacity) {
  for (uintptr_t capacity : {1u, 2u, 7u, 64u}) {
    Fifo f(capacity);
    uintptr_t v = 12345;
    EXPECT_FALSE(f.pop(&v)) << "capacity " << capacity;
    EXPECT_EQ(v, 12345u) << "a failed pop wrote its output";
    for (uintptr_t i = 0; i < capacity; i++) EXPECT_TRUE(f.push(i)) << "capacity " << capacity;
    // ASSERT: a queue that took a value too many may not be drainable at all.
    ASSERT_FALSE(f.push(999)) << "push into a full queue, capacity " << capacity;
    ASSERT_TRUE(f.pop(&v));
    EXPECT_EQ(v, 0u);
    EXPECT_TRUE(f.push(capacity)) << "one slot freed, capacity " << capacity;
    EXPECT_FALSE(f.push(999));
    for (uintptr_t i = 1; i <= capacity; i++) {
      ASSERT_TRUE(f.pop(&v));
      EXPECT_EQ(v, i);
    }
    EXPECT_FALSE(f.pop(&v));
  }
}

TEST(SeqFifo, ZeroCapacityRefusesEverything) {
  mm_seq_fifo_t q;
  mm_seq_fifo_init(&q, nullptr, 0);
  uintptr_t v;
  EXPECT_FALSE(mm_seq_fifo_push(&q, 1));
  EXPECT_FALSE(mm_seq_fifo_pop(&q, &v));
}

// Many laps around the ring with a varying fill level: order is kept and the
// sequence numbers never confuse one lap with another.
TEST(SeqFifo, OrderHoldsOverManyLaps) {
  Fifo f(5);
  uintptr_t next_in = 0, next_out = 0, v;
  for (int step = 0; step < 100000; step++) {
    const int pushes = step % 3 == 0 ? 2 : 1, pops = step % 5 == 0 ? 0 : 1;
    for (int i = 0; i < pushes; i++)
      if (f.push(next_in)) next_in++;
    for (int i = 0; i < pops; i++)
      if (f.pop(&v)) ASSERT_EQ(v, next_out++);
  }
  while (f.pop(&v)) ASSERT_EQ(v, next_out++);
  EXPECT_EQ(next_out, next_in);
  EXPECT_GT(next_in, 10000 * 5u) << "too few laps to mean anything";
}

// N producers and M consumers through a small queue, so that it is full and
// empty often. A value is (producer, sequence); every one must come out once,
// and a consumer must see each producer's sequence numbers rise.
TEST(SeqFifo, ContendedValuesComeOutOnceInProducerOrder) {
  constexpr int kProducers = 4, kConsumers = 4;
  constexpr uintptr_t kPerProducer = 100000;
  Fifo f(16);
  std::vector<std::atomic<unsigned char>> seen(kProducers * kPerProducer);
  std::atomic<uintptr_t> consumed{0};
  std::atomic<long> duplicates{0}, out_of_order{0}, foreign{0};

  std::vector<std::thread> threads;
  for (uintptr_t p = 0; p < kProducers; p++)
    threads.emplace_back([&f, p] {
      for (uintptr_t s = 0; s < kPerProducer; s++)
        while (!f.push(p * kPerProducer + s)) std::this_thread::yield();
    });
  for (int c = 0; c < kConsumers; c++)
    threads.emplace_back([&] {
      std::vector<long> last(kProducers, -1);
      while (consumed.load() < kProducers * kPerProducer) {
        uintptr_t v;
        if (!f.pop(&v)) {
          std::this_thread::yield();
          continue;
        }
        consumed++;
        if (v >= kProducers * kPerProducer) {
          foreign++;
          continue;
        }
        if (seen[v].fetch_add(1) != 0) duplicates++;
        const long seq = long(v % kPerProducer);
        long &prev = last[v / kPerProducer];
        if (seq <= prev) out_of_order++;
        prev = seq;
      }
    });
  for (std::thread &t : threads) t.join();

  EXPECT_EQ(foreign.load(), 0) << "values that were never pushed";
  EXPECT_EQ(duplicates.load(), 0) << "values that came out twice";
  EXPECT_EQ(out_of_order.load(), 0) << "values that overtook an earlier one of their producer";
  long missing = 0;
  for (auto &count : seen) missing += count.load() == 0;
  EXPECT_EQ(missing, 0) << "values that never came out";
  uintptr_t v;
  EXPECT_FALSE(f.pop(&v)) << "the drained queue is not empty";
}

}  // namespace
