// One rank's share of the LU factors in a distributed triangular solve: the blocks of the
// supernodes its grid holds (its forests, direct/forests.hpp; every supernode in 2D),
// block-cyclic inside its layer, in one array laid out by LocalLayout2D; and where the
// solution of each supernode whose diagonal block it owns sits in its solve vector.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "commsolve/core/huge_pages.hpp"
#include "commsolve/direct/block_layout.hpp"
#include "commsolve/direct/forests.hpp"
#include "commsolve/direct/supernodal_lu.hpp"

namespace commsolve {

struct BlockStore {
  LocalLayout2D layout;
  ZeroedArray<double> values;             // layout.total entries
  std::vector<std::int64_t> diag_index;   // supernode -> index in layout.diag_sn (-1 elsewhere)
  std::vector<std::int64_t> sol_off;      // per diagonal supernode: its first row in the solve vector
  std::int64_t sol_rows = 0;              // rows of the solve vector (sum of the diagonal widths)
};

// The two triangles of a diagonal block inverted in place (LAPACK dtrtri; w x w each,
// column-major): `l` unit lower, `u` upper. Applied to L11 and U11 it gives their inverses,
// applied to the inverses the factors back. std::runtime_error on a zero on u's diagonal.
void invert_triangles(std::int64_t w, double* l, double* u);

// inv(L11) then inv(U11) (w x w each, column-major) into `out` from the LU of a diagonal
// block (L11 unit lower, U11 upper; `lu` must not overlap `out`): the form the solve
// applies by one product.
void invert_diagonal_block(std::int64_t w, const double* lu, double* out);

// Copies the blocks `layout` places on one rank out of the serial factors into `out`
// (layout.total values); the diagonal blocks go as inv(L11) and inv(U11), computed here, so
// the solve applies them by GEMM.
void pack_blocks(const SupernodalLU& lu, const SupernodeBlocks& blocks, const LocalLayout2D& layout, double* out);

// The layout of `rank`'s store (values not filled). Local.
BlockStore block_store_layout(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid3D& grid,
                              const ForestPartition& forests, int rank);

// Collective on comm: `lu` (the serial factors, given on `root` only) packs every rank's
// blocks there and sends them, one (chunked) message per rank; every rank's `store` (from
// block_store_layout) receives its values. (The distributed factorization, factor3d.hpp,
// leaves every rank with its store filled instead.)
void distribute_blocks(MPI_Comm comm, int root, const SupernodalLU* lu, const SupernodeBlocks& blocks,
                       const ProcessGrid3D& grid, const ForestPartition& forests, BlockStore& store);

}  // namespace commsolve
