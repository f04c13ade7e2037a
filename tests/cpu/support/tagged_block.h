/* SPDX-License-Identifier: Apache-2.0 */
// A block from mm_malloc with its size and tag (block_tag.h), filled at
// allocation, for tests that check many blocks of many sizes.
#ifndef MM_TEST_TAGGED_BLOCK_H
#define MM_TEST_TAGGED_BLOCK_H

#include <manymalloc/manymalloc.h>

#include <cstddef>
#include <cstdint>

#include "block_tag.h"

namespace mmtest {

struct Block {
  void *p;
  size_t size;
  uint64_t tag;
};

inline Block block_new(size_t size, uint64_t tag) {
  Block b{mm_malloc(size), size, tag};
  if (b.p != nullptr) tag_fill(b.p, b.size, b.tag);
  return b;
}

inline bool block_intact(const Block &b) { return tag_check(b.p, b.size, b.tag); }

}  // namespace mmtest

#endif  // MM_TEST_TAGGED_BLOCK_H
