#include "commsolve/multigrid/interpolation.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "commsolve/comm/record_executor.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/sparse/kernels.hpp"

namespace commsolve {

namespace {

// One entry of a row as its owner sees it: global column, value, the column's coarse index
// (-1: fine) and whether the entry is a strong connection of the row.
struct CoarseEntry {
  std::int64_t col;
  double val;
  std::int64_t coarse;
  std::int64_t strong;
};

// A strong fine neighbour's row: a fetched record (`e`), or an owned row read in place
// through the view (`p0`, its first entry there; `e` null).
struct RowRef {
  const CoarseEntry* e;
  std::int64_t p0, n;
};

// Ĉ_i: its coarse indices with their weights, and each index's position. The coarse indices a
// rank meets mostly fall in a window of the global range (its own and its neighbours'): a
// direct map over it when it is at most a few times the entries seen, else a hash map.
class CoarseSet {
 public:
  CoarseSet(std::int64_t lo, std::int64_t hi, std::int64_t entries)
      : lo_(lo), direct_(hi >= lo && hi - lo < 8 * entries + 4096) {
    if (direct_) at_.assign(hi - lo + 1, -1);
  }
  std::int64_t find(std::int64_t k) const {
    if (direct_) return at_[k - lo_];
    const auto it = hashed_.find(k);
    return it == hashed_.end() ? -1 : it->second;
  }
  void insert(std::int64_t k) {
    if (find(k) < 0) add(k);  // mostly there already: the hot loops keep their registers
  }
  [[gnu::noinline]] void add(std::int64_t k) {
    const auto pos = static_cast<std::int32_t>(keys.size());
    if (direct_) at_[k - lo_] = pos;
    else hashed_.emplace(k, pos);
    keys.push_back(k);
    w.push_back(0.0);
  }
  void clear() {
    if (direct_)
      for (std::int64_t k : keys) at_[k - lo_] = -1;
    else
      hashed_.clear();
    keys.clear();
    w.clear();
  }
  std::vector<std::int64_t> keys;
  std::vector<double> w;

