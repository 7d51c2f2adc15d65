#include "commsolve/direct/factor_grid.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/structure_share.hpp"

namespace commsolve {

namespace {

// A message's key is its collective's id (FactorSchedule::index_of); this bit says that the
// sender had failed (its values mean nothing).
constexpr std::int64_t failed_bit = std::int64_t{1} << 62;

// The update's product is formed a chunk of U blocks at a time, at most this many doubles:
// 1 MiB, so that its scatter finds it in cache (at 32 MiB it went to memory and back; kkt3d:30's
// numeric phase took 2.45 s instead of 2.1).
constexpr std::int64_t max_product = std::int64_t{1} << 17;

std::int64_t width(const SupernodalStructure& sym, std::int64_t s) { return sym.sn_start[s + 1] - sym.sn_start[s]; }

// The block of column k whose rows lie in supernode i (-1: none).
std::int64_t find_block(const SupernodeBlocks& blocks, std::int64_t k, std::int32_t i) {
  const auto first = blocks.sn.begin() + blocks.col_ptr[k], last = blocks.sn.begin() + blocks.col_ptr[k + 1];
  const auto it = std::lower_bound(first, last, i);
  return it != last && *it == i ? it - blocks.sn.begin() : -1;
}

// Positions of the ascending rows sub[0, m) among the ascending rows of `super` (length M).
void positions(const std::int32_t* sub, std::int64_t m, const std::int32_t* super, std::int64_t M,
               std::vector<std::int64_t>& out) {
  out.resize(static_cast<std::size_t>(m));
  std::int64_t p = std::lower_bound(super, super + M, m > 0 ? sub[0] : 0) - super;
  for (std::int64_t i = 0; i < m; ++i) {
    while (p < M && super[p] < sub[i]) ++p;
    if (p == M || super[p] != sub[i]) throw std::logic_error("factorization: an update outside its target block");
    out[i] = p++;
  }
}

// dst[at[i] + shift] += src[i] for i < m, at ascending. Where the positions form one run
// (at[m-1] - at[0] = m - 1, common in the dense parts of a factor) the add is one vector loop.
template <class Index>
void scatter_add(double* __restrict dst, const double* __restrict src, std::int64_t m, const Index* at,
                 std::int64_t shift) {
  if (at[m - 1] - at[0] == m - 1) {
    double* __restrict d = dst + at[0] + shift;
    for (std::int64_t i = 0; i < m; ++i) d[i] += src[i];
  } else {
    for (std::int64_t i = 0; i < m; ++i) dst[at[i] + shift] += src[i];
  }
}

// The m x n block `src` (leading dimension ld) added into n target columns, column j at
// column(j), its rows at the positions `at` (+ shift). The next column's span is prefetched
// while one is added: the targets are far apart and rarely in cache.
template <class Index, class Column>
void scatter_columns(const double* src, std::int64_t ld, std::int64_t m, std::int64_t n, const Index* at,
                     std::int64_t shift, Column column) {
  if (m == 0) return;
  const std::int64_t first = at[0] + shift, span = std::min<std::int64_t>(at[m - 1] - at[0] + 1, 256);
  for (std::int64_t j = 0; j < n; ++j) {
    if (j + 1 < n) {
      const double* next = column(j + 1) + first;
      for (std::int64_t k = 0; k < span; k += 8) __builtin_prefetch(next + k, 1);
    }
    scatter_add(column(j), src + j * ld, m, at, shift);
  }
}

}  // namespace

FactorCollectives factor_phase_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                           const ProcessGrid2D& layer, const std::vector<char>& phase) {
  const std::int64_t ns = static_cast<std::int64_t>(sym.sn_start.size()) - 1;
  require(phase.empty() || static_cast<std::int64_t>(phase.size()) == ns, "factorization: phase mask of the wrong size");
  const int px = layer.px, py = layer.py;
  FactorCollectives fc;
  std::vector<int> part;
  auto add = [&](std::int64_t k, FactorRole role, int line, int root, std::int64_t count, bool diag) {
    std::sort(part.begin(), part.end());
    part.erase(std::unique(part.begin(), part.end()), part.end());
    if (part.size() > 1 || (part.size() == 1 && part[0] != root)) {
      fc.set.id.push_back(k * (px + py) + (role == row_bcast ? line : px + line));
      fc.set.kind.push_back(static_cast<std::int8_t>(CollectiveKind::broadcast));
      fc.set.root.push_back(root);
      fc.set.part.push_back(root);
      for (int p : part)
        if (p != root) fc.set.part.push_back(p);
      fc.set.part_ptr.push_back(static_cast<std::int64_t>(fc.set.part.size()));
      fc.set.count.push_back(count);
      fc.sn.push_back(static_cast<std::int32_t>(k));
      fc.role.push_back(role);
      fc.diag.push_back(diag ? 1 : 0);
    }
    part.clear();
  };
  // On a share (structure_share.hpp) only this rank's lines: its process row's broadcasts
  // and its process column's, the participants from the share's lists of K's rows and columns.
  const StructureShare* share = sym.share.get();
  if (share)
    require(share->px == px && share->py == py, "factorization: a share of a " + std::to_string(share->px) + " x " +
                                                    std::to_string(share->py) + " grid on a " + std::to_string(px) +
                                                    " x " + std::to_string(py) + " layer");
  std::vector<std::int64_t> rows(px), cols(py);
  std::vector<int> xs, ys;  // process rows and columns K's blocks lie on
  for (std::int64_t k = 0; k < ns; ++k) {
    if (!phase.empty() && !phase[k]) continue;
    const std::int64_t w = width(sym, k);
    const int kx = static_cast<int>(k % px), ky = static_cast<int>(k % py);
    std::fill(rows.begin(), rows.end(), 0);
    std::fill(cols.begin(), cols.end(), 0);
    for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b) {
      rows[blocks.sn[b] % px] += blocks.hi[b] - blocks.lo[b];
      cols[blocks.sn[b] % py] += blocks.hi[b] - blocks.lo[b];
    }
    xs.clear();
    ys.clear();
    if (share) {
      xs.assign(share->rows.begin() + share->rows_ptr[k], share->rows.begin() + share->rows_ptr[k + 1]);
      ys.assign(share->cols.begin() + share->cols_ptr[k], share->cols.begin() + share->cols_ptr[k + 1]);
    } else {
      for (int x = 0; x < px; ++x)
        if (rows[x]) xs.push_back(x);
      for (int y = 0; y < py; ++y)
        if (cols[y]) ys.push_back(y);
    }
    // Row x's L panel goes to the ranks of row x holding a block (I, J), J in K's structure:
    // one per column J mod py (on K's own row: the U owners, who need inv(L11)); column y's
    // U row likewise down column y. A share lists K's columns where it takes part in row
    // x's broadcast (it holds a block of it, rows[x] > 0 on its column, or roots it), its rows
    // likewise.
    const int x0 = share ? share->x : 0, x1 = share ? share->x + 1 : px;
    const int y0 = share ? share->y : 0, y1 = share ? share->y + 1 : py;
    const bool row_part = !share || cols[share->y] || share->y == ky;  // in row x0's broadcast
    const bool col_part = !share || rows[share->x] || share->x == kx;  // in column y0's
    for (int x = x0; x < x1; ++x) {
      if (!(rows[x] || x == kx) || !row_part) continue;
      for (int y : ys) part.push_back(layer.rank_of(x, y));
      add(k, row_bcast, x, layer.rank_of(x, ky), rows[x] * w + (x == kx ? w * w : 0), x == kx);
    }
    for (int y = y0; y < y1; ++y) {
      if (!(cols[y] || y == ky) || !col_part) continue;
      for (int x : xs) part.push_back(layer.rank_of(x, y));
      add(k, column_bcast, y, layer.rank_of(kx, y), cols[y] * w + (y == ky ? w * w : 0), y == ky);
    }
  }
  return fc;
}

