/* SPDX-License-Identifier: Apache-2.0 */
// Range lists (ranges.c): mmd_ranges_add merges only with the last range and
// only when the two touch; mmd_ranges_normalize makes any list sorted,
// disjoint and non-touching without changing the bytes it covers;
// mmd_ranges_bytes sums lengths; mmd_ranges_split cuts every range into
// pieces of at most max bytes, in order, covering the same bytes;
// mmd_ranges_cut takes bytes out of a normal list and mmd_ranges_gaps names
// the parts of one list another does not cover. Each is checked against a
// byte-map model over long random sequences.
#include <manymalloc/myrmics.h>  // <mpi.h> first, outside extern "C"
extern "C" {
#include "ranges.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using Model = std::vector<bool>;  // byte i covered

constexpr uint64_t kUniverse = 8192;

Model cover(const mmd_ranges_t &l, uint64_t universe) {
  Model m(universe, false);
  for (size_t i = 0; i < l.n; i++)
    for (uint64_t b = l.r[i].off; b < l.r[i].off + l.r[i].len; b++) m[b] = true;
  return m;
}

// Sorted, disjoint, not touching, no empty range.
void expect_normal(const mmd_ranges_t &l) {
  for (size_t i = 0; i < l.n; i++) {
    EXPECT_GT(l.r[i].len, 0u) << "range " << i;
    if (i > 0) EXPECT_GT(l.r[i].off, l.r[i - 1].off + l.r[i - 1].len) << "ranges " << i - 1 << ", " << i;
  }
}

TEST(Ranges, AddMergesOnlyWithTouchingLast) {
  mmd_ranges_t l{};
  ASSERT_EQ(mmd_ranges_add(&l, 100, 50), 0);
  ASSERT_EQ(mmd_ranges_add(&l, 150, 10), 0);  // touches: merged
  ASSERT_EQ(l.n, 1u);
  EXPECT_EQ(l.r[0].off, 100u);
  EXPECT_EQ(l.r[0].len, 60u);
  ASSERT_EQ(mmd_ranges_add(&l, 161, 4), 0);  // a gap of one byte: kept apart
  ASSERT_EQ(l.n, 2u);
  ASSERT_EQ(mmd_ranges_add(&l, 0, 100), 0);  // touches the first, not the last
  ASSERT_EQ(l.n, 3u);
  EXPECT_EQ(l.r[2].off, 0u);
  ASSERT_EQ(mmd_ranges_add(&l, 500, 0), 0);  // empty: ignored
  EXPECT_EQ(l.n, 3u);
  EXPECT_EQ(mmd_ranges_bytes(&l), 60u + 4u + 100u);
  mmd_ranges_normalize(&l);
  ASSERT_EQ(l.n, 2u);
  EXPECT_EQ(l.r[0].off, 0u);
  EXPECT_EQ(l.r[0].len, 160u);
  EXPECT_EQ(l.r[1].off, 161u);
  EXPECT_EQ(l.r[1].len, 4u);
  mmd_ranges_free(&l);
  EXPECT_EQ(l.n, 0u);
  EXPECT_EQ(l.r, nullptr);
  EXPECT_EQ(mmd_ranges_bytes(&l), 0u);
}

TEST(Ranges, GrowsPastManyRanges) {
  mmd_ranges_t l{};
  for (uint64_t i = 0; i < 100000; i++) ASSERT_EQ(mmd_ranges_add(&l, i * 10, 5), 0);
  ASSERT_EQ(l.n, 100000u);
  EXPECT_GE(l.cap, l.n);
  for (uint64_t i = 0; i < l.n; i++) {
    ASSERT_EQ(l.r[i].off, i * 10);
    ASSERT_EQ(l.r[i].len, 5u);
  }
  EXPECT_EQ(mmd_ranges_bytes(&l), 500000u);
  mmd_ranges_free(&l);
}

TEST(Ranges, NormalizeEdgeCases) {
  mmd_ranges_t l{};
  mmd_ranges_normalize(&l);  // empty
  EXPECT_EQ(l.n, 0u);
  mmd_ranges_add(&l, 7, 3);
  mmd_ranges_normalize(&l);  // one range
  ASSERT_EQ(l.n, 1u);
  EXPECT_EQ(l.r[0].off, 7u);
  EXPECT_EQ(l.r[0].len, 3u);
  // A range nested inside an earlier, longer one must not shorten it.
  mmd_ranges_add(&l, 0, 100);
  mmd_ranges_add(&l, 200, 1);
  mmd_ranges_add(&l, 10, 5);
  mmd_ranges_add(&l, 0, 100);  // a duplicate
  mmd_ranges_normalize(&l);
  ASSERT_EQ(l.n, 2u);
  EXPECT_EQ(l.r[0].off, 0u);
  EXPECT_EQ(l.r[0].len, 100u);
  EXPECT_EQ(l.r[1].off, 200u);
  EXPECT_EQ(l.r[1].len, 1u);
  mmd_ranges_free(&l);
}

TEST(Ranges, NormalizeMatchesModel) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 500; round++) {
    mmd_ranges_t l{};
    int n = int(rng() % 64);
    uint64_t maxlen = 1 + rng() % 400;
    for (int i = 0; i < n; i++) {
      uint64_t off = rng() % (kUniverse - 512);
      uint64_t len = rng() % maxlen;  // zero now and then
      ASSERT_EQ(mmd_ranges_add(&l, off, len), 0);
    }
    Model before = cover(l, kUniverse);
    mmd_ranges_normalize(&l);
    expect_normal(l);
    ASSERT_EQ(cover(l, kUniverse), before) << "round " << round;
    uint64_t bytes = uint64_t(std::count(before.begin(), before.end(), true));
    ASSERT_EQ(mmd_ranges_bytes(&l), bytes) << "round " << round;
    mmd_ranges_free(&l);
  }
}

