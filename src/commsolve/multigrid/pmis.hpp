// PMIS C/F splitting (De Sterck, Yang, Heys, "Reducing complexity in parallel algebraic
// multigrid preconditioners", SIMAX 2006; hypre's hypre_BoomerAMGCoarsenPMIS), the rounds
// run in C++ with the halo exchanges of the strength graph's own plans.
#pragma once

#include <mpi.h>

#include <vector>

#include "dist/par_csr.hpp"

namespace commsolve {

// Point states (doubles: they travel through the halo exchange).
inline constexpr double kUndecided = 0.0, kCoarse = 1.0, kFine = -1.0;

// Collective on comm. `state`: this rank's points, kFine for those nobody depends on, the
// rest kUndecided; returned decided. `weight`: each point's weight (distinct across the
// graph). G: the pattern of S + S^T, S: the strength matrix (rows: the points that depend on
// the columns), both over the same rows. Each round, an undecided point whose weight beats
// every undecided neighbour in G becomes coarse; then undecided points with a strong
// connection to a coarse point become fine; until no rank has an undecided point.
std::vector<double> pmis_split(ParCsr& G, ParCsr& S, const std::vector<double>& weight,
                               std::vector<double> state, MPI_Comm comm);

}  // namespace commsolve