std::int64_t PartSizes::of(const ProcessGrid2D& layer, std::int64_t k, int x, int y, FactorPart part) const {
  const int kx = static_cast<int>(k % layer.px), ky = static_cast<int>(k % layer.py);
  if (part == part_diag) return x == kx && y == ky ? diag : 0;
  if (part == part_l) return y == ky ? l[x] : 0;
  return x == kx ? u[y] : 0;
}

PartSizes part_sizes(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& layer,
                     std::int64_t k, bool inverted) {
  const std::int64_t w = width(sym, k);
  PartSizes ps;
  ps.diag = (inverted ? 2 : 1) * w * w;
  ps.l.assign(static_cast<std::size_t>(layer.px), 0);
  ps.u.assign(static_cast<std::size_t>(layer.py), 0);
  for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b) {
    ps.l[blocks.sn[b] % layer.px] += (blocks.hi[b] - blocks.lo[b]) * w;
    ps.u[blocks.sn[b] % layer.py] += (blocks.hi[b] - blocks.lo[b]) * w;
  }
  return ps;
}

StoreIndex::StoreIndex(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store) {
  const std::size_t ns = sym.sn_start.size() - 1;
  const LocalLayout2D& lay = store.layout;
  l_col_of.assign(ns, -1);
  l_row_of.assign(blocks.size(), -1);
  u_off_of.assign(blocks.size(), -1);
  for (std::size_t c = 0; c < lay.l_col.size(); ++c) {
    l_col_of[lay.l_col[c]] = static_cast<std::int64_t>(c);
    for (std::int64_t p = lay.l_ptr[c]; p < lay.l_ptr[c + 1]; ++p) l_row_of[lay.l_block[p]] = lay.l_row[p];
  }
  for (std::size_t p = 0; p < lay.u_block.size(); ++p) u_off_of[lay.u_block[p]] = lay.u_off[p];
  // The local U blocks by row: a counting sort of the blocks by their column supernode K;
  // blocks of one column are numbered by ascending J, so each row's list is ascending J.
  u_row_ptr.assign(ns + 1, 0);
  for (std::int64_t b : lay.u_block) ++u_row_ptr[blocks.col[b] + 1];
  for (std::size_t k = 0; k < ns; ++k) u_row_ptr[k + 1] += u_row_ptr[k];
  u_row_block.resize(lay.u_block.size());
  std::vector<std::int64_t> next(u_row_ptr.begin(), u_row_ptr.end() - 1);
  for (std::size_t b = 0; b < blocks.size(); ++b)
    if (u_off_of[b] >= 0) u_row_block[next[blocks.col[b]]++] = static_cast<std::int64_t>(b);
}

