// The leaves of a separator tree built on one rank, ordered on several (issue 35: the serial
// path's nested dissection). The rank that holds the matrix computes the top separators
// (separator_tree with unordered leaves, METIS_ComputeVertexSeparator: a fraction of a whole
// METIS_NodeND), then each leaf's subgraph goes to a rank of its own, which orders it by
// METIS_NodeND while the others order theirs, and the orders come back. The result is the
// ordering separator_tree would have computed alone: the same subgraphs, numbered alike, go
// to the same METIS calls.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "commsolve/direct/separator_tree.hpp"

namespace commsolve {

// Collective on `comm`. On `root`, `tree` is separator_tree(..., order_leaves = false) of the
// graph xadj/adjncy; elsewhere neither is read. The i-th leaf from the left is ordered on rank
// (root + i) mod P (with at most P leaves, one a rank; a rank receives all of its leaves, then
// orders them, then sends their orders back). On return root's `tree.perm` holds every leaf's
// order; the other ranks' `tree` is unchanged. Every rank throws the same
// std::invalid_argument, once every message has arrived, where a leaf's ordering failed on
// any rank, or at once where root gives a non-empty `refusal` (what is wrong with its input).
// Returns this rank's seconds inside METIS.
double order_leaves_on_ranks(MPI_Comm comm, int root, const std::int32_t* xadj, const std::int32_t* adjncy,
                             SeparatorTree& tree, const std::string& refusal = "");

}  // namespace commsolve
