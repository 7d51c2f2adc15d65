// What parallel selected inversion moves on a Px x Py grid (PSelInv; Jacquelin, Lin and Yang),
// as restricted collectives over the 2D block-cyclic layout of the factors: L(J, K) on
// (J mod Px, K mod Py), U(K, J) on (K mod Px, J mod Py), and Z = (L U)^-1's blocks where the
// factors' blocks are.
//
// For supernode K with structure S (its blocks, by row supernode J), R_x are the blocks of S
// with J mod Px = x and C_y those with J mod Py = y; rank (x, y) holds Z(R_x, C_y) once K's
// ancestors are done. With L^ = L(S, K) L_KK^-1 and U^ = U_KK^-1 U(K, S):
//   Z(R_x, K) = -sum_y Z(R_x, C_y) L^(C_y, K)      (Col-Bcast of L^(C_y)^T, Row-Reduce)
//   Z(K, C_y) = -sum_x U^(K, R_x) Z(R_x, C_y)      (Row-Bcast of U^(R_x), Col-Reduce)
//   Z(K, K)   = (L_KK U_KK)^-1 - sum_x U^(K, R_x) Z(R_x, K)   (reduced down K's process column)
// The symmetric form (A = A^T, symmetric scaling and ordering: U^ = L^^T) broadcasts U^ down
// the columns (the paper's Col-Bcast), computes the first and third lines only, and sends
// each Z(J, K) block's transpose to where Z(K, J) lives. The unsymmetric form first sends
// each L^ block to the process row of K and each U^ block to its process column (the
// paper's cross-diagonal step).
//
// Two phases, each one set of collectives: `prepare` (the diagonal blocks' inverse triangles
// to the L and U owners, the cross-diagonal sends) and `invert` (the rest, per supernode).
// A point-to-point send is a collective of two (one where source and destination agree).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/direct/block_layout.hpp"
#include "commsolve/topology/topology.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

// Each collective's role, which is also its statistics step.
enum SelinvRole : std::int8_t {
  selinv_inv_l = 0,        // L_KK^-1 down K's process column to its L owners (prepare)
  selinv_inv_u = 1,        // U_KK^-1 along K's process row to its U owners (prepare)
  selinv_cross_l = 2,      // L^ blocks (x, y) from (x, K mod Py) to (K mod Px, y) (prepare, unsymmetric)
  selinv_cross_u = 3,      // U^ blocks (x, y) from (K mod Px, y) to (x, K mod Py) (prepare, unsymmetric)
  selinv_col_bcast = 4,    // L^(C_y, K)^T from (K mod Px, y) down process column y
  selinv_row_bcast = 5,    // U^(K, R_x) from (x, K mod Py) along process row x (unsymmetric)
  selinv_row_reduce = 6,   // Z(R_x, K) to (x, K mod Py)
  selinv_col_reduce = 7,   // Z(K, C_y) to (K mod Px, y) (unsymmetric)
  selinv_diag_reduce = 8,  // Z(K, K) to K's diagonal owner
  selinv_transpose = 9,    // Z(J, K)^T blocks (x, y) from (x, K mod Py) to (K mod Px, y) (symmetric)
};
inline constexpr int selinv_steps = 10;
const std::vector<std::string>& selinv_role_names();

struct SelinvPhase {
  CollectiveSet set;                 // collectives ordered by supernode
  std::vector<std::int32_t> sn;      // per collective: its supernode K
  std::vector<std::int8_t> role;     // SelinvRole
  std::vector<std::int32_t> gx, gy;  // its process row x / column y (-1 where the role has none)
  std::vector<std::int64_t> sn_ptr;  // supernode K's collectives: [sn_ptr[K], sn_ptr[K + 1])
};

struct SelinvPlan {
  bool symmetric = false;
  SelinvPhase prepare, invert;
};

SelinvPlan selinv_plan(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& grid,
                       bool symmetric);

// Supernode K's structure cut by process row and column: rows[x] = |R_x|, cols[y] = |C_y|,
// and per block of K (in order) its first position in R_(its x) and in C_(its y).
struct SupernodeSplit {
  std::vector<std::int64_t> rows, cols;
  std::vector<std::int64_t> at_row, at_col;
  void compute(const SupernodeBlocks& blocks, const ProcessGrid2D& grid, std::int64_t k);
};

// Rows of supernode K's structure in the blocks whose supernode is `at` modulo `p`: |R_x|
// (at = x, p = Px) or |C_y| (at = y, p = Py), one of SupernodeSplit's entries alone.
std::int64_t structure_share(const SupernodeBlocks& blocks, std::int64_t k, int at, int p);

// A rank's products for supernode K, cut into pieces at K's block boundaries once about
// `selinv_piece_flops` have gathered (one large block may make a larger piece) (the message engine handles arrivals between pieces, so that a rank inside a
// long product still forwards what its trees pass through it): piece p covers blocks
// [bounds[p], bounds[p + 1]) of K (positions in K's list; those of process column y are its
// columns). Both forms; `width` is K's.
inline constexpr double selinv_piece_flops = 2.0 * 1024 * 1024;
std::vector<std::int64_t> product_pieces(const SupernodeBlocks& blocks, const ProcessGrid2D& grid, std::int64_t k,
                                         std::int64_t width, int x, int y, bool symmetric);

// Every rank's planned statistics of both phases, steps as SelinvRole (each message an 8-byte
// key and the collective's doubles).
std::vector<CommStats> selinv_stats_virtual(const SelinvPlan& plan, const TreeShape& shape, const Topology& topo);

}  // namespace commsolve
