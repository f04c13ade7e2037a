/* SPDX-License-Identifier: Apache-2.0 */
// mpi_tree.cc: the API over a tree of schedulers (MANYMALLOC_SCHEDULERS,
// set by CTest: 1,2 with 4 workers, 1,2,4 with 4 workers, and unset). The
// tree expected is tree_shape.h's, worked out from the same variables.
//
// - shape: sys_sched_stats' schedulers and levels, workers numbered leaf by
//   leaf, sys_worker_comm() ordered by worker ID;
// - ownership (sys_region_stats' scheduler and scheduler_level): a region
//   with no hint under the root on its creator's leaf, level hints, never
//   above the parent, the paper's "Mb under M";
// - work across leaves: sys_alloc, sys_balloc and sys_free in a region of
//   another leaf, of objects another leaf's worker allocated, sys_realloc
//   moving objects between schedulers, loose objects of three schedulers
//   sent at once, sys_send/sys_recv of region trees spanning schedulers
//   (every byte and pointer checked on the receiver), sys_rfree of such
//   trees (their sub-regions are gone) and statistics summed over the
//   schedulers;
// - errors answered by another scheduler reach the worker, which keeps
//   being served;
// - sys_sched_stats' counters.
//
// Pairs: worker w works with worker (w + n/2) % n, which with the worker
// counts registered is on another leaf (where there is more than one).
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "manifest.h"
#include "pattern.h"
#include "tree_shape.h"
#include "workers.h"

using namespace mmdtest;

namespace {

// Far above any region ID these tests are given.
constexpr rid_t kNoSuchRegion = 999999;

const TreeShape &shape() {
  static const TreeShape s = TreeShape::from_env(nworkers());
  return s;
}
int my_leaf() { return shape().leaf_of_worker(me()); }
int partner_of(int w) { return (w + nworkers() / 2) % nworkers(); }
int partner() { return partner_of(me()); }
// In each pair, the one that goes first in round 0.
bool first_in_pair(int round) { return (me() < nworkers() / 2) == (round == 0); }

sys_region_stats_t stats_of(rid_t r, int sub) {
  sys_region_stats_t s;
  memset(&s, 0xff, sizeof s);
  const int rc = sys_region_stats(r, sub, &s);
  EXPECT_EQ(rc, SYS_OK) << "sys_region_stats(" << r << ", " << sub << "): " << sys_strerror(rc);
  return s;
}

std::string where(const sys_region_stats_t &s) {
  return "scheduler " + std::to_string(s.scheduler) + " (level " + std::to_string(s.scheduler_level) + ")";
}

// The region is where level_for() says, below parent_sched. A region at
// the leaf level under the root is made by the creator's own leaf. Under
// another region the owner of the parent picks the child toward the
// creator's leaf only while that one is not much more loaded than the
// least loaded (docs/dist-design.md, Placement of regions), so there any
// leaf below the parent's scheduler will do.
testing::AssertionResult placed(rid_t r, int parent_sched, int hint, bool parent_is_root = false) {
  const TreeShape &t = shape();
  const sys_region_stats_t s = stats_of(r, 0);
  const int want_level = t.level_for(parent_sched, hint);
  if (!t.valid(int(s.scheduler)))
    return testing::AssertionFailure() << "region " << r << ": no such scheduler " << s.scheduler;
  if (s.scheduler_level != t.level_of(int(s.scheduler)))
    return testing::AssertionFailure() << "region " << r << " on " << where(s) << ", but that scheduler is on level "
                                       << t.level_of(int(s.scheduler));
  if (s.scheduler_level != want_level)
    return testing::AssertionFailure() << "region " << r << " (hint " << hint << ", parent on scheduler "
                                       << parent_sched << ") on " << where(s) << ", not on level " << want_level;
  if (!t.in_subtree(int(s.scheduler), parent_sched))
    return testing::AssertionFailure() << "region " << r << " on " << where(s)
                                       << ", outside the subtree of its parent's scheduler " << parent_sched;
  if (parent_is_root && want_level == t.leaf_level() && s.scheduler != my_leaf())
    return testing::AssertionFailure() << "region " << r << " (hint " << hint << ") on " << where(s)
                                       << ", not on its creator's leaf " << my_leaf();
  return testing::AssertionSuccess();
}

// Allocates, writes, checks and frees in a region of every level, and in
// the root.
void still_serving() {
  for (int hint = 0; hint <= shape().levels(); hint++) {
    const rid_t r = sys_ralloc(0, hint);
    ASSERT_GT(r, 0) << "hint " << hint << ": " << sys_strerror(int(r));
    std::vector<void *> objs;
    for (size_t i = 0; i < 8; i++) {
      const size_t size = size_t(40) << (2 * i);  // 40 B .. 640 KiB
      void *p = sys_alloc(size, i == 7 ? 0 : r);
      ASSERT_NE(p, nullptr) << size << " B: " << sys_strerror(sys_last_error());
      fill_pattern(p, size, seed_of(uint64_t(me()), 900 + i));
      objs.push_back(p);
    }
    for (size_t i = 0; i < objs.size(); i++) {
      EXPECT_TRUE(HasPattern(objs[i], size_t(40) << (2 * i), seed_of(uint64_t(me()), 900 + i)));
      EXPECT_EQ(sys_free(objs[i]), SYS_OK);
    }
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  }
}

// Sizes that take the leased path, the scheduler's, and several 1 MiB pages.
const size_t kSizes[] = {48, 200, 1000, 4096, 5000, 20000, 70000, 1536 << 10, 64, 3000};
constexpr size_t kNumSizes = sizeof kSizes / sizeof kSizes[0];

// ---- a chain of nodes through several regions -----------------------------
// Node i lives in regions[i % n] with a payload object next to it; the
// receiver of the regions follows the pointers from the head and checks
// each node's address, region, payload address and payload bytes.
struct Node {
  Node *next;
  uint64_t serial;
  rid_t region;
  unsigned char *payload;
  uint64_t payload_size;
  uint64_t seed;
};

struct Chain {
  // head, count, then per node: node address, region, payload address, size, seed
  std::vector<uint64_t> words;

  void build(const std::vector<rid_t> &regions, int count, uint64_t salt) {
    words = {0, uint64_t(count)};
    Node *prev = nullptr;
    for (int i = 0; i < count; i++) {
      const rid_t r = regions[size_t(i) % regions.size()];
      Node *n = static_cast<Node *>(sys_alloc(sizeof(Node), r));
      ASSERT_NE(n, nullptr) << sys_strerror(sys_last_error());
      const size_t size = kSizes[size_t(i) % kNumSizes];
      unsigned char *p = static_cast<unsigned char *>(sys_alloc(size, r));
      ASSERT_NE(p, nullptr) << size << " B: " << sys_strerror(sys_last_error());
      const uint64_t seed = seed_of(salt, uint64_t(i));
      fill_pattern(p, size, seed);
      *n = {nullptr, uint64_t(i), r, p, size, seed};
      if (prev) prev->next = n;
      else words[0] = word_of(n);
      prev = n;
      words.insert(words.end(), {word_of(n), uint64_t(r), word_of(p), uint64_t(size), seed});
    }
  }

