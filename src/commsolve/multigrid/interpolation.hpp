// Extended+i interpolation (De Sterck, Falgout, Nolting, Yang, "Distance-two interpolation
// for parallel algebraic multigrid", NLAA 2008; hypre's BuildExtPIInterp), distributed: a fine
// point interpolates from its strong coarse neighbours and from those of its strong fine
// neighbours, so that PMIS's sparse coarse grids still interpolate well. The rows of A that
// off-process strong fine neighbours hold travel as records along A's own halo plan.
#pragma once

#include <mpi.h>

#include <cstdint>

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

}  // namespace commsolve