std::int64_t StoreIndex::u_row_cols(const SupernodeBlocks& blocks, std::int64_t k) const {
  std::int64_t n = 0;
  for (std::int64_t p = u_row_ptr[k]; p < u_row_ptr[k + 1]; ++p) n += blocks.hi[u_row_block[p]] - blocks.lo[u_row_block[p]];
  return n;
}

void assemble_entries(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const StoreIndex& index,
                      BlockStore& store, const EntryTriples& e) {
  const std::vector<std::int32_t> sn_of = supernode_of_columns(sym.sn_start);
  double* v = store.values.data();
  const LocalLayout2D& lay = store.layout;
  for (std::int64_t t = 0; t < e.nnz; ++t) {
    const std::int64_t i = e.rows[t], j = e.cols[t];
    if (i < 0 || i >= sym.n || j < 0 || j >= sym.n)
      throw std::invalid_argument("factorization: entry (" + std::to_string(i) + ", " + std::to_string(j) +
                                  ") outside the matrix");
    const std::int32_t si = sn_of[i], sj = sn_of[j];
    const std::int32_t k = std::min(si, sj);
    const std::int64_t f = sym.sn_start[k], w = width(sym, k);
    auto nowhere = [&](const char* why) {
      return std::invalid_argument("factorization: entry (" + std::to_string(i) + ", " + std::to_string(j) + ") " +
                                   why);
    };
    if (si == sj) {
      const std::int64_t d = store.diag_index[k];
      if (d < 0) throw nowhere("of a diagonal block this rank does not hold");
      v[lay.diag_off[d] + (i - f) + (j - f) * w] += e.values[t];
      continue;
    }
    // L(i, j) or U(i, j): the other index among k's rows below its diagonal block.
    const std::int64_t other = si > sj ? i : j;
    const std::int32_t* rk = sym.rows.data() + sym.rows_ptr[k];
    const std::int64_t r = sym.rows_ptr[k + 1] - sym.rows_ptr[k];
    const std::int64_t a = std::lower_bound(rk, rk + r, static_cast<std::int32_t>(other)) - rk;
    if (a == r || rk[a] != other) throw nowhere("outside the symbolic structure (is the pattern symmetric?)");
    const std::int64_t b = find_block(blocks, k, sn_of[other]);
    if (si > sj) {
      if (index.l_row_of[b] < 0) throw nowhere("of an L block this rank does not hold");
      const std::int64_t c = index.l_col_of[k];
      v[lay.l_panel[c] + (j - f) * lay.l_rows[c] + index.l_row_of[b] + (a - blocks.lo[b])] += e.values[t];
    } else {
      if (index.u_off_of[b] < 0) throw nowhere("of a U block this rank does not hold");
      v[index.u_off_of[b] + (a - blocks.lo[b]) * w + (i - f)] += e.values[t];
    }
  }
}

