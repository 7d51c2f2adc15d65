// Aggressive coarsening for classical AMG (hypre BoomerAMG's agg_num_levels; Stueben 2001,
// section A.7), the two steps classical_level runs in its place on an aggressive level.
//
// The coarse grid is chosen twice. A first PMIS or HMIS split of the strength graph S gives
// the points C1; a second split over C1 alone, on the graph of distance-two strength (i in
// C1 depends on j in C1 when S has a path of length one or two from i to j: hypre's second
// strength with one path), keeps the coarse points C2, about a quarter of C1 in 2D. The
// graph is one distributed product, S_C (I + S) Inj: S's rows of C1 times the local
// (I + S) Inj (Inj the injection onto C1: each row's strong C1 neighbours, and itself if in
// C1). A C1 point with no neighbour in the second graph stays coarse, as in hypre's second
// stage. With PMIS both splits hash the points' fine-grid identities, so the coarse grid
// does not depend on the partition; HMIS makes it depend on it.
//
// Interpolation onto C2 is multipass (Stueben's; hypre's agg_interp_type 4, its default,
// normalizes the later passes' rows differently where the neighbours' rows do not sum to
// one, near Dirichlet boundaries). A point of pass k (strongly depending on a point of pass
// k - 1 and on none of an earlier pass; C2 is pass 0), with J_i its strong dependencies of
// pass k - 1, interpolates through their rows: P_i = -(sum_{j != i} a_ij) / (a_ii
// sum_{j in J_i} a_ij) sum_{j in J_i} a_ij P_j, the couplings outside J_i lumped onto J_i
// in proportion. Pass 1 reads its coarse neighbours directly; each later pass is one
// distributed product M_k P (M_k: A's couplings of pass-k points to their J_i). Rows no
// pass reaches within kMaxPasses, or whose J_i couplings sum to zero, stay empty.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/multigrid/strength.hpp"
#include "commsolve/parcsr/par_csr.hpp"

namespace commsolve {

// hypre's: points not reached within 10 passes keep an empty interpolation row.
inline constexpr int kMaxPasses = 10;

// One distributed product's row exchange during an aggressive level's setup: the plan it
// ran along, what went through MPI, and the halo (global columns) of the product's left
// factor, whose plan it is.
struct ProductExchange {
  std::string kernel;
  CommPlan plan;
  CommStats recorded;
  std::vector<std::int64_t> halo;
};

// A rank's view of a split level: A's rows over its column space (L), their strong entries,
// each column-space entry's coarse global index (-1: fine), and the split. Borrowed.
struct SplitView {
  LocalRowsView L;
  const std::uint8_t* strong;
  const std::int64_t* coarse;
  const std::vector<double>& state;  // kCoarse or kFine per owned point
};

// Collective on comm. The second split over the first split's coarse points (`first`, with
// its coarse Distribution `first_dist`): kCoarse only where both splits chose the point.
// `ids`: the points' fine-grid identities (the second split's weights hash those of C1).
// The product's exchange is appended to `exchanges`.
std::vector<double> second_split(const ParCsr& A, const SplitView& first, const Distribution& first_dist,
                                 const std::int64_t* ids, std::uint64_t seed, bool hmis, const std::string& strategy,
                                 MPI_Comm comm, std::vector<ProductExchange>& exchanges);

// Collective on comm. Each owned point's multipass pass (0 for coarse points, -1 for points
// no pass reaches), then the same over A's halo: n_owned + n_halo values.
std::vector<std::int64_t> multipass_passes(ParCsr& A, const SplitView& split, MPI_Comm comm);

// Collective on comm. The rank's rows of the multipass interpolation onto the coarse points
// of `split` (global coarse columns, ascending in each row; `coarse_dist` the coarse
// Distribution). Each product's exchange (passes 2, 3, ...) is appended to `exchanges`.
GlobalRows multipass_interpolation(ParCsr& A, const SplitView& split, const Distribution& coarse_dist,
                                   const std::string& strategy, MPI_Comm comm,
                                   std::vector<ProductExchange>& exchanges);

}  // namespace commsolve
