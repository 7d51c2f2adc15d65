#include "dist/spgemm.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "comm/plan_builder.hpp"
#include "comm/record_executor.hpp"
#include "core/error.hpp"

namespace commsolve {

namespace {

// Whether a and b give every rank the same indices in the same order (whatever their form).
bool same_distribution(const Distribution& a, const Distribution& b) {
  if (a.global_size() != b.global_size() || a.nranks() != b.nranks()) return false;
  if (a.is_contiguous() && b.is_contiguous()) return a.offsets() == b.offsets();
  for (std::int64_t g = 0; g < a.global_size(); ++g)
    if (a.owner(g) != b.owner(g) || a.local_index(g) != b.local_index(g)) return false;
  return true;
}

// Rows with column indices into a compact numbering of the columns that occur.
struct CompactRows {
  std::vector<std::int64_t> ptr{0};
  std::vector<std::int32_t> col;
  std::vector<double> val;
};

// Rows whose (column, value) entries lie in memory with a stride: records of RowEntry, or a
// GlobalRows' separate arrays. Borrowed.
struct EntrySpan {
  std::int64_t nrows;
  const std::int64_t* ptr;  // nrows + 1 offsets, ptr[0] == 0
  const std::int64_t* col;
  const double* val;
  std::int64_t stride;  // elements between consecutive entries (2 for RowEntry, 1 for arrays)
  std::int64_t size() const { return ptr[nrows]; }
  std::int64_t c(std::int64_t k) const { return col[k * stride]; }
  double v(std::int64_t k) const { return val[k * stride]; }
};

EntrySpan span_of(const RecordSet& r) {
  const auto* e = reinterpret_cast<const RowEntry*>(r.data.data());
  return {r.size(), r.ptr.data(), &e->col, &e->val, 2};
}

EntrySpan span_of(const GlobalRows& g) { return {g.nrows, g.indptr.data(), g.indices.data(), g.data.data(), 1}; }

// The distinct global columns of several row sets, ascending; each set renumbered into it.
// The columns of one rank's rows mostly fall in a window of the global range (its own and
// its neighbours' indices): when the window is at most a few times the number of entries, a
// direct map over it finds them in linear time; otherwise they are sorted.
std::vector<std::int64_t> compact(const std::vector<EntrySpan>& sets, std::vector<CompactRows>& out) {
  std::int64_t total = 0, lo = std::numeric_limits<std::int64_t>::max(), hi = -1;
  for (const EntrySpan& s : sets) {
    total += s.size();
    for (std::int64_t k = 0; k < s.size(); ++k) {
      lo = std::min(lo, s.c(k));
      hi = std::max(hi, s.c(k));
    }
  }
  std::vector<std::int64_t> cols;
  std::vector<std::int32_t> direct;  // window position -> compact column (direct map only)
  const bool windowed = total > 0 && hi - lo < 8 * total + 4096;
  if (windowed) {
    direct.assign(hi - lo + 1, -1);
    for (const EntrySpan& s : sets)
      for (std::int64_t k = 0; k < s.size(); ++k) direct[s.c(k) - lo] = 0;
    for (std::int64_t c = 0; c <= hi - lo; ++c)
      if (direct[c] == 0) {
        direct[c] = static_cast<std::int32_t>(cols.size());
        cols.push_back(lo + c);
      }
  } else {
    cols.reserve(total);
    for (const EntrySpan& s : sets)
      for (std::int64_t k = 0; k < s.size(); ++k) cols.push_back(s.c(k));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  }
  require(cols.size() < (std::size_t(1) << 31), "sparse product: more than 2^31 distinct columns on one rank");
  out.clear();
  for (const EntrySpan& s : sets) {
    CompactRows c;
    c.ptr.assign(s.ptr, s.ptr + s.nrows + 1);
    c.col.resize(s.size());
    c.val.resize(s.size());
    for (std::int64_t k = 0; k < s.size(); ++k) {
      c.col[k] = windowed ? direct[s.c(k) - lo]
                          : static_cast<std::int32_t>(std::lower_bound(cols.begin(), cols.end(), s.c(k)) - cols.begin());
      c.val[k] = s.v(k);
    }
    out.push_back(std::move(c));
  }
  return cols;
}

// Gustavson's dense accumulator over compact columns: add() rows scaled, then emit() the
// row (columns ascending, exact zeros dropped) and reset for the next.
class Accumulator {
 public:
  explicit Accumulator(std::size_t ncols) : value_(ncols, 0.0), seen_(ncols, 0) {}
  void add(double scale, const CompactRows& B, std::int64_t row) {
    for (std::int64_t k = B.ptr[row]; k < B.ptr[row + 1]; ++k) {
      const std::int32_t c = B.col[k];
      if (!seen_[c]) {
        seen_[c] = 1;
        touched_.push_back(c);
      }
      value_[c] += scale * B.val[k];
    }
  }
  void emit(const std::vector<std::int64_t>& global, GlobalRows& out, bool keep_zeros = false) {
    std::sort(touched_.begin(), touched_.end());
    for (std::int32_t c : touched_) {
      if (value_[c] != 0.0 || keep_zeros) {
        out.indices.push_back(global[c]);
        out.data.push_back(value_[c]);
      }
      value_[c] = 0.0;
      seen_[c] = 0;
    }
    touched_.clear();
    out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
    ++out.nrows;
  }

