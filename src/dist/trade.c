/* SPDX-License-Identifier: Apache-2.0 */
/* trade.c: memory and region IDs between scheduler levels (the paper's
 * Sect. 5.2). The top starts with all of both. Every other scheduler keeps
 * between a low and a high watermark, proportional to the schedulers in its
 * subtree: below the low one it asks its parent for enough to reach the
 * high one (one GRANT, its reply carrying the extra), above 1.5x the high
 * one for pages and 2x for IDs it returns the surplus (one RETURN). Memory
 * moves in whole 1 MiB pages. A request that finds no memory or ID here
 * waits (parked) for the parent's grant, and is answered with the error
 * only if that fails too.
 * The top, dry, first asks its whole subtree for every free page and ID
 * (RECLAIM), so that memory kept under other schedulers' watermarks is not
 * lost to a request. */
#include <stdlib.h>
#include "scheduler.h"
#include "runs.h"

#define PAGE_SLABS (MMD_PAGE_SIZE >> MMD_SLAB_SHIFT)
#define MMD_BASE_PAGES_MAX 64
#define MMD_BASE_IDS_MAX   4096

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void mmd_trade_init(mmd_sched_t *s, uint64_t space_bytes) {
  uint64_t n = (uint64_t)s->tree->nsched, sub = (uint64_t)mmd_tree_subtree_size(s->tree, s->self);
  uint64_t base_pages = clamp(space_bytes / MMD_PAGE_SIZE / (8 * n), 1, MMD_BASE_PAGES_MAX);
  uint64_t base_ids = clamp((uint64_t)INT32_MAX / (8 * n), 16, MMD_BASE_IDS_MAX);
  s->high_slabs = base_pages * sub * PAGE_SLABS;
  s->low_slabs = s->high_slabs / 4;
  s->high_ids = base_ids * sub;
  s->low_ids = s->high_ids / 4;
}

/* Up to pages whole pages out of the Free Ranges, into out (slab keys). */
static uint64_t trade_take_pages(mmd_sched_t *s, uint64_t pages, mmd_ranges_t *out) {
  uint64_t got = 0, n = pages, key;
  while (got < pages && n > 0) {
    if (n > pages - got) n = pages - got;
    if (mmd_runs_take_aligned(&s->R.free_ranges, n * PAGE_SLABS, PAGE_SLABS, &key) &&
        mmd_ranges_add(out, key, n * PAGE_SLABS) == 0) {
      s->R.free_slabs -= n * PAGE_SLABS;
      got += n;
    } else {
      n /= 2;
    }
  }
  return got;
}

/* A message's items: the page runs, then the ID runs (two lists: a page
 * run and an ID run that happen to touch must not merge). */
static int trade_items(mmd_buf_t *b, const mmd_ranges_t *pages, const mmd_ranges_t *ids) {
  return mmd_buf_put(b, pages->r, pages->n * sizeof *pages->r) | mmd_buf_put(b, ids->r, ids->n * sizeof *ids->r);
}

static void trade_take_ids(mmd_sched_t *s, uint64_t ids, mmd_ranges_t *out) {
  uint64_t first, n;
  while (ids > 0 && mmd_regions_take_ids(&s->R, ids, &first, &n)) {
    mmd_ranges_add(out, first, n);
    ids -= n;
  }
}

/* ---------------------------------------------------------------------------
 * The child's side
 * ------------------------------------------------------------------------- */

static void trade_ask(mmd_sched_t *s);
static void trade_reclaim(mmd_sched_t *s);

/* Runs the parked requests again, now that the grant is in (or failed). */
static void trade_unpark(mmd_sched_t *s, bool failed) {
  mmd_parked_t *p = s->parked;
  s->parked = s->parked_tail = NULL;
  while (p) {
    mmd_parked_t *next = p->next;
    p->ev.retry = p->asked || failed;
    if (mmd_req_view(&p->req, &p->ev.req) == 0) mmd_sched_handle(s, &p->ev);
    mmd_buf_free(&p->req);
    free(p);
    p = next;
  }
}

