// Sparsified coarse operators (thesis Chapter 4): the lumping of Falgout and Schroder's
// non-Galerkin sparsification (thesis Algorithm 4.1), whose dropped entries go to strong
// neighbours. Which entries are kept, their symmetrization and diagonal lumping (Algorithm
// 4.1b) are vectorized in Python (commsolve/amg/sparsify.py); this loop over neighbours of
// neighbours is not.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/multigrid/strength.hpp"
#include "commsolve/parcsr/par_csr.hpp"

namespace commsolve {

struct Lumped {
  GlobalRows rows;                      // this rank's rows of L (global columns, ascending)
  std::vector<std::uint8_t> must_keep;  // per entry of L's input rows: dropped, but no strong neighbour takes it
  CommStats recorded;                   // the halo-row fetch
};

// Collective on comm (A's). A: square, rows and columns distributed alike; L: A's rows over
// its column space (ParCsr::merged_rows); keep: 1 for each of L's entries the sparsified
// operator keeps (the diagonal among them; symmetric across ranks). For each dropped a_ij,
// W = the strong neighbours k of j (classical strength of row j with `theta`, j's row
// fetched along A's halo plan when another rank owns it) among the off-diagonal entries
// row i keeps; L_ik += a_ij |a_jk| / sum over W of |a_jm|. When W is empty the entry is
// marked must_keep instead (the thesis: an entry needs strong neighbours to be removed;
// hypre keeps it too): the caller keeps it and its transpose and calls again. It forms
// A_hat = kept + L + L^T - diag(row sums of L^T): symmetric, row sums kept.
Lumped lump_to_strong_neighbours(const ParCsr& A, const LocalRowsView& L, const std::uint8_t* keep, double theta,
                                 MPI_Comm comm);

}  // namespace commsolve
