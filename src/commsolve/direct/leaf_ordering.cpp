#include "commsolve/direct/leaf_ordering.hpp"

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "commsolve/core/error.hpp"
#include "commsolve/core/stopwatch.hpp"

namespace commsolve {

namespace {

constexpr int kTag = 0;  // on a private duplicate of the caller's communicator

// One leaf's subgraph in one message: [nv, xadj (nv + 1), adjncy].
std::vector<std::int32_t> packed(const InducedGraph& g) {
  std::vector<std::int32_t> buf;
  buf.reserve(1 + g.xadj.size() + g.adjncy.size());
  buf.push_back(static_cast<std::int32_t>(g.xadj.size() - 1));
  buf.insert(buf.end(), g.xadj.begin(), g.xadj.end());
  buf.insert(buf.end(), g.adjncy.begin(), g.adjncy.end());
  return buf;
}

InducedGraph unpacked(const std::vector<std::int32_t>& buf) {
  require(!buf.empty() && buf[0] >= 0 && static_cast<std::size_t>(buf[0]) + 2 <= buf.size(),
          "leaf ordering: a malformed subgraph message");
  const std::size_t nv = static_cast<std::size_t>(buf[0]);
  InducedGraph g;
  g.xadj.assign(buf.begin() + 1, buf.begin() + 2 + static_cast<std::ptrdiff_t>(nv));
  g.adjncy.assign(buf.begin() + 2 + static_cast<std::ptrdiff_t>(nv), buf.end());
  require(g.xadj.back() == static_cast<std::int32_t>(g.adjncy.size()), "leaf ordering: a malformed subgraph message");
  return g;
}

std::vector<std::int32_t> received(MPI_Comm comm, int source) {
  MPI_Status st;
  check_mpi(MPI_Probe(source, kTag, comm, &st), "MPI_Probe");
  int count = 0;
  check_mpi(MPI_Get_count(&st, MPI_INT32_T, &count), "MPI_Get_count");
  std::vector<std::int32_t> buf(static_cast<std::size_t>(count));
  check_mpi(MPI_Recv(buf.data(), count, MPI_INT32_T, source, kTag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  return buf;
}

// The leaf's order (local indices), or an empty vector where METIS failed; `seconds` grows by
// the time inside METIS.
std::vector<std::int32_t> ordered(const InducedGraph& g, double& seconds) {
  const auto t = clock_type::now();
  std::vector<std::int32_t> order;
  try {
    order = order_leaf(g);
  } catch (const std::exception&) {  // left empty
  }
  seconds += seconds_since(t);
  return order;
}

// The end on every rank: root says whether a leaf failed (`failed` lists them on root), every
// rank frees `own` and, if one did, throws the same std::invalid_argument.
double agreed(MPI_Comm& own, int root, const std::string& failed, double seconds) {
  int bad = failed.empty() ? 0 : 1;
  check_mpi(MPI_Bcast(&bad, 1, MPI_INT, root, own), "MPI_Bcast");
  check_mpi(MPI_Comm_free(&own), "MPI_Comm_free");
  if (bad) throw std::invalid_argument("METIS_NodeND failed on the separator tree's leaves" +
                                       (failed.empty() ? std::string(" (see the root's error)") : " " + failed));
  return seconds;
}

}  // namespace

double order_leaves_on_ranks(MPI_Comm comm, int root, const std::int32_t* xadj, const std::int32_t* adjncy,
                             SeparatorTree& tree, const std::string& refusal) {
  int rank = 0, P = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &P), "MPI_Comm_size");
  require(root >= 0 && root < P, "leaf ordering: root " + std::to_string(root) + " outside the communicator");
  std::vector<int> leaves;  // on root: the leaves' nodes, left to right (postorder lists them so)
  if (rank == root)
    for (int k = 0; k < tree.num_nodes(); ++k)
      if (tree.left[k] < 0) leaves.push_back(k);
  int nleaves = rank == root && !refusal.empty() ? -1 : static_cast<int>(leaves.size());
  check_mpi(MPI_Bcast(&nleaves, 1, MPI_INT, root, comm), "MPI_Bcast");
  if (nleaves < 0)
    throw std::invalid_argument("leaf ordering: " + (rank == root ? refusal : "the root refused its input"));
  MPI_Comm own;  // the leaves' messages apart from any other traffic on comm
  check_mpi(MPI_Comm_dup(comm, &own), "MPI_Comm_dup");
  auto owner = [&](int i) { return (root + i) % P; };
  double seconds = 0;
  if (rank != root) {  // every leaf received first, then ordered, then every order sent back
    std::vector<std::vector<std::int32_t>> mine;
    for (int i = (rank - root + P) % P; i < nleaves; i += P) mine.push_back(received(own, root));
    for (auto& buf : mine) {
      std::vector<std::int32_t> order;  // empty: root reports the leaf as failed
      try {
        order = ordered(unpacked(buf), seconds);
      } catch (const std::exception&) {  // a malformed message, no memory: still answered
      }
      buf = std::move(order);
    }
    for (const auto& order : mine)
      check_mpi(MPI_Send(order.data(), static_cast<int>(order.size()), MPI_INT32_T, root, kTag, own), "MPI_Send");
    return agreed(own, root, std::string(), seconds);
  }
  std::vector<std::int32_t> local_of(tree.perm.size(), -1);
  auto verts_of = [&](int i) {
    const int k = leaves[i];
    return std::vector<std::int32_t>(tree.perm.begin() + tree.col_start[k], tree.perm.begin() + tree.col_end[k]);
  };
  // Blocking sends, in the order the ranks receive them: each rank starts on its leaves as soon
  // as they are all there, whatever the transport's progress rules while root is inside METIS.
  for (int i = 0; i < nleaves; ++i) {
    if (owner(i) == root) continue;
    const std::vector<std::int32_t> buf = packed(induced_subgraph(xadj, adjncy, verts_of(i), local_of));
    check_mpi(MPI_Send(buf.data(), static_cast<int>(buf.size()), MPI_INT32_T, owner(i), kTag, own), "MPI_Send");
  }
  std::string failed;
  auto apply = [&](int i, const std::vector<std::int32_t>& order) {
    std::vector<std::int32_t> verts = verts_of(i);
    if (order.size() != verts.size()) {
      failed += (failed.empty() ? "" : ", ") + std::to_string(i) + " (rank " + std::to_string(owner(i)) + ")";
      return;
    }
    const std::int64_t first = tree.col_start[leaves[i]];
    for (std::size_t c = 0; c < verts.size(); ++c) tree.perm[first + c] = verts[order[c]];
  };
  for (int i = 0; i < nleaves; ++i)  // root's own (leaves 0, P, 2P, ...)
    if (owner(i) == root) apply(i, ordered(induced_subgraph(xadj, adjncy, verts_of(i), local_of), seconds));
  for (int i = 0; i < nleaves; ++i)
    if (owner(i) != root) apply(i, received(own, owner(i)));
  return agreed(own, root, failed, seconds);
}

}  // namespace commsolve
