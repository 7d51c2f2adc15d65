// One rank's share of the LU factors in a distributed triangular solve: the blocks of the
// supernodes its grid holds (its forests, direct/forests.hpp; every supernode in 2D),
// block-cyclic inside its layer, in one array laid out by LocalLayout2D; and where the
// solution of each supernode whose diagonal block it owns sits in its solve vector.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/huge_pages.hpp"
#include "direct/block_layout.hpp"
#include "direct/forests.hpp"
#include "direct/supernodal_lu.hpp"

namespace commsolve {

struct BlockStore {
  LocalLayout2D layout;
  HugeVector<double> values;              // layout.total entries
  std::vector<std::int64_t> diag_index;   // supernode -> index in layout.diag_sn (-1 elsewhere)
  std::vector<std::int64_t> sol_off;      // per diagonal supernode: its first row in the solve vector
  std::int64_t sol_rows = 0;              // rows of the solve vector (sum of the diagonal widths)
};

// The layout of `rank`'s store (values not filled). Local.
BlockStore block_store_layout(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid3D& grid,
                              const ForestPartition& forests, int rank);

// Collective on comm: `lu` (the serial factors, given on `root` only) packs every rank's
// blocks there and sends them, one (chunked) message per rank; every rank's `store` (from
// block_store_layout) receives its values. With root < 0 the factors are given on each
// layer's first rank instead (those of its layer's forests: the 3D factorization's output),
// which serves its own layer.
void distribute_blocks(MPI_Comm comm, int root, const SupernodalLU* lu, const SupernodeBlocks& blocks,
                       const ProcessGrid3D& grid, const ForestPartition& forests, BlockStore& store);

}  // namespace commsolve
