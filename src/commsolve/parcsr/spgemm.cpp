#include "commsolve/parcsr/spgemm.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "commsolve/comm/plan_builder.hpp"
#include "commsolve/comm/record_executor.hpp"
#include "commsolve/core/error.hpp"

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

// Global columns numbered compactly: `cols` holds the distinct columns that occur, ascending,
// and index(g) is g's position there. The columns of one rank's rows mostly fall in a window
// of the global range (its own and its neighbours' indices): when the window is at most a
// few times the number of entries, a direct map over it finds them in linear time; otherwise
// they are sorted and searched.
class ColumnIndex {
 public:
  // visit(f) calls f(g) for every column that occurs (any order, repeats allowed); it is
  // called twice.
  template <class Visit>
  explicit ColumnIndex(const Visit& visit) {
    std::int64_t total = 0, hi = -1;
    visit([&](std::int64_t g) {
      ++total;
      lo_ = std::min(lo_, g);
      hi = std::max(hi, g);
    });
    direct_ = total > 0 && hi - lo_ < 8 * total + 4096;
    if (direct_) {
      at_.assign(hi - lo_ + 1, -1);
      visit([&](std::int64_t g) { at_[g - lo_] = 0; });
      for (std::int64_t c = 0; c <= hi - lo_; ++c)
        if (at_[c] == 0) {
          at_[c] = static_cast<std::int32_t>(cols.size());
          cols.push_back(lo_ + c);
        }
    } else {
      cols.reserve(total);
      visit([&](std::int64_t g) { cols.push_back(g); });
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    }
    require(cols.size() < (std::size_t(1) << 31), "sparse product: more than 2^31 distinct columns on one rank");
  }
  std::int32_t index(std::int64_t g) const {
    return direct_ ? at_[g - lo_]
                   : static_cast<std::int32_t>(std::lower_bound(cols.begin(), cols.end(), g) - cols.begin());
  }
  std::vector<std::int64_t> cols;

 private:
  std::int64_t lo_ = std::numeric_limits<std::int64_t>::max();
  bool direct_ = false;
  std::vector<std::int32_t> at_;  // window position -> compact column (direct map only)
};

// Rows whose (column, value) entries lie in memory with a stride: records of RowEntry, or a
// GlobalRows' separate arrays. Borrowed.
struct EntrySpan {
  std::int64_t nrows;
  const std::int64_t* ptr;  // nrows + 1 offsets, ptr[0] == 0
  const std::int64_t* col;
  const double* val;
  std::int64_t stride;  // elements between consecutive entries (2 for RowEntry, 1 for arrays)
  std::int64_t c(std::int64_t k) const { return col[k * stride]; }
  double v(std::int64_t k) const { return val[k * stride]; }
  template <class F>
  void for_each_column(F&& f) const {
    for (std::int64_t k = 0; k < ptr[nrows]; ++k) f(c(k));
  }
};

EntrySpan span_of(const RecordSet& r) {
  const auto* e = reinterpret_cast<const RowEntry*>(r.data.data());
  return {r.size(), r.ptr.data(), &e->col, &e->val, 2};
}

EntrySpan span_of(const GlobalRows& g) { return {g.nrows, g.indptr.data(), g.indices.data(), g.data.data(), 1}; }

// Where an accumulator's rows go: rows whose columns are the compact columns mapped through
// `map` — GlobalRows over global columns (GlobalSink: each compact column's global index), or
// LocalCsr rows over a result's column space [owned | halo] (SpaceSink: each compact column's
// position there, for a ParCsr built without forming global indices again) — or rows over the
// compact columns themselves (CompactSink: an intermediate the same product reads again).
template <class Rows, class Index>
struct MappedSink {
  Rows& out;
  const std::vector<Index>& map;
  void reserve(std::int64_t rows, std::int64_t bound) {
    out.indptr.reserve(out.indptr.size() + rows);
    out.indices.reserve(out.indices.size() + bound);
    out.data.reserve(out.data.size() + bound);
  }
  void push(std::int32_t c, double v) {
    out.indices.push_back(map[c]);
    out.data.push_back(v);
  }
  void end_row() {
    out.indptr.push_back(static_cast<typename decltype(out.indptr)::value_type>(out.indices.size()));
    ++out.nrows;
  }
  void done() {
    if (out.indices.capacity() > out.indices.size() + out.indices.size() / 2) {  // the bound was loose:
      out.indices.shrink_to_fit();  // the result outlives the product
      out.data.shrink_to_fit();
    }
  }
};
using GlobalSink = MappedSink<GlobalRows, std::int64_t>;
using SpaceSink = MappedSink<LocalCsr, std::int32_t>;

