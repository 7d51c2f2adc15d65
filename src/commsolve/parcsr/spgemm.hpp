// Distributed sparse products on row-distributed matrices (issue 13; thesis Chapter 6):
// C = A B, where the rows of B that A's off-process columns name travel to A's ranks as
// variable-length records along a halo plan of any strategy, and C = P^T M, where each rank
// forms its local P^T M and the rows of C it does not own travel back to their owners along
// P's halo plan in reverse (the Galerkin triple product is P^T (A P)). Both multiply locally
// with a dense accumulator over the columns that actually occur (Gustavson's algorithm).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/parcsr/par_csr.hpp"

namespace commsolve {

// A product's rows are GlobalRows (par_csr.hpp): global column indices, ascending in each
// row, exact zeros dropped (as scipy does) unless asked to keep them.

// One (column, value) pair of a sparse row: the record unit of row exchanges.
struct RowEntry {
  std::int64_t col;
  double val;
};

struct ProductResult {
  GlobalRows rows;
  CommPlan plan;       // the plan the rows travelled along
  CommStats recorded;  // what went through MPI (reverse direction for transpose_rows)
};

// This rank's rows of A B. Collective on comm (A's communicator). A's column distribution
// must equal B's row distribution. `strategy` names the plan for A's halo pattern
// ("standard", "node-aware", "node-aware-2step", "auto"). A plan of an earlier product with
// the same A (`reuse`, e.g. a numeric re-setup) skips building one: no collective then.
// `keep_zeros` keeps entries that cancel to exactly 0 (the structural product: an
// intermediate result whose structure must not depend on rounding). Each row's columns come
// ascending, unless the result is an `intermediate` (summed again: columns in the order of
// first appearance).
ProductResult spgemm(const ParCsr& A, const ParCsr& B, const std::string& strategy, MPI_Comm comm,
                     const CommPlan* reuse = nullptr, bool keep_zeros = false, bool intermediate = false);

// The rows of B that A's halo columns name, in A's halo order (global columns, each row in
// B's storage order), fetched along A's halo plan (`reuse`: A's own, then no collective
// builds one). Collective. A's column distribution must equal B's row distribution.
ProductResult halo_rows(const ParCsr& A, const ParCsr& B, const std::string& strategy, MPI_Comm comm,
                        const CommPlan* reuse = nullptr);

// This rank's rows of the Galerkin product P^T A P, distributed as P's columns. Collective.
// A P is formed with A's halo plan fetching P's rows (`plan_ap`), then each rank's rows of
// P^T (A P) for coarse columns it does not own travel to their owners along P's halo plan in
// reverse (`plan_rap`) and are summed there. A's rows and columns and P's rows must be
// distributed alike. The rows come over the result's column space [owned | halo] (`halo`:
// the other ranks' columns, ascending), as a ParCsr takes them: no global index formed
// again. `reuse_ap`, `reuse_rap`: plans of an earlier product with the same structure, as
// for spgemm.
struct GalerkinResult {
  LocalCsr rows;
  std::vector<std::int64_t> halo;
  CommPlan plan_ap, plan_rap;
  CommStats recorded_ap, recorded_rap;  // forward (P's rows), reverse (the partial rows)
};
GalerkinResult galerkin(const ParCsr& A, const ParCsr& P, const std::string& strategy, MPI_Comm comm,
                        const CommPlan* reuse_ap = nullptr, const CommPlan* reuse_rap = nullptr);

// This rank's rows of A^T (distributed as A's columns; global columns, ascending).
// Collective: the entries in halo columns travel to the columns' owners along A's plan in
// reverse. `reuse` as for spgemm (e.g. A's own halo plan: then no collective builds one).
ProductResult transpose_rows(const ParCsr& A, const std::string& strategy, MPI_Comm comm,
                             const CommPlan* reuse = nullptr);

}  // namespace commsolve
