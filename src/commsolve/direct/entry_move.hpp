// A's entries on their way to the ranks that factor them: the first step of the 3D
// factorization (direct/factor3d.hpp). Entry (i, j) of the permuted, scaled matrix goes to
// the rank holding its block (I, J), I and J the supernodes of row i and column j: on the
// lowest grid sharing the forest of supernode min(I, J), layer rank (I mod Px, J mod Py).
//
// The move is a plan like every other (DESIGN.md rule 1): who sends how many entries to whom
// is a halo pattern whose send side each rank knows and whose receive side one exchange of
// counts completes (as a halo pattern's send side is completed), made a standard CommPlan and
// run by the halo executor, each entry two values (its row and column packed into one, its
// value). So it is counted as it goes through MPI, and its plan knows its statistics.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/direct/factor_grid.hpp"
#include "commsolve/direct/solve_layout.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

// An entry travels as two values: its row and column packed into one, and its value.
inline constexpr int entry_bytes = 16;

// This rank's rows of A as entries of the permuted, scaled matrix the factorization reads:
// A's entry (r, c), in local row i (r = row_of[i]) of the CSR `indptr`/`indices`/`data`
// (global columns), becomes (k, l) = (inv(row_order)[r], inv(col_order)[c]) with value
// row_scale[r] a_rc col_scale[c]; stored zeros are left out (the symbolic pattern may lack
// them). One pass, local. Throws std::invalid_argument for a row, column or order outside
// the n unknowns.
struct PermutedEntries {
  std::vector<std::int32_t> rows, cols;
  std::vector<double> values;
};
PermutedEntries permuted_entries(std::int64_t n, std::int64_t local_rows, const std::int64_t* indptr,
                                 const std::int32_t* indices, const double* data, const std::int64_t* row_of,
                                 const std::int32_t* row_order, const std::int32_t* col_order,
                                 const double* row_scale, const double* col_scale);

// The rank that factors each entry (rows[e], cols[e]) of the permuted matrix. Local; throws
// std::invalid_argument for an entry outside the matrix.
std::vector<int> entry_destinations(const SolveLayout& layout, const EntryTriples& entries);

struct MovedEntries {
  std::vector<std::int32_t> rows, cols;  // the entries this rank factors (its own included)
  std::vector<double> values;
  StepStats recorded;                    // what went through MPI (sends as posted, receives by status)
  EntryTriples triples() const {
    return EntryTriples{static_cast<std::int64_t>(values.size()), rows.data(), cols.data(), values.data()};
  }
};

// Collective on comm (the layout's grid.size() ranks). Sends this rank's entries (`mine`,
// any of the matrix's) to the ranks that factor them. Bad input is agreed before anything
// moves: an entry outside the matrix on any rank, or more entries between two ranks than
// MPI's counts of bytes reach (2^31 - 1 bytes), throws std::invalid_argument on every rank
// (the message on the rank where it was found, "on another rank" elsewhere).
MovedEntries move_entries(MPI_Comm comm, const Topology& topo, const SolveLayout& layout, const EntryTriples& mine);

}  // namespace commsolve