struct CompactRows {
  std::vector<std::int64_t> ptr{0};
  std::vector<std::int32_t> col;
  std::vector<double> val;
};

struct CompactSink {
  CompactRows& out;
  void reserve(std::int64_t rows, std::int64_t bound) {
    out.ptr.reserve(out.ptr.size() + rows);
    out.col.reserve(out.col.size() + bound);
    out.val.reserve(out.val.size() + bound);
  }
  void push(std::int32_t c, double v) {
    out.col.push_back(c);
    out.val.push_back(v);
  }
  void end_row() { out.ptr.push_back(static_cast<std::int64_t>(out.col.size())); }
  void done() {}
};

// The compact columns `cols` (ascending globals) as a column space of `dist` on `rank`: the
// owned ones at their local index, the others after them in ascending order (`halo`).
std::vector<std::int32_t> column_space(const std::vector<std::int64_t>& cols, const Distribution& dist, int rank,
                                       std::vector<std::int64_t>& halo) {
  const std::int64_t n_owned = dist.local_size(rank);
  std::vector<std::int32_t> space(cols.size());
  halo.clear();
  for (std::size_t c = 0; c < cols.size(); ++c) {
    if (dist.owns(rank, cols[c])) {
      space[c] = static_cast<std::int32_t>(dist.owned_index(rank, cols[c]));
    } else {
      space[c] = static_cast<std::int32_t>(n_owned + static_cast<std::int64_t>(halo.size()));
      halo.push_back(cols[c]);
    }
  }
  require(n_owned + static_cast<std::int64_t>(halo.size()) < (std::int64_t(1) << 31),
          "sparse product: a column space of more than 2^31 columns on one rank");
  return space;
}

// Gustavson's dense accumulator over compact columns: accumulate_rows sums each row's scaled
// entries and emits it to a sink (exact zeros dropped unless kept; columns ascending unless
// the rows are an intermediate, summed again); each row stamps the columns it touches, so
// nothing is reset between rows. One pass: the caller bounds the result's size (the number
// of terms), so its storage is reserved once and only the entries written are touched; a
// counting pass first cost as much as the product.
class Accumulator {
 public:
  explicit Accumulator(std::size_t ncols) : slot_(ncols, Slot{0.0, -1}), touched_(ncols) {}
  // Rows first..last-1 of a product into `sink`: `terms(j, use)` calls use(compact column,
  // value) for every term of row j; `bound`: at most that many terms in all.
  template <class Terms, class Sink>
  void accumulate_rows(std::int64_t first, std::int64_t last, const Terms& terms, Sink&& sink, bool keep_zeros,
                       std::int64_t bound, bool intermediate = false) {
    sink.reserve(last - first, bound);
    // The inner loop on plain pointers: a column is new to the row when its stamp is not the
    // row's (no per-row reset), and no store through a char* that could alias the rest. A
    // column's value and stamp share a slot: one cache line per term.
    Slot* const slot = slot_.data();
    std::int32_t* const touched = touched_.data();
    for (std::int64_t j = first; j < last; ++j) {
      const std::int64_t row = next_row_++;
      std::int32_t* end = touched;
      terms(j, [&](std::int32_t c, double v) {
        Slot& s = slot[c];
        if (s.stamp != row) {
          s.stamp = row;
          s.value = v;
          *end++ = c;
        } else {
          s.value += v;
        }
      });
      if (!intermediate) sort_columns(touched, end);
      for (const std::int32_t* t = touched; t < end; ++t)
        if (slot[*t].value != 0.0 || keep_zeros) sink.push(*t, slot[*t].value);
      sink.end_row();
    }
    sink.done();
  }

