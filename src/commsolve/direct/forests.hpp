// The 3D process grid and the supernodal forests it maps (SC'23 paper, Section 2.2 and
// Fig. 1; Sao et al., ICS'19; SuperLU_DIST's d3DPartition.c and supernodalForest.c).
//
// Px x Py x Pz ranks form Pz layers, each a Px x Py grid (rank = z Px Py + row Py + col).
// The supernodal elimination tree is split into 2 Pz - 1 forests in heap order (root 0,
// children 2t + 1 and 2t + 2): grid z owns the leaf forest Pz - 1 + z and shares every
// ancestor forest with the other grids below it. A forest's level counts from the leaves:
// grid z's forest at level l is its leaf forest's l-th heap ancestor, and the grids sharing
// a level-l forest are 2^l consecutive ones, the lowest of which is its "owner" (the one
// that solves it in the baseline algorithm and that holds its part of b and x).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/direct/block_layout.hpp"
#include "commsolve/direct/symbolic.hpp"

namespace commsolve {

struct ProcessGrid3D {
  int px = 1, py = 1, pz = 1;
  int layer_size() const { return px * py; }
  int size() const { return px * py * pz; }
  int z_of(int rank) const { return rank / layer_size(); }
  ProcessGrid2D layer(int z) const { return ProcessGrid2D{px, py, z * px * py}; }
};

// Throws std::invalid_argument unless every dimension is positive and pz a power of two;
// `spelled` names the grid in the message (default: PxQxR).
void check_grid_3d(const ProcessGrid3D& grid, const std::string& spelled = "");
// log2(pz), the levels below the root forest; throws unless pz is a power of two.
int forest_levels(int pz);

struct ForestPartition {
  int pz = 1;
  int nlev = 0;                       // log2(pz): levels run 0 (leaves) .. nlev (the root forest)
  std::vector<std::int32_t> forest;   // per supernode, its forest's heap index in [0, 2 pz - 1)

  int num_forests() const { return 2 * pz - 1; }
  // Heap index of grid z's forest at level l.
  int forest_at(int z, int l) const { return ((pz + z) >> l) - 1; }
  int level_of(int f) const;
  // The lowest grid sharing forest f.
  int lowest_grid(int f) const { return ((f + 1) << level_of(f)) - pz; }
  // Per supernode: 1 where it lies in grid z's forests at levels lo..hi.
  std::vector<char> mask(int z, int lo, int hi) const;
  std::vector<char> mask(int z) const { return mask(z, 0, nlev); }
  // Throws std::invalid_argument unless the partition fits `parent` (supernodal etree, -1 at
  // roots): every supernode's parent lies in its own forest or in an ancestor forest, which
  // is what lets each grid solve its forests without the other grids' blocks.
  void validate(const std::vector<std::int32_t>& parent) const;
};

// The partition of `forest` ids for pz layers, checked against the structure (one id per
// supernode, the ancestor property).
ForestPartition checked_forests(const SupernodalStructure& sym, std::vector<std::int32_t> forest, int pz);


// `nd`: the top log2(pz) levels of a nested-dissection separator tree (given by its nodes'
// children, -1 at leaves, and the supernode range [sn_first, sn_last) each node holds): a
// node at depth d < log2 pz is forest (its heap index), deeper nodes join the forest of
// their ancestor at depth log2 pz. A leaf above that depth leaves the grids below it empty.
ForestPartition nd_forests(std::int64_t nsuper, int pz, int root, const std::vector<int>& left,
                           const std::vector<int>& right, const std::vector<std::int64_t>& sn_first,
                           const std::vector<std::int64_t>& sn_last);

// `greedy` (SuperLU_DIST's SUPERLU_LBS=GD with its size x depth weight): per level, the
// subtrees at hand are split into two bins greedily (heaviest first, into the lighter bin);
// while the bins differ by more than `imbalance` of their total, the heaviest subtree's
// chain of single-child supernodes and the branching supernode below it move into the
// level's ancestor forest and its children replace it.
ForestPartition greedy_forests(const SupernodalStructure& sym, int pz, double imbalance = 0.2);  // 0 <= imbalance < 1

}  // namespace commsolve
