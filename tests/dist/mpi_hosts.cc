/* SPDX-License-Identifier: Apache-2.0 */
// mpi_hosts.cc: dist/ across hosts. CTest runs it through scripts/dist-hosts
// on network-namespace hosts (each with its own hostname, TCP between them,
// shared memory within each) with MANYMALLOC_SCHEDULERS=1,2 and two workers
// per leaf: one leaf with its workers on each of two hosts (and the top
// scheduler on a third, or with a leaf; see CMakeLists.txt).
//
// - the layout is real: hostnames and MPI's shared-memory groups say the
//   workers of a leaf share a host and the leaves are on different hosts;
// - every region is owned (sys_region_stats' scheduler) by its creator's
//   leaf, as seen from every worker, and stays so after it travelled;
// - linked lists and trees whose levels are nested sub-regions go to a
//   worker on another host and back with sys_send/sys_recv, in every pair
//   of workers on different hosts: the receiver checks every pointer (each
//   node's address against the sender's list of them) and every byte, adds
//   objects and a sub-region of its own, and the sender checks them too;
// - every worker sends a list to the next host's worker at once, in a ring.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pattern.h"
#include "tree_shape.h"
#include "workers.h"

using namespace mmdtest;

namespace {

const TreeShape &shape() {
  static const TreeShape s = TreeShape::from_env(nworkers());
  return s;
}
int leaf_of(int w) { return shape().leaf_of_worker(w); }
int my_leaf() { return leaf_of(me()); }

std::string my_hostname() {
  char name[HOST_NAME_MAX + 1] = {0};
  gethostname(name, sizeof name - 1);
  return name;
}

// The hostname of every worker, by worker ID (a collective the first time;
// every worker calls it at the same point of the same case).
const std::vector<std::string> &worker_hosts() {
  static std::vector<std::string> hosts;
  if (hosts.empty()) {
    constexpr int kLen = 256;
    char mine[kLen] = {0};
    strncpy(mine, my_hostname().c_str(), kLen - 1);
    std::vector<char> all(size_t(kLen) * size_t(nworkers()));
    MPI_Allgather(mine, kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, sys_worker_comm());
    for (int w = 0; w < nworkers(); w++) hosts.emplace_back(&all[size_t(w) * kLen]);
  }
  return hosts;
}
bool same_host(int a, int b) { return worker_hosts()[size_t(a)] == worker_hosts()[size_t(b)]; }

// Rounds of disjoint pairs (a, b), a < b, on different hosts, until every
// such pair had its round: the same schedule on every worker.
std::vector<std::vector<std::pair<int, int>>> cross_host_rounds() {
  std::vector<std::pair<int, int>> left;
  for (int a = 0; a < nworkers(); a++)
    for (int b = a + 1; b < nworkers(); b++)
      if (!same_host(a, b)) left.emplace_back(a, b);
  std::vector<std::vector<std::pair<int, int>>> rounds;
  while (!left.empty()) {
    std::vector<std::pair<int, int>> round, rest;
    std::set<int> busy;
    for (const auto &p : left) {
      if (busy.count(p.first) || busy.count(p.second)) {
        rest.push_back(p);
        continue;
      }
      busy.insert(p.first);
      busy.insert(p.second);
      round.push_back(p);
    }
    rounds.push_back(round);
    left = rest;
  }
  return rounds;
}

sys_region_stats_t stats_of(rid_t r, int sub) {
  sys_region_stats_t s;
  memset(&s, 0xff, sizeof s);
  const int rc = sys_region_stats(r, sub, &s);
  EXPECT_EQ(rc, SYS_OK) << "sys_region_stats(" << r << ", " << sub << "): " << sys_strerror(rc);
  return s;
}

// The region is owned by worker creator's leaf, a leaf scheduler.
testing::AssertionResult owned_by_leaf_of(rid_t r, int creator) {
  const sys_region_stats_t s = stats_of(r, 0);
  if (s.scheduler != leaf_of(creator) || s.scheduler_level != shape().leaf_level())
    return testing::AssertionFailure() << "region " << r << " made by worker " << creator << " (on "
                                       << worker_hosts()[size_t(creator)] << ") is owned by scheduler "
                                       << s.scheduler << " (level " << s.scheduler_level << "), not by its leaf "
                                       << leaf_of(creator) << " (level " << shape().leaf_level() << ")";
  return testing::AssertionSuccess();
}

// ---- the layout -------------------------------------------------------------

TEST(Hosts, EachLeafAndItsWorkersOnAHostOfTheirOwn) {
  const TreeShape &t = shape();
  ASSERT_GE(t.nleaves, 2) << "run with MANYMALLOC_SCHEDULERS=1,2 (see CMakeLists.txt)";
  const std::vector<std::string> &hosts = worker_hosts();

  char proc[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(proc, &len);
  EXPECT_EQ(std::string(proc, size_t(len)), my_hostname()) << "MPI's processor name is not the hostname";

  // Workers of one leaf share a host; different leaves are on different hosts.
  std::set<std::string> distinct;
  for (int w = 0; w < nworkers(); w++) {
    distinct.insert(hosts[size_t(w)]);
    for (int v = 0; v < nworkers(); v++) {
      if (leaf_of(v) == leaf_of(w))
        EXPECT_EQ(hosts[size_t(v)], hosts[size_t(w)]) << "workers " << v << " and " << w << " of leaf " << leaf_of(w);
      else
        EXPECT_NE(hosts[size_t(v)], hosts[size_t(w)]) << "workers " << v << " (leaf " << leaf_of(v) << ") and " << w
                                                      << " (leaf " << leaf_of(w) << ")";
    }
  }
  EXPECT_EQ(int(distinct.size()), t.nleaves) << "the workers are not on one host per leaf";
  if (me() == 0) {
    std::string list;
    for (int w = 0; w < nworkers(); w++)
      list += " w" + std::to_string(w) + "@" + hosts[size_t(w)] + "(leaf " + std::to_string(leaf_of(w)) + ")";
    printf("[ hosts    ]%s\n", list.c_str());
  }

  // MPI agrees: shared memory groups the workers of a host, no more.
  MPI_Comm local;
  ASSERT_EQ(MPI_Comm_split_type(sys_worker_comm(), MPI_COMM_TYPE_SHARED, me(), MPI_INFO_NULL, &local), MPI_SUCCESS);
  int local_size = 0, on_my_host = 0;
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  for (int w = 0; w < nworkers(); w++) on_my_host += same_host(w, me());
  EXPECT_EQ(local_size, on_my_host) << "MPI's shared-memory group of worker " << me() << " on " << my_hostname();
  EXPECT_LT(local_size, nworkers()) << "every worker shares memory with every other: one host";
}

// Every worker's region, and a sub-region of it, are owned by the
// creator's leaf, as every worker sees it (other leaves' workers ask
// across hosts).
TEST(Hosts, RegionsAreOwnedByTheirCreatorsLeafSeenFromEveryHost) {
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0) << sys_strerror(int(r));
  const rid_t sub = sys_ralloc(r, 0);
  ASSERT_GT(sub, 0) << sys_strerror(int(sub));
  EXPECT_TRUE(owned_by_leaf_of(r, me()));
  EXPECT_TRUE(owned_by_leaf_of(sub, me()));

  const std::vector<uint64_t> mine = {uint64_t(r), uint64_t(sub)};
  std::vector<uint64_t> all(2 * size_t(nworkers()));
  MPI_Allgather(mine.data(), 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, sys_worker_comm());
  for (int w = 0; w < nworkers(); w++) {
    EXPECT_TRUE(owned_by_leaf_of(rid_t(all[2 * size_t(w)]), w)) << "asked by worker " << me();
    EXPECT_TRUE(owned_by_leaf_of(rid_t(all[2 * size_t(w) + 1]), w)) << "asked by worker " << me();
  }
  sys_barrier();
  EXPECT_EQ(sys_rfree(r), SYS_OK);
  sys_barrier();
}

// ---- linked lists ------------------------------------------------------------

struct ListNode {
  ListNode *next;
  uint64_t index;
  uint64_t len;   // payload bytes after the node
  uint64_t seed;  // the payload's pattern
  unsigned char *payload() { return reinterpret_cast<unsigned char *>(this + 1); }
};

// 256 B nodes as the paper's list benchmark, with some of other sizes.
size_t payload_len_of(uint64_t i) { return i % 7 == 3 ? 8 + (i * 37) % 900 : 256 - sizeof(ListNode); }

ListNode *new_node(rid_t r, uint64_t index, uint64_t seed) {
  const size_t len = payload_len_of(index);
  ListNode *n = static_cast<ListNode *>(sys_alloc(sizeof(ListNode) + len, r));
  if (!n) return nullptr;
  *n = {nullptr, index, len, seed};
  fill_pattern(n->payload(), len, seed);
  return n;
}

// The list from head holds exactly the nodes at addrs, in order, each with
// the pattern seed_of(writer, index).
testing::AssertionResult list_is(const ListNode *head, const std::vector<uint64_t> &addrs, uint64_t writer) {
  size_t i = 0;
  for (const ListNode *n = head; n; n = n->next, i++) {
    if (i >= addrs.size()) return testing::AssertionFailure() << "the list goes on past " << addrs.size() << " nodes";
    if (word_of(n) != addrs[i])
      return testing::AssertionFailure() << "node " << i << " at " << n << ", sent at " << ptr_of<void>(addrs[i]);
    if (n->index != i || n->len != payload_len_of(i) || n->seed != seed_of(writer, i))
      return testing::AssertionFailure() << "node " << i << " at " << n << " holds index " << n->index << ", length "
                                         << n->len << ", seed " << n->seed;
    testing::AssertionResult r = HasPattern(const_cast<ListNode *>(n)->payload(), size_t(n->len), n->seed);
    if (!r) return r << " (payload of node " << i << ")";
  }
  if (i != addrs.size()) return testing::AssertionFailure() << i << " nodes, sent " << addrs.size();
  return testing::AssertionSuccess();
}

constexpr uint64_t kListNodes = 3000, kAppended = 40;

// from builds a list and sends it to worker to on another host; to checks
// it, rewrites every node, appends nodes it allocates in the region (through
// its own leaf, from the creator's leaf on the other host) and sends it
// back; from checks everything and frees the region.
void list_there_and_back(int from, int to, uint64_t salt) {
  if (me() == from) {
    rid_t r = sys_ralloc(0, 0);
    ASSERT_GT(r, 0) << sys_strerror(int(r));
    ASSERT_TRUE(owned_by_leaf_of(r, me()));
    std::vector<uint64_t> addrs;
    ListNode *head = nullptr, **link = &head;
    for (uint64_t i = 0; i < kListNodes; i++) {
      ListNode *n = new_node(r, i, seed_of(salt, i));
      ASSERT_NE(n, nullptr) << "node " << i << ": " << sys_strerror(sys_last_error());
      *link = n;
      link = &n->next;
      addrs.push_back(word_of(n));
    }
    send_words(to, {uint64_t(r)});
    send_words(to, addrs);
    void *obj = head;
    ASSERT_EQ(sys_send(to, &r, 1, &obj, 1), SYS_OK);

    rid_t regs[2] = {0, 0};
    void *objs[2] = {nullptr, nullptr};
    ASSERT_EQ(sys_recv(to, regs, 2, objs, 2), SYS_OK);
    EXPECT_EQ(regs[0], r);
    EXPECT_EQ(regs[1], SYS_NO_REGION);
    EXPECT_EQ(objs[0], head);
    const std::vector<uint64_t> appended = recv_words(to);
    addrs.insert(addrs.end(), appended.begin(), appended.end());
    EXPECT_TRUE(list_is(head, addrs, salt + 1)) << "the list back from worker " << to << " on "
                                                << worker_hosts()[size_t(to)];
    EXPECT_TRUE(owned_by_leaf_of(r, me())) << "after its journey";
    EXPECT_EQ(stats_of(r, 0).live_objects, int64_t(kListNodes + kAppended));
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  } else if (me() == to) {
    rid_t r = rid_t(recv_words(from).at(0));
    const std::vector<uint64_t> addrs = recv_words(from);
    rid_t regs[2] = {0, 0};
    void *objs[2] = {nullptr, nullptr};
    ASSERT_EQ(sys_recv(from, regs, 2, objs, 2), SYS_OK);
    EXPECT_EQ(regs[0], r);
    EXPECT_EQ(regs[1], SYS_NO_REGION);
    ASSERT_EQ(word_of(objs[0]), addrs.at(0));
    EXPECT_EQ(objs[1], nullptr);
    ListNode *head = static_cast<ListNode *>(objs[0]);
    ASSERT_TRUE(list_is(head, addrs, salt)) << "the list from worker " << from << " on "
                                            << worker_hosts()[size_t(from)];
    EXPECT_TRUE(owned_by_leaf_of(r, from)) << "seen from worker " << me() << " on " << my_hostname();
    EXPECT_EQ(stats_of(r, 0).live_objects, int64_t(kListNodes));

    ListNode **link = &head;
    for (ListNode *n = head; n; n = n->next) {
      n->seed = seed_of(salt + 1, n->index);
      fill_pattern(n->payload(), size_t(n->len), n->seed);
      link = &n->next;
    }
    std::vector<uint64_t> appended;
    for (uint64_t i = kListNodes; i < kListNodes + kAppended; i++) {
      ListNode *n = new_node(r, i, seed_of(salt + 1, i));
      ASSERT_NE(n, nullptr) << "appended node " << i << ": " << sys_strerror(sys_last_error());
      *link = n;
      link = &n->next;
      appended.push_back(word_of(n));
    }
    send_words(from, appended);
    void *obj = head;
    ASSERT_EQ(sys_send(from, &r, 1, &obj, 1), SYS_OK);
  }
}

TEST(Hosts, ListsGoToAnotherHostAndBackInEveryPair) {
  const auto rounds = cross_host_rounds();
  ASSERT_FALSE(rounds.empty()) << "no two workers on different hosts";
  uint64_t salt = 1000;
  for (const auto &round : rounds) {
    for (const auto &p : round) {
      list_there_and_back(p.first, p.second, salt + 10 * uint64_t(p.first));
      list_there_and_back(p.second, p.first, salt + 10 * uint64_t(p.second) + 5);
    }
    salt += 1000;
    MPI_Barrier(sys_worker_comm());
  }
}

// ---- trees of nested regions ---------------------------------------------------

// Node id (1 at the root, 2i and 2i+1 below i) lives in the region of its
// level, each level a sub-region of the one above, with a blob of its own
// size next to it. extra: set by the receiver on the first node of the
// deepest level, to a blob in a region it adds below that level.
struct TreeNode {
  TreeNode *left, *right, *extra;
  unsigned char *blob;
  uint64_t blob_len, seed;
  uint32_t level, id;
};

constexpr uint32_t kDepth = 7;      // 127 nodes in 7 nested regions
constexpr uint32_t kSentBack = 3;   // the level whose region comes back alone
constexpr size_t kExtraLen = 5000;

uint32_t level_of_id(uint32_t id) { return uint32_t(31 - __builtin_clz(id)); }
size_t blob_len_of(uint32_t id) { return id == 5 ? 70000 : 16 + (size_t(id) * 53) % 2000; }

// Node addresses and blob addresses by id, [0] unused.
struct TreeManifest {
  std::vector<uint64_t> node, blob;
};

TreeNode *build_tree(const std::vector<rid_t> &levels, uint32_t id, uint64_t salt, TreeManifest *m) {
  const uint32_t level = level_of_id(id);
  if (level == kDepth) return nullptr;
  TreeNode *n = static_cast<TreeNode *>(sys_alloc(sizeof(TreeNode), levels[level]));
  unsigned char *b = static_cast<unsigned char *>(sys_alloc(blob_len_of(id), levels[level]));
  if (!n || !b) return nullptr;
  *n = {nullptr, nullptr, nullptr, b, blob_len_of(id), seed_of(salt, id), level, id};
  fill_pattern(b, blob_len_of(id), n->seed);
  m->node[id] = word_of(n);
  m->blob[id] = word_of(b);
  n->left = build_tree(levels, 2 * id, salt, m);
  n->right = build_tree(levels, 2 * id + 1, salt, m);
  if (level + 1 < kDepth && (!n->left || !n->right)) return nullptr;
  return n;
}

// The subtree at n (node id) matches the manifest: addresses, ids, levels,
// child pointers and blob bytes; salt_of(level) is the pattern's salt.
template <class Salt>
testing::AssertionResult tree_is(const TreeNode *n, uint32_t id, const TreeManifest &m, Salt salt_of) {
  const uint32_t level = level_of_id(id);
  if (level == kDepth)
    return n == nullptr ? testing::AssertionSuccess()
                        : testing::AssertionFailure() << "a node below the deepest level, at " << n;
  if (word_of(n) != m.node[id])
    return testing::AssertionFailure() << "node " << id << " at " << n << ", sent at " << ptr_of<void>(m.node[id]);
  if (n->id != id || n->level != level || word_of(n->blob) != m.blob[id] || n->blob_len != blob_len_of(id) ||
      n->seed != seed_of(salt_of(level), id))
    return testing::AssertionFailure() << "node " << id << " at " << n << " holds id " << n->id << ", level "
                                       << n->level << ", blob " << static_cast<void *>(n->blob) << " of "
                                       << n->blob_len << " B, seed " << n->seed;
  testing::AssertionResult r = HasPattern(n->blob, size_t(n->blob_len), n->seed);
  if (!r) return r << " (blob of node " << id << " at level " << level << ")";
  r = tree_is(n->left, 2 * id, m, salt_of);
  if (!r) return r;
  return tree_is(n->right, 2 * id + 1, m, salt_of);
}

void rewrite_from(TreeNode *n, uint32_t level, uint64_t salt) {
  if (!n) return;
  if (n->level >= level) {
    n->seed = seed_of(salt, n->id);
    fill_pattern(n->blob, size_t(n->blob_len), n->seed);
  }
  rewrite_from(n->left, level, salt);
  rewrite_from(n->right, level, salt);
}

// from builds the tree and sends its top region (the levels below travel
// with it) to worker to on another host, which checks every node and
// region, rewrites the levels from kSentBack down, adds a region below the
// deepest level with a blob hung from its first node, and sends the region
// of level kSentBack back alone; from checks the levels above untouched and
// the ones below (and the added region) as rewritten.
void tree_there_and_back(int from, int to, uint64_t salt) {
  const uint32_t first_deep = 1u << (kDepth - 1);  // the first node of the deepest level
  if (me() == from) {
    std::vector<rid_t> levels;
    for (uint32_t l = 0; l < kDepth; l++) {
      levels.push_back(sys_ralloc(l == 0 ? 0 : levels.back(), 0));
      ASSERT_GT(levels.back(), 0) << sys_strerror(int(levels.back()));
      EXPECT_TRUE(owned_by_leaf_of(levels.back(), me()));
    }
    TreeManifest m{std::vector<uint64_t>(size_t(1) << kDepth), std::vector<uint64_t>(size_t(1) << kDepth)};
    TreeNode *root = build_tree(levels, 1, salt, &m);
    ASSERT_NE(root, nullptr) << sys_strerror(sys_last_error());
    send_words(to, std::vector<uint64_t>(levels.begin(), levels.end()));
    send_words(to, m.node);
    send_words(to, m.blob);
    void *obj = root;
    ASSERT_EQ(sys_send(to, &levels[0], 1, &obj, 1), SYS_OK);

    rid_t back[2] = {0, 0};
    ASSERT_EQ(sys_recv(to, back, 2, nullptr, 0), SYS_OK);
    EXPECT_EQ(back[0], levels[kSentBack]);
    EXPECT_EQ(back[1], SYS_NO_REGION);
    const std::vector<uint64_t> extra = recv_words(to);  // region, blob
    EXPECT_TRUE(tree_is(root, 1, m, [salt](uint32_t l) { return l >= kSentBack ? salt + 1 : salt; }))
        << "the tree after its lower levels came back from worker " << to;
    const TreeNode *deep = ptr_of<const TreeNode>(m.node[first_deep]);
    EXPECT_EQ(word_of(deep->extra), extra.at(1));
    EXPECT_TRUE(HasPattern(ptr_of<void>(extra.at(1)), kExtraLen, seed_of(salt + 2, 0))) << "the added blob";
    // The added region hangs below the deepest level, on that level's
    // scheduler (a leaf has no level below): this worker's leaf.
    EXPECT_TRUE(owned_by_leaf_of(rid_t(extra.at(0)), me())) << "the region worker " << to << " added";
    const sys_region_stats_t s = stats_of(levels[0], 1);
    EXPECT_EQ(s.subregions, int64_t(kDepth));
    EXPECT_EQ(s.live_objects, int64_t(2 * ((1u << kDepth) - 1) + 1));
    EXPECT_EQ(sys_rfree(levels[0]), SYS_OK);
  } else if (me() == to) {
    const std::vector<uint64_t> lw = recv_words(from);
    const std::vector<rid_t> levels(lw.begin(), lw.end());
    TreeManifest m{recv_words(from), recv_words(from)};
    rid_t regs[2] = {0, 0};
    void *objs[2] = {nullptr, nullptr};
    ASSERT_EQ(sys_recv(from, regs, 2, objs, 2), SYS_OK);
    ASSERT_EQ(levels.size(), size_t(kDepth));
    EXPECT_EQ(regs[0], levels[0]);
    EXPECT_EQ(regs[1], SYS_NO_REGION);
    EXPECT_EQ(objs[1], nullptr);
    TreeNode *root = static_cast<TreeNode *>(objs[0]);
    ASSERT_TRUE(tree_is(root, 1, m, [salt](uint32_t) { return salt; }))
        << "the tree from worker " << from << " on " << worker_hosts()[size_t(from)];
    for (uint32_t l = 0; l < kDepth; l++) {
      EXPECT_TRUE(owned_by_leaf_of(levels[l], from)) << "level " << l << ", seen from worker " << me();
      const sys_region_stats_t s = stats_of(levels[l], 0);
      EXPECT_EQ(s.live_objects, int64_t(2) << l) << "level " << l;
      EXPECT_EQ(stats_of(levels[l], 1).subregions, int64_t(kDepth - 1 - l)) << "level " << l;
    }

    rewrite_from(root, kSentBack, salt + 1);
    const rid_t added = sys_ralloc(levels[kDepth - 1], 0);
    ASSERT_GT(added, 0) << sys_strerror(int(added));
    unsigned char *blob = static_cast<unsigned char *>(sys_alloc(kExtraLen, added));
    ASSERT_NE(blob, nullptr) << sys_strerror(sys_last_error());
    fill_pattern(blob, kExtraLen, seed_of(salt + 2, 0));
    TreeNode *deep = ptr_of<TreeNode>(m.node[first_deep]);
    deep->extra = reinterpret_cast<TreeNode *>(blob);
    rid_t send_back = levels[kSentBack];
    ASSERT_EQ(sys_send(from, &send_back, 1, nullptr, 0), SYS_OK);
    send_words(from, {uint64_t(added), word_of(blob)});
  }
}

TEST(Hosts, TreesOfNestedRegionsGoToAnotherHostAndBackInEveryPair) {
  const auto rounds = cross_host_rounds();
  ASSERT_FALSE(rounds.empty()) << "no two workers on different hosts";
  uint64_t salt = 50000;
  for (const auto &round : rounds) {
    for (const auto &p : round) {
      tree_there_and_back(p.first, p.second, salt + 10 * uint64_t(p.first));
      tree_there_and_back(p.second, p.first, salt + 10 * uint64_t(p.second) + 5);
    }
    salt += 1000;
    MPI_Barrier(sys_worker_comm());
  }
}

// ---- every worker at once -------------------------------------------------------

// A ring that alternates between the two leaves' hosts: leaf 0's first
// worker, leaf 1's first, leaf 0's second, ... Every worker sends its list
// to the next while receiving from the one before; leaf 0's workers send
// first, so the ring completes although sends wait for their receivers.
TEST(Hosts, EveryWorkerSendsToTheNextHostAtOnce) {
  const TreeShape &t = shape();
  if (t.nleaves != 2 || t.leaf_workers[0] != t.leaf_workers[1])
    GTEST_SKIP() << "the ring needs two leaves with as many workers each";
  std::vector<int> ring;
  for (int i = 0; i < t.leaf_workers[0]; i++) {
    ring.push_back(t.leaf_first[0] + i);
    ring.push_back(t.leaf_first[1] + i);
  }
  size_t at = 0;
  while (ring[at] != me()) at++;
  const int next = ring[(at + 1) % ring.size()], prev = ring[(at + ring.size() - 1) % ring.size()];
  ASSERT_FALSE(same_host(me(), next));
  ASSERT_FALSE(same_host(me(), prev));

  const uint64_t salt = 90000 + uint64_t(me());
  const rid_t r = sys_ralloc(0, 0);
  ASSERT_GT(r, 0);
  std::vector<uint64_t> addrs;
  ListNode *head = nullptr, **link = &head;
  for (uint64_t i = 0; i < kListNodes; i++) {
    ListNode *n = new_node(r, i, seed_of(salt, i));
    ASSERT_NE(n, nullptr) << sys_strerror(sys_last_error());
    *link = n;
    link = &n->next;
    addrs.push_back(word_of(n));
  }
  std::vector<uint64_t> words = {uint64_t(r), salt};
  words.insert(words.end(), addrs.begin(), addrs.end());
  const std::vector<uint64_t> theirs = shift_words(next, prev, words);

  rid_t got[1] = {0};
  void *obj = head, *got_obj[1] = {nullptr};
  rid_t mine = r;
  int sent = 1, received = 1;
  if (my_leaf() == t.leaf_sched(0)) {
    sent = sys_send(next, &mine, 1, &obj, 1);
    received = sys_recv(prev, got, 1, got_obj, 1);
  } else {
    received = sys_recv(prev, got, 1, got_obj, 1);
    sent = sys_send(next, &mine, 1, &obj, 1);
  }
  EXPECT_EQ(sent, SYS_OK) << sys_strerror(sent);
  ASSERT_EQ(received, SYS_OK) << sys_strerror(received);
  ASSERT_GE(theirs.size(), size_t(3));
  EXPECT_EQ(got[0], rid_t(theirs[0]));
  EXPECT_EQ(word_of(got_obj[0]), theirs[2]);
  EXPECT_TRUE(list_is(static_cast<ListNode *>(got_obj[0]), std::vector<uint64_t>(theirs.begin() + 2, theirs.end()),
                      theirs[1]))
      << "from worker " << prev << " on " << worker_hosts()[size_t(prev)];
  EXPECT_TRUE(owned_by_leaf_of(got[0], prev));
  EXPECT_TRUE(list_is(head, addrs, salt)) << "own list after receiving";
  sys_barrier();
  EXPECT_EQ(sys_rfree(got[0]), SYS_OK) << "freed by the receiver, on another host than its owner";
  sys_barrier();
  EXPECT_EQ(sys_alloc(64, r), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
}

}  // namespace
