/* SPDX-License-Identifier: Apache-2.0 */
// manifest.h: the list of objects a sender filled (address, size, pattern
// seed), sent to the receiver over the tests' own MPI channel so that the
// receiver can check every byte that sys_send moved.
#ifndef MMD_TEST_MANIFEST_H
#define MMD_TEST_MANIFEST_H

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "pattern.h"
#include "workers.h"

namespace mmdtest {

struct Manifest {
  std::vector<uint64_t> words;  // address, size, seed; per object

  // Fills [p, p + size) with the pattern of seed and lists it.
  void fill(void *p, size_t size, uint64_t seed) {
    fill_pattern(p, size, seed);
    words.insert(words.end(), {word_of(p), uint64_t(size), seed});
  }
  size_t count() const { return words.size() / 3; }
  void *address(size_t i) const { return ptr_of<void>(words[3 * i]); }

  // Every listed object holds its pattern.
  testing::AssertionResult intact() const {
    for (size_t i = 0; i + 2 < words.size(); i += 3) {
      testing::AssertionResult r = HasPattern(ptr_of<void>(words[i]), size_t(words[i + 1]), words[i + 2]);
      if (!r) return r << " (object " << i / 3 << " of " << count() << ")";
    }
    return testing::AssertionSuccess();
  }
};

inline void send_manifest(int peer, const Manifest &m) { send_words(peer, m.words); }
inline Manifest recv_manifest(int peer) { return Manifest{recv_words(peer)}; }

}  // namespace mmdtest

#endif  // MMD_TEST_MANIFEST_H