FactorSchedule factor_schedule(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                               const ProcessGrid2D& layer, int rank, const std::vector<char>& phase,
                               const TreeShape& shape, const Topology& topo) {
  require(layer.contains(rank), "factorization: rank " + std::to_string(rank) + " outside its grid");
  const std::size_t ns = sym.sn_start.size() - 1;
  FactorSchedule sch;
  sch.layer = layer;
  sch.x = (rank - layer.base) / layer.py;
  sch.y = (rank - layer.base) % layer.py;
  sch.coll = factor_phase_collectives(sym, blocks, layer, phase);
  if (!std::is_sorted(sch.coll.set.id.begin(), sch.coll.set.id.end()))
    throw std::logic_error("factorization: the phase's collectives are not in ascending ids");
  sch.plan = build_tree_plan(sch.coll.set, rank, shape, topo);
  sch.arrivals = plan_arrivals(sch.plan, sch.coll.set);
  sch.root_slot.assign(2 * ns, -1);
  for (std::size_t i = 0; i < sch.plan.index.size(); ++i)
    if (sch.plan.links[i].parent < 0) {
      const std::size_t c = static_cast<std::size_t>(sch.plan.index[i]);
      sch.root_slot[2 * static_cast<std::size_t>(sch.coll.sn[c]) + sch.coll.role[c]] = static_cast<std::int64_t>(i);
    }
  auto in_phase = [&](std::int64_t k) { return phase.empty() || phase[k] != 0; };
  sch.parts.assign(ns, 0);
  sch.waiting.assign(ns, 0);
  sch.touch_ptr.assign(ns + 1, 0);
  for (std::size_t k = 0; k < ns; ++k) {
    if (!in_phase(static_cast<std::int64_t>(k))) continue;
    sch.order.push_back(static_cast<std::int32_t>(k));
    const int kx = static_cast<int>(k % layer.px), ky = static_cast<int>(k % layer.py);
    if (kx == sch.x && ky == sch.y) sch.parts[k] |= 1;
    for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b) {
      if (ky == sch.y && blocks.sn[b] % layer.px == sch.x) sch.parts[k] |= 2;
      if (kx == sch.x && blocks.sn[b] % layer.py == sch.y) sch.parts[k] |= 4;
    }
  }
  std::vector<std::int32_t> max_x, max_y, touched;
  for (std::size_t s = 0; s < ns; ++s) {
    if (in_phase(static_cast<std::int64_t>(s))) {
      touched.clear();
      for_each_update_target(blocks, layer, static_cast<std::int64_t>(s), max_x, max_y,
                             [&](int x, int y, std::int32_t k, FactorPart) {
                               if (x == sch.x && y == sch.y && in_phase(k)) touched.push_back(k);
                             });
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      for (std::int32_t k : touched) ++sch.waiting[k];
      sch.touch.insert(sch.touch.end(), touched.begin(), touched.end());
    }
    sch.touch_ptr[s + 1] = static_cast<std::int64_t>(sch.touch.size());
  }
  return sch;
}

