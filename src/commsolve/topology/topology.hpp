// Topology: which node every rank lives on (DESIGN.md rule 3).
//
// Built from a communicator (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), from a virtual
// processes-per-node setting, or from an explicit rank -> node list; the last two need no
// MPI, so plans for 100,000 virtual ranks can be built in one process.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace commsolve {

class Topology {
 public:
  // One node per rank list entry. Node ids may be any non-negative integers; they are
  // renumbered 0..num_nodes-1 in order of first appearance. Local.
  static Topology from_node_list(const std::vector<int>& node_of_rank);

  // `nranks` ranks, `ppn` per node. layout "smp": ranks [k*ppn, (k+1)*ppn) on node k;
  // "round-robin": rank r on node r mod (nranks/ppn). ppn must divide nranks. Local.
  static Topology regular(int nranks, int ppn, const std::string& layout = "smp");

  // The real node layout of `comm`, from shared-memory sub-communicators.
  // Collective on comm.
  static Topology from_comm(MPI_Comm comm);

  int size() const { return static_cast<int>(node_.size()); }
  int num_nodes() const { return static_cast<int>(node_ranks_.size()); }
  int node_of(int rank) const { return node_[rank]; }
  int local_rank(int rank) const { return local_[rank]; }
  bool same_node(int a, int b) const { return node_[a] == node_[b]; }
  const std::vector<int>& ranks_on_node(int node) const { return node_ranks_[node]; }
  const std::vector<int>& node_of_rank() const { return node_; }
  int max_ppn() const;

  // ---- a torus of nodes (a k-ary n-cube, e.g. Blue Gene/P's 3D torus) --------------------
  // `nodes` torus extents (their product: the node count), `ppn` ranks per node laid out
  // "smp"; node id = coordinates with dimension 0 fastest. Local.
  static Topology torus(const std::vector<int>& dims, int ppn);
  // The same torus with each rank's node given (a placement): node ids are torus positions
  // (0 .. product of dims - 1, dimension 0 fastest); a node may hold no rank. Local.
  static Topology torus_placed(const std::vector<int>& dims, const std::vector<int>& node_of_rank);
  bool has_torus() const { return !torus_.empty(); }
  const std::vector<int>& torus_dims() const { return torus_; }
  int coord(int node, int dim) const;
  // Links are one-way: id = (node * ndims + dim) * 2 + (0: towards +, 1: towards -); 2 * ndims
  // per node. route() appends the links a message from node a to node b crosses: dimension by
  // dimension in `order` (default 0, 1, ...), the shorter way round each ring (+ on a tie).
  std::int64_t num_links() const { return static_cast<std::int64_t>(num_nodes()) * 2 * static_cast<std::int64_t>(torus_.size()); }
  void route(int a, int b, std::vector<std::int64_t>& links, const int* order = nullptr) const;
  int hops(int a, int b) const;  // links on the route

 private:
  void check_nodes(int a, int b) const;  // std::invalid_argument unless a torus holds both
  std::vector<int> torus_;                    // extents of the node torus, or empty
  std::vector<int> node_;                     // rank -> node
  std::vector<int> local_;                    // rank -> index among its node's ranks
  std::vector<std::vector<int>> node_ranks_;  // node -> ranks, ascending
};

}  // namespace commsolve
