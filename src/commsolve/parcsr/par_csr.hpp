// ParCsr: a row-distributed sparse matrix (hypre's ParCSR / PETSc's MPIAIJ layout).
//
// Each rank holds its rows split into the on-process block (columns it owns, local column
// indices) and the off-process block (columns owned elsewhere, indices into the halo whose
// global ids are col_map). The off-process block is further split by the Topology into
// the part whose columns live on this rank's node and the part that crosses the network.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/halo_pattern.hpp"
#include "commsolve/comm/mpi_executor.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/sparse/kernels.hpp"
#include "commsolve/sparse/dia.hpp"
#include "commsolve/sparse/sell.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

// Rows of a sparse matrix with 64-bit column indices (global ones, or a rank's column space).
struct GlobalRows {
  std::int64_t nrows = 0;
  std::vector<std::int64_t> indptr{0}, indices;
  std::vector<double> data;
};

class ParCsr {
 public:
  // Collective on comm. `rows` are this rank's rows in row_dist's local order, with global
  // column indices (borrowed for the call). The halo pattern is set up with one
  // all-to-all; no rank ever holds the global matrix.
  ParCsr(GlobalRowsView<std::int64_t> rows, const double* values, Distribution row_dist,
         Distribution col_dist, const Topology& topo, MPI_Comm comm, const std::string& strategy);

  // Collective on comm. `rows` are this rank's rows over a column space [owned | halo]:
  // indices below the owned count are owned columns' local indices, the others positions
  // n_owned + h into `halo_globals` (global columns other ranks own, in any order, unused
  // ones allowed: another matrix's col_map, say). The halo is the columns the rows use, in
  // the usual (owner, global) order; no global index of an owned column is ever formed.
  // The rows' arrays become the diagonal block (move them in: no copy).
  ParCsr(LocalCsr rows, const std::vector<std::int64_t>& halo_globals, Distribution row_dist,
         Distribution col_dist, const Topology& topo, MPI_Comm comm, const std::string& strategy);

  // Collective. A copy of `other` (the same rows, distributions and halo pattern) whose halo
  // plan is built for `strategy`: no all-to-all, only the plan's own setup.
  ParCsr(const ParCsr& other, MPI_Comm comm, const std::string& strategy);

  // y = A x. Collective. x: local_cols() entries (owned part of the column distribution),
  // y: local_rows() entries. Overlaps the on-process product with the halo exchange
  // (thesis Algorithm 5.1).
  void matvec(const double* x, double* y);
  // y = A^T x. Collective. x: local_rows() entries, y: local_cols() entries. The
  // off-process contributions travel back along the plan in reverse.
  void rmatvec(const double* x, double* y);

  // How matvec streams the on-process block (the rest stays CSR): "csr", or the block kept
  // also in SELL-C-sigma storage (sparse/sell.hpp): "ell" (one chunk, no sorting),
  // "sliced-ell" (SELL-8-1, Nakajima's), "sell" (SELL-8-256), or "sell-C-SIGMA"; or in DIA
  // storage (sparse/dia.hpp): "dia". The values are the same; only the kernel changes.
  // std::invalid_argument for an unknown name, or a block DIA cannot hold.
  void set_format(const std::string& format);
  const std::string& format() const { return format_; }

  // One hybrid Gauss-Seidel sweep on this rank's rows (Jacobi across ranks): x (owned
  // entries) in place, the off-process columns fixed at `halo` (col_map order; null: zero),
  // the on-process block swept in its format (forward, or backward), with reciprocal
  // divisors inv (x_i += (b_i - (A x)_i) inv_i). `zero` (forward): x and the halo are 0 on
  // entry (the lower part only is read). work: local_rows() doubles of scratch. Square
  // blocks only (the rows' and columns' distributions alike).
  void gauss_seidel(const double* inv, const double* b, const double* halo, double* x,
                    bool forward, bool zero, double* work) const;

  // The residual b - A x after one symmetric Gauss-Seidel step (a forward then a backward
  // sweep, divisors a_ii) from x = 0 with a zero halo, from the lower half of the
  // on-process block alone: on entry r holds x as the forward sweep left it, on return the
  // residual (x's halo exchanged to subtract the off-process part). work: local_rows()
  // doubles of scratch. CSR and DIA only.
  void zero_start_sgs_residual(const double* x, double* r, double* work);

  int rank() const { return pattern_.rank; }
  std::int64_t local_rows() const { return diag_.nrows; }
  std::int64_t local_cols() const { return pattern_.n_owned; }
  std::int64_t local_nnz() const { return diag_.nnz() + offd_on_.nnz() + offd_off_.nnz(); }
  const Distribution& row_dist() const { return row_dist_; }
  const Distribution& col_dist() const { return col_dist_; }
  const Topology& topology() const { return topo_; }
  const LocalCsr& diag() const { return diag_; }
  const LocalCsr& offd_on_node() const { return offd_on_; }
  const LocalCsr& offd_off_node() const { return offd_off_; }
  const std::vector<std::int64_t>& col_map() const { return pattern_.halo_globals; }
  const HaloPattern& pattern() const { return pattern_; }
  const CommPlan& plan() const { return executor_->plan(); }
  HaloExecutor& executor() { return *executor_; }
  // Calls f(k, a) for every entry a of row i, k its column-space index (owned columns' local
  // indices, then n_owned + the halo index into col_map): the diagonal block's entries first.
  template <class F>
  void for_each_in_row(std::int64_t i, F&& f) const {
    for (std::int32_t p = diag_.indptr[i]; p < diag_.indptr[i + 1]; ++p)
      f(static_cast<std::int64_t>(diag_.indices[p]), diag_.data[p]);
    for (const LocalCsr* o : {&offd_on_, &offd_off_})
      for (std::int32_t p = o->indptr[i]; p < o->indptr[i + 1]; ++p) f(pattern_.n_owned + o->indices[p], o->data[p]);
  }
  // This rank's rows as one CSR over global columns (`owned_globals`: the global index of
  // each owned column), each row's entries by ascending column.
  GlobalRows merged_rows(const std::int64_t* owned_globals) const;
  // This rank's rows as one CSR over its column space (owned columns' local indices, then
  // n_owned + the halo index into col_map), each row's entries by ascending index.
  LocalCsr space_rows() const;
  // The first local row whose diagonal entry is missing or zero, or -1 when none is (square
  // blocks: rows and columns distributed alike), and whether every stored value is finite.
  std::pair<std::int64_t, bool> check_diagonal() const;
  // a_ii of every local row (square blocks), plus with `l1` the row's off-process magnitudes
  // sum_j |a_ij| over the halo columns (the l1 smoothers' divisors).
  std::vector<double> diagonal(bool l1 = false) const;
  // The global column of every column-space entry (owned columns, then the halo).
  std::vector<std::int64_t> space_globals() const;
  // Bytes the local SpMV moves (three blocks, x, halo and y).
  double spmv_bytes() const;

 private:
  Distribution row_dist_, col_dist_;
  Topology topo_;
  HaloPattern pattern_;
  LocalCsr diag_, offd_on_, offd_off_;
  std::string format_ = "csr";
  std::unique_ptr<LocalSell> diag_sell_;  // the on-process block in format_ (both null: CSR)
  std::unique_ptr<LocalDia> diag_dia_;
  std::unique_ptr<HaloExecutor> executor_;
};

}  // namespace commsolve