TEST(Ranges, SplitMatchesModel) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 500; round++) {
    mmd_ranges_t l{};
    int n = 1 + int(rng() % 40);
    for (int i = 0; i < n; i++) mmd_ranges_add(&l, rng() % (kUniverse - 600), 1 + rng() % 500);
    if (rng() % 2) mmd_ranges_normalize(&l);
    std::vector<mmd_range_t> orig(l.r, l.r + l.n);
    uint64_t max = 1 + rng() % 300;
    size_t want = 0;
    for (const mmd_range_t &r : orig) want += size_t((r.len + max - 1) / max);
    ASSERT_EQ(mmd_ranges_split(&l, max), 0);
    ASSERT_EQ(l.n, want) << "round " << round;
    // Piece by piece: each original range, cut in order into max-byte
    // pieces with a shorter last one.
    size_t k = 0;
    for (const mmd_range_t &r : orig) {
      uint64_t at = r.off, left = r.len;
      while (left > 0) {
        ASSERT_LT(k, l.n);
        uint64_t len = std::min(left, max);
        ASSERT_EQ(l.r[k].off, at) << "round " << round << " piece " << k;
        ASSERT_EQ(l.r[k].len, len) << "round " << round << " piece " << k;
        at += len;
        left -= len;
        k++;
      }
    }
    mmd_ranges_free(&l);
  }
}

TEST(Ranges, SplitWithNothingTooLongChangesNothing) {
  mmd_ranges_t l{};
  mmd_ranges_add(&l, 0, 10);
  mmd_ranges_add(&l, 20, 64);
  mmd_ranges_add(&l, 100, 1);
  ASSERT_EQ(mmd_ranges_split(&l, 64), 0);
  ASSERT_EQ(l.n, 3u);
  EXPECT_EQ(l.r[1].off, 20u);
  EXPECT_EQ(l.r[1].len, 64u);
  ASSERT_EQ(mmd_ranges_split(&l, 1), 0);  // every byte its own piece
  EXPECT_EQ(l.n, 75u);
  for (size_t i = 0; i < l.n; i++) EXPECT_EQ(l.r[i].len, 1u);
  EXPECT_EQ(mmd_ranges_bytes(&l), 75u);
  mmd_ranges_free(&l);
  ASSERT_EQ(mmd_ranges_split(&l, 4), 0);  // empty list
  EXPECT_EQ(l.n, 0u);
}

// A huge range split into a few pieces: lengths near 2^63 do not overflow
// the piece count.
TEST(Ranges, SplitLargeRanges) {
  mmd_ranges_t l{};
  const uint64_t big = 1ull << 40;
  mmd_ranges_add(&l, 1ull << 44, 3 * big + 5);
  ASSERT_EQ(mmd_ranges_split(&l, big), 0);
  ASSERT_EQ(l.n, 4u);
  EXPECT_EQ(l.r[3].off, (1ull << 44) + 3 * big);
  EXPECT_EQ(l.r[3].len, 5u);
  mmd_ranges_free(&l);
}

}  // namespace

