/* SPDX-License-Identifier: Apache-2.0 */
/* pack.c: region packing (the paper's Sect. 4.3). A region, with all its
 * sub-regions, becomes a list of (offset, length) runs of the slabs it has in
 * use, adjacent slabs coalesced on the fly; free slabs are not sent. A pool
 * keeps its last pack until its slabs change (its shape, slab.c), so that a
 * region sent again unchanged costs its runs, not a walk of every slab. */
#include "region.h"

static int pack_pool_walk(const mmd_pool_t *p, mmd_ranges_t *out) {
  uint64_t key, cell;
  for (bool ok = mmd_trie_first(&p->used, &key, &cell); ok; ok = mmd_trie_next(&p->used, &key, &cell)) {
    const mmd_slab_t *s = mmd_cell(p->meta, (mmd_cell_t)cell);
    if (s->nlive == 0) continue;   /* leased and, as last reported, still empty */
    int rc = mmd_ranges_add(out, key << MMD_SLAB_SHIFT, (uint64_t)s->nslabs << MMD_SLAB_SHIFT);
    if (rc != 0) return rc;
  }
  return 0;
}

static int pack_pool(mmd_pool_t *p, mmd_ranges_t *out) {
  if (p->packed_shape != p->shape + 1) {
    p->packed.n = 0;
    p->packed_shape = 0;
    int rc = pack_pool_walk(p, &p->packed);
    if (rc != 0) return rc;
    p->packed_shape = p->shape + 1;
  }
  for (size_t i = 0; i < p->packed.n; i++) {
    int rc = mmd_ranges_add(out, p->packed.r[i].off, p->packed.r[i].len);
    if (rc != 0) return rc;
  }
  return 0;
}

int mmd_pack_region(mmd_region_t *g, int with_subregions, mmd_ranges_t *out) {
  for (mmd_region_t *r = g; r; r = with_subregions ? (mmd_region_t *)mmd_region_walk_next(r, g) : NULL) {
    int rc = pack_pool(&r->pool, out);
    if (rc != 0) return rc;
  }
  return 0;
}

int mmd_pack_live_part(const mmd_regions_t *R, uint64_t off, uint64_t len, mmd_region_pred_fn *keep,
                       void *ctx, mmd_ranges_t *out) {
  uint64_t end = off + len, key, v;
  bool ok = mmd_trie_floor(&R->used_ranges, off >> MMD_SLAB_SHIFT, &key, &v);
  if (!ok) ok = mmd_trie_ceil(&R->used_ranges, off >> MMD_SLAB_SHIFT, &key, &v);
  for (; ok && (key << MMD_SLAB_SHIFT) < end; ok = mmd_trie_next(&R->used_ranges, &key, &v)) {
    uint64_t lo = key << MMD_SLAB_SHIFT, hi = lo + ((v >> 32) << MMD_SLAB_SHIFT);
    if (lo < off) lo = off;
    if (hi > end) hi = end;
    if (lo < hi && keep(ctx, mmd_region_get(R, (rid_t)(v & 0xffffffffu)))) {
      int rc = mmd_ranges_add(out, lo, hi - lo);
      if (rc != 0) return rc;
    }
  }
  return 0;
}