 private:
  std::int64_t lo_;
  bool direct_;
  std::vector<std::int32_t> at_;
  std::unordered_map<std::int64_t, std::int32_t> hashed_;
};

}  // namespace

GlobalRows extended_i_interpolation(const ParCsr& A, const CoarseningView& v, MPI_Comm comm, double trunc,
                                    int pmax) {
  const std::int64_t n = v.nrows, n_owned = A.local_cols();
  require(n == A.local_rows() && n == n_owned, "extended+i interpolation: the view must be the rank's block of a square A");
  // The owned rows other ranks' halos hold, as records (the rest left empty: nobody fetches
  // them); this rank's own rows are read in place.
  const std::vector<char> sent = sent_entries(A.plan());
  RecordSet owned;
  owned.ptr.assign(n + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) owned.ptr[i + 1] = owned.ptr[i] + (sent[i] ? v.indptr[i + 1] - v.indptr[i] : 0);
  owned.data.resize(owned.ptr.back() * sizeof(CoarseEntry));
  auto* oe = reinterpret_cast<CoarseEntry*>(owned.data.data());
  for (std::int64_t i = 0; i < n; ++i)
    if (sent[i])
      for (std::int32_t p = v.indptr[i], q = 0; p < v.indptr[i + 1]; ++p, ++q) {
        const std::int32_t c = v.indices[p];
        oe[owned.ptr[i] + q] = {v.global[c], v.data[p], v.coarse[c], v.strong[p]};
      }
  RecordExecutor exec(A.plan(), A.topology(), comm, sizeof(CoarseEntry));
  const RecordSet halo = exec.forward(view(owned));
  const auto* he = reinterpret_cast<const CoarseEntry*>(halo.data.data());
  // The rows of row i's strong fine neighbours, in the order its entries list them: halo rows
  // as fetched, owned rows in place (each read through the accessors below).
  std::vector<RowRef> fine_rows;
  auto gather_fine_rows = [&](std::int64_t i) {
    fine_rows.clear();
    for (std::int32_t p = v.indptr[i]; p < v.indptr[i + 1]; ++p) {
      const std::int32_t c = v.indices[p];
      if (c == i || !v.strong[p] || v.coarse[c] >= 0) continue;
      if (c >= n_owned) {
        const std::int64_t h = c - n_owned;
        fine_rows.push_back({he + halo.ptr[h], 0, halo.ptr[h + 1] - halo.ptr[h]});
      } else {
        fine_rows.push_back({nullptr, v.indptr[c], v.indptr[c + 1] - v.indptr[c]});
      }
    }
  };
  // Each owned entry's column's coarse index, gathered once: the rows of strong fine
  // neighbours are read many times over (once per point that interpolates through them).
  std::vector<std::int64_t> ec(v.indptr[n]);
  for (std::int64_t p = 0; p < v.indptr[n]; ++p) ec[p] = v.coarse[v.indices[p]];
  // Row k's entries as (is the column i itself, value, coarse index, strong) to `use`; halo
  // rows from their records, owned rows in place. `gi`, `i`: the point interpolating.
  auto for_entries = [&](const RowRef& r, std::int64_t i, std::int64_t gi, const auto& use) {
    if (r.e != nullptr) {
      for (const CoarseEntry* e = r.e; e < r.e + r.n; ++e) use(e->col == gi, e->val, e->coarse, e->strong != 0);
    } else {
      for (std::int64_t p = r.p0; p < r.p0 + r.n; ++p) use(v.indices[p] == i, v.data[p], ec[p], v.strong[p] != 0);
    }
  };
  auto diagonal = [&](const RowRef& r, std::int64_t g) {
    for (std::int64_t q = 0; q < r.n; ++q)
      if (r.e[q].col == g) return r.e[q].val;
    return 0.0;
  };
  // The owned rows' diagonal entries (as `diagonal` finds them: the first), found once; a
  // fetched row's is searched for.
  std::vector<double> own_diag(n, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int32_t p = v.indptr[i]; p < v.indptr[i + 1]; ++p)
      if (v.indices[p] == i) {
        own_diag[i] = v.data[p];
        break;
      }

  GlobalRows P;
  P.indptr.reserve(n + 1);
  // The coarse indices this rank can meet: its column space's and the fetched rows'.
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -1;
  const std::int64_t space = n_owned + static_cast<std::int64_t>(A.col_map().size());
  auto widen = [&](std::int64_t c) {
    if (c >= 0) {
      lo = std::min(lo, c);
      hi = std::max(hi, c);
    }
  };
  for (std::int64_t c = 0; c < space; ++c) widen(v.coarse[c]);
  for (std::int64_t k = 0; k < halo.ptr.back(); ++k) widen(he[k].coarse);
  CoarseSet hat(lo, hi, space + halo.ptr.back());  // Ĉ_i and the weights
  std::vector<std::size_t> order;
  constexpr std::int64_t kToDiag = -2;
  std::vector<std::pair<std::int64_t, double>> targets;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t gi = v.global[i];
    if (v.coarse[i] >= 0) {  // a coarse point is its own coarse value
      P.indices.push_back(v.coarse[i]);
      P.data.push_back(1.0);
      P.indptr.push_back(static_cast<std::int64_t>(P.indices.size()));
      ++P.nrows;
      continue;
    }
    hat.clear();
    gather_fine_rows(i);
    double diag = 0.0;
    for (std::int32_t p = v.indptr[i]; p < v.indptr[i + 1]; ++p) {
      if (v.indices[p] == i) diag += v.data[p];
      else if (v.strong[p] && ec[p] >= 0) hat.insert(ec[p]);
    }
    for (const RowRef& k : fine_rows)
      for_entries(k, i, gi, [&](bool, double, std::int64_t kc, bool strong) {
        if (strong && kc >= 0) hat.insert(kc);
      });
    // Direct part: a_ij for neighbours in Ĉ_i; the rest of the weak ones lumped on the
    // diagonal; strong fine neighbours k distribute a_ik over Ĉ_i ∪ {i} by ā_kl.
    std::size_t next_fine = 0;
    for (std::int32_t p = v.indptr[i]; p < v.indptr[i + 1]; ++p) {
      const std::int32_t c = v.indices[p];
      if (c == i) continue;
      const double a = v.data[p];
      const std::int64_t at = ec[p] >= 0 ? hat.find(ec[p]) : -1;
      if (at >= 0) {
        hat.w[at] += a;
      } else if (!v.strong[p]) {
        diag += a;
      } else {  // strong fine neighbour k
        const RowRef k = fine_rows[next_fine++];
        const double akk = c < n_owned ? own_diag[c] : diagonal(k, v.global[c]);
        // Where each entry of row k goes (kToDiag: i itself, else a position in Ĉ_i); the
        // entries that go nowhere are not kept. ā_kl keeps the couplings of opposite sign to a_kk.
        if (static_cast<std::int64_t>(targets.size()) < k.n) targets.resize(k.n);
        std::int64_t nt = 0;
        double sum = 0.0;
        for_entries(k, i, gi, [&](bool to_i, double kv, std::int64_t kc, bool) {
          if (kv * akk >= 0) return;
          const std::int64_t to = to_i ? kToDiag : kc >= 0 ? hat.find(kc) : -1;
          if (to == -1) return;
          targets[nt++] = {to, kv};
          sum += kv;
        });
        if (sum == 0.0) {
          diag += a;
          continue;
        }
        for (std::int64_t t = 0; t < nt; ++t) {
          const auto [to, val] = targets[t];
          (to == kToDiag ? diag : hat.w[to]) += a * val / sum;
        }
      }
    }
    // Ĉ_i in ascending coarse order, weights -w_j / ã_ii (a row with no interpolatory
    // points, or a vanishing ã_ii, stays empty: the smoother alone handles that point).
    order.resize(hat.keys.size());
    for (std::size_t q = 0; q < order.size(); ++q) order[q] = q;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return hat.keys[a] < hat.keys[b]; });
    if (diag != 0.0)
      for (std::size_t q : order)
        if (hat.w[q] != 0.0) {
          P.indices.push_back(hat.keys[q]);
          P.data.push_back(-hat.w[q] / diag);
        }
    P.indptr.push_back(static_cast<std::int64_t>(P.indices.size()));
    ++P.nrows;
  }
  truncate(P, trunc, pmax);
  return P;
}

