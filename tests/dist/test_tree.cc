/* SPDX-License-Identifier: Apache-2.0 */
// The scheduler tree's shape and placement (tree.c), with no MPI:
// parsing MANYMALLOC_SCHEDULERS and MANYMALLOC_WORKERS_PER_SCHEDULER (good
// and bad strings; each refusal names the variable), spreading the workers
// evenly over the leaves or a fixed count per leaf, placing ranks on one,
// two and three hosts (each leaf's scheduler and workers on one host where
// the ranks allow), and navigating the tree (level, parent, children,
// child_toward, subtree_size).
//
// check_placement() checks what any placement must hold: every rank has
// exactly one role, and role[], sched_rank[] and worker_rank[] agree.
#include <manymalloc/myrmics.h>  // <mpi.h> first, outside extern "C"
extern "C" {
#include "tree.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

// A parsed tree that is destroyed at the end of the scope.
struct Tree {
  mmd_tree_t t{};
  char why[256] = "";
  int rc = -2;
  Tree(const char *scheds, const char *per_leaf, int size) {
    memset(why, 0, sizeof why);
    rc = mmd_tree_parse(&t, scheds, per_leaf, size, why, sizeof why);
  }
  ~Tree() { mmd_tree_destroy(&t); }
  Tree(const Tree &) = delete;
  Tree &operator=(const Tree &) = delete;
};

std::vector<int> leaf_workers(const mmd_tree_t &t) {
  return std::vector<int>(t.leaf_workers, t.leaf_workers + t.nleaves);
}
std::vector<int> leaf_first(const mmd_tree_t &t) { return std::vector<int>(t.leaf_first, t.leaf_first + t.nleaves); }

// ---- parsing ----------------------------------------------------------------

TEST(TreeParse, DefaultIsOneScheduler) {
  for (const char *s : {static_cast<const char *>(nullptr), ""}) {
    Tree tr(s, nullptr, 5);
    ASSERT_EQ(tr.rc, 0) << tr.why;
    const mmd_tree_t &t = tr.t;
    EXPECT_EQ(t.nlevels, 1);
    EXPECT_EQ(t.level_size[0], 1);
    EXPECT_EQ(t.level_first[0], 0);
    EXPECT_EQ(t.nsched, 1);
    EXPECT_EQ(t.nleaves, 1);
    EXPECT_EQ(t.nworkers, 4);
    EXPECT_EQ(t.size, 5);
    EXPECT_EQ(leaf_workers(t), std::vector<int>({4}));
    EXPECT_EQ(leaf_first(t), std::vector<int>({0}));
  }
  Tree one("1", "", 2);
  ASSERT_EQ(one.rc, 0) << one.why;
  EXPECT_EQ(one.t.nsched, 1);
  EXPECT_EQ(one.t.nworkers, 1);
}

TEST(TreeParse, TwoLevels) {
  Tree tr("1,2", nullptr, 7);
  ASSERT_EQ(tr.rc, 0) << tr.why;
  const mmd_tree_t &t = tr.t;
  EXPECT_EQ(t.nlevels, 2);
  EXPECT_EQ(t.level_size[0], 1);
  EXPECT_EQ(t.level_size[1], 2);
  EXPECT_EQ(t.level_first[0], 0);
  EXPECT_EQ(t.level_first[1], 1);
  EXPECT_EQ(t.nsched, 3);
  EXPECT_EQ(t.nleaves, 2);
  EXPECT_EQ(t.nworkers, 4);
  EXPECT_EQ(leaf_workers(t), std::vector<int>({2, 2}));
  EXPECT_EQ(leaf_first(t), std::vector<int>({0, 2}));
}

TEST(TreeParse, ThreeLevels) {
  Tree tr("1,2,4", nullptr, 11);
  ASSERT_EQ(tr.rc, 0) << tr.why;
  const mmd_tree_t &t = tr.t;
  EXPECT_EQ(t.nlevels, 3);
  EXPECT_EQ(t.level_size[2], 4);
  EXPECT_EQ(t.level_first[1], 1);
  EXPECT_EQ(t.level_first[2], 3);
  EXPECT_EQ(t.nsched, 7);
  EXPECT_EQ(t.nleaves, 4);
  EXPECT_EQ(t.nworkers, 4);
  EXPECT_EQ(leaf_workers(t), std::vector<int>({1, 1, 1, 1}));
  EXPECT_EQ(leaf_first(t), std::vector<int>({0, 1, 2, 3}));

  Tree wide("1,4,16", nullptr, 21 + 32);
  ASSERT_EQ(wide.rc, 0) << wide.why;
  EXPECT_EQ(wide.t.nsched, 21);
  EXPECT_EQ(wide.t.nleaves, 16);
  EXPECT_EQ(wide.t.level_first[2], 5);
  EXPECT_EQ(wide.t.nworkers, 32);
}

TEST(TreeParse, ChainsAndUnevenFanOutsAreGood) {
  // Each level a multiple of the one above: 1 is a multiple of 1.
  Tree chain("1,1", nullptr, 3);
  ASSERT_EQ(chain.rc, 0) << chain.why;
  EXPECT_EQ(chain.t.nlevels, 2);
  EXPECT_EQ(chain.t.nsched, 2);
  EXPECT_EQ(chain.t.nleaves, 1);
  EXPECT_EQ(chain.t.nworkers, 1);

  Tree mixed("1,2,6", nullptr, 9 + 6);
  ASSERT_EQ(mixed.rc, 0) << mixed.why;
  EXPECT_EQ(mixed.t.nsched, 9);
  EXPECT_EQ(mixed.t.nleaves, 6);

  Tree eight("1,1,1,1,1,1,1,1", nullptr, 9);
  ASSERT_EQ(eight.rc, 0) << eight.why;
  EXPECT_EQ(eight.t.nlevels, MMD_TREE_MAX_LEVELS);
}

TEST(TreeParse, BadSchedulerStringsAreRefusedNamingTheVariable) {
  // The sizes leave room for any tree that parses, so only the string is at fault.
  for (const char *s : {"2,4", "1,3,4", "x", "0", "-1", "2", "1,0", "1,-2", "1,,2", ",1,2", "1,2,", "1,2x",
                        "1.5", "1;2", "1,2,3", "1,4,6", "1 2", "1,1,1,1,1,1,1,1,1"}) {
    Tree tr(s, nullptr, 4096);
    EXPECT_EQ(tr.rc, -1) << "\"" << s << "\" was accepted";
    EXPECT_NE(std::string(tr.why).find("MANYMALLOC_SCHEDULERS"), std::string::npos)
        << "\"" << s << "\": " << tr.why;
    EXPECT_NE(std::string(tr.why).find(s), std::string::npos) << "the value is not quoted: " << tr.why;
  }
}

TEST(TreeParse, TooFewRanksAreRefused) {
  // 3 schedulers and one worker per leaf need 5 ranks.
  for (int size : {1, 3, 4}) {
    Tree tr("1,2", nullptr, size);
    EXPECT_EQ(tr.rc, -1) << size << " ranks";
    EXPECT_NE(std::string(tr.why).find("MANYMALLOC_SCHEDULERS"), std::string::npos) << tr.why;
    EXPECT_NE(std::string(tr.why).find(std::to_string(size)), std::string::npos)
        << "does not say how many were started: " << tr.why;
    EXPECT_NE(std::string(tr.why).find("5"), std::string::npos) << "does not say how many are needed: " << tr.why;
  }
  Tree ok("1,2", nullptr, 5);
  ASSERT_EQ(ok.rc, 0) << ok.why;
  EXPECT_EQ(leaf_workers(ok.t), std::vector<int>({1, 1}));

  // One scheduler alone, with no worker.
  Tree alone(nullptr, nullptr, 1);
  EXPECT_EQ(alone.rc, -1);
  EXPECT_STRNE(alone.why, "");
  Tree deep("1,2,4", nullptr, 10);  // 7 + 4 needed
  EXPECT_EQ(deep.rc, -1);
}

TEST(TreeParse, WorkersAreSpreadEvenlyOverTheLeaves) {
  struct Case {
    const char *scheds;
    int size;
    std::vector<int> per_leaf;
  };
  for (const Case &c : {Case{"1,2", 8, {3, 2}}, Case{"1,3", 11, {3, 2, 2}}, Case{"1,2,4", 14, {2, 2, 2, 1}},
                        Case{"1,2,4", 17, {3, 3, 2, 2}}, Case{"1,4", 5 + 13, {4, 3, 3, 3}},
                        Case{"1", 9, {8}}}) {
    Tree tr(c.scheds, nullptr, c.size);
    ASSERT_EQ(tr.rc, 0) << c.scheds << " on " << c.size << ": " << tr.why;
    const mmd_tree_t &t = tr.t;
    ASSERT_EQ(t.nworkers, c.size - t.nsched);
    std::vector<int> lw = leaf_workers(t), lf = leaf_first(t);
    int sum = 0, lo = 1 << 30, hi = 0;
    for (int k = 0; k < t.nleaves; k++) {
      EXPECT_EQ(lf[size_t(k)], sum) << c.scheds << ": leaf " << k << " does not start after leaf " << k - 1;
      sum += lw[size_t(k)];
      lo = std::min(lo, lw[size_t(k)]);
      hi = std::max(hi, lw[size_t(k)]);
    }
    EXPECT_EQ(sum, t.nworkers) << c.scheds;
    EXPECT_LE(hi - lo, 1) << c.scheds << " on " << c.size << ": not even";
    // Which leaves get the extra worker is the implementation's choice;
    // the counts of the listed cases are the first leaves'.
    std::vector<int> want = c.per_leaf;
    std::sort(want.begin(), want.end());
    std::sort(lw.begin(), lw.end());
    EXPECT_EQ(lw, want) << c.scheds << " on " << c.size;
  }
  Tree tr("1,2", nullptr, 8);
  EXPECT_EQ(leaf_workers(tr.t), std::vector<int>({3, 2})) << "the first leaves take the extra workers";
}

TEST(TreeParse, WorkersPerSchedulerThatMatchTheRanks) {
  Tree two("1,2", "2", 7);
  ASSERT_EQ(two.rc, 0) << two.why;
  EXPECT_EQ(leaf_workers(two.t), std::vector<int>({2, 2}));
  EXPECT_EQ(leaf_first(two.t), std::vector<int>({0, 2}));

  Tree three("1,2,4", "3", 7 + 12);
  ASSERT_EQ(three.rc, 0) << three.why;
  EXPECT_EQ(leaf_workers(three.t), std::vector<int>({3, 3, 3, 3}));
  EXPECT_EQ(leaf_first(three.t), std::vector<int>({0, 3, 6, 9}));

  Tree flat(nullptr, "4", 5);
  ASSERT_EQ(flat.rc, 0) << flat.why;
  EXPECT_EQ(leaf_workers(flat.t), std::vector<int>({4}));

  Tree empty("1,2", "", 8);  // "" as unset: spread
  ASSERT_EQ(empty.rc, 0) << empty.why;
  EXPECT_EQ(empty.t.nworkers, 5);
}

TEST(TreeParse, WorkersPerSchedulerThatDoNotMatchAreRefused) {
  // 1,2 with 2 a leaf needs exactly 7 ranks.
  for (int size : {5, 6, 8, 9, 64}) {
    Tree tr("1,2", "2", size);
    EXPECT_EQ(tr.rc, -1) << size << " ranks were accepted";
    const std::string why = tr.why;
    EXPECT_NE(why.find("MANYMALLOC_WORKERS_PER_SCHEDULER"), std::string::npos)
        << "the refusal does not name the variable at fault: " << why;
    EXPECT_NE(why.find("7"), std::string::npos) << "does not say how many ranks it needs: " << why;
    EXPECT_NE(why.find(std::to_string(size)), std::string::npos) << "does not say how many were started: " << why;
  }
  for (const char *w : {"0", "-1", "x", "2x", "1.5", " "}) {
    Tree tr("1,2", w, 7);
    EXPECT_EQ(tr.rc, -1) << "\"" << w << "\" was accepted";
    EXPECT_NE(std::string(tr.why).find("MANYMALLOC_WORKERS_PER_SCHEDULER"), std::string::npos)
        << "\"" << w << "\": " << tr.why;
  }
}

TEST(TreeParse, DestroyAfterARefusalIsHarmless) {
  mmd_tree_t t;
  char why[200];
  ASSERT_EQ(mmd_tree_parse(&t, "2,4", nullptr, 7, why, sizeof why), -1);
  mmd_tree_destroy(&t);
  ASSERT_EQ(mmd_tree_parse(&t, "1,2", "3", 7, why, sizeof why), -1);
  mmd_tree_destroy(&t);
  ASSERT_EQ(mmd_tree_parse(&t, "1,2", nullptr, 3, why, sizeof why), -1);
  mmd_tree_destroy(&t);
  // A short buffer: the message is cut, not overrun.
  char tiny[8];
  memset(tiny, 'Z', sizeof tiny);
  ASSERT_EQ(mmd_tree_parse(&t, "x", nullptr, 7, tiny, 4), -1);
  EXPECT_EQ(tiny[3], '\0');
  EXPECT_EQ(tiny[4], 'Z');
  mmd_tree_destroy(&t);
}

// ---- placement --------------------------------------------------------------

// Every rank has one role; the three arrays agree.
testing::AssertionResult check_placement(const mmd_tree_t &t) {
  std::set<int> seen;
  for (int s = 0; s < t.nsched; s++) {
    const int r = t.sched_rank[s];
    if (r < 0 || r >= t.size) return testing::AssertionFailure() << "scheduler " << s << " on rank " << r;
    if (!seen.insert(r).second) return testing::AssertionFailure() << "rank " << r << " has two roles";
    if (t.role[r] != s) return testing::AssertionFailure() << "role[" << r << "] = " << t.role[r] << ", not " << s;
  }
  for (int w = 0; w < t.nworkers; w++) {
    const int r = t.worker_rank[w];
    if (r < 0 || r >= t.size) return testing::AssertionFailure() << "worker " << w << " on rank " << r;
    if (!seen.insert(r).second) return testing::AssertionFailure() << "rank " << r << " has two roles";
    if (t.role[r] != -1 - w)
      return testing::AssertionFailure() << "role[" << r << "] = " << t.role[r] << ", not " << -1 - w;
  }
  if (int(seen.size()) != t.size)
    return testing::AssertionFailure() << seen.size() << " of " << t.size << " ranks have a role";
  return testing::AssertionSuccess();
}

// The host of each leaf, or a failure when a leaf's scheduler and workers
// are not all on one host.
testing::AssertionResult leaves_on_one_host(const mmd_tree_t &t, const std::vector<int> &host_of,
                                            std::vector<int> *leaf_host) {
  leaf_host->clear();
  for (int k = 0; k < t.nleaves; k++) {
    const int sched = t.level_first[t.nlevels - 1] + k;
    const int h = host_of[size_t(t.sched_rank[sched])];
    for (int w = t.leaf_first[k]; w < t.leaf_first[k] + t.leaf_workers[k]; w++)
      if (host_of[size_t(t.worker_rank[w])] != h)
        return testing::AssertionFailure() << "leaf " << k << " (scheduler " << sched << ", rank "
                                           << t.sched_rank[sched] << ", host " << h << ") has worker " << w
                                           << " on rank " << t.worker_rank[w] << ", host "
                                           << host_of[size_t(t.worker_rank[w])];
    leaf_host->push_back(h);
  }
  return testing::AssertionSuccess();
}

TEST(TreePlace, OneSchedulerOnOneHost) {
  Tree tr(nullptr, nullptr, 5);
  ASSERT_EQ(tr.rc, 0);
  const std::vector<int> hosts(5, 0);
  ASSERT_EQ(mmd_tree_place(&tr.t, hosts.data()), 0);
  ASSERT_TRUE(check_placement(tr.t));
  // The old layout: rank 0 schedules, worker w is rank w + 1.
  EXPECT_EQ(tr.t.sched_rank[0], 0);
  for (int w = 0; w < 4; w++) EXPECT_EQ(tr.t.worker_rank[w], w + 1) << w;
}

TEST(TreePlace, TwoLevelsOnOneHost) {
  Tree tr("1,2", nullptr, 7);
  ASSERT_EQ(tr.rc, 0);
  const std::vector<int> hosts(7, 3);
  ASSERT_EQ(mmd_tree_place(&tr.t, hosts.data()), 0);
  ASSERT_TRUE(check_placement(tr.t));
  // Leaf 0 is rank 0, its workers follow.
  EXPECT_EQ(tr.t.sched_rank[1], 0);
  EXPECT_EQ(tr.t.worker_rank[0], 1);
  EXPECT_EQ(tr.t.worker_rank[1], 2);
}

TEST(TreePlace, ThreeLevelsOnOneHost) {
  Tree tr("1,2,4", "2", 15);
  ASSERT_EQ(tr.rc, 0) << tr.why;
  const std::vector<int> hosts(15, 0);
  ASSERT_EQ(mmd_tree_place(&tr.t, hosts.data()), 0);
  ASSERT_TRUE(check_placement(tr.t));
  EXPECT_EQ(tr.t.sched_rank[3], 0);
  EXPECT_EQ(tr.t.worker_rank[0], 1);
  EXPECT_EQ(tr.t.worker_rank[1], 2);
}

TEST(TreePlace, TwoHostsOneLeafEach) {
  struct Case {
    const char *name;
    std::vector<int> hosts;
  };
  // 7 ranks: 3 schedulers, 2 workers a leaf; each leaf needs 3 ranks of a host.
  for (const Case &c : {Case{"by block 4+3", {0, 0, 0, 0, 1, 1, 1}},
                        Case{"by block 3+4", {5, 5, 5, 9, 9, 9, 9}},
                        Case{"round robin", {0, 1, 0, 1, 0, 1, 0}},
                        Case{"odd IDs", {42, 17, 17, 42, 42, 17, 42}}}) {
    Tree tr("1,2", nullptr, 7);
    ASSERT_EQ(tr.rc, 0);
    ASSERT_EQ(mmd_tree_place(&tr.t, c.hosts.data()), 0) << c.name;
    ASSERT_TRUE(check_placement(tr.t)) << c.name;
    std::vector<int> leaf_host;
    EXPECT_TRUE(leaves_on_one_host(tr.t, c.hosts, &leaf_host)) << c.name;
    EXPECT_NE(leaf_host[0], leaf_host[1]) << c.name << ": both leaves on one host";
  }
  // 8 ranks, 3 + 2 workers: leaves of 4 and 3 ranks on hosts of 4 and 4.
  for (const std::vector<int> &hosts : {std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}, {0, 1, 0, 1, 0, 1, 0, 1}}) {
    Tree tr("1,2", nullptr, 8);
    ASSERT_EQ(tr.rc, 0);
    ASSERT_EQ(mmd_tree_place(&tr.t, hosts.data()), 0);
    ASSERT_TRUE(check_placement(tr.t));
    std::vector<int> leaf_host;
    EXPECT_TRUE(leaves_on_one_host(tr.t, hosts, &leaf_host));
    EXPECT_NE(leaf_host[0], leaf_host[1]);
  }
}

