/* SPDX-License-Identifier: Apache-2.0 */
/* api.c: the sys_* calls on regions and objects. sys_alloc and sys_free
 * take the local path when the object's slab is leased to this worker and
 * ask the scheduler otherwise (the paper's protocol). */
#include <string.h>
#include "errors.h"
#include "slab.h"
#include "worker.h"

static mmd_worker_t *api_worker(const char *call) {
  if (mmd_self == NULL) mmd_fail(SYS_ERR_STATE, call, "%s", "");
  return mmd_self;
}

/* ---------------------------------------------------------------------------
 * Regions
 * ------------------------------------------------------------------------- */

rid_t sys_ralloc(rid_t parent, int level_hint) {
  mmd_worker_t *w = api_worker("sys_ralloc");
  if (w == NULL) return SYS_ERR_STATE;
  int64_t rc = mmd_call(w, MMD_MSG_RALLOC, parent, level_hint, 0, NULL, 0);
  if (rc < 0) return mmd_fail((int)rc, "sys_ralloc", "parent %lld", (long long)parent);
  return rc;
}

int sys_rfree(rid_t region) {
  mmd_worker_t *w = api_worker("sys_rfree");
  if (w == NULL) return SYS_ERR_STATE;
  int64_t rc = mmd_call(w, MMD_MSG_RFREE, region, 0, 0, NULL, 0);
  if (rc < 0) return mmd_fail((int)rc, "sys_rfree", "region %lld", (long long)region);
  mmd_resident_release(w, w->reply.items, w->reply.hdr->nitems / 2, false);
  return 0;
}

int sys_rforget(rid_t region) {
  mmd_worker_t *w = api_worker("sys_rforget");
  if (w == NULL) return SYS_ERR_STATE;
  if (region == 0) return mmd_fail(SYS_ERR_ROOT, "sys_rforget", "region 0");
  uint64_t item = (uint64_t)region;
  int64_t rc = mmd_call(w, MMD_MSG_PACK, 1, 0, 0, &item, 1);   /* its runs, sub-regions' too */
  if (rc < 0) return mmd_fail((int)rc, "sys_rforget", "region %lld", (long long)region);
  mmd_resident_release(w, w->reply.items, (size_t)w->reply.hdr->val / 2, true);
  return 0;
}

int sys_region_stats(rid_t region, int include_subregions, sys_region_stats_t *stats) {
  mmd_worker_t *w = api_worker("sys_region_stats");
  if (w == NULL) return SYS_ERR_STATE;
  if (stats == NULL) return mmd_fail(SYS_ERR_ARG, "sys_region_stats", "stats NULL");
  int64_t rc = mmd_call(w, MMD_MSG_STATS, region, include_subregions != 0, 0, NULL, 0);
  if (rc < 0) return mmd_fail((int)rc, "sys_region_stats", "region %lld", (long long)region);
  memcpy(stats, w->reply.items, sizeof *stats);
  return 0;
}

/* ---------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------- */

#define API_ELSEWHERE 1   /* api_lease_refill: the region is served by another scheduler */

static bool api_elsewhere(const mmd_worker_t *w, rid_t region, uint64_t slot) {
  const mmd_lclass_t *c = mmd_lease_class(&w->leases, region, slot);
  return c && c->elsewhere;
}

/* Leases more slabs of (region, slot) for about want slots: 0, a code, or
 * API_ELSEWHERE. */
static int api_lease_refill(mmd_worker_t *w, rid_t region, uint64_t slot, uint64_t want) {
  mmd_lease_trim(&w->leases);
  const mmd_lclass_t *c = mmd_lease_class(&w->leases, region, slot);
  uint64_t per_slab = MMD_SLAB_SIZE / slot, slabs = (want + per_slab - 1) / per_slab;
  if (c && (uint64_t)c->grant > slabs) slabs = (uint64_t)c->grant;
  int64_t got = mmd_call(w, MMD_MSG_LEASE, region, (int64_t)slot, (int64_t)slabs, NULL, 0);
  if (got < 0) return (int)got;
  if (got == 0 && w->reply.hdr->val == 1) {
    mmd_lease_mark_elsewhere(&w->leases, region, slot);
    return API_ELSEWHERE;
  }
  const uint64_t *pairs = w->reply.items;
  mmd_resident_touch(w, region);
  for (int64_t i = 0; i < got; i++) mmd_resident_add(w, pairs[2 * i], MMD_SLAB_SIZE);
  return mmd_lease_add(&w->leases, region, slot, pairs, (size_t)got);
}

