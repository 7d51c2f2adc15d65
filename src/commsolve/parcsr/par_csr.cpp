#include "commsolve/parcsr/par_csr.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "commsolve/comm/plan_builder.hpp"
#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

// Each row's entries by ascending column (values along).
void sort_rows(LocalCsr& A) {
  std::vector<std::pair<std::int32_t, double>> row;
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    const std::int32_t b = A.indptr[i], e = A.indptr[i + 1];
    if (std::is_sorted(A.indices.begin() + b, A.indices.begin() + e)) continue;
    row.clear();
    for (std::int32_t p = b; p < e; ++p) row.emplace_back(A.indices[p], A.data[p]);
    std::sort(row.begin(), row.end(), [](const auto& u, const auto& v) { return u.first < v.first; });
    for (std::int32_t p = b; p < e; ++p) std::tie(A.indices[p], A.data[p]) = row[static_cast<std::size_t>(p - b)];
  }
}

}  // namespace

ParCsr::ParCsr(GlobalRowsView<std::int64_t> rows, const double* values, Distribution row_dist,
               Distribution col_dist, const Topology& topo, MPI_Comm comm, const std::string& strategy)
    : row_dist_(std::move(row_dist)), col_dist_(std::move(col_dist)), topo_(topo) {
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  require(row_dist_.nranks() == size && col_dist_.nranks() == size,
          "ParCsr: distributions are for " + std::to_string(row_dist_.nranks()) +
              " ranks, communicator has " + std::to_string(size));
  require(topo_.size() == size, "ParCsr: topology has " + std::to_string(topo_.size()) +
                                    " ranks, communicator has " + std::to_string(size));
  require(rows.nrows == row_dist_.local_size(rank),
          "ParCsr: rank " + std::to_string(rank) + " passed " + std::to_string(rows.nrows) +
              " rows, its share of the distribution is " + std::to_string(row_dist_.local_size(rank)));
  require(rows.indptr[0] == 0, "ParCsr: indptr must start at 0");

  pattern_ = halo_recv_side(rank, rows, col_dist_);  // validates column range
  complete_send_side_mpi(pattern_, col_dist_, comm);

  // Halo position of a global column: find its owner's segment, then search within it.
  std::vector<std::int32_t> segment_of(size, -1);
  for (std::size_t i = 0; i < pattern_.recv_peers.size(); ++i)
    segment_of[pattern_.recv_peers[i]] = static_cast<std::int32_t>(i);
  auto halo_index = [&](int owner, std::int64_t g) {
    std::int32_t s = segment_of[owner];
    auto b = pattern_.halo_globals.begin() + pattern_.recv_ptr[s];
    auto e = pattern_.halo_globals.begin() + pattern_.recv_ptr[s + 1];
    return static_cast<std::int32_t>(std::lower_bound(b, e, g) - pattern_.halo_globals.begin());
  };

  const std::int64_t nhalo = pattern_.n_halo();
  for (LocalCsr* block : {&diag_, &offd_on_, &offd_off_}) {
    block->nrows = rows.nrows;
    block->indptr.assign(1, 0);
    block->indptr.reserve(rows.nrows + 1);
  }
  diag_.ncols = pattern_.n_owned;
  offd_on_.ncols = offd_off_.ncols = nhalo;
  diag_.indices.reserve(rows.indptr[rows.nrows]);  // most entries are the rank's own
  diag_.data.reserve(rows.indptr[rows.nrows]);
  for (std::int64_t i = 0; i < rows.nrows; ++i) {
    for (std::int64_t k = rows.indptr[i]; k < rows.indptr[i + 1]; ++k) {
      std::int64_t g = rows.indices[k];
      LocalCsr* block;
      std::int32_t col;
      if (col_dist_.owns(rank, g)) {
        block = &diag_;
        col = static_cast<std::int32_t>(col_dist_.owned_index(rank, g));
      } else {
        const int owner = col_dist_.owner(g);
        block = topo_.same_node(rank, owner) ? &offd_on_ : &offd_off_;
        col = halo_index(owner, g);
      }
      block->indices.push_back(col);
      block->data.push_back(values[k]);
    }
    for (LocalCsr* block : {&diag_, &offd_on_, &offd_off_})
      block->indptr.push_back(static_cast<std::int32_t>(block->indices.size()));
  }
  require(rows.indptr[rows.nrows] < (std::int64_t(1) << 31), "ParCsr: more than 2^31 local nonzeros");
  sort_rows(diag_);  // the zero-start Gauss-Seidel sweep reads each row up to its diagonal
  executor_ = std::make_unique<HaloExecutor>(build_plan_mpi(pattern_, topo_, col_dist_, strategy, comm), topo_, comm);
}

