/* SPDX-License-Identifier: Apache-2.0 */
// tree_shape.h: the scheduler tree the tests expect, worked out on their
// own from MANYMALLOC_SCHEDULERS and MANYMALLOC_WORKERS_PER_SCHEDULER (not
// with the library's parser): schedulers numbered level by level from the
// top (0), workers numbered leaf by leaf and spread evenly over the leaves
// (the first leaves take one more when they do not divide evenly).
#ifndef MMD_TEST_TREE_SHAPE_H
#define MMD_TEST_TREE_SHAPE_H

#include <cstdlib>
#include <string>
#include <vector>

namespace mmdtest {

struct TreeShape {
  std::vector<int> level_size, level_first;  // per level, top first
  std::vector<int> leaf_workers, leaf_first;  // per leaf
  int nsched = 0, nleaves = 0, nworkers = 0;

  // The shape of a valid MANYMALLOC_SCHEDULERS (unset: "1") for nworkers.
  static TreeShape from_env(int nworkers) {
    const char *env = getenv("MANYMALLOC_SCHEDULERS");
    std::string s = env && *env ? env : "1";
    TreeShape t;
    for (size_t at = 0; at <= s.size();) {
      size_t comma = s.find(',', at);
      if (comma == std::string::npos) comma = s.size();
      t.level_first.push_back(t.nsched);
      t.level_size.push_back(atoi(s.substr(at, comma - at).c_str()));
      t.nsched += t.level_size.back();
      at = comma + 1;
    }
    t.nleaves = t.level_size.back();
    t.nworkers = nworkers;
    const char *per = getenv("MANYMALLOC_WORKERS_PER_SCHEDULER");
    for (int k = 0, first = 0; k < t.nleaves; k++) {
      const int n = per && *per ? atoi(per) : nworkers / t.nleaves + (k < nworkers % t.nleaves);
      t.leaf_workers.push_back(n);
      t.leaf_first.push_back(first);
      first += n;
    }
    return t;
  }

  int levels() const { return int(level_size.size()); }
  int leaf_level() const { return levels() - 1; }
  int level_of(int sched) const {
    int l = levels() - 1;
    while (l > 0 && sched < level_first[size_t(l)]) l--;
    return l;
  }
  bool valid(int sched) const { return sched >= 0 && sched < nsched; }
  int parent(int sched) const {
    const int l = level_of(sched);
    if (l == 0) return -1;
    const int fan = level_size[size_t(l)] / level_size[size_t(l) - 1];
    return level_first[size_t(l) - 1] + (sched - level_first[size_t(l)]) / fan;
  }
  // sched is anc or below it.
  bool in_subtree(int sched, int anc) const {
    for (int s = sched; s >= 0; s = parent(s))
      if (s == anc) return true;
    return false;
  }
  int leaf_sched(int k) const { return level_first.back() + k; }
  // The leaf scheduler serving worker w.
  int leaf_of_worker(int w) const {
    for (int k = 0; k < nleaves; k++)
      if (w >= leaf_first[size_t(k)] && w < leaf_first[size_t(k)] + leaf_workers[size_t(k)]) return leaf_sched(k);
    return -1;
  }
  // The level a region created under a region on parent_sched with
  // level_hint lands on: the hint's level, the leaves for no hint or one
  // past the last level, never above the parent.
  int level_for(int parent_sched, int hint) const {
    const int want = hint <= 0 || hint > levels() ? leaf_level() : hint - 1;
    const int floor = level_of(parent_sched);
    return want < floor ? floor : want;
  }
};

}  // namespace mmdtest

#endif  // MMD_TEST_TREE_SHAPE_H
