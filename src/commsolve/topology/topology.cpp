#include "commsolve/topology/topology.hpp"

#include <algorithm>
#include <unordered_map>

#include "commsolve/core/error.hpp"

namespace commsolve {

Topology Topology::from_node_list(const std::vector<int>& node_of_rank) {
  require(!node_of_rank.empty(), "topology: the rank -> node list is empty");
  Topology t;
  std::unordered_map<int, int> renumber;
  t.node_.resize(node_of_rank.size());
  t.local_.resize(node_of_rank.size());
  for (std::size_t r = 0; r < node_of_rank.size(); ++r) {
    int given = node_of_rank[r];
    require(given >= 0, [&] {
      return "topology: node id of rank " + std::to_string(r) + " is negative (" + std::to_string(given) + ")";
    });
    auto [it, fresh] = renumber.try_emplace(given, static_cast<int>(t.node_ranks_.size()));
    if (fresh) t.node_ranks_.emplace_back();
    int node = it->second;
    t.node_[r] = node;
    t.local_[r] = static_cast<int>(t.node_ranks_[node].size());
    t.node_ranks_[node].push_back(static_cast<int>(r));
  }
  return t;
}

Topology Topology::regular(int nranks, int ppn, const std::string& layout) {
  require(nranks >= 1, "topology: world size must be at least 1, got " + std::to_string(nranks));
  require(ppn >= 1, "topology: ppn must be at least 1, got " + std::to_string(ppn));
  require(ppn <= nranks, "topology: ppn " + std::to_string(ppn) + " is larger than the world size " +
                             std::to_string(nranks));
  require(nranks % ppn == 0, "topology: ppn " + std::to_string(ppn) +
                                 " does not divide the world size " + std::to_string(nranks) +
                                 " (a regular layout needs equal nodes; pass an explicit node list instead)");
  int nodes = nranks / ppn;
  std::vector<int> node_of(nranks);
  if (layout == "smp") {
    for (int r = 0; r < nranks; ++r) node_of[r] = r / ppn;
  } else if (layout == "round-robin") {
    for (int r = 0; r < nranks; ++r) node_of[r] = r % nodes;
  } else {
    throw std::invalid_argument("topology: unknown layout '" + layout +
                                "' (expected 'smp' or 'round-robin')");
  }
  return from_node_list(node_of);
}

Topology Topology::from_comm(MPI_Comm comm) {
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  MPI_Comm shared;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared),
            "MPI_Comm_split_type");
  // A node is named by the lowest rank on it, so every rank agrees without more exchange.
  int leader = rank;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared), "MPI_Allreduce");
  check_mpi(MPI_Comm_free(&shared), "MPI_Comm_free");
  std::vector<int> leaders(size);
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm), "MPI_Allgather");
  return from_node_list(leaders);
}

Topology Topology::torus(const std::vector<int>& dims, int ppn) {
  require(!dims.empty(), "topology: a torus needs at least one dimension");
  require(ppn >= 1, "topology: a torus needs at least one rank per node, got ppn = " + std::to_string(ppn));
  std::int64_t nodes = 1;
  for (int d : dims) {
    require(d >= 1, "topology: torus extents must be at least 1, got " + std::to_string(d));
    nodes *= d;
  }
  require(nodes * ppn <= (std::int64_t{1} << 30), "topology: torus too large");
  Topology t = regular(static_cast<int>(nodes) * ppn, ppn, "smp");
  t.torus_ = dims;
  return t;
}

Topology Topology::torus_placed(const std::vector<int>& dims, const std::vector<int>& node_of_rank) {
  Topology t = torus(dims, 1);
  const int nodes = t.num_nodes();
  require(!node_of_rank.empty(), "topology: the rank -> node list is empty");
  t.node_ = node_of_rank;
  t.local_.assign(node_of_rank.size(), 0);
  t.node_ranks_.assign(static_cast<std::size_t>(nodes), {});
  for (std::size_t r = 0; r < node_of_rank.size(); ++r) {
    const int node = node_of_rank[r];
    require(node >= 0 && node < nodes, [&] {
      return "topology: rank " + std::to_string(r) + " placed on node " + std::to_string(node) +
             ", outside the torus's [0, " + std::to_string(nodes) + ")";
    });
    t.local_[r] = static_cast<int>(t.node_ranks_[static_cast<std::size_t>(node)].size());
    t.node_ranks_[static_cast<std::size_t>(node)].push_back(static_cast<int>(r));
  }
  return t;
}

int Topology::coord(int node, int dim) const {
  int v = node;
  for (int d = 0; d < dim; ++d) v /= torus_[d];
  return v % torus_[dim];
}

void Topology::check_nodes(int a, int b) const {
  require(has_torus(), "topology: routes need a torus (Topology::torus)");
  require(a >= 0 && a < num_nodes() && b >= 0 && b < num_nodes(),
          "topology: nodes " + std::to_string(a) + " and " + std::to_string(b) + " outside [0, " +
              std::to_string(num_nodes()) + ")");
}

void Topology::route(int a, int b, std::vector<std::int64_t>& links, const int* order) const {
  check_nodes(a, b);
  const int nd = static_cast<int>(torus_.size());
  int cur = a;
  for (int i = 0; i < nd; ++i) {
    const int d = order ? order[i] : i;
    const int L = torus_[d];
    int stride = 1;
    for (int e = 0; e < d; ++e) stride *= torus_[e];
    const int from = coord(cur, d), to = coord(b, d);
    const int up = (to - from + L) % L;  // hops going +
    const bool plus = up <= L - up;
    for (int h = 0, steps = plus ? up : L - up; h < steps; ++h) {
      const int c = coord(cur, d);
      links.push_back((static_cast<std::int64_t>(cur) * nd + d) * 2 + (plus ? 0 : 1));
      const int next = plus ? (c + 1) % L : (c - 1 + L) % L;
      cur += (next - c) * stride;
    }
  }
}

int Topology::hops(int a, int b) const {
  check_nodes(a, b);
  int h = 0;
  for (int d = 0; d < static_cast<int>(torus_.size()); ++d) {
    const int L = torus_[d], up = (coord(b, d) - coord(a, d) + L) % L;
    h += std::min(up, L - up);
  }
  return h;
}

int Topology::max_ppn() const {
  std::size_t m = 0;
  for (const auto& ranks : node_ranks_) m = std::max(m, ranks.size());
  return static_cast<int>(m);
}

}  // namespace commsolve