ParCsr::ParCsr(LocalCsr rows, const std::vector<std::int64_t>& halo_globals, Distribution row_dist,
               Distribution col_dist, const Topology& topo, MPI_Comm comm, const std::string& strategy)
    : row_dist_(std::move(row_dist)), col_dist_(std::move(col_dist)), topo_(topo) {
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  require(row_dist_.nranks() == size && col_dist_.nranks() == size && topo_.size() == size,
          "ParCsr: distributions or topology for another number of ranks than the communicator's " +
              std::to_string(size));
  require(rows.nrows == row_dist_.local_size(rank),
          "ParCsr: rank " + std::to_string(rank) + " passed " + std::to_string(rows.nrows) +
              " rows, its share of the distribution is " + std::to_string(row_dist_.local_size(rank)));
  const std::int64_t n_owned = col_dist_.local_size(rank), nh_in = static_cast<std::int64_t>(halo_globals.size());
  const std::int64_t nnz = rows.indptr[rows.nrows];
  require(rows.indptr[0] == 0 && static_cast<std::int64_t>(rows.indices.size()) == nnz &&
              static_cast<std::int64_t>(rows.data.size()) == nnz,
          "ParCsr: the rows' arrays do not describe their entries");

  // The halo: the positions of halo_globals the rows use, ordered by (owner, global); equal
  // globals share one entry.
  std::vector<std::int32_t> where(nh_in, -1);  // input position -> new halo index
  for (std::int64_t k = 0; k < nnz; ++k) {
    const std::int64_t c = rows.indices[k];
    if (c >= n_owned && c < n_owned + nh_in) {
      where[c - n_owned] = 0;
    } else if (c < 0 || c >= n_owned) {
      throw std::invalid_argument("ParCsr: column " + std::to_string(c) + " outside the column space [0, " +
                                  std::to_string(n_owned + nh_in) + ") on rank " + std::to_string(rank));
    }
  }
  struct Col {
    int owner;
    std::int64_t g, at;
  };
  std::vector<Col> used;
  for (std::int64_t h = 0; h < nh_in; ++h)
    if (where[h] == 0) {
      const std::int64_t g = halo_globals[h];
      if (g < 0 || g >= col_dist_.global_size() || col_dist_.owns(rank, g))
        throw std::invalid_argument("ParCsr: halo column " + std::to_string(g) +
                                    " is not another rank's column (rank " + std::to_string(rank) + ")");
      used.push_back({col_dist_.owner(g), g, h});
    }
  std::sort(used.begin(), used.end(),
            [](const Col& a, const Col& b) { return a.owner != b.owner ? a.owner < b.owner : a.g < b.g; });
  pattern_.rank = rank;
  pattern_.nranks = size;
  pattern_.n_owned = n_owned;
  std::vector<char> on_node;  // per new halo index
  for (std::size_t k = 0; k < used.size(); ++k) {
    if (k == 0 || used[k].g != used[k - 1].g) {
      if (k == 0 || used[k].owner != used[k - 1].owner) {
        if (k > 0) pattern_.recv_ptr.push_back(pattern_.n_halo());
        pattern_.recv_peers.push_back(used[k].owner);
      }
      pattern_.halo_globals.push_back(used[k].g);
      on_node.push_back(topo_.same_node(rank, used[k].owner) ? 1 : 0);
    }
    where[used[k].at] = static_cast<std::int32_t>(pattern_.n_halo() - 1);
  }
  if (!used.empty()) pattern_.recv_ptr.push_back(pattern_.n_halo());
  complete_send_side_mpi(pattern_, col_dist_, comm);

  // The owned columns' entries stay where they are, compacted towards the front of the
  // rows' own arrays (a write never passes the read); the halo columns' go to the two
  // off-diagonal blocks, sized by a count first.
  const std::int64_t n = rows.nrows;
  for (LocalCsr* block : {&offd_on_, &offd_off_}) {
    block->nrows = n;
    block->ncols = pattern_.n_halo();
    block->indptr.assign(n + 1, 0);
  }
  if (!used.empty()) {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int32_t k = rows.indptr[i]; k < rows.indptr[i + 1]; ++k)
        if (rows.indices[k] >= n_owned) ++(on_node[where[rows.indices[k] - n_owned]] ? offd_on_ : offd_off_).indptr[i + 1];
    for (LocalCsr* block : {&offd_on_, &offd_off_}) {
      for (std::int64_t i = 0; i < n; ++i) block->indptr[i + 1] += block->indptr[i];
      block->indices.resize(block->indptr[n]);
      block->data.resize(block->indptr[n]);
    }
    std::int32_t on = 0, off = 0, kept = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t b = rows.indptr[i], e = rows.indptr[i + 1];
      rows.indptr[i] = kept;
      for (std::int32_t k = b; k < e; ++k) {
        const std::int32_t c = rows.indices[k];
        if (c < n_owned) {
          rows.indices[kept] = c;
          rows.data[kept++] = rows.data[k];
        } else {
          const std::int32_t h = where[c - n_owned];
          std::int32_t& at = on_node[h] ? on : off;
          LocalCsr& block = on_node[h] ? offd_on_ : offd_off_;
          block.indices[at] = h;
          block.data[at++] = rows.data[k];
        }
      }
    }
    rows.indptr[n] = kept;
    rows.indices.resize(kept);
    rows.data.resize(kept);
    if (rows.indices.capacity() > static_cast<std::size_t>(kept) + kept / 2) {  // mostly halo: the block
      rows.indices.shrink_to_fit();                                             // outlives the input
      rows.data.shrink_to_fit();
    }
  }
  diag_ = std::move(rows);
  diag_.ncols = n_owned;
  for (LocalCsr* block : {&diag_, &offd_on_, &offd_off_}) sort_rows(*block);
  executor_ = std::make_unique<HaloExecutor>(build_plan_mpi(pattern_, topo_, col_dist_, strategy, comm), topo_, comm);
}

