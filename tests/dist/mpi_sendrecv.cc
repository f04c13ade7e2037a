/* SPDX-License-Identifier: Apache-2.0 */
// mpi_sendrecv.cc: sys_send/sys_recv between workers: pointer structures
// that are traversed on the receiver as they are (a linked list there and
// back, a tree whose levels are nested regions), loose objects, regions and
// objects together, large objects, and every worker sending at once in a
// ring; sys_sendrecv both ways at once, refused where both sides hold the
// memory, and failing on both sides when one names a freed region; a copy
// forgotten (sys_rforget) that reads zeros and arrives again whole. Needs at
// least 3 workers; pairwise cases use workers 0 and 1.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <algorithm>
#include <vector>

#include "manifest.h"
#include "pattern.h"
#include "workers.h"

using namespace mmdtest;

namespace {

// ---- a linked list ----------------------------------------------------------

struct ListNode {
  ListNode *next;
  uint64_t index;
  uint64_t payload_len;
  uint64_t payload_sum;
  uint64_t visits;  // set by the receiver
  unsigned char *payload() { return reinterpret_cast<unsigned char *>(this + 1); }
};

uint64_t sum_of(const unsigned char *b, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Payload lengths vary so that the nodes fill several slot sizes.
size_t payload_len_of(uint64_t index) { return 8 + (index * 37) % 300; }

void set_payload(ListNode *n, uint64_t writer) {
  fill_pattern(n->payload(), n->payload_len, seed_of(writer, n->index));
  n->payload_sum = sum_of(n->payload(), n->payload_len);
}

ListNode *append_node(ListNode **tail_link, uint64_t index, rid_t r, uint64_t writer) {
  const size_t len = payload_len_of(index);
  ListNode *n = static_cast<ListNode *>(sys_alloc(sizeof(ListNode) + len, r));
  if (!n) return nullptr;
  n->next = nullptr;
  n->index = index;
  n->payload_len = len;
  n->visits = 0;
  set_payload(n, writer);
  *tail_link = n;
  return n;
}

// A list of n nodes written by worker 0 in a new region *r: its head, or
// NULL.
ListNode *list_in_new_region(rid_t *r, uint64_t n) {
  *r = sys_ralloc(0, 0);
  if (*r <= 0) return nullptr;
  ListNode *head = nullptr, **link = &head;
  for (uint64_t i = 0; i < n; i++) {
    ListNode *node = append_node(link, i, *r, 0);
    if (!node) return nullptr;
    link = &node->next;
  }
  return head;
}

// Walks the list checking every field; writer(i) says who last wrote node i.
template <class Writer>
testing::AssertionResult list_ok(ListNode *head, uint64_t expect_count, uint64_t expect_visits,
                                 Writer writer) {
  uint64_t i = 0;
  for (ListNode *n = head; n; n = n->next, i++) {
    if (i >= expect_count) return testing::AssertionFailure() << "more than " << expect_count << " nodes";
    if (n->index != i) return testing::AssertionFailure() << "node " << i << " says index " << n->index;
    if (n->payload_len != payload_len_of(i)) return testing::AssertionFailure() << "node " << i << " length";
    if (n->payload_sum != sum_of(n->payload(), n->payload_len))
      return testing::AssertionFailure() << "node " << i << " checksum";
    testing::AssertionResult r = HasPattern(n->payload(), n->payload_len, seed_of(writer(i), i));
    if (!r) return r << " (node " << i << ")";
    if (i < 1000 && n->visits != expect_visits)
      return testing::AssertionFailure() << "node " << i << " visits";
  }
  if (i != expect_count) return testing::AssertionFailure() << i << " nodes, expected " << expect_count;
  return testing::AssertionSuccess();
}

TEST(SendRecv, LinkedListGoesThereAndBackAndIsTraversedInPlace) {
  constexpr uint64_t kNodes = 1000, kAppended = 10;
  if (me() == 0) {
    rid_t r = 0;
    ListNode *head = list_in_new_region(&r, kNodes);
    ASSERT_NE(head, nullptr) << sys_strerror(sys_last_error());
    void *obj = head;
    ASSERT_EQ(sys_send(1, &r, 1, &obj, 1), SYS_OK);

    rid_t regs[1] = {0};
    void *objs[1] = {nullptr};
    ASSERT_EQ(sys_recv(1, regs, 1, objs, 1), SYS_OK);
    EXPECT_EQ(regs[0], r);
    EXPECT_EQ(objs[0], head);
    // Worker 1 rewrote every payload and appended nodes of its own.
    EXPECT_TRUE(list_ok(head, kNodes + kAppended, 1, [](uint64_t) { return 1; }));
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else if (me() == 1) {
    rid_t regs[2] = {0, 0};
    void *objs[2] = {nullptr, nullptr};
    ASSERT_EQ(sys_recv(0, regs, 2, objs, 2), SYS_OK);
    EXPECT_GT(regs[0], 0);
    EXPECT_EQ(regs[1], SYS_NO_REGION);
    EXPECT_EQ(objs[1], nullptr);
    ListNode *head = static_cast<ListNode *>(objs[0]);
    ASSERT_NE(head, nullptr);
    ASSERT_TRUE(list_ok(head, kNodes, 0, [](uint64_t) { return 0; }));

    ListNode **link = &head;
    for (ListNode *n = head; n; n = n->next) {
      set_payload(n, 1);
      n->visits = 1;
      link = &n->next;
    }
    // New nodes in the received region, allocated by this worker: they
    // travel back with it.
    for (uint64_t i = kNodes; i < kNodes + kAppended; i++) {
      ListNode *n = append_node(link, i, regs[0], 1);
      ASSERT_NE(n, nullptr) << sys_strerror(sys_last_error());
      link = &n->next;
    }
    void *obj = head;
    ASSERT_EQ(sys_send(0, regs, 1, &obj, 1), SYS_OK);
  }
}

TEST(SendRecv, ForgottenCopyReadsZerosAndArrivesAgainWhole) {
  constexpr uint64_t kNodes = 2000;
  if (me() == 0) {
    rid_t r = 0;
    ListNode *head = list_in_new_region(&r, kNodes);
    ASSERT_NE(head, nullptr) << sys_strerror(sys_last_error());
    void *obj = head;
    for (int round = 0; round < 2; round++) ASSERT_EQ(sys_send(1, &r, 1, &obj, 1), SYS_OK) << round;
    recv_words(1);
    EXPECT_TRUE(list_ok(head, kNodes, 0, [](uint64_t) { return 0; })) << "the sender's copy is its own";
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else if (me() == 1) {
    rid_t r = 0;
    void *obj = nullptr;
    for (int round = 0; round < 2; round++) {
      ASSERT_EQ(sys_recv(0, &r, 1, &obj, 1), SYS_OK) << round;
      ListNode *head = static_cast<ListNode *>(obj);
      ASSERT_TRUE(list_ok(head, kNodes, 0, [](uint64_t) { return 0; })) << "round " << round;
      ASSERT_EQ(sys_rforget(r), SYS_OK);
      const unsigned char *b = static_cast<const unsigned char *>(obj);
      EXPECT_EQ(std::count(b, b + sizeof(ListNode), 0), long(sizeof(ListNode))) << "the forgotten copy reads zeros";
    }
    EXPECT_EQ(sys_rforget(0), SYS_ERR_ROOT);
    rid_t gone = sys_ralloc(0, 0);
    ASSERT_GT(gone, 0);
    ASSERT_EQ(sys_rfree(gone), SYS_OK);
    EXPECT_EQ(sys_rforget(gone), SYS_ERR_NOREGION);
    send_words(0, {1});
  }
}

// ---- a tree whose levels are nested regions ----------------------------------

struct TreeNode {
  TreeNode *left, *right;
  uint32_t level, id;  // id: 1 at the root, 2i and 2i+1 below i
  unsigned char payload[48];
};

constexpr int kDepth = 8;

TreeNode *build_tree(const std::vector<rid_t> &levels, uint32_t level, uint32_t id) {
  if (level == kDepth) return nullptr;
  TreeNode *n = static_cast<TreeNode *>(sys_alloc(sizeof(TreeNode), levels[level]));
  if (!n) return nullptr;
  n->level = level;
  n->id = id;
  fill_pattern(n->payload, sizeof n->payload, seed_of(100, id));
  n->left = build_tree(levels, level + 1, 2 * id);
  n->right = build_tree(levels, level + 1, 2 * id + 1);
  return n;
}

// Checks every node; writer(level) gives the pattern's owner per level.
template <class Writer>
int check_tree(TreeNode *n, uint32_t level, uint32_t id, Writer writer, int *bad) {
  if (level == kDepth) return n == nullptr ? 0 : (++*bad, 0);
  if (!n || n->level != level || n->id != id ||
      first_mismatch(n->payload, sizeof n->payload, seed_of(writer(level), id)) != sizeof n->payload) {
    ++*bad;
    return 0;
  }
  return 1 + check_tree(n->left, level + 1, 2 * id, writer, bad) +
         check_tree(n->right, level + 1, 2 * id + 1, writer, bad);
}

void rewrite_tree(TreeNode *n) {
  if (!n) return;
  fill_pattern(n->payload, sizeof n->payload, seed_of(200, n->id));
  rewrite_tree(n->left);
  rewrite_tree(n->right);
}

TEST(SendRecv, TreeTravelsWithItsTopRegionAndASubRegionAlone) {
  constexpr uint32_t kSentBack = 3;  // the level whose region worker 1 sends back
  if (me() == 0) {
    std::vector<rid_t> levels;
    for (int l = 0; l < kDepth; l++) {
      levels.push_back(sys_ralloc(l == 0 ? 0 : levels.back(), 0));
      ASSERT_GT(levels.back(), 0);
    }
    TreeNode *root = build_tree(levels, 0, 1);
    ASSERT_NE(root, nullptr);
    void *obj = root;
    send_words(1, {uint64_t(levels[kSentBack])});
    ASSERT_EQ(sys_send(1, levels.data(), 1, &obj, 1), SYS_OK);

    rid_t reg = 0;
    ASSERT_EQ(sys_recv(1, &reg, 1, nullptr, 0), SYS_OK);
    EXPECT_EQ(reg, levels[kSentBack]);
    // The levels from the sub-region down came back rewritten; the levels
    // above it were not sent and keep this worker's bytes.
    int bad = 0;
    EXPECT_EQ(check_tree(
                  root, 0, 1, [](uint32_t l) { return l >= kSentBack ? 200u : 100u; }, &bad),
              (1 << kDepth) - 1);
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(sys_rfree(levels[0]), SYS_OK);
  } else if (me() == 1) {
    rid_t reg = 0;
    void *obj = nullptr;
    ASSERT_EQ(sys_recv(0, &reg, 1, &obj, 1), SYS_OK);
    ASSERT_NE(obj, nullptr);
    TreeNode *root = static_cast<TreeNode *>(obj);
    int bad = 0;
    EXPECT_EQ(check_tree(
                  root, 0, 1, [](uint32_t) { return 100u; }, &bad),
              (1 << kDepth) - 1);
    EXPECT_EQ(bad, 0);
    sys_region_stats_t s;
    ASSERT_EQ(sys_region_stats(reg, 1, &s), SYS_OK);
    EXPECT_EQ(s.subregions, kDepth - 1);

    // Which sub-region to send back comes in a word message: the nodes do
    // not name their regions.
    rid_t sent_back = rid_t(recv_words(0).at(0));
    rewrite_tree(root);
    ASSERT_EQ(sys_send(0, &sent_back, 1, nullptr, 0), SYS_OK);
  }
}

// ---- loose objects, and regions with objects --------------------------------

TEST(SendRecv, LooseObjectsAloneFillTheObjectArrayInOrder) {
  const std::vector<size_t> sizes = {64, 200, 4096, 10000, 333};
  if (me() == 0) {
    const rid_t r = sys_ralloc(0, 0);
    ASSERT_GT(r, 0);
    Manifest m;
    std::vector<void *> objs;
    for (size_t i = 0; i < sizes.size(); i++) {
      // Alternately in the root region and in r; r also holds objects
      // that are not sent.
      void *p = sys_alloc(sizes[i], i % 2 ? r : 0);
      ASSERT_NE(p, nullptr);
      ASSERT_NE(sys_alloc(sizes[i], r), nullptr);
      m.fill(p, sizes[i], seed_of(0, i));
      objs.push_back(p);
    }
    send_manifest(1, m);
    ASSERT_EQ(sys_send(1, nullptr, 0, objs.data(), int(objs.size())), SYS_OK);
    sys_barrier();  // worker 1 has checked them
    for (void *p : objs) EXPECT_EQ(sys_free(p), SYS_OK);
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else {
    Manifest m;
    rid_t regs[3] = {1, 2, 3};
    void *objs[8];
    if (me() == 1) {
      m = recv_manifest(0);
      ASSERT_EQ(sys_recv(0, regs, 3, objs, 8), SYS_OK);
      for (rid_t r : regs) EXPECT_EQ(r, SYS_NO_REGION);
      for (size_t i = 0; i < 8; i++) EXPECT_EQ(objs[i], i < m.count() ? m.address(i) : nullptr) << i;
      EXPECT_TRUE(m.intact());
    }
    sys_barrier();
  }
}

TEST(SendRecv, RegionsAndObjectsTogetherFillBothArraysInOrder) {
  if (me() == 0) {
    rid_t a = sys_ralloc(0, 0), b = sys_ralloc(0, 0), c = sys_ralloc(0, 0);
    ASSERT_GT(a, 0);
    ASSERT_GT(b, 0);
    ASSERT_GT(c, 0);
    const rid_t b1 = sys_ralloc(b, 0);
    ASSERT_GT(b1, 0);
    Manifest m;
    uint64_t serial = 0;
    std::vector<void *> in_a;
    for (int i = 0; i < 20; i++) {
      void *p = sys_alloc(size_t(40 + 24 * i), a);
      ASSERT_NE(p, nullptr);
      m.fill(p, size_t(40 + 24 * i), seed_of(0, serial++));
      in_a.push_back(p);
    }
    for (int i = 0; i < 10; i++) {
      void *p = sys_alloc(700, i < 5 ? b : b1);
      ASSERT_NE(p, nullptr);
      m.fill(p, 700, seed_of(0, serial++));
    }
    std::vector<void *> loose;
    for (int i = 0; i < 3; i++) {
      void *p = sys_alloc(size_t(128 << i), c);
      ASSERT_NE(p, nullptr);
      m.fill(p, size_t(128 << i), seed_of(0, serial++));
      loose.push_back(p);
    }
    // An object of a region that is sent is named too: it is listed, and
    // its bytes travel once either way.
    void *objs[4] = {loose[0], loose[1], in_a[5], loose[2]};
    rid_t regs[2] = {a, b};
    send_manifest(1, m);
    send_words(1, {word_of(objs[0]), word_of(objs[1]), word_of(objs[2]), word_of(objs[3]), uint64_t(a),
                   uint64_t(b)});
    ASSERT_EQ(sys_send(1, regs, 2, objs, 4), SYS_OK);
    sys_barrier();
    for (rid_t r : {a, b, c}) EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else {
    if (me() == 1) {
      const Manifest m = recv_manifest(0);
      const std::vector<uint64_t> named = recv_words(0);
      rid_t regs[4];
      void *objs[6];
      ASSERT_EQ(sys_recv(0, regs, 4, objs, 6), SYS_OK);
      EXPECT_EQ(regs[0], rid_t(named[4]));
      EXPECT_EQ(regs[1], rid_t(named[5]));
      EXPECT_EQ(regs[2], SYS_NO_REGION);
      EXPECT_EQ(regs[3], SYS_NO_REGION);
      for (size_t i = 0; i < 4; i++) EXPECT_EQ(objs[i], ptr_of<void>(named[i])) << i;
      EXPECT_EQ(objs[4], nullptr);
      EXPECT_EQ(objs[5], nullptr);
      EXPECT_TRUE(m.intact());
    }
    sys_barrier();
  }
}

TEST(SendRecv, LargeObjectsArriveWhole) {
  const std::vector<size_t> sizes = {50048, size_t(1) << 20, 64, (size_t(3) << 20) + 5, 70000, 4096};
  if (me() == 0) {
    rid_t r = sys_ralloc(0, 0);
    ASSERT_GT(r, 0);
    const rid_t sub = sys_ralloc(r, 0);
    ASSERT_GT(sub, 0);
    Manifest m;
    for (size_t i = 0; i < sizes.size(); i++) {
      void *p = sys_alloc(sizes[i], i % 3 == 2 ? sub : r);
      ASSERT_NE(p, nullptr) << sizes[i];
      m.fill(p, sizes[i], seed_of(0, i));
    }
    send_manifest(1, m);
    ASSERT_EQ(sys_send(1, &r, 1, nullptr, 0), SYS_OK);
    sys_barrier();
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else {
    if (me() == 1) {
      const Manifest m = recv_manifest(0);
      rid_t reg = 0;
      ASSERT_EQ(sys_recv(0, &reg, 1, nullptr, 0), SYS_OK);
      EXPECT_TRUE(m.intact());
    }
    sys_barrier();
  }
}

// ---- every worker at once ---------------------------------------------------

TEST(SendRecv, RingEveryWorkerSendsToTheNext) {
  const int n = nworkers(), next = (me() + 1) % n, prev = (me() + n - 1) % n;
  rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  const rid_t sub = sys_ralloc(r, 0);
  ASSERT_GT(sub, 0);
  Manifest mine;
  for (int i = 0; i < 110; i++) {
    const size_t size = i < 100 ? size_t(64 + 8 * me() + 16 * i) : 5000;
    void *p = sys_alloc(size, i < 100 ? r : sub);
    ASSERT_NE(p, nullptr);
    mine.fill(p, size, seed_of(uint64_t(me()), uint64_t(i)));
  }
  const Manifest theirs{shift_words(next, prev, mine.words)};

  // Even workers send first and odd ones receive first, so the ring
  // completes even if a send waits for its receiver.
  rid_t got = 0;
  int sent = 1, received = 1;
  if (me() % 2 == 0) {
    sent = sys_send(next, &r, 1, nullptr, 0);
    received = sys_recv(prev, &got, 1, nullptr, 0);
  } else {
    received = sys_recv(prev, &got, 1, nullptr, 0);
    sent = sys_send(next, &r, 1, nullptr, 0);
  }
  EXPECT_EQ(sent, SYS_OK);
  ASSERT_EQ(received, SYS_OK);
  EXPECT_NE(got, r);
  EXPECT_TRUE(theirs.intact()) << "from worker " << prev;
  EXPECT_TRUE(mine.intact()) << "own objects after receiving";
  sys_barrier();
  // The receiver frees what it got: any worker may free any region.
  EXPECT_EQ(sys_rfree(got), SYS_OK);
  sys_barrier();
  EXPECT_EQ(sys_alloc(64, r), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
}

// ---- both ways at once ---------------------------------------------------------

// A region of objects of several sizes (small, and large past a slab),
// filled with the pattern of `writer`.
rid_t filled_region(Manifest *m, uint64_t writer) {
  rid_t r = sys_ralloc(0, 0);
  if (r < 0) return r;
  for (int i = 0; i < 150; i++) {
    const size_t size = i < 140 ? size_t(48 + 24 * i) : size_t(9000 + 100 * i);
    void *p = sys_alloc(size, r);
    if (p == nullptr) return sys_last_error();
    m->fill(p, size, seed_of(writer, uint64_t(i)));
  }
  return r;
}

// Rewrites every listed object with the pattern of `writer`.
Manifest rewritten(const Manifest &m, uint64_t writer) {
  Manifest out;
  for (size_t i = 0; i < m.count(); i++) out.fill(m.address(i), size_t(m.words[3 * i + 1]), seed_of(writer, i));
  return out;
}

TEST(SendRecv, PairSwapsRegionsBothWaysAtOnceAndBack) {
  if (me() > 1) return;
  const int peer = 1 - me();
  Manifest mine;
  const rid_t r = filled_region(&mine, uint64_t(me()));
  ASSERT_GT(r, 0) << sys_strerror(int(r));
  void *first = mine.address(0);
  send_manifest(peer, mine);
  const Manifest theirs = recv_manifest(peer);

  rid_t got[2] = {0, 0};
  void *objs[1] = {nullptr};
  ASSERT_EQ(sys_sendrecv(peer, const_cast<rid_t *>(&r), 1, &first, 1, got, 2, objs, 1), SYS_OK);
  EXPECT_NE(got[0], r);
  EXPECT_EQ(got[1], SYS_NO_REGION);
  EXPECT_EQ(objs[0], theirs.address(0));
  EXPECT_TRUE(theirs.intact()) << "the peer's region, arrived";
  EXPECT_TRUE(mine.intact()) << "this worker's region, after sending it";

  // Each rewrites the region it received and swaps it back for its own.
  const Manifest theirs_now = rewritten(theirs, uint64_t(10 + me()));
  rid_t back = 0;
  ASSERT_EQ(sys_sendrecv(peer, got, 1, nullptr, 0, &back, 1, nullptr, 0), SYS_OK);
  EXPECT_EQ(back, r);
  EXPECT_TRUE(rewritten(mine, uint64_t(10 + peer)).intact()) << "own region, as the peer rewrote it";
  EXPECT_TRUE(theirs_now.intact()) << "the copy sent back stays as it was";
  send_words(peer, {1});
  recv_words(peer);   // both checked before either frees
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(SendRecv, SwapOfMemoryBothSidesHoldIsRefusedOnBothAndMovesNothing) {
  if (me() > 1) return;
  const int peer = 1 - me();
  // Worker 0 makes a region and gives worker 1 a copy: both now hold it.
  Manifest m;
  rid_t r = 0;
  if (me() == 0) {
    r = filled_region(&m, 0);
    ASSERT_GT(r, 0);
    ASSERT_EQ(sys_send(1, &r, 1, nullptr, 0), SYS_OK);
    send_manifest(1, m);
  } else {
    ASSERT_EQ(sys_recv(0, &r, 1, nullptr, 0), SYS_OK);
    m = recv_manifest(0);
  }
  const Manifest own = rewritten(m, uint64_t(20 + me()));   // the copies now differ
  rid_t got = 0;
  EXPECT_EQ(sys_sendrecv(peer, &r, 1, nullptr, 0, &got, 1, nullptr, 0), SYS_ERR_ARG);
  EXPECT_EQ(got, SYS_NO_REGION);
  EXPECT_TRUE(own.intact()) << "nothing arrived over this worker's copy";
  // Still serving: one way at a time works.
  if (me() == 0) {
    ASSERT_EQ(sys_recv(1, &got, 1, nullptr, 0), SYS_OK);
    EXPECT_TRUE(rewritten(m, 21).intact());
  } else {
    ASSERT_EQ(sys_send(0, &r, 1, nullptr, 0), SYS_OK);
  }
  send_words(peer, {1});
  recv_words(peer);
  if (me() == 0) EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(SendRecv, SwapWhereOneSideNamesAFreedRegionFailsOnBothAndKeepsServing) {
  if (me() > 1) return;
  const int peer = 1 - me();
  Manifest mine;
  rid_t r = filled_region(&mine, uint64_t(me()));
  ASSERT_GT(r, 0);
  rid_t gone = sys_ralloc(0, 0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(sys_rfree(gone), SYS_OK);
  rid_t got = 0;
  void *obj = nullptr;
  // Worker 0 names a freed region: its call fails with that, worker 1's with
  // SYS_ERR_PEER, and neither receives anything.
  rid_t *send = me() == 0 ? &gone : &r;
  const int rc = sys_sendrecv(peer, send, 1, nullptr, 0, &got, 1, &obj, 1);
  EXPECT_EQ(rc, me() == 0 ? SYS_ERR_NOREGION : SYS_ERR_PEER);
  EXPECT_EQ(got, SYS_NO_REGION);
  EXPECT_EQ(obj, nullptr);
  EXPECT_TRUE(mine.intact());
  // The next swap goes through.
  send_manifest(peer, mine);
  const Manifest theirs = recv_manifest(peer);
  ASSERT_EQ(sys_sendrecv(peer, &r, 1, nullptr, 0, &got, 1, nullptr, 0), SYS_OK);
  EXPECT_TRUE(theirs.intact());
  send_words(peer, {1});
  recv_words(peer);
  EXPECT_EQ(sys_rfree(r), SYS_OK);
}

}  // namespace