std::int64_t FactorSchedule::index_of(std::int64_t id) const {
  const auto it = std::lower_bound(coll.set.id.begin(), coll.set.id.end(), id);
  return it != coll.set.id.end() && *it == id ? it - coll.set.id.begin() : -1;
}

void add_phase_planned(const FactorCollectives& coll, const TreeShape& shape, const Topology& topo, int first_step,
                       std::vector<CommStats>& stats) {
  const std::vector<TreePlan> plans = build_tree_plans_virtual(coll.set, shape, topo);
  for (std::size_t r = 0; r < plans.size(); ++r)
    for (std::size_t i = 0; i < plans[r].index.size(); ++i) {
      const std::size_t c = static_cast<std::size_t>(plans[r].index[i]);
      const TreeLinks& l = plans[r].links[i];
      add_link_stats(stats[r].steps[first_step + coll.role[c]], static_cast<int>(r), l.parent,
                     l.children.data(), l.children.size(), true, 8 + 8 * coll.set.count[c], topo);
    }
}

FactorExecutor::FactorExecutor(const SupernodalStructure& sym, const SupernodeBlocks& blocks, BlockStore& store,
                               const StoreIndex& index, MessageEngine& engine, PivotRule& rule)
    : sym_(sym), blocks_(blocks), store_(store), index_(index), engine_(engine), rule_(rule) {
  const std::size_t ns = sym.sn_start.size() - 1;
  diag_.resize(ns);
  have_diag_.assign(ns, 0);
  done_.assign(ns, 0);
  lpanel_.resize(ns);
  upanel_.resize(ns);
}

void FactorExecutor::fail(const std::string& why) {
  if (!ok_) return;
  ok_ = false;
  error_ = why;
}