TEST(TreePlace, ThreeHostsOneLeafEach) {
  // 1,2 on hosts of 3, 3 and 1 ranks (in every order of first appearance):
  // the leaves on the two big hosts, the top on the small one.
  for (const std::vector<int> &hosts : {std::vector<int>{0, 0, 0, 1, 1, 1, 2}, {2, 0, 0, 0, 1, 1, 1},
                                        {0, 2, 1, 0, 1, 0, 1}}) {
    Tree tr("1,2", nullptr, 7);
    ASSERT_EQ(tr.rc, 0);
    ASSERT_EQ(mmd_tree_place(&tr.t, hosts.data()), 0);
    ASSERT_TRUE(check_placement(tr.t));
    std::vector<int> leaf_host;
    ASSERT_TRUE(leaves_on_one_host(tr.t, hosts, &leaf_host));
    EXPECT_EQ(std::set<int>(leaf_host.begin(), leaf_host.end()), std::set<int>({0, 1}));
    EXPECT_EQ(hosts[size_t(tr.t.sched_rank[0])], 2) << "the top is not on the host left over";
  }
  // 1,3 on hosts of 4, 3 and 3: a leaf on each host.
  const std::vector<int> hosts = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
  Tree tr("1,3", nullptr, 10);
  ASSERT_EQ(tr.rc, 0);
  ASSERT_EQ(mmd_tree_place(&tr.t, hosts.data()), 0);
  ASSERT_TRUE(check_placement(tr.t));
  std::vector<int> leaf_host;
  ASSERT_TRUE(leaves_on_one_host(tr.t, hosts, &leaf_host));
  EXPECT_EQ(std::set<int>(leaf_host.begin(), leaf_host.end()), std::set<int>({0, 1, 2}));
}