static void on_grant_reply(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  (void)aux;
  mmd_job_free(job);
  s->grant_pending = false;
  const uint64_t *it = rep->items;
  uint64_t page_items = rep->hdr->status >= 0 ? (uint64_t)rep->hdr->val : 0;
  for (uint64_t i = 0; i + 1 < page_items && i + 1 < rep->hdr->nitems; i += 2) {
    mmd_regions_release(&s->R, it[i], it[i + 1]);
    mmd_runs_add(&s->held, it[i], it[i + 1]);
  }
  for (uint64_t i = page_items; rep->hdr->status >= 0 && i + 1 < rep->hdr->nitems; i += 2)
    mmd_regions_add_ids(&s->R, it[i], it[i + 1]);
  trade_unpark(s, rep->hdr->status < 0);
}

/* Asks for what the parked requests need, and enough to reach the high
 * watermarks. */
static void trade_ask(mmd_sched_t *s) {
  uint64_t need_slabs = 0, total = 0;
  bool need_ids = false;
  for (mmd_parked_t *p = s->parked; p; p = p->next) {
    need_slabs = need_slabs > p->need_slabs ? need_slabs : p->need_slabs;
    total += p->need_total;
    need_ids |= p->need_ids;
  }
  uint64_t need_pages = (need_slabs + PAGE_SLABS - 1) / PAGE_SLABS, total_pages = (total + PAGE_SLABS - 1) / PAGE_SLABS;
  uint64_t top_up = s->high_slabs > s->R.free_slabs ? (s->high_slabs - s->R.free_slabs) / PAGE_SLABS : 0;
  uint64_t ids = s->high_ids > s->R.free_id_count ? s->high_ids - s->R.free_id_count : 0;
  uint64_t items[4] = {need_pages, (need_pages > total_pages ? need_pages : total_pages) + top_up,
                       ids ? ids : need_ids, need_ids};
  mmd_job_t *job = mmd_job_new(&(mmd_event_t){0}, NULL);
  if (mmd_send_request(s, MMD_TO_PARENT, job, on_grant_reply, 0, -1, MMD_MSG_GRANT, (int64_t[3]){0}, items, 4) != 0) {
    if (job) mmd_job_free(job);
    return;
  }
  s->grant_pending = true;
  for (mmd_parked_t *p = s->parked; p; p = p->next) p->asked = true;
}

bool mmd_trade_park(mmd_sched_t *s, const mmd_event_t *ev, int64_t status) {
  bool top = s->parent_rank < 0;
  if (ev->req.hdr == NULL || (top && s->nchildren == 0)) return false;
  mmd_parked_t *p = calloc(1, sizeof *p);
  mmd_req_hdr_t h = *ev->req.hdr;
  h.nreports = 0;   /* applied when it arrived */
  if (p == NULL || mmd_buf_put(&p->req, &h, sizeof h) != 0 ||
      mmd_buf_put(&p->req, ev->req.items, (size_t)h.nitems * 8) != 0) {
    if (p) mmd_buf_free(&p->req);
    free(p);
    return false;
  }
  p->ev = *ev;
  p->need_slabs = status == SYS_ERR_NOMEM ? s->R.short_slabs : 0;
  p->need_total = status == SYS_ERR_NOMEM && s->short_total > p->need_slabs ? s->short_total : p->need_slabs;
  p->need_ids = status == SYS_ERR_NOIDS;
  s->R.short_slabs = 0;
  s->short_total = 0;
  if (s->parked_tail) s->parked_tail->next = p;
  else s->parked = p;
  s->parked_tail = p;
  if (top && !s->reclaim_pending) trade_reclaim(s);
  else if (!top && !s->grant_pending) trade_ask(s);
  return true;
}

