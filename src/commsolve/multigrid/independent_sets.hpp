// The parallel independent-set rounds of AMG coarsening, run in C++ with the halo exchanges
// of the strength graph's own plans: PMIS C/F splitting (De Sterck, Yang, Heys, "Reducing
// complexity in parallel algebraic multigrid preconditioners", SIMAX 2006; hypre's
// hypre_BoomerAMGCoarsenPMIS) and smoothed aggregation's roots (a distance-2 maximal
// independent set, Bell, Dalton, Olson 2012, then MueLu's phase 2a). Every choice depends on
// the weights and the global graph only, never on the partition.
#pragma once

#include <mpi.h>

#include <vector>

#include "commsolve/parcsr/par_csr.hpp"

namespace commsolve {

// Point states (doubles: they travel through the halo exchange).
inline constexpr double kUndecided = 0.0, kCoarse = 1.0, kFine = -1.0;

// Collective on comm. `state`: this rank's points, kFine for those nobody depends on, the
// rest kUndecided or (HMIS) kCoarse for coarse points chosen beforehand, next to which
// undecided points become fine before the first round; returned decided. `weight`: each
// point's weight (distinct across the graph). G: the pattern of S + S^T, S: the strength matrix (rows: the points that depend on
// the columns), both over the same rows. Each round, an undecided point whose weight beats
// every undecided neighbour in G becomes coarse; then undecided points with a strong
// connection to a coarse point become fine; until no rank has an undecided point.
std::vector<double> pmis_split(ParCsr& G, ParCsr& S, const std::vector<double>& weight,
                               std::vector<double> state, MPI_Comm comm);

// The first pass of Ruge-Stueben coarsening over this rank's own points (S's diagonal block:
// strong connections to points it owns), the first stage of HMIS (hypre's coarsening 10,
// hypre_BoomerAMGCoarsenRuge's first pass): the measure of a point is how many undecided or
// fine points depend on it. Points with measure 0 become fine first, in index order, each
// point they depend on gaining one. Then the undecided point with the largest measure (ties:
// the longest in its bucket) becomes coarse, the undecided points that depend on it fine
// (what they depend on gains one), and what it depends on loses one (at 0: fine). Local.
// Returns 1 for the coarse points.
std::vector<char> rs_first_pass(const ParCsr& S);

// Root kinds of smoothed aggregation (per owned point).
inline constexpr std::int8_t kNotRoot = 0, kFirstRoot = 1, kLaterRoot = 2;

// Collective on comm. G: the symmetric strength graph (no diagonal), `weight` distinct.
// First, in rounds, an undecided point whose weight is the largest among the undecided
// points within distance 2 becomes a root and every point within distance 2 of it leaves the
// race (points without neighbours never take part). Then, among the points with neighbours
// that no first root neighbours ("left"), in rounds: a left point with at least
// `min_left_neighbours` left neighbours is a candidate; a candidate heavier than every
// candidate within distance 2 through left points becomes a root and it and its left
// neighbours stop being left.
std::vector<std::int8_t> aggregate_roots(ParCsr& G, const std::vector<double>& weight, int min_left_neighbours,
                                         MPI_Comm comm);

}  // namespace commsolve
