/* SPDX-License-Identifier: Apache-2.0 */
/* route.c: where a request is served (the paper's Sect. 5.3) and where a
 * new region goes (Sect. 5.2). A scheduler serves the regions it holds; the
 * Used Ranges and IDs it lent a child say which child's subtree serves
 * theirs; anything else goes up, and the top answers what nobody holds with
 * an error. A request that came down is never sent back up. */
#include "scheduler.h"
#include "runs.h"

#define MMD_LOAD_SLACK 16   /* regions a child may have above the least loaded and still be chosen */

static int route_unknown(const mmd_sched_t *s, bool from_parent) {
  return s->parent_rank < 0 || from_parent ? MMD_NOWHERE : MMD_TO_PARENT;
}

int mmd_route_rid(const mmd_sched_t *s, rid_t rid, bool from_parent) {
  uint64_t first, n;
  uint32_t child;
  if (rid < 0 || rid > INT32_MAX) return MMD_NOWHERE;
  if (mmd_region_get(&s->R, rid)) return MMD_HERE;
  if (mmd_truns_of(&s->lent_ids, (uint64_t)rid, &first, &n, &child)) return (int)child;
  if (mmd_runs_of(&s->R.free_ids, (uint64_t)rid, &first, &n)) return MMD_NOWHERE;   /* ours, unused */
  return route_unknown(s, from_parent);
}

int mmd_route_off(const mmd_sched_t *s, uint64_t off, bool from_parent) {
  uint64_t key = off >> MMD_SLAB_SHIFT, first, n;
  uint32_t tag;
  if (key >= s->R.space_slabs) return MMD_NOWHERE;
  if (mmd_truns_of(&s->R.used_ranges, key, &first, &n, &tag)) return MMD_HERE;
  if (mmd_truns_of(&s->lent_ranges, key, &first, &n, &tag)) return (int)tag;
  if (mmd_runs_of(&s->R.free_ranges, key, &first, &n)) return MMD_NOWHERE;
  return route_unknown(s, from_parent);
}

bool mmd_elsewhere(mmd_sched_t *s, const mmd_event_t *ev, int route, int err) {
  if (route == MMD_HERE) return false;
  if (route == MMD_NOWHERE) mmd_answer_status(s, ev, err);
  else mmd_forward(s, ev, route);
  return true;
}

/* ---------------------------------------------------------------------------
 * Placement and load
 * ------------------------------------------------------------------------- */

uint64_t mmd_load(const mmd_sched_t *s) {
  uint64_t load = s->R.nregions - 1;   /* the root or the anchor aside */
  for (int c = 0; c < s->nchildren; c++) load += s->child_load[c];
  return load;
}

/* The least loaded child; the one toward the requesting worker's leaf when
 * it is not much more loaded, so that its region is served next to it. */
int mmd_place_child(const mmd_sched_t *s, int leaf) {
  int least = 0;
  for (int c = 1; c < s->nchildren; c++)
    if (s->child_load[c] < s->child_load[least]) least = c;
  int toward = leaf >= 0 ? mmd_tree_child_toward(s->tree, s->self, leaf) : -1;
  if (toward < 0) return least;
  toward -= s->first_child;
  return s->child_load[toward] <= s->child_load[least] + MMD_LOAD_SLACK ? toward : least;
}

void mmd_load_check(mmd_sched_t *s) {
  if (s->parent_rank < 0) return;
  uint64_t load = mmd_load(s), last = s->load_reported;
  uint64_t slack = last / 8 > 4 ? last / 8 : 4;
  if (load + slack >= last && load <= last + slack) return;
  s->load_reported = load;
  mmd_notify(s, MMD_TO_PARENT, MMD_MSG_LOAD, (int64_t[3]){(int64_t)load}, NULL, 0);
}

void mmd_on_load(mmd_sched_t *s, const mmd_event_t *ev) {
  int c = mmd_child_of(s, ev);
  if (c >= 0 && ev->req.hdr->arg[0] >= 0) s->child_load[c] = (uint64_t)ev->req.hdr->arg[0];
}
