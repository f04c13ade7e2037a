/* SPDX-License-Identifier: Apache-2.0 */
// Block tags: a test block carries a 64-bit tag (owner thread, sequence
// number) spread over its bytes, so that a block handed out twice, an overlap
// or a stray write by the allocator shows up as a broken tag when the block is
// checked before it is freed.
#ifndef MM_TEST_BLOCK_TAG_H
#define MM_TEST_BLOCK_TAG_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mmtest {

inline uint64_t tag_make(uint32_t owner, uint32_t seq) { return (uint64_t(owner) << 32) | seq; }

// Every word differs from its neighbours, so a block copied or shifted onto
// another address does not pass for intact.
inline uint64_t tag_word(uint64_t tag, size_t index) {
  return tag ^ ((index + 1) * 0x9E3779B97F4A7C15ull);
}

// Blocks up to this size are tagged in full; larger ones at the head, the
// tail and one word per page, which keeps big blocks cheap to tag.
constexpr size_t kTagFullLimit = 8192;
constexpr size_t kTagEdge = 1024;
constexpr size_t kTagStride = 4096;

// How much of a block carries the tag: all of it (then any prefix of the
// block is itself a tagged block, which realloc tests rely on) or samples.
enum class TagSpan { all, sampled };

// Calls visit(offset, word_index) for each tagged 8-byte word of a block of
// `size` bytes; the bytes past the last whole word are handled by the caller.
template <typename Visit>
inline bool tag_for_each_word(size_t size, TagSpan span, Visit visit) {
  const size_t words = size / 8;
  const bool all = span == TagSpan::all || size <= kTagFullLimit;
  const size_t head_end = all ? words : kTagEdge / 8;
  const size_t tail_start = all ? words : (size - kTagEdge) / 8;
  const size_t stride = kTagStride / 8;
  for (size_t i = 0; i < words;) {
    if (!visit(i * 8, i)) return false;
    if (i + 1 < head_end || i + 1 >= tail_start)
      i++;
    else
      i = std::min((i / stride + 1) * stride, tail_start);
  }
  return true;
}

inline void tag_fill(void *block, size_t size, uint64_t tag, TagSpan span = TagSpan::sampled) {
  unsigned char *p = static_cast<unsigned char *>(block);
  tag_for_each_word(size, span, [&](size_t off, size_t i) {
    const uint64_t w = tag_word(tag, i);
    std::memcpy(p + off, &w, 8);
    return true;
  });
  const uint64_t last = tag_word(tag, size / 8);
  std::memcpy(p + size / 8 * 8, &last, size % 8);
}

inline bool tag_check(const void *block, size_t size, uint64_t tag,
                      TagSpan span = TagSpan::sampled) {
  const unsigned char *p = static_cast<const unsigned char *>(block);
  const bool words_ok = tag_for_each_word(size, span, [&](size_t off, size_t i) {
    uint64_t w;
    std::memcpy(&w, p + off, 8);
    return w == tag_word(tag, i);
  });
  const uint64_t last = tag_word(tag, size / 8);
  return words_ok && std::memcmp(p + size / 8 * 8, &last, size % 8) == 0;
}

}  // namespace mmtest

#endif  // MM_TEST_BLOCK_TAG_H