void truncate(GlobalRows& P, double trunc, int pmax) {
  if (trunc > 0 || pmax > 0) {
    const std::int64_t kept = truncate_rows(P.nrows, P.indptr.data(), P.indices.data(), P.data.data(), trunc, pmax);
    P.indices.resize(kept);
    P.data.resize(kept);
  }
}

GlobalRows direct_interpolation(const CoarseningView& v) {
  RowBuilder P;
  for (std::int64_t i = 0; i < v.nrows; ++i) {
    const std::int32_t b = v.indptr[i], e = v.indptr[i + 1];
    if (v.coarse[i] >= 0) {  // a coarse point interpolates from itself
      P.push(v.coarse[i], 1.0);
      P.end_row();
      continue;
    }
    // the row's diagonal, its negative and positive off-diagonal sums, and those over the
    // strong coarse neighbours it interpolates from
    double diag = 0.0, all_neg = 0.0, all_pos = 0.0, c_neg = 0.0, c_pos = 0.0;
    auto interpolates = [&](std::int32_t p) { return v.strong[p] && v.coarse[v.indices[p]] >= 0; };
    for (std::int32_t p = b; p < e; ++p) {
      const double a = v.data[p];
      if (v.indices[p] == i) {
        diag += a;
        continue;
      }
      (a < 0 ? all_neg : all_pos) += a;
      if (interpolates(p)) (a < 0 ? c_neg : c_pos) += a;
    }
    const double alpha = c_neg != 0.0 ? all_neg / c_neg : 0.0;
    const bool lump = c_pos == 0.0;  // no positive strong coarse entry: the positive ones go to the diagonal
    if (lump) diag += all_pos;
    const double beta = lump ? 0.0 : all_pos / c_pos;
    for (std::int32_t p = b; p < e; ++p)
      if (v.indices[p] != i && interpolates(p)) {
        const double a = v.data[p];
        P.push(v.coarse[v.indices[p]], (a < 0 ? alpha : beta) * -a / diag);
      }
    P.end_row();
  }
  return std::move(P.rows);
}

}  // namespace commsolve
