/* xfer.c: sys_send, sys_recv and sys_barrier. The sender asks its scheduler
 * to pack the regions (with their sub-regions) and objects into (offset,
 * length) runs, sends the receiver one header with the region IDs, the
 * object offsets, the objects' regions and the runs, then the memory itself
 * in one transfer. A sender that fails still sends a header, carrying its
 * error, so that the receiver returns instead of waiting forever. */
#include "errors.h"
#include "transport.h"
#include "worker.h"

typedef struct mmd_xfer_hdr {
  int64_t status;      /* the sender's error, or 0 */
  uint32_t nregions;   /* rid_t, then */
  uint32_t nobjects;   /* uint64_t offsets, then the objects' rid_t, then */
  uint32_t nranges;    /* mmd_range_t */
  uint32_t pad;
} mmd_xfer_hdr_t;

static bool xfer_peer_ok(const mmd_worker_t *w, int peer) {
  return peer >= 0 && peer < w->nworkers && peer != w->id;
}

static int xfer_send_failure(int peer, int code) {
  mmd_buf_t b = {0};
  mmd_xfer_hdr_t h = {.status = code};
  mmd_buf_put(&b, &h, sizeof h);
  mmd_tp_send_msg(peer, &b);
  mmd_buf_free(&b);
  return code;
}

/* The header's first part, which is also the PACK request's items: the
 * region IDs and the object offsets. 0, or a code with *bad the item. */
static int xfer_named(mmd_worker_t *w, mmd_buf_t *b, rid_t *regions, int nr, void **objects, int no,
                      int64_t *bad) {
  mmd_xfer_hdr_t h = {.nregions = (uint32_t)nr, .nobjects = (uint32_t)no};
  if (mmd_buf_put(b, &h, sizeof h) != 0 || mmd_buf_put(b, regions, (size_t)nr * 8) != 0) return SYS_ERR_NOMEM;
  for (int i = 0; i < no; i++) {
    if (!mmd_in_space(w, objects[i])) {
      *bad = nr + i;
      return SYS_ERR_NOTGLOBAL;
    }
    uint64_t off = mmd_off(w, objects[i]);
    if (mmd_buf_put(b, &off, 8) != 0) return SYS_ERR_NOMEM;
  }
  return 0;
}

/* The scheduler's runs for what b names: 0, or a code with *bad the item. */
static int xfer_pack(mmd_worker_t *w, const mmd_buf_t *b, int nr, int no, int64_t *bad) {
  const uint64_t *items = (const uint64_t *)(b->p + sizeof(mmd_xfer_hdr_t));
  int rc = (int)mmd_call(w, MMD_MSG_PACK, nr, no, 0, items, (size_t)nr + (size_t)no);
  *bad = rc != SYS_ERR_MPI && rc != SYS_ERR_NOMEM ? w->reply.hdr->val : 0;
  return rc;
}

/* Completes the header with what the pack reply gave (the objects'
 * regions, then the runs) and sends it. */
static int xfer_send_header(mmd_worker_t *w, int peer, mmd_buf_t *b, int no) {
  const mmd_rep_view_t *v = &w->reply;
  size_t range_items = (size_t)v->hdr->val;
  ((mmd_xfer_hdr_t *)b->p)->nranges = (uint32_t)(range_items / 2);
  if (mmd_buf_put(b, v->items + range_items, (size_t)no * 8) != 0 ||
      mmd_buf_put(b, v->items, range_items * 8) != 0)
    return SYS_ERR_NOMEM;
  return mmd_tp_send_msg(peer, b);
}

static void xfer_fail_item(int rc, int peer, rid_t *regions, int nr, void **objects, int64_t bad) {
  if (bad < nr) mmd_fail(rc, "sys_send", "to worker %d, region %lld", peer, (long long)regions[bad]);
  else mmd_fail(rc, "sys_send", "to worker %d, object %p", peer, objects[bad - nr]);
}

int sys_send(int peer_worker, rid_t *regions, int num_regions, void **objects, int num_objects) {
  mmd_worker_t *w = mmd_self;
  if (w == NULL) return mmd_fail(SYS_ERR_STATE, "sys_send", "to worker %d", peer_worker);
  if (!xfer_peer_ok(w, peer_worker)) return mmd_fail(SYS_ERR_PEER, "sys_send", "to worker %d", peer_worker);
  if (num_regions < 0 || num_objects < 0 || (num_regions && !regions) || (num_objects && !objects))
    return mmd_fail(xfer_send_failure(peer_worker, SYS_ERR_ARG), "sys_send", "to worker %d", peer_worker);
  int64_t bad = 0;
  mmd_buf_t b = {0};
  int rc = xfer_named(w, &b, regions, num_regions, objects, num_objects, &bad);
  if (rc == 0) rc = xfer_pack(w, &b, num_regions, num_objects, &bad);
  if (rc < 0) {
    mmd_buf_free(&b);
    xfer_send_failure(peer_worker, rc);
    xfer_fail_item(rc, peer_worker, regions, num_regions, objects, bad);
    return rc;
  }
  const mmd_range_t *runs = (const mmd_range_t *)w->reply.items;
  size_t nruns = (size_t)w->reply.hdr->val / 2;
  mmd_ranges_t l = {.r = (mmd_range_t *)runs, .n = nruns, .cap = nruns};  /* read before any call */
  rc = xfer_send_header(w, peer_worker, &b, num_objects);
  mmd_buf_free(&b);
  if (rc == 0) rc = mmd_tp_send_ranges(peer_worker, w->base, &l);
  return rc < 0 ? mmd_fail(rc, "sys_send", "to worker %d", peer_worker) : 0;
}