ParCsr::ParCsr(const ParCsr& other, MPI_Comm comm, const std::string& strategy)
    : row_dist_(other.row_dist_),
      col_dist_(other.col_dist_),
      topo_(other.topo_),
      pattern_(other.pattern_),
      diag_(other.diag_),
      offd_on_(other.offd_on_),
      offd_off_(other.offd_off_),
      executor_(std::make_unique<HaloExecutor>(build_plan_mpi(pattern_, topo_, col_dist_, strategy, comm), topo_,
                                               comm)) {
  set_format(other.format_);
}

void ParCsr::set_format(const std::string& format) {
  int C = 8;
  std::int64_t sigma = 1;
  if (format == "csr" || format == "dia") {
    diag_dia_ = format == "dia" ? std::make_unique<LocalDia>(dia_from_csr(view(diag_), diag_.ncols)) : nullptr;
    diag_sell_.reset();
    format_ = format;
    return;
  }
  if (format == "ell") {
    C = static_cast<int>(std::max<std::int64_t>(diag_.nrows, 1));
  } else if (format == "sell") {
    sigma = 256;
  } else if (format != "sliced-ell") {
    long c = 0, s = 0;
    char tail = 0;
    if (std::sscanf(format.c_str(), "sell-%ld-%ld%c", &c, &s, &tail) != 2 || c < 1 || s < 1 || c > (1 << 20))
      throw std::invalid_argument("unknown matrix format '" + format +
                                  "' (known: csr, ell, sliced-ell, sell, sell-C-SIGMA with C, SIGMA >= 1, dia)");
    C = static_cast<int>(c);
    sigma = s;
  }
  diag_sell_ = std::make_unique<LocalSell>(sell_from_csr(view(diag_), diag_.ncols, C, sigma));
  diag_dia_.reset();
  format_ = format;
}