static void *api_alloc_remote(mmd_worker_t *w, size_t size, rid_t region) {
  int64_t rc = mmd_call(w, MMD_MSG_ALLOC, (int64_t)size, region, 0, NULL, 0);
  if (rc < 0) {
    mmd_fail((int)rc, "sys_alloc", "size %zu, region %lld", size, (long long)region);
    return NULL;
  }
  uint64_t off = (uint64_t)w->reply.hdr->val;
  mmd_resident_touch(w, region);
  mmd_resident_add(w, off, mmd_slot_of(size));
  return mmd_ptr(w, off);
}

static void *api_alloc_slow(mmd_worker_t *w, size_t size, rid_t region, uint64_t slot) {
  if (!w->lease_on || slot > MMD_SLAB_SIZE || api_elsewhere(w, region, slot))
    return api_alloc_remote(w, size, region);
  int rc = api_lease_refill(w, region, slot, 1);
  if (rc == API_ELSEWHERE) return api_alloc_remote(w, size, region);
  if (rc != 0) {
    mmd_fail(rc, "sys_alloc", "size %zu, region %lld", size, (long long)region);
    return NULL;
  }
  void *p = mmd_lease_alloc(&w->leases, region, slot);
  return p ? p : api_alloc_remote(w, size, region);
}

void *sys_alloc(size_t size, rid_t region) {
  mmd_worker_t *w = mmd_self;
  uint64_t slot = mmd_slot_of(size);
  if (w && w->lease_on && size - 1 < MMD_SLAB_SIZE) {
    void *p = mmd_lease_alloc(&w->leases, region, slot);
    if (p) return p;
  }
  if (api_worker("sys_alloc") == NULL) return NULL;
  if (size == 0 || size > w->size) {   /* larger than the space: its slot would wrap */
    mmd_fail(size ? SYS_ERR_NOMEM : SYS_ERR_ARG, "sys_alloc", "size %zu, region %lld", size, (long long)region);
    return NULL;
  }
  return api_alloc_slow(w, size, region, slot);
}

static int api_balloc_leased(mmd_worker_t *w, size_t size, rid_t region, int n, void **objects) {
  uint64_t slot = mmd_slot_of(size);
  for (int i = 0; i < n; i++) {
    objects[i] = mmd_lease_alloc(&w->leases, region, slot);
    if (objects[i]) continue;
    int rc = api_lease_refill(w, region, slot, (uint64_t)(n - i));
    if (rc == API_ELSEWHERE) {
      while (i-- > 0) sys_free(objects[i]);
      return API_ELSEWHERE;
    }
    objects[i] = rc == 0 ? mmd_lease_alloc(&w->leases, region, slot) : NULL;
    if (objects[i] == NULL) {
      while (i-- > 0) sys_free(objects[i]);   /* all or nothing */
      return rc ? rc : SYS_ERR_NOMEM;
    }
  }
  return 0;
}

#define MMD_BALLOC_CHUNK (1 << 20)   /* objects a BALLOC asks for: an 8 MiB reply */

static int api_balloc_remote(mmd_worker_t *w, size_t size, rid_t region, int n, void **objects) {
  mmd_resident_touch(w, region);
  for (int done = 0; done < n;) {
    int chunk = n - done < MMD_BALLOC_CHUNK ? n - done : MMD_BALLOC_CHUNK;
    int64_t rc = mmd_call(w, MMD_MSG_BALLOC, (int64_t)size, region, chunk, NULL, 0);
    if (rc < 0) {
      while (done-- > 0) sys_free(objects[done]);   /* all or nothing */
      return (int)rc;
    }
    for (int i = 0; i < chunk; i++, done++) {
      objects[done] = mmd_ptr(w, w->reply.items[i]);
      mmd_resident_add(w, w->reply.items[i], mmd_slot_of(size));
    }
  }
  return 0;
}

int sys_balloc(size_t size, rid_t region, int num_objects, void **objects) {
  mmd_worker_t *w = api_worker("sys_balloc");
  if (w == NULL) return SYS_ERR_STATE;
  if (size == 0 || num_objects < 0 || (num_objects > 0 && objects == NULL))
    return mmd_fail(SYS_ERR_ARG, "sys_balloc", "size %zu, %d objects", size, num_objects);
  if (size > w->size)
    return mmd_fail(SYS_ERR_NOMEM, "sys_balloc", "size %zu, %d objects", size, num_objects);
  bool leased = w->lease_on && mmd_slot_of(size) <= MMD_SLAB_SIZE && !api_elsewhere(w, region, mmd_slot_of(size));
  int rc = num_objects == 0 || !leased ? 0 : api_balloc_leased(w, size, region, num_objects, objects);
  if (num_objects > 0 && (!leased || rc == API_ELSEWHERE))
    rc = api_balloc_remote(w, size, region, num_objects, objects);
  if (rc < 0)
    return mmd_fail(rc, "sys_balloc", "size %zu, region %lld, %d objects", size, (long long)region,
                    num_objects);
  return 0;
}

