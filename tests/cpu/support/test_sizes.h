/* SPDX-License-Identifier: Apache-2.0 */
// Request sizes shared by the tests: the edges of plausible size classes
// (every power of two and its quarter steps, one byte either side) from a
// single byte into the large-block path.
#ifndef MM_TEST_SIZES_H
#define MM_TEST_SIZES_H

#include <cstddef>
#include <set>
#include <vector>

namespace mmtest {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;

inline std::vector<size_t> boundary_sizes(size_t max = 4 * MiB) {
  std::set<size_t> sizes = {1, 2, 3, 7, 8, 9};
  for (size_t p = 16; p <= max; p *= 2)
    for (size_t quarter = 4; quarter < 8; quarter++) {
      const size_t edge = p / 4 * quarter;
      for (size_t s : {edge - 1, edge, edge + 1})
        if (s <= max) sizes.insert(s);
    }
  return {sizes.begin(), sizes.end()};
}

}  // namespace mmtest

#endif  // MM_TEST_SIZES_H