  size_t count() const { return size_t(words[1]); }
  int64_t bytes_of(rid_t r) const {
    int64_t b = 0;
    for (size_t i = 0; i < count(); i++)
      if (rid_t(words[3 + 5 * i]) == r)
        b += int64_t(sys_usable_size(ptr_of<void>(words[2 + 5 * i])) + sys_usable_size(ptr_of<void>(words[4 + 5 * i])));
    return b;
  }
  int64_t objects_of(rid_t r) const {
    int64_t n = 0;
    for (size_t i = 0; i < count(); i++) n += rid_t(words[3 + 5 * i]) == r ? 2 : 0;
    return n;
  }

  // Follows the chain from the head.
  testing::AssertionResult walk() const {
    const Node *n = ptr_of<const Node>(words[0]);
    for (size_t i = 0; i < count(); i++, n = n->next) {
      const uint64_t *w = &words[2 + 5 * i];
      if (word_of(n) != w[0])
        return testing::AssertionFailure() << "node " << i << " at " << n << ", sent at " << ptr_of<void>(w[0]);
      if (n->serial != i || n->region != rid_t(w[1]) || word_of(n->payload) != w[2] || n->payload_size != w[3] ||
          n->seed != w[4])
        return testing::AssertionFailure() << "node " << i << " at " << n << " holds serial " << n->serial
                                           << ", region " << n->region << ", payload "
                                           << static_cast<void *>(n->payload) << " of " << n->payload_size << " B";
      testing::AssertionResult r = HasPattern(n->payload, size_t(n->payload_size), n->seed);
      if (!r) return r << " (payload of node " << i << " in region " << n->region << ")";
    }
    if (n != nullptr) return testing::AssertionFailure() << "the chain goes on past " << count() << " nodes";
    return testing::AssertionSuccess();
  }
};

// ---- shape and numbering ----------------------------------------------------

TEST(Tree, ShapeAndWorkerNumbering) {
  const TreeShape &t = shape();
  sys_sched_stats_t st;
  ASSERT_EQ(sys_sched_stats(&st), SYS_OK);
  EXPECT_EQ(st.schedulers, t.nsched);
  EXPECT_EQ(st.levels, t.levels());

  int world = 0, rank = -1, size = 0, world_rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_rank(sys_worker_comm(), &rank);
  MPI_Comm_size(sys_worker_comm(), &size);
  EXPECT_EQ(sys_num_workers(), world - t.nsched);
  EXPECT_EQ(size, sys_num_workers());
  EXPECT_EQ(rank, me()) << "sys_worker_comm() is not ordered by worker ID";
  ASSERT_GE(me(), 0);
  ASSERT_LT(me(), nworkers());

  // Every worker ID once, every world rank once.
  std::vector<int> ids(static_cast<size_t>(size)), ranks(static_cast<size_t>(size));
  const int id = me();
  MPI_Allgather(&id, 1, MPI_INT, ids.data(), 1, MPI_INT, sys_worker_comm());
  MPI_Allgather(&world_rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, sys_worker_comm());
  for (int w = 0; w < size; w++) EXPECT_EQ(ids[size_t(w)], w);
  EXPECT_EQ(std::set<int>(ranks.begin(), ranks.end()).size(), size_t(size));

  // On one host, leaf 0's scheduler is rank 0 and its workers follow.
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> names(size_t(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                sys_worker_comm());
  bool one_host = true;
  for (int w = 1; w < size; w++)
    one_host = one_host && strcmp(&names[size_t(w) * MPI_MAX_PROCESSOR_NAME], name) == 0;
  if (one_host)
    for (int w = 0; w < t.leaf_workers[0]; w++) EXPECT_EQ(ranks[size_t(w)], 1 + w) << "worker " << w;
}

// ---- ownership --------------------------------------------------------------

TEST(Tree, RegionsWithoutAHintLiveOnTheirCreatorsLeaf) {
  const TreeShape &t = shape();
  std::vector<rid_t> mine;
  for (int hint : {0, -1, -100, t.levels() + 1, 1000}) {
    const rid_t r = sys_ralloc(0, hint);
    ASSERT_GT(r, 0) << sys_strerror(int(r));
    const sys_region_stats_t s = stats_of(r, 0);
    EXPECT_EQ(s.scheduler, my_leaf()) << "hint " << hint;
    EXPECT_EQ(s.scheduler_level, t.leaf_level()) << "hint " << hint;
    mine.push_back(r);
  }

  // Every worker sees every other's regions where their creators put them.
  std::vector<rid_t> all(mine.size() * size_t(nworkers()));
  MPI_Allgather(mine.data(), int(mine.size()), MPI_INT64_T, all.data(), int(mine.size()), MPI_INT64_T,
                sys_worker_comm());
  for (int w = 0; w < nworkers(); w++)
    for (size_t i = 0; i < mine.size(); i++) {
      const sys_region_stats_t s = stats_of(all[size_t(w) * mine.size() + i], 0);
      EXPECT_EQ(s.scheduler, t.leaf_of_worker(w)) << "a region of worker " << w;
      EXPECT_EQ(s.scheduler_level, t.leaf_level()) << "a region of worker " << w;
    }
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // Below a region on a leaf, whatever the hint, a region stays on that leaf.
  const rid_t top = mine[0];
  for (int hint : {0, 1, 2, 3, 99}) {
    const rid_t c = sys_ralloc(top, hint);
    ASSERT_GT(c, 0) << sys_strerror(int(c));
    EXPECT_EQ(stats_of(c, 0).scheduler, my_leaf()) << "hint " << hint;
    const rid_t g = sys_ralloc(c, 1);
    ASSERT_GT(g, 0) << sys_strerror(int(g));
    EXPECT_EQ(stats_of(g, 0).scheduler, my_leaf()) << "hint 1 under hint " << hint;
  }
  EXPECT_EQ(stats_of(top, 1).subregions, 10);
  for (rid_t r : mine) EXPECT_EQ(sys_rfree(r), SYS_OK);
}

TEST(Tree, LevelHintsPlaceRegionsNeverAboveTheirParent) {
  const TreeShape &t = shape();
  for (int hint = 1; hint <= t.levels(); hint++) {
    const rid_t r = sys_ralloc(0, hint);
    ASSERT_GT(r, 0) << sys_strerror(int(r));
    EXPECT_TRUE(placed(r, 0, hint, true));
    const int at = int(stats_of(r, 0).scheduler);
    if (hint == 1) EXPECT_EQ(at, 0) << "hint 1 is the top scheduler";
    if (!t.valid(at)) continue;
    for (int sub : {0, 1, 2, 3, 4, -1, 50}) {
      const rid_t c = sys_ralloc(r, sub);
      ASSERT_GT(c, 0) << sys_strerror(int(c));
      EXPECT_TRUE(placed(c, at, sub)) << "parent hint " << hint;
      const int cat = int(stats_of(c, 0).scheduler);
      if (!t.valid(cat)) continue;
      // A grandchild with no hint reaches a leaf below the child.
      const rid_t g = sys_ralloc(c, 0);
      ASSERT_GT(g, 0) << sys_strerror(int(g));
      EXPECT_TRUE(placed(g, cat, 0)) << "hints " << hint << ", " << sub;
    }
    const sys_region_stats_t s = stats_of(r, 1);
    EXPECT_EQ(s.subregions, 14);
    EXPECT_EQ(s.scheduler, at) << "with sub-regions, the region's own scheduler";
    EXPECT_EQ(sys_rfree(r), SYS_OK);
  }
}

// The paper's Mb under M: M on the top scheduler, Mb below it on a leaf.
// Objects in both, the tree sent to a worker on another leaf, which adds to
// both and sends it back; freeing M frees Mb.
TEST(Tree, MbUnderMOnAnotherScheduler) {
  const TreeShape &t = shape();
  for (int round = 0; round < 2; round++) {
    rid_t M = 0, Mb = 0;
    Chain chain, more;
    if (first_in_pair(round)) {
      M = sys_ralloc(0, 1);
      ASSERT_GT(M, 0) << sys_strerror(int(M));
      Mb = sys_ralloc(M, 0);
      ASSERT_GT(Mb, 0) << sys_strerror(int(Mb));
      const sys_region_stats_t sm = stats_of(M, 0), sb = stats_of(Mb, 0);
      EXPECT_EQ(sm.scheduler, 0);
      EXPECT_EQ(sm.scheduler_level, 0);
      EXPECT_EQ(sb.scheduler_level, t.leaf_level());
      if (t.levels() > 1) EXPECT_NE(sb.scheduler, sm.scheduler) << "Mb is not on another scheduler than M";
      ASSERT_NO_FATAL_FAILURE(chain.build({M, Mb}, 30, seed_of(uint64_t(me()), 100 + uint64_t(round))));
      EXPECT_TRUE(chain.walk());
      const sys_region_stats_t all = stats_of(M, 1), only = stats_of(M, 0), b = stats_of(Mb, 0);
      EXPECT_EQ(all.subregions, 1);
      EXPECT_EQ(only.live_objects, chain.objects_of(M));
      EXPECT_EQ(b.live_objects, chain.objects_of(Mb));
      EXPECT_EQ(all.live_objects, chain.objects_of(M) + chain.objects_of(Mb));
      EXPECT_EQ(all.live_bytes, chain.bytes_of(M) + chain.bytes_of(Mb));
      send_words(partner(), chain.words);
      ASSERT_EQ(sys_send(partner(), &M, 1, nullptr, 0), SYS_OK);

      // Back, with the partner's objects added to both regions.
      more.words = recv_words(partner());
      rid_t got = 0;
      ASSERT_EQ(sys_recv(partner(), &got, 1, nullptr, 0), SYS_OK);
      EXPECT_EQ(got, M);
      EXPECT_TRUE(chain.walk()) << "this worker's chain after the round trip";
      EXPECT_TRUE(more.walk()) << "the partner's chain";
      const sys_region_stats_t after = stats_of(M, 1);
      EXPECT_EQ(after.live_objects, chain.objects_of(M) + chain.objects_of(Mb) + more.objects_of(M) +
                                        more.objects_of(Mb));
      EXPECT_EQ(after.subregions, 1);
      ASSERT_EQ(sys_rfree(M), SYS_OK);
      send_words(partner(), {uint64_t(M), uint64_t(Mb)});
    } else {
      chain.words = recv_words(partner());
      rid_t got = 0;
      ASSERT_EQ(sys_recv(partner(), &got, 1, nullptr, 0), SYS_OK);
      M = got;
      EXPECT_TRUE(chain.walk()) << "the chain through M and Mb, received";
      std::set<rid_t> regs;
      for (size_t i = 0; i < chain.count(); i++) regs.insert(rid_t(chain.words[3 + 5 * i]));
      ASSERT_EQ(regs.size(), 2u);
      regs.erase(M);
      Mb = *regs.begin();
      EXPECT_EQ(stats_of(M, 0).scheduler, 0);
      const sys_region_stats_t sb = stats_of(Mb, 0);
      EXPECT_EQ(sb.scheduler_level, t.leaf_level());
      if (t.levels() > 1) EXPECT_NE(sb.scheduler, 0);
      EXPECT_EQ(stats_of(M, 1).live_objects, chain.objects_of(M) + chain.objects_of(Mb));
      // This worker allocates in both (Mb on the partner's leaf) and sends M back.
      ASSERT_NO_FATAL_FAILURE(more.build({Mb, M}, 12, seed_of(uint64_t(me()), 200 + uint64_t(round))));
      EXPECT_TRUE(chain.walk());
      send_words(partner(), more.words);
      ASSERT_EQ(sys_send(partner(), &M, 1, nullptr, 0), SYS_OK);
      recv_words(partner());  // M is freed
    }
    {
      FrozenIds frozen;
      if (M && Mb) {
        EXPECT_EQ(sys_alloc(64, Mb), nullptr) << "Mb outlived M";
        EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
        EXPECT_EQ(sys_alloc(70000, Mb), nullptr);
        EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
        EXPECT_EQ(sys_alloc(64, M), nullptr);
        EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
        sys_region_stats_t s;
        EXPECT_EQ(sys_region_stats(Mb, 0, &s), SYS_ERR_NOREGION);
        EXPECT_EQ(sys_ralloc(Mb, 0), SYS_ERR_NOREGION);
        EXPECT_EQ(sys_rfree(Mb), SYS_ERR_NOREGION);
      }
    }
  }
  still_serving();
}

// ---- work across leaves -----------------------------------------------------

// A worker allocates in a region its partner (another leaf) created and
// told it by MPI; frees objects the partner allocated, and the other way
// round; each transfer checked byte by byte.
TEST(Tree, AllocFreeAndTransferInAnotherLeafsRegion) {
  const TreeShape &t = shape();
  for (int round = 0; round < 2; round++) {
    if (first_in_pair(round)) {
      rid_t r = sys_ralloc(0, 0);
      ASSERT_GT(r, 0) << sys_strerror(int(r));
      EXPECT_EQ(stats_of(r, 0).scheduler, my_leaf());
      send_words(partner(), {uint64_t(r)});

      // The partner allocated in r and sent it: its objects are here.
      Manifest theirs{recv_words(partner())};
      rid_t got = 0;
      ASSERT_EQ(sys_recv(partner(), &got, 1, nullptr, 0), SYS_OK);
      EXPECT_EQ(got, r);
      EXPECT_TRUE(theirs.intact()) << "objects the partner allocated in this leaf's region";
      EXPECT_EQ(stats_of(r, 0).live_objects, int64_t(theirs.count()));

      // Objects of our own, then half of theirs freed here.
      Manifest ours;
      for (size_t i = 0; i < kNumSizes; i++) {
        void *p = sys_alloc(kSizes[i], r);
        ASSERT_NE(p, nullptr) << sys_strerror(sys_last_error());
        ours.fill(p, kSizes[i], seed_of(uint64_t(me()), 300 + i));
      }
      Manifest live = ours;
      std::vector<uint64_t> freed;
      for (size_t i = 0; i < theirs.count(); i++) {
        if (i % 2 == 0) {
          ASSERT_EQ(sys_free(theirs.address(i)), SYS_OK) << "an object the partner allocated, " << i;
          freed.push_back(theirs.words[3 * i]);
        } else {
          live.words.insert(live.words.end(), theirs.words.begin() + long(3 * i), theirs.words.begin() + long(3 * i + 3));
        }
      }
      EXPECT_EQ(stats_of(r, 0).live_objects, int64_t(live.count()));
      send_words(partner(), live.words);
      send_words(partner(), freed);
      ASSERT_EQ(sys_send(partner(), &r, 1, nullptr, 0), SYS_OK);

      // Back again: the partner freed half of ours and added more.
      Manifest last{recv_words(partner())};
      ASSERT_EQ(sys_recv(partner(), &got, 1, nullptr, 0), SYS_OK);
      EXPECT_TRUE(last.intact()) << "after the second round trip";
      EXPECT_EQ(stats_of(r, 0).live_objects, int64_t(last.count()));
      // Those of ours the partner freed are free here. The other pair's
      // region lives on this leaf too and may have taken such an address
      // again: the checks wait until every worker is done allocating, and
      // free only an address no region holds (else it would free theirs).
      ASSERT_EQ(sys_barrier(), SYS_OK);
      for (size_t i = 0; i < ours.count(); i += 2)
        if (kSizes[i] > 4096 && sys_usable_size(ours.address(i)) == 0)
          EXPECT_EQ(sys_free(ours.address(i)), SYS_ERR_FREED) << "freed by the partner";
      ASSERT_EQ(sys_rfree(r), SYS_OK);
      send_words(partner(), {uint64_t(r)});
    } else {
      rid_t r = rid_t(recv_words(partner()).at(0));
      const sys_region_stats_t s = stats_of(r, 0);
      EXPECT_EQ(s.scheduler, t.leaf_of_worker(partner()));
      if (t.nleaves > 1) EXPECT_NE(s.scheduler, my_leaf()) << "the pair is on one leaf";

      // Allocates in the other leaf's region, which it never received.
      Manifest mine;
      for (size_t i = 0; i < kNumSizes; i++) {
        void *p = sys_alloc(kSizes[i], r);
        ASSERT_NE(p, nullptr) << kSizes[i] << " B in another leaf's region: " << sys_strerror(sys_last_error());
        mine.fill(p, kSizes[i], seed_of(uint64_t(me()), 400 + i));
      }
      std::vector<void *> batch(20, nullptr);
      ASSERT_EQ(sys_balloc(150, r, 20, batch.data()), SYS_OK) << sys_strerror(sys_last_error());
      for (size_t i = 0; i < batch.size(); i++) mine.fill(batch[i], 150, seed_of(uint64_t(me()), 500 + i));
      EXPECT_EQ(stats_of(r, 0).live_objects, int64_t(mine.count()));
      send_words(partner(), mine.words);
      ASSERT_EQ(sys_send(partner(), &r, 1, nullptr, 0), SYS_OK);

      Manifest live{recv_words(partner())};
      const std::vector<uint64_t> freed = recv_words(partner());
      rid_t got = 0;
      ASSERT_EQ(sys_recv(partner(), &got, 1, nullptr, 0), SYS_OK);
      EXPECT_EQ(got, r);
      EXPECT_TRUE(live.intact()) << "the region back from the other leaf";
      // A round trip to r's scheduler brings this worker the frees of its
      // objects that the partner made.
      EXPECT_EQ(stats_of(r, 0).live_objects, int64_t(live.count()));
      for (uint64_t w : freed) {
        const size_t size = sys_usable_size(ptr_of<void>(w));
        EXPECT_EQ(size, 0u) << "an object the partner freed is live";
      }

      // Frees every other object the partner allocated (objects of the
      // partner's leaf), reallocs one, and adds new ones.
      std::set<uint64_t> own;
      for (size_t i = 0; i < mine.count(); i++) own.insert(mine.words[3 * i]);
      Manifest last;
      std::vector<void *> freed_here;   // large ones: double-freed once no worker allocates
      size_t k = 0;
      for (size_t i = 0; i < live.count(); i++) {
        const bool partners = own.count(live.words[3 * i]) == 0;
        if (partners && k++ % 2 == 0) {
          ASSERT_EQ(sys_free(live.address(i)), SYS_OK) << "an object of the partner's, " << i;
          if (live.words[3 * i + 1] > 4096) freed_here.push_back(live.address(i));
        } else {
          last.words.insert(last.words.end(), live.words.begin() + long(3 * i), live.words.begin() + long(3 * i + 3));
        }
      }
      void *grown = sys_realloc(last.address(0), 9000, r);
      ASSERT_NE(grown, nullptr) << sys_strerror(sys_last_error());
      EXPECT_TRUE(HasPattern(grown, size_t(last.words[1]), last.words[2]));
      last.words.erase(last.words.begin(), last.words.begin() + 3);
      last.fill(grown, 9000, 4242);
      for (size_t i = 0; i < 5; i++) {
        void *p = sys_alloc(kSizes[i * 2 + 1], r);
        ASSERT_NE(p, nullptr) << sys_strerror(sys_last_error());
        last.fill(p, kSizes[i * 2 + 1], seed_of(uint64_t(me()), 600 + i));
      }
      send_words(partner(), last.words);
      ASSERT_EQ(sys_send(partner(), &r, 1, nullptr, 0), SYS_OK);
      ASSERT_EQ(sys_barrier(), SYS_OK);   // every worker done allocating (see above)
      for (void *p : freed_here)
        if (sys_usable_size(p) == 0)
          EXPECT_EQ(sys_free(p), SYS_ERR_FREED) << "a double free in another leaf's region";
      recv_words(partner());  // r is freed
      FrozenIds frozen;
      EXPECT_EQ(sys_alloc(64, r), nullptr);
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      EXPECT_EQ(sys_alloc(70000, r), nullptr);
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      continue;
    }
    FrozenIds frozen;
  }
  still_serving();
}

// Objects moved by sys_realloc between regions of three schedulers (this
// leaf, the partner's leaf, the top), sys_balloc in the partner's region,
// all of them sent as loose objects (no region) and freed by the receiver.
TEST(Tree, ReallocBallocAndLooseObjectsAcrossSchedulers) {
  const TreeShape &t = shape();
  rid_t mine = sys_ralloc(0, 0), top = sys_ralloc(0, 1);
  ASSERT_GT(mine, 0) << sys_strerror(int(mine));
  ASSERT_GT(top, 0) << sys_strerror(int(top));
  const std::vector<uint64_t> got = shift_words(partner(), partner(), {uint64_t(mine)});
  const rid_t theirs = rid_t(got.at(0));
  if (t.nleaves > 1) EXPECT_EQ(stats_of(theirs, 0).scheduler, t.leaf_of_worker(partner()));

  Manifest objs;  // what this worker allocated, in mine, theirs and top
  int64_t in_theirs = 0, in_mine = 0, in_top = 0;
  // One object moved from this leaf to the partner's, to the top, and back
  // here grown past the leased sizes.
  void *p = sys_alloc(3000, mine);
  ASSERT_NE(p, nullptr);
  fill_pattern(p, 3000, 61);
  void *q = sys_realloc(p, 6000, theirs);
  ASSERT_NE(q, nullptr) << "to another leaf's region: " << sys_strerror(sys_last_error());
  EXPECT_TRUE(HasPattern(q, 3000, 61));
  EXPECT_GE(sys_usable_size(q), 6000u);
  void *q2 = sys_realloc(q, 200, top);
  ASSERT_NE(q2, nullptr) << "to the top's region: " << sys_strerror(sys_last_error());
  EXPECT_TRUE(HasPattern(q2, 200, 61));
  void *q3 = sys_realloc(q2, 100000, mine);
  ASSERT_NE(q3, nullptr) << "back, grown: " << sys_strerror(sys_last_error());
  EXPECT_TRUE(HasPattern(q3, 200, 61));
  objs.fill(q3, 100000, seed_of(uint64_t(me()), 1000));
  in_mine++;
  // One grown in place or moved within the partner's region.
  void *r = sys_alloc(700, theirs);
  ASSERT_NE(r, nullptr);
  fill_pattern(r, 700, 62);
  void *r2 = sys_realloc(r, 50000, theirs);
  ASSERT_NE(r2, nullptr) << sys_strerror(sys_last_error());
  EXPECT_TRUE(HasPattern(r2, 700, 62));
  objs.fill(r2, 50000, seed_of(uint64_t(me()), 1001));
  in_theirs++;
  std::vector<void *> batch(4, nullptr);
  ASSERT_EQ(sys_balloc(5000, theirs, 4, batch.data()), SYS_OK) << sys_strerror(sys_last_error());
  for (size_t i = 0; i < batch.size(); i++) objs.fill(batch[i], 5000, seed_of(uint64_t(me()), 1010 + i));
  in_theirs += 4;
  std::vector<void *> small(30, nullptr);
  ASSERT_EQ(sys_balloc(100, top, 30, small.data()), SYS_OK) << sys_strerror(sys_last_error());
  for (size_t i = 0; i < small.size(); i++) objs.fill(small[i], 100, seed_of(uint64_t(me()), 1020 + i));
  in_top += 30;
  EXPECT_EQ(stats_of(top, 0).live_objects, in_top);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  // The partner's objects in this worker's region are counted here.
  const std::vector<uint64_t> counts = shift_words(partner(), partner(), {uint64_t(in_theirs)});
  EXPECT_EQ(stats_of(mine, 0).live_objects, in_mine + int64_t(counts.at(0)));

  // Loose objects both ways, in turn.
  std::vector<void *> ptrs;
  for (size_t i = 0; i < objs.count(); i++) ptrs.push_back(objs.address(i));
  Manifest received;
  for (int turn = 0; turn < 2; turn++) {
    if (first_in_pair(turn)) {
      send_words(partner(), objs.words);
      ASSERT_EQ(sys_send(partner(), nullptr, 0, ptrs.data(), int(ptrs.size())), SYS_OK);
    } else {
      received.words = recv_words(partner());
      std::vector<void *> in(received.count() + 2, nullptr);
      ASSERT_EQ(sys_recv(partner(), nullptr, 0, in.data(), int(in.size())), SYS_OK);
      for (size_t i = 0; i < received.count(); i++) EXPECT_EQ(in[i], received.address(i)) << i;
      EXPECT_EQ(in[received.count()], nullptr);
      EXPECT_TRUE(received.intact()) << "loose objects of three schedulers";
    }
  }
  // Each frees what it received: objects of the partner's in three schedulers.
  for (size_t i = 0; i < received.count(); i++)
    ASSERT_EQ(sys_free(received.address(i)), SYS_OK) << "the partner's object " << i;
  ASSERT_EQ(sys_barrier(), SYS_OK);
  for (size_t i = 0; i < objs.count(); i++) {
    if (objs.words[3 * i + 1] <= 4096) continue;  // small ones: their holder hears at its next contact
    EXPECT_EQ(sys_usable_size(objs.address(i)), 0u) << "freed by the partner, " << i;
    EXPECT_EQ(sys_free(objs.address(i)), SYS_ERR_FREED) << "freed by the partner, " << i;
  }
  EXPECT_EQ(stats_of(top, 0).live_objects, 0);
  EXPECT_EQ(stats_of(mine, 0).live_objects, 0);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  EXPECT_EQ(sys_rfree(mine), SYS_OK);
  EXPECT_EQ(sys_rfree(top), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
}

// A region tree over every level (top, middle, leaves), a chain of pointers
// through all of it, sent whole to a worker on another leaf, which checks
// every node and byte, the statistics, and frees the tree.
TEST(Tree, RegionTreeSpanningSchedulersTravelsWhole) {
  const TreeShape &t = shape();
  for (int round = 0; round < 2; round++) {
    std::vector<rid_t> regs;  // T, A, M, B, C, D
    Chain chain;
    if (first_in_pair(round)) {
      rid_t T = sys_ralloc(0, 1);
      ASSERT_GT(T, 0) << sys_strerror(int(T));
      const rid_t A = sys_ralloc(T, 0), M = sys_ralloc(T, 2);
      ASSERT_GT(A, 0);
      ASSERT_GT(M, 0);
      const rid_t B = sys_ralloc(M, 0), C = sys_ralloc(A, 1), D = sys_ralloc(M, 2);
      ASSERT_GT(B, 0);
      ASSERT_GT(C, 0);
      ASSERT_GT(D, 0);
      regs = {T, A, M, B, C, D};
      EXPECT_TRUE(placed(T, 0, 1, true));
      EXPECT_TRUE(placed(A, 0, 0));
      EXPECT_TRUE(placed(M, 0, 2));
      EXPECT_TRUE(placed(B, int(stats_of(M, 0).scheduler), 0));
      EXPECT_TRUE(placed(D, int(stats_of(M, 0).scheduler), 2));
      EXPECT_EQ(stats_of(C, 0).scheduler, stats_of(A, 0).scheduler) << "C went above A";
      std::set<int64_t> scheds;
      for (rid_t r : regs) scheds.insert(stats_of(r, 0).scheduler);
      EXPECT_GE(scheds.size(), size_t(std::min(t.levels(), 3))) << "the tree spans fewer schedulers than levels";

      ASSERT_NO_FATAL_FAILURE(chain.build(regs, 48, seed_of(uint64_t(me()), 700 + uint64_t(round))));
      const sys_region_stats_t s = stats_of(T, 1);
      int64_t objects = 0, bytes = 0;
      for (rid_t r : regs) {
        objects += chain.objects_of(r);
        bytes += chain.bytes_of(r);
        EXPECT_EQ(stats_of(r, 0).live_objects, chain.objects_of(r)) << "region " << r;
      }
      EXPECT_EQ(s.live_objects, objects);
      EXPECT_EQ(s.live_bytes, bytes);
      EXPECT_EQ(s.subregions, 5);
      EXPECT_EQ(stats_of(M, 1).subregions, 2);
      EXPECT_EQ(stats_of(A, 1).live_objects, chain.objects_of(A) + chain.objects_of(C));
      send_words(partner(), std::vector<uint64_t>(regs.begin(), regs.end()));
      send_words(partner(), chain.words);
      // A loose object in the root (the top's) travels with it.
      void *loose = sys_alloc(300, 0);
      ASSERT_NE(loose, nullptr);
      fill_pattern(loose, 300, 77);
      send_words(partner(), {word_of(loose)});
      ASSERT_EQ(sys_send(partner(), &T, 1, &loose, 1), SYS_OK);
      recv_words(partner());  // the tree is freed
    } else {
      const std::vector<uint64_t> rw = recv_words(partner());
      regs.assign(rw.begin(), rw.end());
      chain.words = recv_words(partner());
      void *loose = ptr_of<void>(recv_words(partner()).at(0));
      rid_t got[2] = {0, 0};
      void *objs[2] = {nullptr, nullptr};
      ASSERT_EQ(sys_recv(partner(), got, 2, objs, 2), SYS_OK);
      EXPECT_EQ(got[0], regs[0]);
      EXPECT_EQ(got[1], SYS_NO_REGION);
      EXPECT_EQ(objs[0], loose);
      EXPECT_EQ(objs[1], nullptr);
      EXPECT_TRUE(HasPattern(loose, 300, 77));
      EXPECT_EQ(sys_free(loose), SYS_OK) << "the partner's object in the root";
      EXPECT_TRUE(chain.walk()) << "the chain through a tree spanning schedulers";
      const sys_region_stats_t s = stats_of(regs[0], 1);
      int64_t objects = 0;
      for (rid_t r : regs) objects += chain.objects_of(r);
      EXPECT_EQ(s.live_objects, objects) << "counted on the receiver";
      EXPECT_EQ(s.subregions, 5);
      // Freed here, on another leaf than the creator's.
      ASSERT_EQ(sys_rfree(regs[0]), SYS_OK);
      send_words(partner(), {1});
    }
    FrozenIds frozen;
    for (rid_t r : regs) {
      EXPECT_EQ(sys_alloc(64, r), nullptr) << "region " << r << " outlived its tree";
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION) << r;
      EXPECT_EQ(sys_alloc(100000, r), nullptr) << r;
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION) << r;
      sys_region_stats_t s;
      EXPECT_EQ(sys_region_stats(r, 1, &s), SYS_ERR_NOREGION) << r;
      EXPECT_EQ(sys_rfree(r), SYS_ERR_NOREGION) << r;
    }
  }
  still_serving();
}

// One region on the top; every worker adds a sub-region (on a leaf)
// with objects, and objects in the top region itself. Statistics of the top
// region count everything, on every worker; one sub-region freed by another
// leaf's worker leaves the rest; the top freed by the last worker takes all.
TEST(Tree, EveryWorkersSubRegionUnderOneTopRegion) {
  const TreeShape &t = shape();
  const int n = nworkers();
  sys_sched_stats_t before;
  ASSERT_EQ(sys_barrier(), SYS_OK);
  ASSERT_EQ(sys_sched_stats(&before), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);

  rid_t T = 0;
  if (me() == 0) {
    T = sys_ralloc(0, 1);
    ASSERT_GT(T, 0) << sys_strerror(int(T));
  }
  MPI_Bcast(&T, 1, MPI_INT64_T, 0, sys_worker_comm());
  const rid_t S = sys_ralloc(T, 0);
  ASSERT_GT(S, 0) << sys_strerror(int(S));
  EXPECT_TRUE(placed(S, 0, 0));
  Manifest in_s, in_t;
  for (int i = 0; i < 3 * (me() + 1); i++) {
    const size_t size = kSizes[size_t(i + me()) % kNumSizes];
    void *p = sys_alloc(size, S);
    ASSERT_NE(p, nullptr) << sys_strerror(sys_last_error());
    in_s.fill(p, size, seed_of(uint64_t(me()), 800 + uint64_t(i)));
  }
  for (size_t size : {size_t(100), size_t(6000)}) {
    void *p = sys_alloc(size, T);
    ASSERT_NE(p, nullptr) << "in the top region: " << sys_strerror(sys_last_error());
    in_t.fill(p, size, seed_of(uint64_t(me()), 850 + size));
  }
  int64_t bytes = 0;
  for (size_t i = 0; i < in_s.count(); i++) bytes += int64_t(sys_usable_size(in_s.address(i)));
  for (size_t i = 0; i < in_t.count(); i++) bytes += int64_t(sys_usable_size(in_t.address(i)));
  // Each worker's own counts are exact for itself; its contact with both
  // regions' schedulers reports what it allocated locally.
  EXPECT_EQ(stats_of(S, 0).live_objects, int64_t(in_s.count()));
  stats_of(T, 0);
  ASSERT_EQ(sys_barrier(), SYS_OK);

  int64_t mine[2] = {int64_t(in_s.count() + in_t.count()), bytes}, sum[2] = {0, 0};
  MPI_Allreduce(mine, sum, 2, MPI_INT64_T, MPI_SUM, sys_worker_comm());
  sys_region_stats_t s = stats_of(T, 1);
  EXPECT_EQ(s.subregions, n);
  EXPECT_EQ(s.live_objects, sum[0]) << "objects under one region, summed over the schedulers";
  EXPECT_EQ(s.live_bytes, sum[1]);
  EXPECT_EQ(s.scheduler, 0);
  EXPECT_EQ(stats_of(T, 0).live_objects, 2 * n);

  std::vector<rid_t> subs(static_cast<size_t>(n));
  std::vector<int64_t> at(static_cast<size_t>(n));
  const int64_t my_at = stats_of(S, 0).scheduler;
  MPI_Allgather(&S, 1, MPI_INT64_T, subs.data(), 1, MPI_INT64_T, sys_worker_comm());
  MPI_Allgather(&my_at, 1, MPI_INT64_T, at.data(), 1, MPI_INT64_T, sys_worker_comm());
  EXPECT_EQ(std::set<int64_t>(at.begin(), at.end()).size(), size_t(std::min(t.nleaves, n)))
      << "the sub-regions are not on every leaf";
  sys_sched_stats_t mid;
  ASSERT_EQ(sys_sched_stats(&mid), SYS_OK);
  EXPECT_EQ(mid.regions, before.regions + 1 + n);
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // Worker 0 frees worker n-1's sub-region (on another leaf).
  const rid_t gone = subs[size_t(n - 1)];
  if (me() == 0) EXPECT_EQ(sys_rfree(gone), SYS_OK);
  {
    FrozenIds frozen;
    s = stats_of(T, 1);
    EXPECT_EQ(s.subregions, n - 1);
    EXPECT_EQ(s.live_objects, sum[0] - 3 * n) << "the freed sub-region held 3n objects";
    EXPECT_EQ(sys_alloc(64, gone), nullptr);
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
    EXPECT_TRUE(in_t.intact());
    if (me() != n - 1) EXPECT_TRUE(in_s.intact());
  }
  if (me() == n - 1) EXPECT_EQ(sys_rfree(T), SYS_OK);
  {
    FrozenIds frozen;
    for (rid_t r : subs) {
      EXPECT_EQ(sys_alloc(64, r), nullptr) << "sub-region " << r << " outlived the top region";
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      EXPECT_EQ(sys_rfree(r), SYS_ERR_NOREGION);
    }
    EXPECT_EQ(sys_alloc(64, T), nullptr);
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
    sys_region_stats_t gone_stats;
    EXPECT_EQ(sys_region_stats(T, 1, &gone_stats), SYS_ERR_NOREGION);
    sys_sched_stats_t after;
    ASSERT_EQ(sys_sched_stats(&after), SYS_OK);
    EXPECT_EQ(after.regions, before.regions);
  }
  still_serving();
}

// ---- errors -----------------------------------------------------------------

TEST(Tree, ErrorsFromOtherSchedulersReachTheWorker) {
  const TreeShape &t = shape();
  // Worker 0's regions on the top and on its leaf, each with a live object
  // of 100000 B and a freed one of 8 KiB (objects above 4 KiB are always
  // the owning scheduler's business, never a worker's lease).
  uint64_t w[6] = {0, 0, 0, 0, 0, 0};  // T, L, big in T, freed in T, big in L, freed in L
  if (me() == 0) {
    const rid_t T = sys_ralloc(0, 1), L = sys_ralloc(0, 0);
    ASSERT_GT(T, 0);
    ASSERT_GT(L, 0);
    w[0] = uint64_t(T);
    w[1] = uint64_t(L);
    for (int i = 0; i < 2; i++) {
      void *big = sys_alloc(100000, rid_t(w[i]));
      void *freed = sys_alloc(8192, rid_t(w[i]));
      ASSERT_NE(big, nullptr);
      ASSERT_NE(freed, nullptr);
      fill_pattern(big, 100000, 31);
      ASSERT_EQ(sys_free(freed), SYS_OK);
      w[2 + 2 * i] = word_of(big);
      w[3 + 2 * i] = word_of(freed);
    }
  }
  MPI_Bcast(w, 6, MPI_UINT64_T, 0, sys_worker_comm());
  for (int i = 0; i < 2; i++) {
    unsigned char *big = ptr_of<unsigned char>(w[2 + 2 * i]);
    void *freed = ptr_of<void>(w[3 + 2 * i]);
    const char *which = i ? "leaf 0's region" : "the top's region";
    const int rc = sys_free(freed);
    EXPECT_TRUE(rc == SYS_ERR_FREED || rc == SYS_ERR_NOTOBJECT) << which << ": " << sys_strerror(rc);
    EXPECT_EQ(sys_last_error(), rc);
    // The second slab of the freed 8 KiB object: never handed out as an
    // object, and in a slab of a region where only worker 0 allocates, with
    // objects above 4 KiB (no lease can hold it).
    void *never = static_cast<char *>(freed) + 4096;
    const int rc2 = sys_free(never);
    EXPECT_TRUE(rc2 == SYS_ERR_FREED || rc2 == SYS_ERR_NOTOBJECT) << which << ", " << never << ": " << sys_strerror(rc2);
    EXPECT_EQ(sys_usable_size(never), 0u) << which;
    for (unsigned char *inside : {big + 64, big + 4096, big + 65536})
      EXPECT_EQ(sys_free(inside), SYS_ERR_NOTOBJECT) << which << ", " << static_cast<void *>(inside);
    EXPECT_EQ(sys_usable_size(big + 64), 0u) << which;
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOTOBJECT) << which;
    EXPECT_GE(sys_usable_size(big), 100000u) << which;
    EXPECT_EQ(sys_realloc(big + 4096, 10, 0), nullptr) << which;
    EXPECT_EQ(sys_last_error(), SYS_ERR_NOTOBJECT) << which;
    if (me() == 0) EXPECT_TRUE(HasPattern(big, 100000, 31)) << which << ": a failed call touched it";
  }
  EXPECT_EQ(sys_alloc(64, kNoSuchRegion), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
  EXPECT_EQ(sys_alloc(100000, kNoSuchRegion), nullptr);
  EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
  void *objs[3] = {nullptr, nullptr, nullptr};
  EXPECT_EQ(sys_balloc(64, kNoSuchRegion, 3, objs), SYS_ERR_NOREGION);
  for (int hint = 0; hint <= t.levels(); hint++) EXPECT_EQ(sys_ralloc(kNoSuchRegion, hint), SYS_ERR_NOREGION);
  sys_region_stats_t s;
  EXPECT_EQ(sys_region_stats(kNoSuchRegion, 0, &s), SYS_ERR_NOREGION);
  EXPECT_EQ(sys_rfree(kNoSuchRegion), SYS_ERR_NOREGION);
  EXPECT_EQ(sys_rfree(0), SYS_ERR_ROOT);
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // A big object of worker 0's in the top region, freed by worker n/2 (on
  // another leaf), then a second time by both.
  if (me() == 0 || me() == partner_of(0)) {
    uint64_t x = 0;
    if (me() == 0) {
      void *p = sys_alloc(20000, rid_t(w[0]));
      ASSERT_NE(p, nullptr);
      x = word_of(p);
      send_words(partner(), {x});
      recv_words(partner());
    } else {
      x = recv_words(partner()).at(0);
      EXPECT_EQ(sys_free(ptr_of<void>(x)), SYS_OK) << "a free across leaves";
      EXPECT_EQ(sys_free(ptr_of<void>(x)), SYS_ERR_FREED) << "a double free across leaves";
      send_words(partner(), {1});
    }
    if (me() == 0) EXPECT_EQ(sys_free(ptr_of<void>(x)), SYS_ERR_FREED) << "freed on another leaf";
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);

  // Both regions freed by worker 0; a second free fails everywhere.
  if (me() == 0) {
    EXPECT_EQ(sys_rfree(rid_t(w[0])), SYS_OK);
    EXPECT_EQ(sys_rfree(rid_t(w[1])), SYS_OK);
  }
  {
    FrozenIds frozen;
    for (int i = 0; i < 2; i++) {
      EXPECT_EQ(sys_rfree(rid_t(w[i])), SYS_ERR_NOREGION) << "a double sys_rfree";
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      EXPECT_EQ(sys_alloc(64, rid_t(w[i])), nullptr);
      EXPECT_EQ(sys_last_error(), SYS_ERR_NOREGION);
      const int rc = sys_free(ptr_of<void>(w[2 + 2 * i]));
      EXPECT_TRUE(rc == SYS_ERR_FREED || rc == SYS_ERR_NOTOBJECT) << "an object of a freed region: "
                                                                   << sys_strerror(rc);
    }
    // A send of a freed region fails on both sides.
    if (first_in_pair(0)) {
      rid_t r = rid_t(w[0]);
      EXPECT_EQ(sys_send(partner(), &r, 1, nullptr, 0), SYS_ERR_NOREGION);
    } else {
      rid_t r = 0;
      EXPECT_EQ(sys_recv(partner(), &r, 1, nullptr, 0), SYS_ERR_PEER);
    }
  }
  still_serving();
}

// ---- counters ---------------------------------------------------------------

TEST(Tree, SchedulerStatistics) {
  const TreeShape &t = shape();
  const int n = nworkers();
  EXPECT_LT(sys_sched_stats(nullptr), 0);

  sys_sched_stats_t a, b, c;
  ASSERT_EQ(sys_barrier(), SYS_OK);
  ASSERT_EQ(sys_sched_stats(&a), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  std::vector<rid_t> regs;
  for (int hint = 1; hint <= t.levels(); hint++) {
    const rid_t r = sys_ralloc(0, hint);
    ASSERT_GT(r, 0) << sys_strerror(int(r));
    regs.push_back(r);
    void *p = sys_alloc(100000, r);
    ASSERT_NE(p, nullptr);
  }
  ASSERT_EQ(sys_barrier(), SYS_OK);
  ASSERT_EQ(sys_sched_stats(&b), SYS_OK);
  EXPECT_EQ(b.schedulers, t.nsched);
  EXPECT_EQ(b.levels, t.levels());
  EXPECT_EQ(b.regions, a.regions + int64_t(n) * t.levels()) << "regions alive, counted over the tree";
  EXPECT_GE(b.worker_calls, a.worker_calls + 2 * t.levels()) << "this worker's rallocs and allocs";
  EXPECT_GT(b.worker_wait_ns, a.worker_wait_ns);
  EXPECT_GE(b.requests, a.requests + int64_t(n) * 2 * t.levels());
  if (t.levels() > 1) {
    // Regions on the top from workers on the leaves went through schedulers.
    EXPECT_GT(b.forwarded, a.forwarded);
    EXPECT_GT(b.sched_messages, a.sched_messages);
    EXPECT_GE(b.sched_messages, b.forwarded);
    EXPECT_GE(b.grants, t.nsched - 1) << "every scheduler below the top needed memory or IDs";
  } else {
    EXPECT_EQ(b.forwarded, 0);
    EXPECT_EQ(b.sched_messages, 0);
    EXPECT_EQ(b.grants, 0);
    EXPECT_EQ(b.returns, 0);
  }
  for (const sys_sched_stats_t *x : {&a, &b})
    for (int64_t v : {x->requests, x->sched_messages, x->forwarded, x->grants, x->returns, x->regions,
                      x->worker_calls, x->worker_wait_ns})
      EXPECT_GE(v, 0);

  // Requests the leaves counted and the workers' own counts agree, up to
  // the sys_sched_stats calls in flight while the tree is summed.
  ASSERT_EQ(sys_barrier(), SYS_OK);
  ASSERT_EQ(sys_sched_stats(&c), SYS_OK);
  int64_t calls = 0;
  MPI_Allreduce(&c.worker_calls, &calls, 1, MPI_INT64_T, MPI_SUM, sys_worker_comm());
  EXPECT_LE(c.requests, calls + n) << "requests " << c.requests << ", the workers' calls " << calls;
  EXPECT_GE(c.requests, calls - n) << "requests " << c.requests << ", the workers' calls " << calls;
  ASSERT_EQ(sys_barrier(), SYS_OK);

  for (rid_t r : regs) EXPECT_EQ(sys_rfree(r), SYS_OK);
  ASSERT_EQ(sys_barrier(), SYS_OK);
  ASSERT_EQ(sys_sched_stats(&c), SYS_OK);
  EXPECT_EQ(c.regions, a.regions);
  ASSERT_EQ(sys_barrier(), SYS_OK);
}

}  // namespace