void ParCsr::matvec(const double* x, double* y) {
  executor_->begin(x);
  if (diag_sell_) spmv(*diag_sell_, x, y);
  else if (diag_dia_) spmv(*diag_dia_, x, y);
  else spmv(view(diag_), x, y);
  const double* halo = executor_->end();
  if (offd_on_.nnz() > 0) spmv_add(view(offd_on_), halo, y);
  if (offd_off_.nnz() > 0) spmv_add(view(offd_off_), halo, y);
}

void ParCsr::gauss_seidel(const double* inv, const double* b, const double* halo, double* x,
                          bool forward, bool zero, double* work) const {
  require(diag_.nrows == diag_.ncols, "gauss_seidel: the on-process block is not square");
  require(!zero || forward, "gauss_seidel: zero (x = 0 on entry) is for forward sweeps");
  const double* rhs = b;
  if (!zero && halo != nullptr && (offd_on_.nnz() > 0 || offd_off_.nnz() > 0)) {  // b - (off-process part) halo
    std::fill(work, work + diag_.nrows, 0.0);
    for (const LocalCsr* o : {&offd_on_, &offd_off_})
      if (o->nnz() > 0) spmv_add(view(*o), halo, work);
    for (std::int64_t i = 0; i < diag_.nrows; ++i) work[i] = b[i] - work[i];
    rhs = work;
  }
  if (diag_sell_) gauss_seidel_sweep(*diag_sell_, inv, rhs, x, forward);
  else if (diag_dia_) gauss_seidel_sweep(*diag_dia_, inv, rhs, x, forward, zero);
  else gauss_seidel_sweep(view(diag_), inv, rhs, x, forward, zero);
}

void ParCsr::zero_start_sgs_residual(const double* x, double* r, double* work) {
  require(diag_.nrows == diag_.ncols, "zero_start_sgs_residual: the on-process block is not square");
  require(!diag_sell_, "zero_start_sgs_residual: CSR or DIA storage only");
  executor_->begin(x);
  if (diag_dia_) lower_difference_product(*diag_dia_, x, r, work);
  else lower_difference_product(view(diag_), x, r, work);
  const double* halo = executor_->end();
  for (const LocalCsr* o : {&offd_on_, &offd_off_}) {
    if (o->nnz() == 0) continue;
    const CsrView v = view(*o);
    for (std::int64_t i = 0; i < v.nrows; ++i)
      for (std::int32_t p = v.indptr[i]; p < v.indptr[i + 1]; ++p) r[i] -= v.data[p] * halo[v.indices[p]];
  }
}

void ParCsr::rmatvec(const double* x, double* y) {
  double* halo = executor_->halo();
  std::fill(halo, halo + pattern_.n_halo(), 0.0);
  spmv_transpose_add(view(offd_on_), x, halo);
  spmv_transpose_add(view(offd_off_), x, halo);
  executor_->reverse_begin();
  std::fill(y, y + pattern_.n_owned, 0.0);
  spmv_transpose_add(view(diag_), x, y);
  executor_->reverse_end(y);
}

GlobalRows ParCsr::merged_rows(const std::int64_t* owned_globals) const {
  const std::int64_t n = diag_.nrows, n_owned = pattern_.n_owned;
  const auto& halo = pattern_.halo_globals;
  GlobalRows out;
  out.nrows = n;
  out.indptr.resize(n + 1, 0);
  out.indices.reserve(local_nnz());
  out.data.reserve(local_nnz());
  std::vector<std::pair<std::int64_t, double>> row;
  for (std::int64_t i = 0; i < n; ++i) {
    row.clear();
    for_each_in_row(i, [&](std::int64_t k, double a) {
      row.emplace_back(k < n_owned ? owned_globals[k] : halo[k - n_owned], a);
    });
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [c, v] : row) {
      out.indices.push_back(c);
      out.data.push_back(v);
    }
    out.indptr[i + 1] = static_cast<std::int64_t>(out.indices.size());
  }
  return out;
}