 private:
  std::vector<double> value_;
  std::vector<char> seen_;
  std::vector<std::int32_t> touched_;
};

RecordSet to_records(const GlobalRows& rows, std::int64_t first, std::int64_t count) {
  RecordSet r;
  r.ptr.resize(count + 1);
  const std::int64_t base = rows.indptr[first];
  for (std::int64_t i = 0; i <= count; ++i) r.ptr[i] = rows.indptr[first + i] - base;
  r.data.resize(r.ptr.back() * sizeof(RowEntry));
  auto* e = reinterpret_cast<RowEntry*>(r.data.data());
  for (std::int64_t k = 0; k < r.ptr.back(); ++k) e[k] = {rows.indices[base + k], rows.data[base + k]};
  return r;
}

// A's rows as records of (global column, value): diag columns through the column
// distribution, off-process columns through col_map; local row order, columns as stored.
RecordSet row_records(const ParCsr& A) {
  const std::int64_t n = A.local_rows();
  const LocalCsr* blocks[] = {&A.diag(), &A.offd_on_node(), &A.offd_off_node()};
  RecordSet r;
  r.ptr.assign(n + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    r.ptr[i + 1] = r.ptr[i];
    for (const LocalCsr* b : blocks) r.ptr[i + 1] += b->indptr[i + 1] - b->indptr[i];
  }
  r.data.resize(r.ptr.back() * sizeof(RowEntry));
  auto* e = reinterpret_cast<RowEntry*>(r.data.data());
  const Distribution& cd = A.col_dist();
  const std::int64_t first_col = cd.is_contiguous() ? cd.offsets()[A.rank()] : -1;
  const std::vector<std::int64_t>& cmap = A.col_map();
  for (std::int64_t i = 0, at = 0; i < n; ++i) {
    for (std::int32_t k = blocks[0]->indptr[i]; k < blocks[0]->indptr[i + 1]; ++k) {
      const std::int32_t c = blocks[0]->indices[k];
      e[at++] = {first_col >= 0 ? first_col + c : cd.global_index(A.rank(), c), blocks[0]->data[k]};
    }
    for (const LocalCsr* o : {blocks[1], blocks[2]})
      for (std::int32_t k = o->indptr[i]; k < o->indptr[i + 1]; ++k) e[at++] = {cmap[o->indices[k]], o->data[k]};
  }
  return r;
}

// A rank's rows transposed over its column space [owned | halo]: column j's entries as
// (local row, value), rows ascending.
struct LocalTranspose {
  std::vector<std::int64_t> ptr, row;
  std::vector<double> val;
};

LocalTranspose local_transpose(const ParCsr& A) {
  const std::int64_t n_owned = A.local_cols(), n_space = n_owned + static_cast<std::int64_t>(A.col_map().size());
  LocalTranspose t;
  t.ptr.assign(n_space + 1, 0);
  for (std::int64_t i = 0; i < A.local_rows(); ++i) A.for_each_in_row(i, [&](std::int64_t k, double) { ++t.ptr[k + 1]; });
  for (std::int64_t j = 0; j < n_space; ++j) t.ptr[j + 1] += t.ptr[j];
  t.row.resize(t.ptr.back());
  t.val.resize(t.ptr.back());
  std::vector<std::int64_t> fill(t.ptr.begin(), t.ptr.end() - 1);
  for (std::int64_t i = 0; i < A.local_rows(); ++i)
    A.for_each_in_row(i, [&](std::int64_t k, double a) {
      const std::int64_t at = fill[k]++;
      t.row[at] = i;
      t.val[at] = a;
    });
  return t;
}

// The plan of A's halo pattern: built for `strategy`, or a reused one checked to fit.
CommPlan halo_plan(const ParCsr& A, const std::string& strategy, MPI_Comm comm, const CommPlan* reuse) {
  if (reuse == nullptr) return build_plan_mpi(A.pattern(), A.topology(), A.col_dist(), strategy, comm);
  require(reuse->rank == A.rank() && reuse->nranks == A.row_dist().nranks() &&
              reuse->n_owned == A.local_cols() && reuse->n_halo == static_cast<std::int64_t>(A.col_map().size()),
          "sparse product: the reused plan is not one of this matrix's halo (rank " + std::to_string(A.rank()) + ")");
  return *reuse;
}

}  // namespace

ProductResult spgemm(const ParCsr& A, const ParCsr& B, const std::string& strategy, MPI_Comm comm,
                     const CommPlan* reuse, bool keep_zeros) {
  require(same_distribution(A.col_dist(), B.row_dist()),
          "spgemm: A's column distribution differs from B's row distribution (A is " +
              std::to_string(A.row_dist().global_size()) + " x " + std::to_string(A.col_dist().global_size()) +
              ", B is " + std::to_string(B.row_dist().global_size()) + " x " + std::to_string(B.col_dist().global_size()) +
              ")");
  ProductResult res;
  res.plan = halo_plan(A, strategy, comm, reuse);
  RecordExecutor exec(res.plan, A.topology(), comm, sizeof(RowEntry));
  const RecordSet owned = row_records(B);
  const RecordSet halo = exec.forward(view(owned));
  res.recorded = exec.recorded_forward();

  std::vector<CompactRows> rows;  // [0]: B's own rows, [1]: the fetched ones (A's halo order)
  const std::vector<std::int64_t> cols = compact({span_of(owned), span_of(halo)}, rows);
  Accumulator acc(cols.size());
  const LocalCsr& d = A.diag();
  for (std::int64_t i = 0; i < A.local_rows(); ++i) {
    for (std::int32_t k = d.indptr[i]; k < d.indptr[i + 1]; ++k) acc.add(d.data[k], rows[0], d.indices[k]);
    for (const LocalCsr* o : {&A.offd_on_node(), &A.offd_off_node()})
      for (std::int32_t k = o->indptr[i]; k < o->indptr[i + 1]; ++k) acc.add(o->data[k], rows[1], o->indices[k]);
    acc.emit(cols, res.rows, keep_zeros);
  }
  return res;
}

ProductResult transpose_product(const ParCsr& P, const GlobalRows& M, const std::string& strategy, MPI_Comm comm,
                                const CommPlan* reuse) {
  require(M.nrows == P.local_rows(), "transpose product: M has " + std::to_string(M.nrows) +
                                         " rows on this rank, P " + std::to_string(P.local_rows()));
  ProductResult res;
  res.plan = halo_plan(P, strategy, comm, reuse);
  RecordExecutor exec(res.plan, P.topology(), comm, sizeof(RowEntry));

  const std::int64_t n_owned = P.local_cols(), n_space = n_owned + static_cast<std::int64_t>(P.col_map().size());
  const LocalTranspose t = local_transpose(P);
  const std::vector<std::int64_t>& tptr = t.ptr;
  const std::vector<std::int64_t>& trow = t.row;
  const std::vector<double>& tval = t.val;

  // The rows for coarse entries owned elsewhere first (zeros kept: they may cancel later),
  // sent to their owners; then this rank's own rows, summed with what arrived for them. The
  // first read only the rows of M that P's halo columns touch (the boundary), copied apart.
  std::vector<std::int64_t> sub_row(M.nrows, -1);
  GlobalRows boundary;
  for (std::int64_t k = tptr[n_owned]; k < tptr[n_space]; ++k) {
    const std::int64_t i = trow[k];
    if (sub_row[i] >= 0) continue;
    sub_row[i] = boundary.nrows++;
    boundary.indices.insert(boundary.indices.end(), M.indices.begin() + M.indptr[i], M.indices.begin() + M.indptr[i + 1]);
    boundary.data.insert(boundary.data.end(), M.data.begin() + M.indptr[i], M.data.begin() + M.indptr[i + 1]);
    boundary.indptr.push_back(static_cast<std::int64_t>(boundary.indices.size()));
  }
  std::vector<CompactRows> m;
  std::vector<std::int64_t> cols = compact({span_of(boundary)}, m);
  GlobalRows partial;
  {
    Accumulator acc(cols.size());
    for (std::int64_t j = n_owned; j < n_space; ++j) {
      for (std::int64_t k = tptr[j]; k < tptr[j + 1]; ++k) acc.add(tval[k], m[0], sub_row[trow[k]]);
      acc.emit(cols, partial, true);
    }
  }
  const RecordSet halo = to_records(partial, 0, partial.nrows);
  const RecordSet arrived = exec.reverse(view(halo));
  res.recorded = exec.recorded_reverse();

  cols = compact({span_of(M), span_of(arrived)}, m);
  Accumulator acc(cols.size());
  for (std::int64_t j = 0; j < n_owned; ++j) {
    for (std::int64_t k = tptr[j]; k < tptr[j + 1]; ++k) acc.add(tval[k], m[0], trow[k]);
    acc.add(1.0, m[1], j);
    acc.emit(cols, res.rows);
  }
  return res;
}

ProductResult transpose_rows(const ParCsr& A, const std::string& strategy, MPI_Comm comm) {
  ProductResult res;
  res.plan = halo_plan(A, strategy, comm, nullptr);
  RecordExecutor exec(res.plan, A.topology(), comm, sizeof(RowEntry));
  const std::int64_t n_owned = A.local_cols();
  const LocalTranspose t = local_transpose(A);
  const std::vector<std::int64_t> globals = A.row_dist().owned(A.rank());

  // The halo columns' entries, with global row indices, go to the columns' owners.
  RecordSet halo;
  const std::int64_t nh = static_cast<std::int64_t>(A.col_map().size());
  halo.ptr.resize(nh + 1);
  for (std::int64_t h = 0; h <= nh; ++h) halo.ptr[h] = t.ptr[n_owned + h] - t.ptr[n_owned];
  halo.data.resize(halo.ptr.back() * sizeof(RowEntry));
  auto* e = reinterpret_cast<RowEntry*>(halo.data.data());
  for (std::int64_t k = t.ptr[n_owned]; k < t.ptr.back(); ++k) *e++ = {globals[t.row[k]], t.val[k]};
  const RecordSet arrived = exec.reverse(view(halo));
  res.recorded = exec.recorded_reverse();

  // Each owned column: its local entries and those that arrived, rows ascending.
  const auto* in = reinterpret_cast<const RowEntry*>(arrived.data.data());
  GlobalRows& out = res.rows;
  out.nrows = n_owned;
  out.indptr.resize(n_owned + 1);
  out.indices.reserve(t.ptr[n_owned] + arrived.ptr.back());
  out.data.reserve(t.ptr[n_owned] + arrived.ptr.back());
  std::vector<RowEntry> row;
  for (std::int64_t j = 0; j < n_owned; ++j) {
    row.clear();
    for (std::int64_t k = t.ptr[j]; k < t.ptr[j + 1]; ++k) row.push_back({globals[t.row[k]], t.val[k]});
    row.insert(row.end(), in + arrived.ptr[j], in + arrived.ptr[j + 1]);
    std::sort(row.begin(), row.end(), [](const RowEntry& a, const RowEntry& b) { return a.col < b.col; });
    for (const RowEntry& r : row) {
      out.indices.push_back(r.col);
      out.data.push_back(r.val);
    }
    out.indptr[j + 1] = static_cast<std::int64_t>(out.indices.size());
  }
  return res;
}

}  // namespace commsolve