TEST(TreePlace, LeavesThatDoNotFitAHostStillGetEveryRank) {
  // 1,2 with 3 workers a leaf on hosts of 3: each leaf must spill.
  const std::vector<int> hosts = {0, 0, 0, 1, 1, 1, 2, 2, 2};
  Tree tr("1,2", "3", 9);
  ASSERT_EQ(tr.rc, 0) << tr.why;
  ASSERT_EQ(mmd_tree_place(&tr.t, hosts.data()), 0);
  EXPECT_TRUE(check_placement(tr.t));
  // Every rank on its own host.
  std::vector<int> own(9);
  for (int r = 0; r < 9; r++) own[size_t(r)] = 100 + r;
  Tree tr2("1,2,4", nullptr, 11);
  ASSERT_EQ(tr2.rc, 0);
  ASSERT_EQ(mmd_tree_place(&tr2.t, std::vector<int>(11, 0).data()), 0);
  EXPECT_TRUE(check_placement(tr2.t));
  Tree tr3("1,2", nullptr, 9);
  ASSERT_EQ(tr3.rc, 0);
  ASSERT_EQ(mmd_tree_place(&tr3.t, own.data()), 0);
  EXPECT_TRUE(check_placement(tr3.t));
}

// ---- navigation -------------------------------------------------------------