namespace {

// A normal list of random ranges inside kUniverse.
mmd_ranges_t random_normal(std::mt19937_64 &rng, int n) {
  mmd_ranges_t l = {};
  std::uniform_int_distribution<uint64_t> off(0, kUniverse - 1), len(1, 300);
  for (int i = 0; i < n; i++) {
    uint64_t o = off(rng), ln = std::min(len(rng), kUniverse - o);
    EXPECT_EQ(mmd_ranges_add(&l, o, ln), 0);
  }
  mmd_ranges_normalize(&l);
  return l;
}

TEST(Ranges, CutMatchesModel) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> off(0, kUniverse - 1), len(1, 700);
  for (int round = 0; round < 200; round++) {
    mmd_ranges_t l = random_normal(rng, 1 + round % 40);
    Model m = cover(l, kUniverse);
    for (int c = 0; c < 30; c++) {
      uint64_t o = off(rng), ln = std::min(len(rng), kUniverse - o), cut = 0, expect = 0;
      for (uint64_t b = o; b < o + ln; b++) expect += m[b] ? 1 : 0;
      std::fill(m.begin() + long(o), m.begin() + long(o + ln), false);
      ASSERT_EQ(mmd_ranges_cut(&l, o, ln, &cut), 0);
      EXPECT_EQ(cut, expect) << "round " << round << ", cut " << c;
      ASSERT_EQ(cover(l, kUniverse), m) << "round " << round << ", cut " << c;
      expect_normal(l);
    }
    mmd_ranges_free(&l);
  }
}

TEST(Ranges, CutOfNothingAndOfEverything) {
  mmd_ranges_t l = {};
  uint64_t cut = 1;
  EXPECT_EQ(mmd_ranges_cut(&l, 0, 100, &cut), 0);
  EXPECT_EQ(cut, 0u);
  ASSERT_EQ(mmd_ranges_add(&l, 100, 50), 0);
  ASSERT_EQ(mmd_ranges_add(&l, 200, 50), 0);
  EXPECT_EQ(mmd_ranges_cut(&l, 150, 50, &cut), 0);   // exactly the gap
  EXPECT_EQ(cut, 0u);
  EXPECT_EQ(l.n, 2u);
  EXPECT_EQ(mmd_ranges_cut(&l, 0, 1000, &cut), 0);
  EXPECT_EQ(cut, 100u);
  EXPECT_EQ(l.n, 0u);
  mmd_ranges_free(&l);
}

void collect_gap(void *ctx, uint64_t off, uint64_t len) {
  auto *gaps = static_cast<std::vector<mmd_range_t> *>(ctx);
  gaps->push_back({off, len});
}

// Keep lists that straddle several ranges of have, lie in its holes, or
// cover it whole: every part of have outside keep is named once, in order.
TEST(Ranges, GapsMatchModel) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 300; round++) {
    mmd_ranges_t have = random_normal(rng, 1 + round % 30), keep = random_normal(rng, round % 25);
    Model h = cover(have, kUniverse), k = cover(keep, kUniverse), want(kUniverse, false);
    for (uint64_t b = 0; b < kUniverse; b++) want[b] = h[b] && !k[b];
    std::vector<mmd_range_t> gaps;
    mmd_ranges_gaps(&have, keep.r, keep.n, collect_gap, &gaps);
    Model got(kUniverse, false);
    for (size_t i = 0; i < gaps.size(); i++) {
      ASSERT_GT(gaps[i].len, 0u);
      if (i > 0) EXPECT_GE(gaps[i].off, gaps[i - 1].off + gaps[i - 1].len) << "round " << round;
      for (uint64_t b = gaps[i].off; b < gaps[i].off + gaps[i].len; b++) {
        EXPECT_FALSE(got[b]) << "byte " << b << " named twice, round " << round;
        got[b] = true;
      }
    }
    ASSERT_EQ(got, want) << "round " << round;
    mmd_ranges_free(&have);
    mmd_ranges_free(&keep);
  }
}

}  // namespace