 private:
  static void sort_columns(std::int32_t* touched, std::int32_t* end) {
    if (end - touched <= 32) {  // a product's rows are mostly short: insertion sort
      for (std::int32_t* a = touched + 1; a < end; ++a)
        for (std::int32_t* b = a; b > touched && b[-1] > b[0]; --b) std::swap(b[-1], b[0]);
    } else {
      std::sort(touched, end);
    }
  }

  struct Slot {
    double value;
    std::int64_t stamp;  // the row that last touched the column
  };
  std::vector<Slot> slot_;
  std::vector<std::int32_t> touched_;  // the columns the current row touched, in order of first touch
  std::int64_t next_row_ = 0;
};

RecordSet to_records(const GlobalRows& rows) {
  RecordSet r;
  r.ptr = rows.indptr;
  r.data.resize(r.ptr.back() * sizeof(RowEntry));
  auto* e = reinterpret_cast<RowEntry*>(r.data.data());
  for (std::int64_t k = 0; k < r.ptr.back(); ++k) e[k] = {rows.indices[k], rows.data[k]};
  return r;
}

// The records (global column, value) of A's rows that `plan` sends (the owned entries its
// steps read); every other row's record is empty.
RecordSet sent_row_records(const ParCsr& A, const std::vector<std::int64_t>& globals, const CommPlan& plan) {
  const std::int64_t n = A.local_rows();
  const std::vector<char> is_sent = sent_entries(plan);
  RecordSet r;
  r.ptr.assign(n + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t len = 0;
    if (is_sent[i]) A.for_each_in_row(i, [&](std::int64_t, double) { ++len; });
    r.ptr[i + 1] = r.ptr[i] + len;
  }
  r.data.resize(r.ptr.back() * sizeof(RowEntry));
  auto* e = reinterpret_cast<RowEntry*>(r.data.data());
  for (std::int64_t i = 0; i < n; ++i)
    if (is_sent[i]) A.for_each_in_row(i, [&](std::int64_t k, double a) { *e++ = {globals[k], a}; });
  return r;
}

// A rank's rows transposed over its column space [owned | halo]: column j's entries as
// (local row, value), rows ascending.
struct LocalTranspose {
  std::vector<std::int64_t> ptr;
  std::vector<std::int32_t> row;  // local rows: fewer than the rank's nonzeros, which fit 31 bits
  std::vector<double> val;
};

LocalTranspose local_transpose(const ParCsr& A) {
  const std::int64_t n_owned = A.local_cols(), n_space = n_owned + static_cast<std::int64_t>(A.col_map().size());
  require(A.local_rows() < (std::int64_t(1) << 31), "sparse product: more than 2^31 rows on one rank");
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
      t.row[at] = static_cast<std::int32_t>(i);
      t.val[at] = a;
    });
  return t;
}

// The plan of A's halo pattern: built for `strategy` (A's own when it was built for the same:
// plans are a function of the pattern, topology and strategy), or a reused one checked to fit.
CommPlan halo_plan(const ParCsr& A, const std::string& strategy, MPI_Comm comm, const CommPlan* reuse) {
  if (reuse == nullptr && A.plan().strategy == strategy) return A.plan();
  if (reuse == nullptr) return build_plan_mpi(A.pattern(), A.topology(), A.col_dist(), strategy, comm);
  require(reuse->rank == A.rank() && reuse->nranks == A.row_dist().nranks() &&
              reuse->n_owned == A.local_cols() && reuse->n_halo == static_cast<std::int64_t>(A.col_map().size()),
          "sparse product: the reused plan is not one of this matrix's halo (rank " + std::to_string(A.rank()) + ")");
  return *reuse;
}

}  // namespace