TEST(TreeNavigate, OneScheduler) {
  Tree tr(nullptr, nullptr, 3);
  ASSERT_EQ(tr.rc, 0);
  const mmd_tree_t *t = &tr.t;
  EXPECT_EQ(mmd_tree_level(t, 0), 0);
  EXPECT_TRUE(mmd_tree_is_leaf(t, 0));
  EXPECT_EQ(mmd_tree_parent(t, 0), -1);
  EXPECT_EQ(mmd_tree_nchildren(t, 0), 0);
  EXPECT_EQ(mmd_tree_child_toward(t, 0, 0), -1);
  EXPECT_EQ(mmd_tree_subtree_size(t, 0), 1);
  EXPECT_EQ(mmd_tree_leaf_pos(t, 0), 0);
}

TEST(TreeNavigate, TwoLevels) {
  Tree tr("1,2", nullptr, 7);
  ASSERT_EQ(tr.rc, 0);
  const mmd_tree_t *t = &tr.t;
  EXPECT_EQ(mmd_tree_level(t, 0), 0);
  EXPECT_EQ(mmd_tree_level(t, 1), 1);
  EXPECT_EQ(mmd_tree_level(t, 2), 1);
  EXPECT_FALSE(mmd_tree_is_leaf(t, 0));
  EXPECT_TRUE(mmd_tree_is_leaf(t, 1));
  EXPECT_TRUE(mmd_tree_is_leaf(t, 2));
  EXPECT_EQ(mmd_tree_parent(t, 0), -1);
  EXPECT_EQ(mmd_tree_parent(t, 1), 0);
  EXPECT_EQ(mmd_tree_parent(t, 2), 0);
  EXPECT_EQ(mmd_tree_nchildren(t, 0), 2);
  EXPECT_EQ(mmd_tree_first_child(t, 0), 1);
  EXPECT_EQ(mmd_tree_nchildren(t, 1), 0);
  EXPECT_EQ(mmd_tree_child_toward(t, 0, 1), 1);
  EXPECT_EQ(mmd_tree_child_toward(t, 0, 2), 2);
  EXPECT_EQ(mmd_tree_child_toward(t, 0, 0), -1);
  EXPECT_EQ(mmd_tree_child_toward(t, 1, 2), -1);
  EXPECT_EQ(mmd_tree_child_toward(t, 1, 0), -1);
  EXPECT_EQ(mmd_tree_subtree_size(t, 0), 3);
  EXPECT_EQ(mmd_tree_subtree_size(t, 2), 1);
  EXPECT_EQ(mmd_tree_leaf_pos(t, 1), 0);
  EXPECT_EQ(mmd_tree_leaf_pos(t, 2), 1);
}

