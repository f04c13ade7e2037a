/* SPDX-License-Identifier: Apache-2.0 */
// trie_walk.h: the unit tests' view of tries: their (key, value) pairs in
// order, and the checks that hold for every trie of runs.
#ifndef MMD_TEST_TRIE_WALK_H
#define MMD_TEST_TRIE_WALK_H

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
#include "trie.h"
}

namespace mmdtest {

using KeyValues = std::vector<std::pair<uint64_t, uint64_t>>;

inline KeyValues walk(const mmd_trie_t &t) {
  KeyValues out;
  uint64_t k, v;
  for (bool ok = mmd_trie_first(&t, &k, &v); ok; ok = mmd_trie_next(&t, &k, &v)) out.emplace_back(k, v);
  return out;
}

// A trie of runs (first -> length): no run is empty and no two touch, as
// mmd_runs_add keeps them. Appends each as [first, end) to spans and returns
// the length summed.
inline uint64_t check_runs(const mmd_trie_t &t, std::vector<std::pair<uint64_t, uint64_t>> &spans) {
  uint64_t total = 0, last_end = 0;
  bool first = true;
  for (auto [k, n] : walk(t)) {
    EXPECT_GT(n, 0u);
    if (!first) EXPECT_GT(k, last_end) << "runs touch or overlap at " << k;
    first = false;
    last_end = k + n;
    total += n;
    spans.emplace_back(k, k + n);
  }
  return total;
}

}  // namespace mmdtest

#endif