template <class Work>
void FactorExecutor::attempt(Work&& work) {
  if (!ok_) return;  // after a failure only the messages go on
  try {
    work();
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

bool FactorExecutor::run(const FactorSchedule& sch, int tag) {
  sch_ = &sch;
  waiting_ = sch.waiting;
  engine_.set_tag(tag);
  engine_.set_kind_of([&sch](std::int64_t key) {
    const std::int64_t c = sch.index_of(key & ~failed_bit);
    return c >= 0 ? static_cast<int>(sch.coll.role[c]) : -1;  // -1: the engine refuses it
  });
  for (auto it = sch.order.rbegin(); it != sch.order.rend(); ++it)  // the stack pops the lowest first
    if ((sch.parts[*it] & 1) && waiting_[*it] == 0) stack_.push_back(*it);
  drain();
  engine_.run(
      sch.arrivals.expected,
      [this](int, std::int64_t key, const double* values, std::int64_t n) { arrive(key, values, n); },
      [this] { return finish_one(); });  // which also finishes the updates left after the last message
  engine_.set_kind_of(nullptr);
  for (std::int32_t k : sch.order) {
    if (sch.parts[k] && !done_[k])
      throw std::logic_error("factorization: supernode " + std::to_string(k) + " not finished when its phase ended");
    release(lpanel_[k]);
    release(upanel_[k]);
  }
  sch_ = nullptr;
  return ok_;
}

void FactorExecutor::forward(std::int64_t slot, const double* inverse, std::int64_t w2, const double* values,
                             std::int64_t n) {
  const std::int64_t c = sch_->plan.index[slot], id = sch_->coll.set.id[c];
  for (int child : sch_->plan.links[slot].children)
    engine_.send(child, ok_ ? id : id | failed_bit, inverse, w2, values, n, sch_->coll.role[c]);
}

void FactorExecutor::send_root(std::int32_t k, FactorRole role, const double* inverse, std::int64_t w2,
                               const double* values, std::int64_t n) {
  const std::int64_t slot = sch_->root_slot[2 * static_cast<std::size_t>(k) + role];
  if (slot >= 0) forward(slot, inverse, w2, values, n);
}

void FactorExecutor::arrive(std::int64_t key, const double* values, std::int64_t n) {
  if (key & failed_bit) heard_failure();
  const std::int64_t c = sch_->index_of(key & ~failed_bit);
  const std::int64_t slot = c >= 0 ? sch_->arrivals.slot_of[c] : -1;
  if (slot < 0 || n != sch_->coll.set.count[c])
    throw std::logic_error("factorization: unexpected message (collective " + std::to_string(key & ~failed_bit) + ")");
  forward(slot, nullptr, 0, values, n);
  const std::int32_t k = sch_->coll.sn[c];
  const std::int64_t w2 = sch_->coll.diag[c] ? width(sym_, k) * width(sym_, k) : 0;
  if (w2) {
    diag_[k] = pool_.take(w2);
    std::copy(values, values + w2, diag_[k].begin());
    have_diag_[k] = 1;
  }
  if (n > w2) {
    Panel& p = sch_->coll.role[c] == row_bcast ? lpanel_[k] : upanel_[k];
    p.own = pool_.take(n - w2);
    std::copy(values + w2, values + n, p.own.begin());
    p.data = p.own.data();
    p.ready = true;
    panel_ready(k);
  }
  if (w2 && waiting_[k] == 0) stack_.push_back(k);
  drain();
}

void FactorExecutor::release(Panel& p) {
  pool_.give(std::move(p.own));
  p = Panel{};
}

void FactorExecutor::panel_ready(std::int32_t s) {
  if (lpanel_[s].ready && upanel_[s].ready) apply_update(s);
}

void FactorExecutor::updated(std::int32_t k) {
  if (--waiting_[k] == 0 && ((sch_->parts[k] & 1) || have_diag_[k])) stack_.push_back(k);
}

// The work stack holds supernodes to finalize: the critical path, done at once. The rest of
// an update (what supernode s's update writes outside its parent) waits on its own stack and
// runs one at a time while no message is waiting, so that an arrival that readies a
// supernode is not held up behind a long trailing update.
void FactorExecutor::drain() {
  while (!stack_.empty()) {
    const std::int32_t k = stack_.back();
    stack_.pop_back();
    if (!done_[k]) finalize(k);
  }
}

bool FactorExecutor::finish_one() {
  if (rest_.empty()) return false;
  const std::int32_t s = rest_.back();
  rest_.pop_back();
  finish_update(s);
  drain();
  return true;
}

// Every update to this rank's parts of K is in (and, away from the diagonal owner, the
// inverse it needs). The diagonal owner factors the diagonal block and inverts both triangles
// (the solve's form); the panels are then products with those inverses, L(I, K) = A(I, K)
// inv(U11) and U(K, J) = inv(L11) A(K, J), in place (TRMM runs several times faster than
// TRSM on these shapes).
void FactorExecutor::finalize(std::int32_t k) {
  const std::int8_t parts = sch_->parts[k];
  const std::int64_t w = width(sym_, k), f = sym_.sn_start[k], w2 = parts & 1 ? w * w : 0;
  const int wi = static_cast<int>(w);
  double* v = store_.values.data();
  const double *inv_l = nullptr, *inv_u = nullptr;
  if (parts & 1) {
    double* slot = v + store_.layout.diag_off[store_.diag_index[k]];
    attempt([&] {
      lu_.assign(slot, slot + w * w);
      dense_lu(wi, lu_.data(), wi, f, rule_);
      invert_diagonal_block(w, lu_.data(), slot);
      flops_ += 2.0 / 3.0 * w * w * w + 2.0 / 3.0 * w * w * w;
    });
    inv_l = slot;
    inv_u = slot + w * w;
  } else {
    (parts & 2 ? inv_u : inv_l) = diag_[k].data();  // an L owner gets inv(U11), a U owner inv(L11)
  }
  // The L panel, then its broadcast along this process row (inv(L11) first from the diagonal).
  const std::int64_t c = parts & 2 ? index_.l_col_of[k] : -1, m = c >= 0 ? store_.layout.l_rows[c] : 0;
  double* panel = c >= 0 ? v + store_.layout.l_panel[c] : nullptr;
  if (parts & 2)
    attempt([&] {
      cblas_dtrmm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(m), wi, 1.0,
                  inv_u, wi, panel, static_cast<int>(m));
      flops_ += static_cast<double>(m) * w * w;
    });
  send_root(k, row_bcast, inv_l, w2, panel, m * w);
  if (parts & 2) {
    lpanel_[k] = Panel{panel, {}, true};
    panel_ready(k);
  }
  // The U row: its blocks gathered side by side (w x cols), multiplied at once, put back.
  Panel row;
  if (parts & 4) {
    row.own = pool_.take(w * index_.u_row_cols(blocks_, k));
    std::int64_t at = 0;
    for_each_piece(sym_, blocks_, store_, index_, k, part_u, false, [&](std::int64_t off, std::int64_t len) {
      std::copy(v + off, v + off + len, row.own.begin() + at);
      at += len;
    });
    attempt([&] {
      const std::int64_t cols = static_cast<std::int64_t>(row.own.size()) / w;
      cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, wi, static_cast<int>(cols), 1.0,
                  inv_l, wi, row.own.data(), wi);
      flops_ += static_cast<double>(cols) * w * w;
      at = 0;
      for_each_piece(sym_, blocks_, store_, index_, k, part_u, false, [&](std::int64_t off, std::int64_t len) {
        std::copy(row.own.begin() + at, row.own.begin() + at + len, v + off);
        at += len;
      });
    });
  }
  send_root(k, column_bcast, inv_u, w2, row.own.data(), static_cast<std::int64_t>(row.own.size()));
  if (parts & 4) {
    row.data = row.own.data();
    row.ready = true;
    upanel_[k] = std::move(row);
    panel_ready(k);
  }
  if (!(parts & 1)) pool_.give(std::move(diag_[k]));
  done_[k] = 1;
}

