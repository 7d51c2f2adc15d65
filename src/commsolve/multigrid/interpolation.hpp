// Classical AMG's interpolations. Extended+i (De Sterck, Falgout, Nolting, Yang,
// "Distance-two interpolation for parallel algebraic multigrid", NLAA 2008; hypre's
// BuildExtPIInterp), distributed: a fine point interpolates from its strong coarse
// neighbours and from those of its strong fine neighbours, so that PMIS's sparse coarse
// grids still interpolate well; the rows of A that off-process strong fine neighbours hold
// travel as records along A's own halo plan. Direct (pyamg's and hypre's simplest), local.
// Multipass, for aggressive levels, is in aggressive.hpp.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <utility>

#include "commsolve/parcsr/par_csr.hpp"
#include "commsolve/parcsr/spgemm.hpp"
#include "commsolve/multigrid/strength.hpp"

namespace commsolve {

// One rank's rows of A over its column space (LocalRowsView), with per entry whether it is a
// strong connection, and per column-space entry its global index and coarse global index
// (-1: a fine point). Borrowed.
struct CoarseningView : LocalRowsView {
  const std::uint8_t* strong;
  const std::int64_t* global;  // per column-space entry
  const std::int64_t* coarse;  // per column-space entry, -1 for fine points
};

// This rank's rows of P (global coarse columns), truncated as truncate_rows does when `trunc`
// > 0 or `pmax` > 0. Collective on comm (A's communicator, whose halo plan `A` carries; the
// view must be A's local block).
GlobalRows extended_i_interpolation(const ParCsr& A, const CoarseningView& v, MPI_Comm comm, double trunc = 0.0,
                                    int pmax = 0);

// This rank's rows of the direct interpolation (global coarse columns; `global` unread). A
// coarse point interpolates from itself (1), a fine point from its strong coarse neighbours,
// P_ij = -alpha a_ij / a_ii for a_ij < 0 and -beta a_ij / a_ii for a_ij > 0, alpha and beta
// scaling the strong coarse sums to the whole row's (without positive strong coarse entries
// the positive ones are lumped into the diagonal). Local.
GlobalRows direct_interpolation(const CoarseningView& v);

// P's rows truncated in place as truncate_rows does (sparse/kernels.hpp), when `trunc` > 0
// or `pmax` > 0.
void truncate(GlobalRows& P, double trunc, int pmax);

// Builds rows of P one at a time: entries pushed in any column order, each row sorted by
// column when it ends.
struct RowBuilder {
  GlobalRows rows;
  void reserve(std::int64_t nrows, std::int64_t entries) {
    rows.indptr.reserve(nrows + 1);
    rows.indices.reserve(entries);
    rows.data.reserve(entries);
  }
  void push(std::int64_t col, double v) {
    rows.indices.push_back(col);
    rows.data.push_back(v);
  }
  void end_row() {
    const std::int64_t b = rows.indptr.back(), e = static_cast<std::int64_t>(rows.indices.size());
    for (std::int64_t a = b + 1; a < e; ++a)  // rows are short: insertion sort
      for (std::int64_t p = a; p > b && rows.indices[p - 1] > rows.indices[p]; --p) {
        std::swap(rows.indices[p - 1], rows.indices[p]);
        std::swap(rows.data[p - 1], rows.data[p]);
      }
    rows.indptr.push_back(e);
    ++rows.nrows;
  }
};

}  // namespace commsolve