LocalCsr ParCsr::space_rows() const {
  const std::int64_t n = diag_.nrows;
  LocalCsr out;
  out.nrows = n;
  out.ncols = pattern_.n_owned + pattern_.n_halo();
  out.indptr.resize(n + 1);
  out.indices.resize(local_nnz());
  out.data.resize(local_nnz());
  std::int32_t at = 0;
  // The owned columns come first in the column space and the halo after: a row is its
  // diagonal block's entries, then the off-diagonal blocks'; each part sorted where needed
  // (the diagonal block mostly is already: the constructors sort it).
  std::vector<std::pair<std::int32_t, double>> long_part;
  auto sort_part = [&](std::int32_t b, std::int32_t e) {
    if (e - b > 32) {  // a long run (a dense coarse level's halo): sorted as pairs
      long_part.clear();
      for (std::int32_t p = b; p < e; ++p) long_part.emplace_back(out.indices[p], out.data[p]);
      std::sort(long_part.begin(), long_part.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (std::int32_t p = b; p < e; ++p) std::tie(out.indices[p], out.data[p]) = long_part[p - b];
      return;
    }
    for (std::int32_t a = b + 1; a < e; ++a)  // short: insertion sort in place
      for (std::int32_t p = a; p > b && out.indices[p - 1] > out.indices[p]; --p) {
        std::swap(out.indices[p - 1], out.indices[p]);
        std::swap(out.data[p - 1], out.data[p]);
      }
  };
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t first = at;
    for (std::int32_t p = diag_.indptr[i]; p < diag_.indptr[i + 1]; ++p, ++at) {
      out.indices[at] = diag_.indices[p];
      out.data[at] = diag_.data[p];
    }
    if (!std::is_sorted(out.indices.begin() + first, out.indices.begin() + at)) sort_part(first, at);
    const std::int32_t halo_first = at;
    for (const LocalCsr* o : {&offd_on_, &offd_off_})
      for (std::int32_t p = o->indptr[i]; p < o->indptr[i + 1]; ++p, ++at) {
        out.indices[at] = static_cast<std::int32_t>(pattern_.n_owned) + o->indices[p];
        out.data[at] = o->data[p];
      }
    sort_part(halo_first, at);
    out.indptr[i + 1] = at;
  }
  return out;
}

std::pair<std::int64_t, bool> ParCsr::check_diagonal() const {
  const std::vector<double> d = diagonal();
  const auto first_zero = std::find(d.begin(), d.end(), 0.0);
  const std::int64_t zero = first_zero == d.end() ? -1 : first_zero - d.begin();
  bool finite = true;
  for (const LocalCsr* b : {&diag_, &offd_on_, &offd_off_})
    for (double v : b->data) finite = finite && std::isfinite(v);
  return {zero, finite};
}

std::vector<double> ParCsr::diagonal(bool l1) const {
  std::vector<double> d(diag_.nrows, 0.0);
  for (std::int64_t i = 0; i < diag_.nrows; ++i) {
    for (std::int32_t p = diag_.indptr[i]; p < diag_.indptr[i + 1]; ++p)
      if (diag_.indices[p] == i) d[i] += diag_.data[p];
    if (l1)
      for (const LocalCsr* o : {&offd_on_, &offd_off_})
        for (std::int32_t p = o->indptr[i]; p < o->indptr[i + 1]; ++p) d[i] += std::abs(o->data[p]);
  }
  return d;
}

std::vector<std::int64_t> ParCsr::space_globals() const {
  std::vector<std::int64_t> g(pattern_.n_owned + pattern_.n_halo());
  for (std::int64_t k = 0; k < pattern_.n_owned; ++k) g[k] = col_dist_.global_index(rank(), k);
  std::copy(pattern_.halo_globals.begin(), pattern_.halo_globals.end(), g.begin() + pattern_.n_owned);
  return g;
}

double ParCsr::spmv_bytes() const {
  // diag (in its format) and both offd blocks, x and halo read, y read-modify-written for
  // the offd passes.
  double b = diag_sell_ ? diag_sell_->spmv_bytes() : diag_dia_ ? diag_dia_->spmv_bytes() : diag_.spmv_bytes();
  for (const LocalCsr* o : {&offd_on_, &offd_off_})
    if (o->nnz() > 0) b += 12.0 * o->nnz() + 4.0 * (o->nrows + 1) + 16.0 * o->nrows + 8.0 * o->ncols;
  return b;
}

}  // namespace commsolve
