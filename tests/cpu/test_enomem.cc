/* SPDX-License-Identifier: Apache-2.0 */
// Out of memory under a lowered address-space limit (RLIMIT_AS), in a forked
// child so that the test process keeps its own limit: allocation fails with
// ENOMEM instead of crashing, what was allocated before stays intact, and
// after some frees allocation works again.
#include <manymalloc/manymalloc.h>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "support/block_tag.h"
#include "support/subprocess.h"
#include "support/test_sizes.h"

using namespace mmtest;

namespace {

// What the child found, as its exit status.
enum Outcome {
  kOk = 0,
  kNoLimit,      // setrlimit failed
  kNothingFit,   // not one block fit under the limit
  kNeverFailed,  // the limit did not stop allocation
  kWrongErrno,   // NULL, but errno was not ENOMEM
  kCorrupted,    // a block allocated before the failure changed
  kNoRecovery,   // allocation still failed after frees
};

const char *outcome_name(int status) {
  if (!WIFEXITED(status)) return "the child crashed or hung";
  static const char *const names[] = {"ok",
                                      "setrlimit failed",
                                      "nothing fit under the limit",
                                      "the limit never stopped allocation",
                                      "NULL without errno ENOMEM",
                                      "a block allocated before the failure changed",
                                      "no recovery after frees"};
  const int code = WEXITSTATUS(status);
  return code < int(sizeof names / sizeof *names) ? names[code] : "unknown exit status";
}

// Lowers the address-space limit to what is mapped now plus `headroom`: the
// sanitizers reserve terabytes up front, so a fixed limit would not do.
bool limit_address_space(size_t headroom) {
  char buf[64] = {0};
  const int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  const size_t mapped = strtoull(buf, nullptr, 10) * size_t(sysconf(_SC_PAGESIZE));
  const struct rlimit limit = {mapped + headroom, mapped + headroom};
  return setrlimit(RLIMIT_AS, &limit) == 0;
}

// The blocks are chained through their first words, so the child needs no
// memory of its own to track them; the rest of each block carries its tag.
struct Node {
  Node *next;
  size_t size;
  uint64_t tag;
};
constexpr size_t kNodeSize = sizeof(Node);

bool node_intact(const Node *n) {
  return tag_check(reinterpret_cast<const char *>(n) + kNodeSize, n->size - kNodeSize, n->tag);
}

Node *node_new(size_t size, uint64_t tag, Node *next) {
  Node *n = static_cast<Node *>(mm_malloc(size));
  if (n == nullptr) return nullptr;
  *n = {next, size, tag};
  tag_fill(reinterpret_cast<char *>(n) + kNodeSize, size - kNodeSize, tag);
  return n;
}

bool chain_intact(const Node *head) {
  for (const Node *n = head; n != nullptr; n = n->next)
    if (!node_intact(n)) return false;
  return true;
}

// Frees every other block; returns how many.
size_t chain_thin(Node *head) {
  size_t freed = 0;
  for (Node *n = head; n != nullptr && n->next != nullptr; n = n->next) {
    Node *victim = n->next;
    n->next = victim->next;
    mm_free(victim);
    freed++;
  }
  return freed;
}

void chain_free(Node *head) {
  while (head != nullptr) {
    Node *next = head->next;
    mm_free(head);
    head = next;
  }
}

// The child's whole run: fill the address space with blocks of size_of(i)
// until the allocator says ENOMEM, then check and recover.
template <typename SizeOf>
int exhaust_and_recover(size_t headroom, SizeOf size_of) {
  mm_free(mm_malloc(size_of(0)));  // the allocator is set up before the limit
  if (!limit_address_space(headroom)) return kNoLimit;
  Node *head = nullptr;
  size_t count = 0, bytes = 0;
  for (;;) {
    errno = 0;
    Node *n = node_new(size_of(count), tag_make(1, uint32_t(count)), head);
    if (n == nullptr) break;
    head = n;
    bytes += n->size;
    count++;
    if (bytes > 2 * headroom) return kNeverFailed;
  }
  if (errno != ENOMEM) return kWrongErrno;
  if (count == 0) return kNothingFit;
  if (!chain_intact(head)) return kCorrupted;
  const size_t freed = chain_thin(head);
  for (size_t i = 0; i < freed / 2; i++) {
    Node *n = node_new(size_of(count + i), tag_make(2, uint32_t(i)), head);
    if (n == nullptr) return kNoRecovery;
    head = n;
  }
  if (!chain_intact(head)) return kCorrupted;
  chain_free(head);
  return kOk;
}

TEST(Enomem, SmallBlocksFailCleanlyAndRecover) {
  const int status = run_forked([] {
    return exhaust_and_recover(64 * MiB, [](size_t i) { return kNodeSize + (i * 37) % 2000; });
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kOk)
      << outcome_name(status) << " (" << status_string(status) << ")";
}

TEST(Enomem, LargeBlocksFailCleanlyAndRecover) {
  const int status = run_forked([] {
    return exhaust_and_recover(256 * MiB, [](size_t i) { return MiB + (i % 4) * MiB + i * 4096; });
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kOk)
      << outcome_name(status) << " (" << status_string(status) << ")";
}

// A freed mapping that the large cache keeps (60 MiB, within an eighth above
// the peak) goes back to the OS when a new mapping would not fit beside it:
// under a limit of 100 MiB more, a calloc of 70 MiB (which never takes a
// cached mapping) succeeds.
TEST(Enomem, CachedLargeMappingsGoBackWhenANewMappingFails) {
  const int status = run_forked([] {
    mm_free(mm_malloc(16));
    if (!limit_address_space(100 * MiB)) return int(kNoLimit);
    char *freed = static_cast<char *>(mm_malloc(60 * MiB));
    if (freed == nullptr) return int(kNothingFit);
    tag_fill(freed, 60 * MiB, tag_make(3, 0));
    mm_free(freed);
    char *next = static_cast<char *>(mm_calloc(1, 70 * MiB));
    if (next == nullptr) return int(kNoRecovery);
    mm_free(next);
    return int(kOk);
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kOk)
      << outcome_name(status) << " (" << status_string(status) << ")";
}

}  // namespace
