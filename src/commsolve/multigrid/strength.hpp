// Strength of connection for classical AMG and the graphs its coarsening walks: the strong
// entries of a rank's rows (hypre's classical measure), the strength matrix S as a ParCsr,
// and S + S^T (a point's neighbours in either direction) with how many points depend on
// each point (the columns of S^T travel to their owners along S's halo plan in reverse).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "commsolve/parcsr/par_csr.hpp"

namespace commsolve {

// A rank's rows over its column space (owned columns' local indices, then n_owned + the halo
// index), borrowed: ParCsr::space_rows's layout.
struct LocalRowsView {
  std::int64_t nrows;
  const std::int32_t* indptr;
  const std::int32_t* indices;
  const double* data;
};

// The classical strength rule on one row of n entries: mark(p) for each strong entry p,
// a_ij (j != i) with -s a_ij >= theta max_k (-s a_ik) over k != i, s the sign of a_ii, in a
// row whose largest such value is positive (pyamg's norm='min'). is_diag(p) and value(p)
// read entry p.
template <class IsDiag, class Value, class Mark>
void strong_in_row(std::int64_t n, const IsDiag& is_diag, const Value& value, double theta, const Mark& mark) {
  double diag = 0.0;
  for (std::int64_t p = 0; p < n; ++p)
    if (is_diag(p)) diag += value(p);
  const double s = diag < 0 ? 1.0 : diag > 0 ? -1.0 : 0.0;  // -sign(a_ii)
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t p = 0; p < n; ++p)
    if (!is_diag(p)) m = std::max(m, s * value(p));
  if (!(m > 0)) return;
  for (std::int64_t p = 0; p < n; ++p)
    if (!is_diag(p) && s * value(p) >= theta * m) mark(p);
}

// 1 for each strong entry of L's rows (strong_in_row).
std::vector<std::uint8_t> classical_strength(const LocalRowsView& L, double theta);

struct StrengthGraphs {
  std::unique_ptr<ParCsr> S;          // the strong entries (ones), A's distributions
  std::unique_ptr<ParCsr> G;          // the pattern of S + S^T (ones)
  std::vector<double> depends_on_me;  // per owned point: |S^T_i|
};

// Collective on comm. `strong` masks L's entries (L: A's rows as above); both graphs get
// halo plans of `strategy`.
StrengthGraphs strength_graphs(const ParCsr& A, const LocalRowsView& L, const std::uint8_t* strong,
                               const std::string& strategy, MPI_Comm comm);

// Collective on comm. The graphs of a strength matrix S given whole (no diagonal entries;
// its diagonal block's rows sorted, as ParCsr's constructors leave them); G's halo plan is
// built for `strategy`.
StrengthGraphs strength_graphs(std::unique_ptr<ParCsr> S, const std::string& strategy, MPI_Comm comm);

}  // namespace commsolve