// Both panels of S are here: their product, subtracted from this rank's blocks. Look-ahead
// (as SuperLU_DIST's): the part that lands on S's parent P (the first block of S's column:
// its rows of the L panel, its columns of the U row) goes first, then P may be finalized and
// its panels sent before the rest of the update (see drain).
void FactorExecutor::apply_update(std::int32_t s) {
  const std::int32_t p = blocks_.sn[blocks_.col_ptr[s]];
  rank_blocks(s);
  const std::size_t r1 = !lb_.empty() && blocks_.sn[lb_[0]] == p ? 1 : 0;
  const std::size_t c1 = !ub_.empty() && blocks_.sn[ub_[0]] == p ? 1 : 0;
  attempt([&] {
    if (r1) update_part(s, 0, 1, 0, ub_.size());            // (P, J), every J
    if (c1) update_part(s, r1, lb_.size(), 0, 1);           // (I, P), I > P
  });
  rest_.push_back(s);
  const std::int64_t t0 = sch_->touch_ptr[s];
  if (t0 < sch_->touch_ptr[s + 1] && sch_->touch[t0] == p) updated(p);  // P comes first: the smallest
}

void FactorExecutor::finish_update(std::int32_t s) {
  const std::int32_t p = blocks_.sn[blocks_.col_ptr[s]];
  rank_blocks(s);
  const std::size_t r1 = !lb_.empty() && blocks_.sn[lb_[0]] == p ? 1 : 0;
  const std::size_t c1 = !ub_.empty() && blocks_.sn[ub_[0]] == p ? 1 : 0;
  attempt([&] { update_part(s, r1, lb_.size(), c1, ub_.size()); });
  release(lpanel_[s]);
  release(upanel_[s]);
  for (std::int64_t t = sch_->touch_ptr[s]; t < sch_->touch_ptr[s + 1]; ++t)
    if (sch_->touch[t] != p) updated(sch_->touch[t]);
}

// This rank's blocks of S's column: on its process row (the L panel's, in its order) and
// on its process column (the U row's).
void FactorExecutor::rank_blocks(std::int32_t s) {
  lb_.clear();
  ub_.clear();
  lb_row_.assign(1, 0);
  ub_col_.assign(1, 0);
  for (std::int64_t b = blocks_.col_ptr[s]; b < blocks_.col_ptr[s + 1]; ++b) {
    const std::int64_t m = blocks_.hi[b] - blocks_.lo[b];
    if (blocks_.sn[b] % sch_->layer.px == sch_->x) lb_.push_back(b), lb_row_.push_back(lb_row_.back() + m);
    if (blocks_.sn[b] % sch_->layer.py == sch_->y) ub_.push_back(b), ub_col_.push_back(ub_col_.back() + m);
  }
}

