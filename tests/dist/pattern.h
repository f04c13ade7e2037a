/* SPDX-License-Identifier: Apache-2.0 */
// pattern.h: the bytes the dist/ tests write into objects and check after
// every allocation, move and transfer. A pattern is a function of a seed and
// of the byte's offset, so two objects (or two fills of one object) with
// different seeds differ almost everywhere, and a check names the first
// byte that is wrong.
#ifndef MMD_TEST_PATTERN_H
#define MMD_TEST_PATTERN_H

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mmdtest {

inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The seed of the pattern of (owner, serial): a worker and a counter of its own.
inline uint64_t seed_of(uint64_t owner, uint64_t serial) {
  return mix64(mix64(owner) ^ (serial * 0x2545f4914f6cdd1dull));
}

inline void fill_pattern(void *p, size_t n, uint64_t seed) {
  unsigned char *b = static_cast<unsigned char *>(p);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t w = mix64(seed + i / 8);
    memcpy(b + i, &w, n - i < 8 ? n - i : 8);
  }
}

// The offset of the first byte of [p, p + n) that is not the pattern, or n.
inline size_t first_mismatch(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t w = mix64(seed + i / 8);
    const size_t k = n - i < 8 ? n - i : 8;
    if (memcmp(b + i, &w, k) != 0)
      for (size_t j = 0; j < k; j++)
        if (b[i + j] != reinterpret_cast<const unsigned char *>(&w)[j]) return i + j;
  }
  return n;
}

// For EXPECT_TRUE / ASSERT_TRUE: says where the first wrong byte is.
inline testing::AssertionResult HasPattern(const void *p, size_t n, uint64_t seed) {
  const size_t at = first_mismatch(p, n, seed);
  if (at == n) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "byte " << at << " of " << n << " at " << p
                                     << " is not the pattern (seed " << seed << ")";
}

}  // namespace mmdtest

#endif  // MMD_TEST_PATTERN_H