static void trade_return(mmd_sched_t *s) {
  mmd_ranges_t pages = {0}, ids = {0};
  if (s->R.free_slabs > s->high_slabs + s->high_slabs / 2)
    trade_take_pages(s, (s->R.free_slabs - s->high_slabs) / PAGE_SLABS, &pages);
  if (s->R.free_id_count > 2 * s->high_ids) trade_take_ids(s, s->R.free_id_count - s->high_ids, &ids);
  for (size_t i = 0; i < pages.n; i++) mmd_runs_cut(&s->held, pages.r[i].off, pages.r[i].len);
  mmd_buf_t items = {0};
  if ((pages.n || ids.n) && trade_items(&items, &pages, &ids) == 0)
    mmd_notify(s, MMD_TO_PARENT, MMD_MSG_RETURN, (int64_t[3]){(int64_t)pages.n * 2}, items.p, items.len / 8);
  mmd_buf_free(&items);
  mmd_ranges_free(&pages);
  mmd_ranges_free(&ids);
}

void mmd_trade_check(mmd_sched_t *s) {
  if (s->parent_rank < 0 || s->shutting) return;
  if (!s->grant_pending && (s->R.free_slabs < s->low_slabs || s->R.free_id_count < s->low_ids))
    trade_ask(s);
  if (s->R.free_slabs > s->high_slabs + s->high_slabs / 2 || s->R.free_id_count > 2 * s->high_ids)
    trade_return(s);
}

/* ---------------------------------------------------------------------------
 * The parent's side
 * ------------------------------------------------------------------------- */

/* items: pages needed in one run, pages wanted in all, IDs wanted, IDs
 * needed. Replies with page runs (val: their items), then ID runs. */
void mmd_on_grant(mmd_sched_t *s, const mmd_event_t *ev) {
  int c = mmd_child_of(s, ev);
  const uint64_t *it = ev->req.items;
  if (c < 0 || ev->req.hdr->nitems != 4) return mmd_answer_status(s, ev, SYS_ERR_ARG);
  uint64_t keep_ids = s->low_ids, keep_slabs = s->low_slabs;   /* extras only above them */
  uint64_t spare_ids = s->R.free_id_count > keep_ids ? s->R.free_id_count - keep_ids : 0;
  uint64_t give_ids = it[2] < spare_ids ? it[2] : spare_ids;
  if (it[3] && give_ids == 0) give_ids = s->R.free_id_count ? 1 : 0;
  if (it[3] && give_ids == 0) {
    s->R.short_slabs = 0;
    return mmd_answer_status(s, ev, SYS_ERR_NOIDS);
  }
  if (it[0] > 0 && !ev->retry && s->R.free_slabs < it[1] * PAGE_SLABS) {
    /* the child waits for all it asked: fetch it first (from the parent, or at the top from the subtree) */
    s->R.short_slabs = it[0] * PAGE_SLABS;
    s->short_total = it[1] * PAGE_SLABS;
    if (mmd_trade_park(s, ev, SYS_ERR_NOMEM)) return;
  }
  mmd_ranges_t pages = {0}, ids = {0};
  uint64_t key;
  if (it[0] > 0) {
    if (mmd_regions_take_aligned(&s->R, it[0] * PAGE_SLABS, PAGE_SLABS, &key)) {
      mmd_ranges_add(&pages, key, it[0] * PAGE_SLABS);
    } else if (!ev->retry) {
      s->R.short_slabs = it[0] * PAGE_SLABS;
      s->short_total = it[1] * PAGE_SLABS;
      return mmd_answer_status(s, ev, SYS_ERR_NOMEM);   /* parked: asks up, or the top reclaims */
    }   /* else the child gets what there is, and its IDs: its request for memory fails there */
  }
  if (it[0] > 0) keep_slabs = 0;   /* a child waiting for a batch gets all there is */
  uint64_t spare = s->R.free_slabs > keep_slabs ? (s->R.free_slabs - keep_slabs) / PAGE_SLABS : 0;
  uint64_t extra = it[1] > it[0] ? it[1] - it[0] : 0;
  trade_take_pages(s, extra < spare ? extra : spare, &pages);
  trade_take_ids(s, give_ids, &ids);
  for (size_t i = 0; i < pages.n; i++) mmd_truns_add(&s->lent_ranges, pages.r[i].off, pages.r[i].len, (uint32_t)c);
  for (size_t i = 0; i < ids.n; i++) mmd_truns_add(&s->lent_ids, ids.r[i].off, ids.r[i].len, (uint32_t)c);
  s->counts.grants++;
  mmd_buf_t items = {0};
  int rc = trade_items(&items, &pages, &ids);
  mmd_answer(s, ev, rc, rc ? 0 : (int64_t)pages.n * 2, items.p, rc ? 0 : items.len / 8);
  mmd_buf_free(&items);
  mmd_ranges_free(&pages);
  mmd_ranges_free(&ids);
}