namespace {

// The local half of A B after its exchange: B's rows that A's halo columns name fetched along
// `plan` (into `recorded`), then every row of A B, summed over a compact numbering of the
// columns that occur (returned), to the sink `make_sink(index)` gives.
template <class MakeSink>
ColumnIndex multiply(const ParCsr& A, const ParCsr& B, const CommPlan& plan, MPI_Comm comm, bool keep_zeros,
                     bool intermediate, CommStats& recorded, const MakeSink& make_sink) {
  RecordExecutor exec(plan, A.topology(), comm, sizeof(RowEntry));
  const std::vector<std::int64_t> b_globals = B.space_globals();
  const RecordSet fetched = exec.forward(view(sent_row_records(B, b_globals, plan)));
  recorded = exec.recorded_forward();

  // B's own rows are read in place, through its column space's compact numbering; the
  // fetched rows (A's halo order) are renumbered once.
  const EntrySpan f = span_of(fetched);
  ColumnIndex idx([&](const auto& visit) {
    for (std::int64_t g : b_globals) visit(g);
    f.for_each_column(visit);
  });
  std::vector<std::int32_t> b_space(b_globals.size());
  for (std::size_t k = 0; k < b_globals.size(); ++k) b_space[k] = idx.index(b_globals[k]);
  std::vector<std::int32_t> f_col(f.ptr[f.nrows]);
  for (std::int64_t k = 0; k < f.ptr[f.nrows]; ++k) f_col[k] = idx.index(f.c(k));

  // B's own rows flattened once over the compact columns (the inner loop's stream).
  const std::int64_t nb = B.local_rows();
  std::vector<std::int64_t> bptr(nb + 1, 0);
  for (std::int64_t r = 0; r < nb; ++r) {
    std::int64_t len = 0;
    B.for_each_in_row(r, [&](std::int64_t, double) { ++len; });
    bptr[r + 1] = bptr[r] + len;
  }
  std::vector<std::int32_t> bcol(bptr[nb]);
  std::vector<double> bval(bptr[nb]);
  for (std::int64_t r = 0, q = 0; r < nb; ++r)
    B.for_each_in_row(r, [&](std::int64_t c, double b) {
      bcol[q] = b_space[c];
      bval[q++] = b;
    });
  const LocalCsr& d = A.diag();
  std::int64_t bound = 0;  // the product's terms
  for (std::int32_t k = 0; k < d.indptr[A.local_rows()]; ++k) bound += bptr[d.indices[k] + 1] - bptr[d.indices[k]];
  for (const LocalCsr* o : {&A.offd_on_node(), &A.offd_off_node()})
    for (std::int32_t k = 0; k < o->indptr[A.local_rows()]; ++k) bound += f.ptr[o->indices[k] + 1] - f.ptr[o->indices[k]];

  Accumulator acc(idx.cols.size());
  // Every (compact column, A entry times B entry) of row i of A B, to `use`.
  auto row_terms = [&](std::int64_t i, const auto& use) {
    for (std::int32_t k = d.indptr[i]; k < d.indptr[i + 1]; ++k) {
      const double a = d.data[k];
      for (std::int64_t q = bptr[d.indices[k]]; q < bptr[d.indices[k] + 1]; ++q) use(bcol[q], a * bval[q]);
    }
    for (const LocalCsr* o : {&A.offd_on_node(), &A.offd_off_node()})
      for (std::int32_t k = o->indptr[i]; k < o->indptr[i + 1]; ++k) {
        const double a = o->data[k];
        const std::int32_t h = o->indices[k];
        for (std::int64_t q = f.ptr[h]; q < f.ptr[h + 1]; ++q) use(f_col[q], a * f.v(q));
      }
  };
  acc.accumulate_rows(0, A.local_rows(), row_terms, make_sink(idx), keep_zeros, bound, intermediate);
  return idx;
}

// `cols` (ascending) with the global columns of `extra` that it lacks merged in, and where
// each of the old compact columns went (empty when nothing was added).
std::vector<std::int32_t> merge_columns(std::vector<std::int64_t>& cols, const EntrySpan& extra) {
  std::vector<std::int64_t> added;
  for (std::int64_t q = 0; q < extra.ptr[extra.nrows]; ++q)
    if (!std::binary_search(cols.begin(), cols.end(), extra.c(q))) added.push_back(extra.c(q));
  if (added.empty()) return {};
  std::sort(added.begin(), added.end());
  added.erase(std::unique(added.begin(), added.end()), added.end());
  std::vector<std::int64_t> merged(cols.size() + added.size());
  std::merge(cols.begin(), cols.end(), added.begin(), added.end(), merged.begin());
  require(merged.size() < (std::size_t(1) << 31), "sparse product: more than 2^31 distinct columns on one rank");
  std::vector<std::int32_t> moved(cols.size());
  for (std::size_t c = 0, m = 0; c < cols.size(); ++c) {
    while (merged[m] != cols[c]) ++m;
    moved[c] = static_cast<std::int32_t>(m);
  }
  cols = std::move(merged);
  return moved;
}

}  // namespace