TEST(TreeNavigate, ThreeLevels) {
  Tree tr("1,2,4", nullptr, 11);
  ASSERT_EQ(tr.rc, 0);
  const mmd_tree_t *t = &tr.t;
  const int level[7] = {0, 1, 1, 2, 2, 2, 2}, parent[7] = {-1, 0, 0, 1, 1, 2, 2};
  for (int s = 0; s < 7; s++) {
    EXPECT_EQ(mmd_tree_level(t, s), level[s]) << s;
    EXPECT_EQ(mmd_tree_parent(t, s), parent[s]) << s;
    EXPECT_EQ(mmd_tree_is_leaf(t, s), s >= 3) << s;
  }
  EXPECT_EQ(mmd_tree_nchildren(t, 0), 2);
  EXPECT_EQ(mmd_tree_first_child(t, 0), 1);
  EXPECT_EQ(mmd_tree_nchildren(t, 1), 2);
  EXPECT_EQ(mmd_tree_first_child(t, 1), 3);
  EXPECT_EQ(mmd_tree_first_child(t, 2), 5);
  for (int s = 3; s < 7; s++) {
    EXPECT_EQ(mmd_tree_nchildren(t, s), 0);
    EXPECT_EQ(mmd_tree_leaf_pos(t, s), s - 3);
    EXPECT_EQ(mmd_tree_subtree_size(t, s), 1);
  }
  EXPECT_EQ(mmd_tree_subtree_size(t, 0), 7);
  EXPECT_EQ(mmd_tree_subtree_size(t, 1), 3);
  EXPECT_EQ(mmd_tree_subtree_size(t, 2), 3);
  // child_toward: the next hop down, or -1 when other is not below.
  const int toward0[7] = {-1, 1, 2, 1, 1, 2, 2};
  const int toward1[7] = {-1, -1, -1, 3, 4, -1, -1};
  const int toward2[7] = {-1, -1, -1, -1, -1, 5, 6};
  for (int o = 0; o < 7; o++) {
    EXPECT_EQ(mmd_tree_child_toward(t, 0, o), toward0[o]) << "0 toward " << o;
    EXPECT_EQ(mmd_tree_child_toward(t, 1, o), toward1[o]) << "1 toward " << o;
    EXPECT_EQ(mmd_tree_child_toward(t, 2, o), toward2[o]) << "2 toward " << o;
    for (int leaf = 3; leaf < 7; leaf++) EXPECT_EQ(mmd_tree_child_toward(t, leaf, o), -1) << leaf << " " << o;
  }
}

