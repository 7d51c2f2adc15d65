// One level of the classical AMG setup as one C++ pipeline: strength of connection, the
// strength graphs, PMIS or HMIS splitting, the coarse numbering, extended+i or direct
// interpolation truncated — or, on an aggressive level, a second split and multipass
// interpolation (aggressive.hpp) — and the Galerkin product P^T A P, each exchange on its own plan; no
// level data leaves C++ between the steps (issue 29). The steps are the functions the
// Python layer also calls one by one (strength.hpp, independent_sets.hpp,
// interpolation.hpp, spgemm.hpp), so both give the same hierarchy.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commsolve/multigrid/aggressive.hpp"
#include "commsolve/parcsr/par_csr.hpp"
#include "commsolve/parcsr/spgemm.hpp"

namespace commsolve {

struct ClassicalLevelOptions {
  double theta = 0.25;      // strength threshold
  bool hmis = false;        // a Ruge-Stueben first pass within each rank before PMIS's rounds
  std::uint64_t seed = 0;   // of the points' random weights (hash of their fine-grid index)
  double trunc = 0.0;       // truncation factor of P (0: none)
  int pmax = 4;             // most entries per row of P, more only where entries tie (0: no limit)
  bool direct = false;      // direct interpolation in place of extended+i
  bool aggressive = false;  // a second split and multipass interpolation (no truncation: hypre's default)
  std::string strategy = "standard";         // halo plans of S, S + S^T and P (the level's strategy)
  std::string product_strategy = "standard"; // the Galerkin product's two exchanges
  std::string result_strategy = "standard";  // the coarse operator's own halo plan
};

struct ClassicalLevel {
  std::vector<double> state;                  // per owned point: kCoarse or kFine
  std::vector<std::int64_t> coarse_offsets;   // the coarse Distribution's P + 1 offsets
  std::unique_ptr<ParCsr> P, Ac;              // null when the level does not coarsen (the coarsest)
  CommPlan plan_ap, plan_rap;                 // the Galerkin product's exchanges (plans and what
  CommStats recorded_ap, recorded_rap;        //   went through MPI), as galerkin() reports them
  std::vector<ProductExchange> setup_exchanges;  // an aggressive level's products: the second
                                                 //   split's, then multipass's passes 2, 3, ...
  // Seconds of each step on this rank: "strength" (the rows and their strong entries),
  // "graphs" (S and S + S^T), "split" (first pass, PMIS rounds, coarse numbering),
  // "interpolation" (extended+i, truncation, P built), "galerkin" (P^T A P built).
  std::vector<std::pair<std::string, double>> times;
};

// A number in [0, 1) per global index, the same on every rank (splitmix64 of id and seed):
// the random part of a point's PMIS weight.
double hash_uniform(std::int64_t id, std::uint64_t seed);

// Collective on comm. The PMIS (or, `hmis`, HMIS) split of A's points from its strength
// graphs (strength_graphs: G = S + S^T, S, |S^T_i|): weights |S^T_i| + hash_uniform(id_i),
// points nobody depends on start fine; HMIS: the Ruge-Stueben first pass's coarse points
// with no strong connection to another rank's point start coarse. kCoarse or kFine per point.
std::vector<double> classical_split(ParCsr& G, ParCsr& S, const std::vector<double>& depends_on_me,
                                    const std::int64_t* ids, std::uint64_t seed, bool hmis, MPI_Comm comm);

// Collective on comm. Coarse points (state kCoarse) numbered in local order after those of
// lower ranks: the coarse Distribution's offsets, and every column-space entry's coarse
// index (owned, then A's halo through its exchange; -1: fine).
struct CoarseNumbering {
  std::vector<std::int64_t> offsets, coarse;
};
CoarseNumbering coarse_numbering(ParCsr& A, const std::vector<double>& state, MPI_Comm comm);

// Collective on comm. Level k -> k + 1 of the classical hierarchy for the square operator A
// (rows and columns distributed alike, its diagonal checked nonzero by the caller). `ids`:
// each owned point's fine-grid index. Coarse points are numbered in local order after
// those of lower ranks. P and Ac are built only when the split coarsens (0 < coarse < rows).
// Aggressive: the split is the second split over the first's coarse points, the times'
// "split" covers both, "interpolation" the multipass passes.
ClassicalLevel classical_level(ParCsr& A, const std::int64_t* ids, const ClassicalLevelOptions& options,
                               MPI_Comm comm);

}  // namespace commsolve