ProductResult spgemm(const ParCsr& A, const ParCsr& B, const std::string& strategy, MPI_Comm comm,
                     const CommPlan* reuse, bool keep_zeros, bool intermediate) {
  require(same_distribution(A.col_dist(), B.row_dist()),
          "spgemm: A's column distribution differs from B's row distribution (A is " +
              std::to_string(A.row_dist().global_size()) + " x " + std::to_string(A.col_dist().global_size()) +
              ", B is " + std::to_string(B.row_dist().global_size()) + " x " + std::to_string(B.col_dist().global_size()) +
              ")");
  ProductResult res;
  res.plan = halo_plan(A, strategy, comm, reuse);
  multiply(A, B, res.plan, comm, keep_zeros, intermediate, res.recorded,
           [&](const ColumnIndex& idx) { return GlobalSink{res.rows, idx.cols}; });
  return res;
}

ProductResult halo_rows(const ParCsr& A, const ParCsr& B, const std::string& strategy, MPI_Comm comm,
                        const CommPlan* reuse) {
  require(same_distribution(A.col_dist(), B.row_dist()),
          "halo_rows: A's column distribution differs from B's row distribution");
  ProductResult res;
  res.plan = halo_plan(A, strategy, comm, reuse);
  RecordExecutor exec(res.plan, A.topology(), comm, sizeof(RowEntry));
  const RecordSet fetched = exec.forward(view(sent_row_records(B, B.space_globals(), res.plan)));
  res.recorded = exec.recorded_forward();
  const EntrySpan f = span_of(fetched);
  GlobalRows& out = res.rows;
  out.nrows = f.nrows;
  out.indptr.assign(f.ptr, f.ptr + f.nrows + 1);
  out.indices.resize(f.ptr[f.nrows]);
  out.data.resize(f.ptr[f.nrows]);
  for (std::int64_t k = 0; k < f.ptr[f.nrows]; ++k) {
    out.indices[k] = f.c(k);
    out.data[k] = f.v(k);
  }
  return res;
}

