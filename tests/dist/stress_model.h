/* SPDX-License-Identifier: Apache-2.0 */
// stress_model.h: what one worker of the stress test believes it holds: its
// regions (as a tree) and its live objects with the pattern each was filled
// with. The test checks the allocator against it: bytes, live intervals,
// per-region counts; and moves parts of it between workers with the regions
// it sends.
#ifndef MMD_TEST_STRESS_MODEL_H
#define MMD_TEST_STRESS_MODEL_H

#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "pattern.h"
#include "workers.h"

namespace mmdtest {

struct ModelObject {
  size_t usable;  // filled whole with the pattern of seed
  uint64_t seed;
  rid_t region;
};

struct ModelRegion {
  rid_t parent;  // 0: the root
  bool own;      // created here and never sent: its statistics are exact here
};

class StressModel {
 public:
  std::map<uint64_t, ModelObject> objects;  // by address
  std::map<rid_t, ModelRegion> regions;     // every region held here, not the root

  // The region and every region below it.
  std::set<rid_t> subtree(rid_t top) const {
    std::set<rid_t> out = {top};
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto &kv : regions)
        if (!out.count(kv.first) && out.count(kv.second.parent)) grew = out.insert(kv.first).second || grew;
    }
    return out;
  }

  // Forgets a freed region tree with its objects.
  void drop_subtree(rid_t top) {
    const std::set<rid_t> gone = subtree(top);
    for (auto it = objects.begin(); it != objects.end();)
      it = gone.count(it->second.region) ? objects.erase(it) : std::next(it);
    for (rid_t r : gone) regions.erase(r);
  }

  void add_object(void *p, rid_t region, uint64_t seed) {
    const size_t usable = sys_usable_size(p);
    fill_pattern(p, usable, seed);
    objects[word_of(p)] = {usable, seed, region};
  }

  // Every object still holds its pattern.
  testing::AssertionResult intact() const {
    for (const auto &kv : objects) {
      testing::AssertionResult r = HasPattern(ptr_of<void>(kv.first), kv.second.usable, kv.second.seed);
      if (!r) return r << " (object in region " << kv.second.region << ")";
    }
    return testing::AssertionSuccess();
  }

  // sys_region_stats agrees with the model on the regions only this worker
  // ever allocated in.
  testing::AssertionResult stats_agree() const {
    for (const auto &kv : regions) {
      if (!kv.second.own) continue;
      int64_t n = 0, bytes = 0;
      for (const auto &o : objects)
        if (o.second.region == kv.first) {
          n++;
          bytes += int64_t(o.second.usable);
        }
      sys_region_stats_t s;
      const int rc = sys_region_stats(kv.first, 0, &s);
      if (rc != SYS_OK)
        return testing::AssertionFailure() << "stats of " << kv.first << ": " << sys_strerror(rc);
      if (s.live_objects != n || s.live_bytes != bytes)
        return testing::AssertionFailure()
               << "region " << kv.first << ": stats say " << s.live_objects << " objects / " << s.live_bytes
               << " B, the model " << n << " / " << bytes;
    }
    return testing::AssertionSuccess();
  }

  std::vector<std::pair<uint64_t, uint64_t>> intervals() const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const auto &kv : objects) out.push_back({kv.first, kv.first + kv.second.usable});
    return out;
  }

  // ---- the part of the model that travels with a region tree ----------------
  // Words: region count, (id, parent) per region with the top first, then
  // (address, usable, seed, region) per object. Exporting forgets it here.

  std::vector<uint64_t> export_subtree(rid_t top) {
    const std::set<rid_t> tree = subtree(top);
    std::vector<uint64_t> w = {uint64_t(tree.size()), uint64_t(top), uint64_t(regions.at(top).parent)};
    for (rid_t r : tree)
      if (r != top) w.insert(w.end(), {uint64_t(r), uint64_t(regions.at(r).parent)});
    for (const auto &kv : objects)
      if (tree.count(kv.second.region))
        w.insert(w.end(), {kv.first, uint64_t(kv.second.usable), kv.second.seed, uint64_t(kv.second.region)});
    drop_subtree(top);
    return w;
  }

  // Adopts what export_subtree sent; the bytes are checked by the caller.
  void import_subtree(const std::vector<uint64_t> &w) {
    const size_t nregions = size_t(w.at(0));
    for (size_t i = 0; i < nregions; i++) regions[rid_t(w[1 + 2 * i])] = {rid_t(w[2 + 2 * i]), false};
    for (size_t i = 1 + 2 * nregions; i + 4 <= w.size(); i += 4)
      objects[w[i]] = {size_t(w[i + 1]), w[i + 2], rid_t(w[i + 3])};
  }
};

}  // namespace mmdtest

#endif  // MMD_TEST_STRESS_MODEL_H