int sys_sched_stats(sys_sched_stats_t *stats) {
  mmd_worker_t *w = api_worker("sys_sched_stats");
  if (w == NULL) return SYS_ERR_STATE;
  if (stats == NULL) return mmd_fail(SYS_ERR_ARG, "sys_sched_stats", "stats NULL");
  int64_t rc = mmd_call(w, MMD_MSG_SCHED_STATS, 0, 0, 0, NULL, 0);
  if (rc < 0) return mmd_fail((int)rc, "sys_sched_stats", "%s", "");
  if (w->reply.hdr->nitems * 8 != sizeof *stats) return mmd_fail(SYS_ERR_MPI, "sys_sched_stats", "%s", "");
  memcpy(stats, w->reply.items, sizeof *stats);
  stats->worker_calls = w->calls;
  stats->worker_wait_ns = w->wait_ns;
  return 0;
}

/* ---------------------------------------------------------------------------
 * Objects
 * ------------------------------------------------------------------------- */

/* The slot size and region of the live object at ptr: 0 or a code. */
static int api_object(mmd_worker_t *w, void *ptr, uint64_t *size, rid_t *rid) {
  if (!mmd_in_space(w, ptr)) return SYS_ERR_NOTGLOBAL;
  uint64_t off = mmd_off(w, ptr);
  mmd_lslab_t *s = w->lease_on ? mmd_lease_find(&w->leases, off) : NULL;
  int64_t rc = s ? mmd_lease_usable(s, off) : mmd_call(w, MMD_MSG_USABLE, (int64_t)off, 0, 0, NULL, 0);
  if (rc < 0) return (int)rc;
  *size = (uint64_t)rc;
  *rid = s ? s->cls->rid : w->reply.hdr->val;
  return 0;
}

int sys_free(void *ptr) {
  mmd_worker_t *w = mmd_self;
  if (ptr == NULL) return 0;
  if (api_worker("sys_free") == NULL) return SYS_ERR_STATE;
  if (!mmd_in_space(w, ptr)) return mmd_fail(SYS_ERR_NOTGLOBAL, "sys_free", "%p", ptr);
  uint64_t off = mmd_off(w, ptr);
  mmd_lslab_t *s = w->lease_on ? mmd_lease_find(&w->leases, off) : NULL;
  int64_t rc = s ? mmd_lease_free(&w->leases, s, off) : mmd_call(w, MMD_MSG_FREE, (int64_t)off, 0, 0, NULL, 0);
  return rc < 0 ? mmd_fail((int)rc, "sys_free", "%p", ptr) : 0;
}

size_t sys_usable_size(void *ptr) {
  mmd_worker_t *w = api_worker("sys_usable_size");
  uint64_t size;
  rid_t rid;
  if (w == NULL) return 0;
  int rc = api_object(w, ptr, &size, &rid);
  if (rc < 0) {
    mmd_fail(rc, "sys_usable_size", "%p", ptr);
    return 0;
  }
  mmd_set_error(SYS_OK);
  return size;
}

void *sys_realloc(void *ptr, size_t new_size, rid_t new_region) {
  mmd_worker_t *w = api_worker("sys_realloc");
  if (w == NULL) return NULL;
  if (ptr == NULL) return sys_alloc(new_size, new_region);
  uint64_t size;
  rid_t rid;
  int rc = api_object(w, ptr, &size, &rid);
  if (rc < 0) {
    mmd_fail(rc, "sys_realloc", "%p, size %zu, region %lld", ptr, new_size, (long long)new_region);
    return NULL;
  }
  if (new_size == 0) {
    sys_free(ptr);
    return NULL;
  }
  if (rid == new_region && new_size <= size && mmd_slot_of(new_size) * 2 > size) return ptr;
  void *p = sys_alloc(new_size, new_region);
  if (p == NULL) return NULL;
  memcpy(p, ptr, new_size < size ? new_size : size);
  sys_free(ptr);
  return p;
}