GalerkinResult galerkin(const ParCsr& A, const ParCsr& P, const std::string& strategy, MPI_Comm comm,
                        const CommPlan* reuse_ap, const CommPlan* reuse_rap) {
  require(same_distribution(A.col_dist(), P.row_dist()) && same_distribution(A.row_dist(), P.row_dist()),
          "galerkin: A's rows and columns and P's rows must be distributed alike");
  GalerkinResult res;
  // A P over the compact numbering of its columns, never in global form: it keeps entries
  // that cancel to 0 (which partial rows travel back must not hang on rounding) and its
  // rows' columns unsorted (an intermediate, summed again).
  CompactRows ap;
  res.plan_ap = halo_plan(A, strategy, comm, reuse_ap);
  ColumnIndex idx = multiply(A, P, res.plan_ap, comm, true, true, res.recorded_ap,
                             [&](const ColumnIndex&) { return CompactSink{ap}; });

  res.plan_rap = halo_plan(P, strategy, comm, reuse_rap);
  RecordExecutor exec(res.plan_rap, P.topology(), comm, sizeof(RowEntry));
  const std::int64_t n_owned = P.local_cols(), n_space = n_owned + static_cast<std::int64_t>(P.col_map().size());
  const LocalTranspose t = local_transpose(P);
  // Row J of P^T (A P) sums row i of A P times P(i, J) over column J of P, and `extra`'s
  // row J (what other ranks summed for it).
  Accumulator acc(idx.cols.size());
  auto product_rows = [&](std::int64_t first, std::int64_t last, const EntrySpan* extra, auto&& sink, bool partial) {
    std::int64_t bound = extra != nullptr ? extra->ptr[extra->nrows] : 0;
    for (std::int64_t k = t.ptr[first]; k < t.ptr[last]; ++k) bound += ap.ptr[t.row[k] + 1] - ap.ptr[t.row[k]];
    auto terms = [&](std::int64_t j, const auto& use) {
      for (std::int64_t k = t.ptr[j]; k < t.ptr[j + 1]; ++k) {
        const std::int64_t i = t.row[k];
        const double p = t.val[k];
        for (std::int64_t q = ap.ptr[i]; q < ap.ptr[i + 1]; ++q) use(ap.col[q], p * ap.val[q]);
      }
      if (extra != nullptr)
        for (std::int64_t q = extra->ptr[j - first]; q < extra->ptr[j - first + 1]; ++q)
          use(static_cast<std::int32_t>(std::lower_bound(idx.cols.begin(), idx.cols.end(), extra->c(q)) -
                                        idx.cols.begin()),
              extra->v(q));
    };
    acc.accumulate_rows(first, last, terms, sink, partial, bound, partial);
  };
  // The rows for coarse entries owned elsewhere first (`partial`: zeros kept, as they may
  // cancel later; an intermediate, which their owners sum again), sent to their owners; then
  // this rank's own rows, summed with what arrived for them.
  GlobalRows partial;
  product_rows(n_owned, n_space, nullptr, GlobalSink{partial, idx.cols}, true);
  const RecordSet arrived = exec.reverse(view(to_records(partial)));
  res.recorded_rap = exec.recorded_reverse();
  const EntrySpan in = span_of(arrived);
  const std::vector<std::int32_t> moved = merge_columns(idx.cols, in);  // columns only others' rows reach
  if (!moved.empty()) {
    for (std::int32_t& c : ap.col) c = moved[c];
    acc = Accumulator(idx.cols.size());
  }
  const std::vector<std::int32_t> space = column_space(idx.cols, P.col_dist(), P.rank(), res.halo);
  res.rows.nrows = 0;
  product_rows(0, n_owned, &in, SpaceSink{res.rows, space}, false);
  require(res.rows.indices.size() < (std::size_t(1) << 31),
          "galerkin: more than 2^31 nonzeros in one rank's rows of P^T A P (rank " + std::to_string(P.rank()) + ")");
  res.rows.ncols = n_owned + static_cast<std::int64_t>(res.halo.size());
  return res;
}

ProductResult transpose_rows(const ParCsr& A, const std::string& strategy, MPI_Comm comm, const CommPlan* reuse) {
  ProductResult res;
  res.plan = halo_plan(A, strategy, comm, reuse);
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
  // The local entries come by ascending local row, so ascending global row (a rank's rows
  // are in ascending global order in every distribution): only columns that received
  // entries are sorted.
  std::vector<RowEntry> row;
  for (std::int64_t j = 0; j < n_owned; ++j) {
    if (arrived.ptr[j] == arrived.ptr[j + 1]) {
      for (std::int64_t k = t.ptr[j]; k < t.ptr[j + 1]; ++k) {
        out.indices.push_back(globals[t.row[k]]);
        out.data.push_back(t.val[k]);
      }
    } else {
      row.clear();
      for (std::int64_t k = t.ptr[j]; k < t.ptr[j + 1]; ++k) row.push_back({globals[t.row[k]], t.val[k]});
      row.insert(row.end(), in + arrived.ptr[j], in + arrived.ptr[j + 1]);
      std::sort(row.begin(), row.end(), [](const RowEntry& a, const RowEntry& b) { return a.col < b.col; });
      for (const RowEntry& r : row) {
        out.indices.push_back(r.col);
        out.data.push_back(r.val);
      }
    }
    out.indptr[j + 1] = static_cast<std::int64_t>(out.indices.size());
  }
  return res;
}

}  // namespace commsolve