// The update of the L panel's blocks [a0, a1) times the U row's blocks [q0, q1) (as
// rank_blocks lists them), a chunk of U blocks at a time.
void FactorExecutor::update_part(std::int32_t s, std::size_t a0, std::size_t a1, std::size_t q0, std::size_t q1) {
  if (a0 >= a1 || q0 >= q1) return;
  const std::int64_t w = width(sym_, s);
  const std::int32_t* rs = sym_.rows.data() + sym_.rows_ptr[s];
  const std::int64_t mx = lb_row_.back(), r0 = lb_row_[a0], mr = lb_row_[a1] - r0;
  const double* L = lpanel_[s].data + r0;  // rows r0.. of the panel (leading dimension mx)
  const double* U = upanel_[s].data;
  double* v = store_.values.data();
  const LocalLayout2D& lay = store_.layout;
  const std::int64_t limit = std::max<std::int64_t>(1, max_product / std::max<std::int64_t>(mr, 1));
  while (q0 < q1) {
    std::size_t qe = q0 + 1;
    while (qe < q1 && ub_col_[qe + 1] - ub_col_[q0] <= limit) ++qe;
    const std::int64_t c0 = ub_col_[q0], nc = ub_col_[qe] - c0;
    t_.resize(static_cast<std::size_t>(mr * nc));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mr), static_cast<int>(nc),
                static_cast<int>(w), -1.0, L, static_cast<int>(mx), U + c0 * w, static_cast<int>(w), 0.0, t_.data(),
                static_cast<int>(mr));
    flops_ += 2.0 * static_cast<double>(mr) * nc * w;
    for (std::size_t q = q0; q < qe; ++q) {
      const std::int64_t b2 = ub_[q], m2 = blocks_.hi[b2] - blocks_.lo[b2], tc = ub_col_[q] - c0;
      const std::int32_t J = blocks_.sn[b2];
      const std::int32_t* cj = rs + blocks_.lo[b2];  // the columns (global, in supernode J)
      const std::int64_t fJ = sym_.sn_start[J];
      for (std::size_t a = a0; a < a1; ++a) {
        const std::int64_t b1 = lb_[a], m1 = blocks_.hi[b1] - blocks_.lo[b1];
        const std::int32_t I = blocks_.sn[b1];
        const std::int32_t* ri = rs + blocks_.lo[b1];  // the rows (global, in supernode I)
        const double* src = t_.data() + tc * mr + (lb_row_[a] - r0);
        const std::int64_t fI = sym_.sn_start[I];
        if (I == J) {  // the diagonal block of I
          const std::int64_t wI = width(sym_, I);
          double* D = v + lay.diag_off[store_.diag_index[I]];
          scatter_columns(src, mr, m1, m2, ri, -fI, [&](std::int64_t j) { return D + (cj[j] - fI) * wI; });
        } else if (I > J) {  // L(I, J): rows placed among the target block's rows
          const std::int64_t bt = find_block(blocks_, J, I);
          const std::int32_t* rt = sym_.rows.data() + sym_.rows_ptr[J] + blocks_.lo[bt];
          positions(ri, m1, rt, blocks_.hi[bt] - blocks_.lo[bt], map_);
          const std::int64_t c = index_.l_col_of[J], ld = lay.l_rows[c];
          double* base = v + lay.l_panel[c] + index_.l_row_of[bt];
          scatter_columns(src, mr, m1, m2, map_.data(), 0, [&](std::int64_t j) { return base + (cj[j] - fJ) * ld; });
        } else {  // U(I, J): columns placed among the target block's columns
          const std::int64_t bt = find_block(blocks_, I, J);
          const std::int32_t* ct = sym_.rows.data() + sym_.rows_ptr[I] + blocks_.lo[bt];
          positions(cj, m2, ct, blocks_.hi[bt] - blocks_.lo[bt], map_);
          const std::int64_t wI = width(sym_, I);
          double* base = v + index_.u_off_of[bt];
          scatter_columns(src, mr, m1, m2, ri, -fI, [&](std::int64_t j) { return base + map_[j] * wI; });
        }
      }
    }
    q0 = qe;
  }
}

}  // namespace commsolve