/* ---------------------------------------------------------------------------
 * Receiving
 * ------------------------------------------------------------------------- */

static void xfer_fill(mmd_worker_t *w, const mmd_xfer_hdr_t *h, rid_t *regions, int nr, void **objects,
                      int no) {
  const int64_t *rids = (const int64_t *)(h + 1);
  const uint64_t *offs = (const uint64_t *)(rids + h->nregions);
  for (int i = 0; i < nr; i++) regions[i] = (uint32_t)i < h->nregions ? rids[i] : SYS_NO_REGION;
  for (int i = 0; i < no; i++) objects[i] = (uint32_t)i < h->nobjects ? mmd_ptr(w, offs[i]) : NULL;
}

static int xfer_recv_data(mmd_worker_t *w, int peer, const mmd_xfer_hdr_t *h) {
  const mmd_range_t *r = (const mmd_range_t *)((const uint64_t *)(h + 1) + h->nregions + 2ull * h->nobjects);
  mmd_ranges_t l = {.r = (mmd_range_t *)r, .n = h->nranges, .cap = h->nranges};
  int rc = mmd_tp_recv_ranges(peer, w->base, &l);
  if (rc != 0) return rc;
  const int64_t *rids = (const int64_t *)(h + 1), *owners = rids + h->nregions + h->nobjects;
  for (uint32_t i = 0; i < h->nregions; i++) mmd_resident_touch(w, rids[i]);
  for (uint32_t i = 0; i < h->nobjects; i++) mmd_resident_touch(w, owners[i]);
  for (size_t i = 0; i < l.n; i++) mmd_resident_add(w, l.r[i].off, l.r[i].len);
  return 0;
}

int sys_recv(int peer_worker, rid_t *regions, int num_regions, void **objects, int num_objects) {
  mmd_worker_t *w = mmd_self;
  if (w == NULL) return mmd_fail(SYS_ERR_STATE, "sys_recv", "from worker %d", peer_worker);
  if (!xfer_peer_ok(w, peer_worker)) return mmd_fail(SYS_ERR_PEER, "sys_recv", "from worker %d", peer_worker);
  if (num_regions < 0 || num_objects < 0 || (num_regions && !regions) || (num_objects && !objects))
    num_regions = num_objects = 0;   /* still receive, then report the arrays too small */
  mmd_buf_t b = {0};
  int rc = mmd_tp_recv_msg(peer_worker, &b);
  const mmd_xfer_hdr_t *h = (const mmd_xfer_hdr_t *)b.p;
  if (rc == 0 && (b.len < sizeof *h || (h->status == 0 && b.len != sizeof *h + 8ull * (h->nregions + 2ull * h->nobjects) + 16ull * h->nranges)))
    rc = SYS_ERR_MPI;
  if (rc == 0 && h->status != 0) rc = SYS_ERR_PEER;
  if (rc == 0) rc = xfer_recv_data(w, peer_worker, h);
  if (rc == 0) {
    xfer_fill(w, h, regions, num_regions, objects, num_objects);
    if (h->nregions > (uint32_t)num_regions || h->nobjects > (uint32_t)num_objects) rc = SYS_ERR_TRUNCATE;
  } else {
    xfer_fill(w, &(mmd_xfer_hdr_t){0}, regions, num_regions, objects, num_objects);
  }
  mmd_buf_free(&b);
  if (w->resident.check_due) mmd_resident_check(w);   /* a receiver may never call otherwise */
  return rc < 0 ? mmd_fail(rc, "sys_recv", "from worker %d", peer_worker) : 0;
}

int sys_barrier(void) {
  mmd_worker_t *w = mmd_self;
  if (w == NULL) return mmd_fail(SYS_ERR_STATE, "sys_barrier", "%s", "");
  int64_t rc = mmd_call(w, MMD_MSG_BARRIER, 0, 0, 0, NULL, 0);
  return rc < 0 ? mmd_fail((int)rc, "sys_barrier", "%s", "") : 0;
}