/* Page runs and ID runs back from child c. */
static void trade_take_back(mmd_sched_t *s, int c, const uint64_t *it, uint64_t page_items, uint64_t n) {
  if (c < 0 || page_items > n || page_items % 2 || n % 2) return;
  for (uint64_t i = 0; i < page_items; i += 2) {
    mmd_truns_cut(&s->lent_ranges, it[i], it[i + 1]);
    mmd_regions_release(&s->R, it[i], it[i + 1]);
  }
  for (uint64_t i = page_items; i < n; i += 2) {
    mmd_truns_cut(&s->lent_ids, it[i], it[i + 1]);
    mmd_regions_add_ids(&s->R, it[i], it[i + 1]);
  }
  s->counts.returns++;
}

/* arg 0: page run items; items: page runs, then ID runs. */
void mmd_on_return(mmd_sched_t *s, const mmd_event_t *ev) {
  trade_take_back(s, mmd_child_of(s, ev), ev->req.items, (uint64_t)ev->req.hdr->arg[0], ev->req.hdr->nitems);
}

/* ---------------------------------------------------------------------------
 * Reclaiming: the top ran dry
 * ------------------------------------------------------------------------- */

static void on_reclaimed(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t child) {
  if (rep->hdr->status == 0) trade_take_back(s, (int)child, rep->items, (uint64_t)rep->hdr->val, rep->hdr->nitems);
  mmd_job_settle(s, job);
}

/* The subtree has answered: a scheduler gives back every free page and ID
 * it has; the top runs its parked requests again. */
static void reclaim_done(mmd_sched_t *s, mmd_job_t *job) {
  mmd_regions_trim_all(&s->R);
  if (s->parent_rank < 0) {
    mmd_job_free(job);
    s->reclaim_pending = false;
    return trade_unpark(s, false);
  }
  mmd_ranges_t pages = {0}, ids = {0};
  trade_take_pages(s, s->R.free_slabs / PAGE_SLABS, &pages);
  for (size_t i = 0; i < pages.n; i++) mmd_runs_cut(&s->held, pages.r[i].off, pages.r[i].len);
  trade_take_ids(s, s->R.free_id_count, &ids);
  job->status = trade_items(&job->out, &pages, &ids);
  job->val = (int64_t)pages.n * 2;
  mmd_ranges_free(&pages);
  mmd_ranges_free(&ids);
  mmd_job_answer(s, job);
}

static void reclaim_children(mmd_sched_t *s, mmd_job_t *job) {
  for (int c = 0; c < s->nchildren; c++)
    mmd_send_request(s, c, job, on_reclaimed, (uint64_t)c, -1, MMD_MSG_RECLAIM, (int64_t[3]){0}, NULL, 0);
  mmd_job_start(s, job);
}

static void trade_reclaim(mmd_sched_t *s) {
  mmd_job_t *job = mmd_job_new(&(mmd_event_t){0}, reclaim_done);
  if (job == NULL) return trade_unpark(s, true);
  s->reclaim_pending = true;
  for (mmd_parked_t *p = s->parked; p; p = p->next) p->asked = true;
  reclaim_children(s, job);
}

void mmd_on_reclaim(mmd_sched_t *s, const mmd_event_t *ev) {
  if (ev->from != MMD_FROM_PARENT) return mmd_answer_status(s, ev, SYS_ERR_ARG);
  mmd_job_t *job = mmd_job_new(ev, reclaim_done);
  if (job == NULL) return mmd_answer_status(s, ev, SYS_ERR_NOMEM);
  reclaim_children(s, job);
}