TEST(TreeNavigate, UnevenFanOutsAgreeWithABruteForceTree) {
  // 1,2,6,12: fan-outs 2, 3, 2. The brute force: parent by counting.
  Tree tr("1,2,6,12", nullptr, 21 + 12);
  ASSERT_EQ(tr.rc, 0) << tr.why;
  const mmd_tree_t *t = &tr.t;
  ASSERT_EQ(t->nsched, 21);
  std::vector<int> lvl, par;
  const int sizes[4] = {1, 2, 6, 12};
  for (int l = 0, first = 0, prev_first = 0; l < 4; l++) {
    for (int i = 0; i < sizes[l]; i++) {
      lvl.push_back(l);
      par.push_back(l == 0 ? -1 : prev_first + i / (sizes[l] / sizes[l - 1]));
    }
    prev_first = first;
    first += sizes[l];
  }
  auto is_below = [&](int s, int anc) {
    for (int x = s; x >= 0; x = par[size_t(x)])
      if (x == anc) return true;
    return false;
  };
  for (int s = 0; s < 21; s++) {
    EXPECT_EQ(mmd_tree_level(t, s), lvl[size_t(s)]) << s;
    EXPECT_EQ(mmd_tree_parent(t, s), par[size_t(s)]) << s;
    std::vector<int> kids;
    int sub = 0;
    for (int c = 0; c < 21; c++) {
      if (par[size_t(c)] == s) kids.push_back(c);
      sub += is_below(c, s);
    }
    ASSERT_EQ(mmd_tree_nchildren(t, s), int(kids.size())) << s;
    if (!kids.empty()) EXPECT_EQ(mmd_tree_first_child(t, s), kids[0]) << s;
    for (size_t i = 1; i < kids.size(); i++) EXPECT_EQ(kids[i], kids[0] + int(i));
    EXPECT_EQ(mmd_tree_subtree_size(t, s), sub) << s;
    for (int o = 0; o < 21; o++) {
      int want = -1;
      for (int c : kids)
        if (is_below(o, c)) want = c;
      EXPECT_EQ(mmd_tree_child_toward(t, s, o), want) << s << " toward " << o;
    }
  }
}

TEST(TreeNavigate, WorkersOfEachLeafAreConsecutive) {
  Tree tr("1,2,4", nullptr, 7 + 10);
  ASSERT_EQ(tr.rc, 0);
  const mmd_tree_t &t = tr.t;
  std::map<int, int> leaf_of;
  for (int k = 0; k < t.nleaves; k++)
    for (int w = t.leaf_first[k]; w < t.leaf_first[k] + t.leaf_workers[k]; w++)
      EXPECT_TRUE(leaf_of.emplace(w, k).second) << "worker " << w << " in two leaves";
  ASSERT_EQ(int(leaf_of.size()), t.nworkers);
  for (int w = 1; w < t.nworkers; w++) EXPECT_LE(leaf_of[w - 1], leaf_of[w]) << "not numbered leaf by leaf";
}

}  // namespace
