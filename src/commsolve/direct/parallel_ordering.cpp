#include "commsolve/direct/parallel_ordering.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <chrono>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "commsolve/comm/all_to_all.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/core/stopwatch.hpp"
#include "commsolve/direct/symbolic.hpp"

#include <cstdio>  // scotch.h declares functions of FILE*

#include <ptscotch.h>

// PT-Scotch's libptscotchparmetisv3 provides ParMETIS's entry point but Debian ships no
// parmetis.h: the prototype as ParMETIS 3 declares it, with Scotch's SCOTCH_Num (int in the
// default build). Its return value is ignored (Scotch's returns METIS_OK or prints the error):
// the result is checked instead.
extern "C" void ParMETIS_V3_NodeND(const int* vtxdist, int* xadj, int* adjncy, const int* numflag, const int* options,
                                   int* order, int* sizes, MPI_Comm* comm);

namespace commsolve {

int ordering_ranks(int ranks, std::int64_t n, int max_ranks) {
  int limit = ranks;
  if (max_ranks > 0) limit = std::min(limit, max_ranks);
  if (n / 2 < limit) limit = static_cast<int>(std::max<std::int64_t>(1, n / 2));
  int q = 1;
  while (2 * q <= limit) q *= 2;
  return q;
}

namespace {

// Balanced contiguous blocks of n vertices over q ranks.
std::vector<std::int64_t> block_offsets(std::int64_t n, int q) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(q) + 1);
  for (int r = 0; r <= q; ++r) off[r] = n * r / q;
  return off;
}

int owner_of(const std::vector<std::int64_t>& off, std::int64_t v) {
  return static_cast<int>(std::upper_bound(off.begin(), off.end(), v) - off.begin()) - 1;
}

// This rank's block of the symmetric graph of B + B^T over the first q ranks (rows `off`),
// without self loops: each entry (i, j) of B becomes the edges (i, j) and (j, i) on the
// owners of i and of j. Returns the block as CSR (xadj relative to the block, global adjncy).
template <class I, class J>
void symmetric_block(MPI_Comm comm, int q, const std::vector<std::int64_t>& off, std::int64_t first_row,
                     std::int64_t local_rows, const I* indptr, const J* indices,
                     const double* values, const std::int64_t* new_row, int rank, std::vector<int>& xadj,
                     std::vector<int>& adjncy) {
  int P = 0;
  check_mpi(MPI_Comm_size(comm, &P), "MPI_Comm_size");
  auto row_of = [&](std::int64_t i) { return new_row != nullptr ? new_row[i] : first_row + i; };
  // Each entry (u, v) goes once to the owner of u and, if another rank owns v, once to it as
  // (v, u); a receiver owning both ends adds both directions.
  auto each_edge = [&](auto&& visit) {
    for (std::int64_t i = 0; i < local_rows; ++i) {
      const std::int64_t u = row_of(i);
      for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
        const std::int64_t v = indices[p];
        if (v == u || (values != nullptr && values[p] == 0.0)) continue;
        const int ou = owner_of(off, u), ov = owner_of(off, v);
        visit(ou, u, v);
        if (ov != ou) visit(ov, v, u);
      }
    }
  };
  std::vector<int> send_count(P, 0);
  each_edge([&](int to, std::int64_t, std::int64_t) { send_count[to] += 2; });
  const std::vector<int> send_disp = displacements(send_count);
  std::vector<std::int32_t> send(static_cast<std::size_t>(send_disp[P]));  // n < 2^31: checked by the caller
  std::vector<int> fill(send_disp.begin(), send_disp.end() - 1);
  each_edge([&](int to, std::int64_t u, std::int64_t v) {
    send[fill[to]++] = static_cast<std::int32_t>(u);
    send[fill[to]++] = static_cast<std::int32_t>(v);
  });
  std::vector<std::int32_t> recv = all_to_all(comm, send, send_count);
  std::vector<std::int32_t>().swap(send);
  // Bucket by row, then sort and deduplicate each row.
  const std::int64_t lo = rank < q ? off[rank] : 0, nrows = rank < q ? off[rank + 1] - off[rank] : 0;
  auto mine = [&](std::int64_t v) { return v >= lo && v < lo + nrows; };
  std::vector<std::int64_t> ptr(static_cast<std::size_t>(nrows) + 1, 0);
  for (std::size_t e = 0; e < recv.size(); e += 2) {
    ++ptr[recv[e] - lo + 1];
    if (mine(recv[e + 1])) ++ptr[recv[e + 1] - lo + 1];
  }
  std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
  std::vector<int> cols(static_cast<std::size_t>(ptr[nrows]));
  std::vector<std::int64_t> at(ptr.begin(), ptr.end() - 1);
  for (std::size_t e = 0; e < recv.size(); e += 2) {
    cols[at[recv[e] - lo]++] = recv[e + 1];
    if (mine(recv[e + 1])) cols[at[recv[e + 1] - lo]++] = recv[e];
  }
  std::vector<std::int32_t>().swap(recv);
  xadj.assign(1, 0);
  adjncy.clear();
  adjncy.reserve(cols.size());
  for (std::int64_t r = 0; r < nrows; ++r) {
    const auto b = cols.begin() + ptr[r], e = cols.begin() + ptr[r + 1];
    std::sort(b, e);
    adjncy.insert(adjncy.end(), b, std::unique(b, e));
    xadj.push_back(static_cast<int>(adjncy.size()));
  }
}

// The complete binary tree that ParMETIS's `sizes` describes (q = 2^L leaves: sizes[0, q)
// the leaves left to right, then each level's separators from the bottom up, the top one
// last), as a SeparatorTree in postorder.
SeparatorTree tree_from_sizes(const std::vector<int>& sizes, int q) {
  int L = 0;
  while ((1 << L) < q) ++L;
  // Position in `sizes` of the i-th node (left to right) at depth d (root: depth 0).
  std::vector<int> base(static_cast<std::size_t>(L) + 1, 0);  // by height h = L - d
  for (int h = 1; h <= L; ++h) base[h] = base[h - 1] + (q >> (h - 1));
  SeparatorTree t;
  std::int64_t col = 0;
  auto visit = [&](auto&& self, int depth, int i) -> int {
    int left = -1, right = -1;
    if (depth < L) {
      left = self(self, depth + 1, 2 * i);
      right = self(self, depth + 1, 2 * i + 1);
    }
    const int k = t.num_nodes(), at = base[L - depth] + i;
    t.parent.push_back(-1);
    t.left.push_back(left);
    t.right.push_back(right);
    t.level.push_back(depth);
    t.col_start.push_back(col);
    col += sizes[at];
    t.col_end.push_back(col);
    if (left >= 0) t.parent[left] = t.parent[right] = k;
    return k;
  };
  visit(visit, 0, 0);
  return t;
}

// What ParMETIS_V3_NodeND returns (`order`: each local vertex's new index; `sizes`: the q =
// 2^levels subdomains left to right, then each level's separators from the bottom up), from
// PT-Scotch's own interface with a strategy that stops after `levels` levels and leaves the
// subdomains and separators in their given order (SCOTCH_stratDgraphOrderBuild's level and
// "simple" flags): the leaves are ordered next, each on a rank of its own (through the ParMETIS
// interface Scotch would order them here, on the same ranks, a nested dissection of each whole
// subdomain thrown away). Collective on `sub` (the q ordering ranks). Returns false, the same
// on every rank, where Scotch failed or left a subdomain above the last level unseparated (it
// does on small or dense graphs): the tree is then not the full binary tree that `sizes`
// describes.
bool scotch_top_levels(MPI_Comm sub, int q, int levels, const std::vector<int>& vtxdist, const std::vector<int>& xadj,
                       const std::vector<int>& adjncy, std::vector<int>& order, std::vector<int>& sizes) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(sub, &rank), "MPI_Comm_rank");
  const SCOTCH_Num vertices = vtxdist[rank + 1] - vtxdist[rank], edges = xadj[vertices];
  SCOTCH_Dgraph graph;
  SCOTCH_Strat strategy;
  SCOTCH_Dordering ordering;
  if (SCOTCH_dgraphInit(&graph, sub) != 0) return false;
  SCOTCH_stratInit(&strategy);
  auto done = [&](bool ordered) {
    if (ordered) SCOTCH_dgraphOrderExit(&graph, &ordering);
    SCOTCH_stratExit(&strategy);
    SCOTCH_dgraphExit(&graph);
  };
  const SCOTCH_Num flags = SCOTCH_STRATLEVELMIN | SCOTCH_STRATLEVELMAX | SCOTCH_STRATLEAFSIMPLE | SCOTCH_STRATSEPASIMPLE;
  std::vector<SCOTCH_Num> father, size;
  // Scotch reads the graph's arrays (its pointers are not const); the caller reads them again.
  SCOTCH_Num* vert = const_cast<SCOTCH_Num*>(xadj.data());
  if (SCOTCH_dgraphBuild(&graph, 0, vertices, vertices, vert, vert + 1, nullptr, nullptr, edges, edges,
                         const_cast<SCOTCH_Num*>(adjncy.data()), nullptr, nullptr) != 0 ||
      SCOTCH_stratDgraphOrderBuild(&strategy, flags, q, levels, 0.2) != 0 ||
      SCOTCH_dgraphOrderInit(&graph, &ordering) != 0) {  // the same arguments on every rank: all fail alike
    done(false);
    return false;
  }
  const bool computed = SCOTCH_dgraphOrderCompute(&graph, &ordering, &strategy) == 0 &&
                        SCOTCH_dgraphOrderPerm(&graph, &ordering, order.data()) == 0;
  const SCOTCH_Num blocks = computed ? SCOTCH_dgraphOrderCblkDist(&graph, &ordering) : -1;
  if (blocks > 0) {
    father.resize(static_cast<std::size_t>(blocks));
    size.resize(static_cast<std::size_t>(blocks));
    if (SCOTCH_dgraphOrderTreeDist(&graph, &ordering, father.data(), size.data()) != 0) father.clear();
  }
  done(true);
  // The tree is the same on every rank. A nested-dissection block's sons, by block number: its
  // two parts, then its separator unless that is empty; `size` counts a block's whole subtree.
  std::vector<std::vector<int>> sons(father.size());
  int root = -1, roots = 0;
  for (std::size_t b = 0; b < father.size(); ++b) {
    if (father[b] < 0) {
      root = static_cast<int>(b);
      ++roots;
    } else if (father[b] < static_cast<SCOTCH_Num>(father.size())) {
      sons[father[b]].push_back(static_cast<int>(b));
    }
  }
  std::vector<int> base(static_cast<std::size_t>(levels) + 1, 0);  // where height h's nodes start in `sizes`
  for (int h = 1; h <= levels; ++h) base[h] = base[h - 1] + (q >> (h - 1));
  std::vector<int> placed(2 * static_cast<std::size_t>(q) - 1, 0);
  bool shaped = roots == 1;
  auto place = [&](auto&& self, int b, int depth, int i) -> void {
    if (!shaped) return;
    const int at = base[levels - depth] + i;
    if (depth == levels) {
      placed[at] = static_cast<int>(size[b]);
      return;
    }
    const auto& s = sons[b];
    if (s.size() < 2 || s.size() > 3) {
      shaped = false;
      return;
    }
    placed[at] = s.size() == 3 ? static_cast<int>(size[s[2]]) : 0;
    self(self, s[0], depth + 1, 2 * i);
    self(self, s[1], depth + 1, 2 * i + 1);
  };
  if (shaped) place(place, root, 0, 0);
  int everywhere = shaped ? 1 : 0;  // the same verdict on every rank, which the fallback needs
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_LAND, sub), "MPI_Allreduce");
  if (everywhere) std::copy(placed.begin(), placed.end(), sizes.begin());
  return everywhere != 0;
}

// Scotch's nested dissection of one process's graph (no self loops), perm[k] the original
// index of the k-th eliminated vertex: Scotch 7's ordering strategy for speed (what
// SCOTCH_stratGraphOrderBuild builds with SCOTCH_STRATSPEED: vertex compression, one
// multilevel vertex separator a level, halo approximate minimum fill on the leaves), with
// leaves of up to `leaf_vertices` vertices instead of 240 (on 2D meshes larger leaves take
// less than half the time for a few percent more flops: docs/concepts.md).
std::vector<std::int32_t> scotch_nested_dissection(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy,
                                                   int leaf_vertices) {
  static const char* separator =
      "m{asc=b{bnd=f{move=200,pass=1000,bal=0.2},org=(|h{pass=10})f{move=200,pass=1000,bal=0.2},width=3},"
      "low=h{pass=10},type=h,vert=100,rat=0.7}";
  const std::string dissect = "n{sep=/((vert)>(" + std::to_string(leaf_vertices) + "))?(" + separator +
                              ");,ole=f{cmin=15,cmax=100000,frat=0},ose=g{pass=3}}";
  const std::string text = "c{rat=0.7,cpr=" + dissect + ",unc=" + dissect + "}";
  static_assert(sizeof(SCOTCH_Num) == sizeof(std::int32_t), "Scotch built with 32-bit SCOTCH_Num expected");
  // Scotch reads the graph's arrays (its pointers are not const).
  SCOTCH_Num* vert = const_cast<SCOTCH_Num*>(reinterpret_cast<const SCOTCH_Num*>(xadj));
  SCOTCH_Num none = 0;  // a valid pointer for a graph without edges
  SCOTCH_Num* edge = xadj[n] > 0 ? const_cast<SCOTCH_Num*>(reinterpret_cast<const SCOTCH_Num*>(adjncy)) : &none;
  std::vector<SCOTCH_Num> permtab(static_cast<std::size_t>(n)), peritab(static_cast<std::size_t>(n));
  SCOTCH_Graph graph;
  SCOTCH_Strat strategy;
  if (SCOTCH_graphInit(&graph) != 0) throw std::runtime_error("Scotch's ordering: SCOTCH_graphInit failed");
  SCOTCH_stratInit(&strategy);
  SCOTCH_Num blocks = 0;
  SCOTCH_randomReset();
  const bool ok = SCOTCH_graphBuild(&graph, 0, static_cast<SCOTCH_Num>(n), vert, vert + 1, nullptr, nullptr, xadj[n],
                                    edge, nullptr) == 0 &&
                  SCOTCH_stratGraphOrder(&strategy, text.c_str()) == 0 &&
                  SCOTCH_graphOrder(&graph, &strategy, permtab.data(), peritab.data(), &blocks, nullptr, nullptr) == 0;
  SCOTCH_stratExit(&strategy);
  SCOTCH_graphExit(&graph);
  if (!ok) throw std::runtime_error("Scotch's nested dissection failed on a graph of " + std::to_string(n) +
                                   " vertices");
  return std::vector<std::int32_t>(peritab.begin(), peritab.end());
}

// How each leaf is reordered: by METIS_NodeND, or by Scotch (scotch_nested_dissection) with
// its own leaves of n / 64 vertices on a 2D mesh (240 to 16000: the speed where it is worth it,
// more levels of separators where the graph is small) and its default 240 otherwise.
struct LeafOrderer {
  static constexpr int scotch_leaf = 240, planar_leaf_max = 16000, planar_leaf_share = 64;
  bool metis = true;
  MeshDimension mesh = MeshDimension::unknown;
  std::vector<std::int32_t> operator()(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy) const {
    if (n == 0) return {};
    if (metis) return metis_nested_dissection(n, xadj, adjncy);
    const std::int64_t planar = std::clamp<std::int64_t>(n / planar_leaf_share, scotch_leaf, planar_leaf_max);
    return scotch_nested_dissection(n, xadj, adjncy,
                                    mesh == MeshDimension::two ? static_cast<int>(planar) : scotch_leaf);
  }
};

// Each leaf of `tree` (the i-th from the left) reordered by `order` on rank i: the rows of the
// symmetric graph `xadj`/`adjncy` (this rank's block `off`) that lie in a leaf go to its rank,
// restricted to the leaf; every rank then receives every leaf's new order.
void reorder_leaves(MPI_Comm comm, int rank, int P, int q, const std::vector<std::int64_t>& off,
                    const std::vector<int>& xadj, const std::vector<int>& adjncy,
                    const std::vector<int>& node_of_vertex, const LeafOrderer& order, SeparatorTree& tree) {
  std::vector<int> leaf_of_node(tree.num_nodes(), -1), leaves;
  for (int k = 0; k < tree.num_nodes(); ++k)
    if (tree.left[k] < 0) {
      leaf_of_node[k] = static_cast<int>(leaves.size());
      leaves.push_back(k);
    }
  require(static_cast<int>(leaves.size()) <= P, "parallel ordering: more leaves than ranks");
  // A leaf ordering that fails on its rank fails on every rank, before they wait for its result.
  std::string error;
  auto ordered = [&](std::int64_t size, const std::int32_t* gx, const std::int32_t* ga) {
    try {
      return order(size, gx, ga);
    } catch (const std::exception& e) {
      error = e.what();
      return std::vector<std::int32_t>(static_cast<std::size_t>(size), 0);
    }
  };
  if (q == 1) {  // one leaf, the whole graph, which rank 0 holds in the tree's order (the identity)
    std::vector<std::int32_t> all(tree.perm.size());
    if (rank == 0) all = ordered(static_cast<std::int64_t>(all.size()), xadj.data(), adjncy.data());
    agree_on_error(comm, error, "the leaf ordering");
    check_mpi(MPI_Bcast(all.data(), static_cast<int>(all.size()), MPI_INT32_T, 0, comm), "MPI_Bcast");
    tree.perm = std::move(all);
    return;
  }
  const std::int64_t lo = rank < q ? off[rank] : 0;
  const std::int64_t nrows = static_cast<std::int64_t>(xadj.size()) - 1;
  // Per row in a leaf: [vertex, degree inside the leaf, neighbours...] to the leaf's rank.
  std::vector<std::vector<std::int64_t>> out(P);
  for (std::int64_t r = 0; r < nrows; ++r) {
    const std::int64_t v = lo + r;
    const int leaf = leaf_of_node[node_of_vertex[v]];
    if (leaf < 0) continue;
    auto& buf = out[leaf];
    buf.push_back(v);
    const std::size_t deg_at = buf.size();
    buf.push_back(0);
    for (int p = xadj[r]; p < xadj[r + 1]; ++p)
      if (node_of_vertex[adjncy[p]] == leaves[leaf]) buf.push_back(adjncy[p]);
    buf[deg_at] = static_cast<std::int64_t>(buf.size() - deg_at - 1);
  }
  std::vector<int> send_count(P);
  std::vector<std::int64_t> send;
  for (int r = 0; r < P; ++r) {
    send_count[r] = static_cast<int>(out[r].size());
    send.insert(send.end(), out[r].begin(), out[r].end());
  }
  std::vector<std::vector<std::int64_t>>().swap(out);
  const std::vector<std::int64_t> recv = all_to_all(comm, send, send_count);
  // My leaf's vertices numbered by their column in the tree's order; `order` on its graph.
  std::vector<std::int32_t> mine;
  if (rank < static_cast<int>(leaves.size())) {
    const int node = leaves[rank];
    const std::int64_t first = tree.col_start[node], size = tree.col_end[node] - first;
    std::vector<std::int64_t> local_of(static_cast<std::size_t>(tree.perm.size()), -1);
    for (std::int64_t c = 0; c < size; ++c) local_of[tree.perm[first + c]] = c;
    std::vector<std::int64_t> deg(static_cast<std::size_t>(size) + 1, 0);
    for (std::size_t e = 0; e < recv.size(); e += 2 + static_cast<std::size_t>(recv[e + 1])) {
      const bool held = local_of[recv[e]] >= 0 &&
                        std::all_of(recv.begin() + e + 2, recv.begin() + e + 2 + recv[e + 1],
                                    [&](std::int64_t v) { return local_of[v] >= 0; });
      if (!held)
        throw std::logic_error("parallel ordering: vertex " + std::to_string(recv[e]) + " sent to leaf " +
                               std::to_string(rank) + ", which does not hold it or its neighbours");
      deg[local_of[recv[e]] + 1] = recv[e + 1];
    }
    std::partial_sum(deg.begin(), deg.end(), deg.begin());
    std::vector<std::int32_t> gx(deg.begin(), deg.end()), ga(static_cast<std::size_t>(deg[size]));
    for (std::size_t e = 0; e < recv.size(); e += 2 + static_cast<std::size_t>(recv[e + 1])) {
      const std::int64_t at = deg[local_of[recv[e]]];
      for (std::int64_t j = 0; j < recv[e + 1]; ++j) ga[at + j] = static_cast<std::int32_t>(local_of[recv[e + 2 + j]]);
    }
    const std::vector<std::int32_t> local = ordered(size, gx.data(), ga.data());
    mine.resize(static_cast<std::size_t>(size));
    for (std::int64_t c = 0; c < size; ++c) mine[c] = tree.perm[first + local[c]];
  }
  agree_on_error(comm, error, "the leaf ordering");
  std::vector<int> counts(P, 0), disp(P + 1, 0);
  for (std::size_t i = 0; i < leaves.size(); ++i)
    counts[i] = static_cast<int>(tree.col_end[leaves[i]] - tree.col_start[leaves[i]]);
  for (int r = 0; r < P; ++r) disp[r + 1] = disp[r] + counts[r];
  std::vector<std::int32_t> all(static_cast<std::size_t>(disp[P]));
  check_mpi(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_INT32_T, all.data(), counts.data(),
                           disp.data(), MPI_INT32_T, comm),
            "MPI_Allgatherv");
  for (std::size_t i = 0; i < leaves.size(); ++i)
    std::copy(all.begin() + disp[i], all.begin() + disp[i + 1], tree.perm.begin() + tree.col_start[leaves[i]]);
}

}  // namespace

MeshDimension mesh_dimension(MPI_Comm comm, const std::vector<std::int64_t>& off, const int* xadj, const int* adjncy) {
  constexpr int seeds = 16;
  constexpr std::size_t most = std::size_t{1} << 16;  // a ball this large is not a mesh's: no sample
  int P = 0, rank = 0;
  check_mpi(MPI_Comm_size(comm, &P), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  const int q = static_cast<int>(off.size()) - 1;
  const std::int64_t first = rank < q ? off[rank] : 0, rows = rank < q ? off[rank + 1] - first : 0;
  // A hub (a dense row: a constraint, a Lagrange multiplier) joins everything to everything:
  // the balls go round it, neither expanding it nor asking for its neighbours. A hub has over
  // 8x the largest of the ranks' median degrees.
  std::int64_t median = 0, hub = 0;
  if (rows > 0) {
    std::vector<int> degree(static_cast<std::size_t>(rows));
    for (std::int64_t v = 0; v < rows; ++v) degree[v] = xadj[v + 1] - xadj[v];
    std::nth_element(degree.begin(), degree.begin() + rows / 2, degree.end());
    median = degree[rows / 2];
  }
  check_mpi(MPI_Allreduce(&median, &hub, 1, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  hub = 8 * std::max<std::int64_t>(hub, 1);
  struct Ball {
    std::vector<int> by_distance;   // the vertices, by distance from the seed
    std::unordered_set<int> seen;
    std::size_t shell[5] = {0, 1, 0, 0, 0};  // by_distance[shell[r], shell[r + 1]): distance r
    bool kept = true;
  };
  std::vector<Ball> balls;
  for (int s = 0; s < seeds && rows > 0; ++s) {
    const int seed = static_cast<int>(first + (2 * s + 1) * rows / (2 * seeds));
    if (xadj[seed - first + 1] - xadj[seed - first] <= hub) balls.push_back(Ball{{seed}, {seed}});
  }
  for (int r = 1; r <= 3; ++r) {
    // The neighbours of shell r - 1's vertices that other ranks hold, asked of their owners
    // (every rank takes part in each round, with or without balls).
    std::vector<std::vector<int>> ask(static_cast<std::size_t>(P));
    for (const Ball& b : balls)
      if (b.kept)
        for (std::size_t a = b.shell[r - 1]; a < b.shell[r]; ++a)
          if (b.by_distance[a] < first || b.by_distance[a] >= first + rows)
            ask[owner_of(off, b.by_distance[a])].push_back(b.by_distance[a]);
    std::vector<int> send, send_count(P), got_count;
    for (int t = 0; t < P; ++t) {
      std::sort(ask[t].begin(), ask[t].end());
      ask[t].erase(std::unique(ask[t].begin(), ask[t].end()), ask[t].end());
      send.insert(send.end(), ask[t].begin(), ask[t].end());
      send_count[t] = static_cast<int>(ask[t].size());
    }
    const std::vector<int> asked = all_to_all(comm, send, send_count, &got_count);
    send.clear();  // the answers: each asked vertex's degree, then its neighbours (none for a hub)
    std::size_t at = 0;
    for (int t = 0; t < P; ++t) {
      const std::size_t before = send.size();
      for (int k = 0; k < got_count[t]; ++k, ++at) {
        const std::int64_t v = asked[at] - first, degree = xadj[v + 1] - xadj[v];
        send.push_back(degree > hub ? 0 : static_cast<int>(degree));
        if (degree <= hub) send.insert(send.end(), adjncy + xadj[v], adjncy + xadj[v + 1]);
      }
      send_count[t] = static_cast<int>(send.size() - before);
    }
    const std::vector<int> answers = all_to_all(comm, send, send_count);
    std::unordered_map<int, std::pair<const int*, const int*>> theirs;
    at = 0;
    for (int t = 0; t < P; ++t)
      for (int v : ask[t]) {
        theirs[v] = {answers.data() + at + 1, answers.data() + at + 1 + answers[at]};
        at += 1 + static_cast<std::size_t>(answers[at]);
      }
    for (Ball& b : balls) {
      for (std::size_t a = b.shell[r - 1]; a < b.shell[r] && b.kept; ++a) {
        const int u = b.by_distance[a];
        const bool local = u >= first && u < first + rows;
        using Range = std::pair<const int*, const int*>;
        auto [lo, hi] = local ? Range{adjncy + xadj[u - first], adjncy + xadj[u - first + 1]} : theirs.at(u);
        if (hi - lo > hub) continue;  // a local hub (another rank's answers none)
        for (const int* w = lo; w != hi && b.kept; ++w)
          if (b.seen.insert(*w).second) {
            b.by_distance.push_back(*w);
            b.kept = b.by_distance.size() < most;
          }
      }
      b.shell[r + 1] = b.by_distance.size();
      if (!b.kept) b = Ball{{}, {}, {}, false};
    }
  }
  std::array<double, seeds> ratio;
  ratio.fill(-1.0);
  for (std::size_t s = 0; s < balls.size(); ++s) {
    const double s2 = static_cast<double>(balls[s].shell[3] - balls[s].shell[2]);
    if (balls[s].kept && s2 > 0) ratio[s] = static_cast<double>(balls[s].shell[4] - balls[s].shell[3]) / s2;
  }
  std::vector<double> all(static_cast<std::size_t>(P) * seeds);
  check_mpi(MPI_Allgather(ratio.data(), seeds, MPI_DOUBLE, all.data(), seeds, MPI_DOUBLE, comm), "MPI_Allgather");
  all.erase(std::remove_if(all.begin(), all.end(), [](double x) { return !(x >= 0); }), all.end());
  if (all.empty()) return MeshDimension::unknown;
  const auto mid = all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2);
  std::nth_element(all.begin(), mid, all.end());
  if (*mid > 1.6) return MeshDimension::three;
  return *mid > 1.25 ? MeshDimension::two : MeshDimension::unknown;  // a path's shells do not grow
}

namespace {

template <class I, class J>
SeparatorTree nested_dissection_on(MPI_Comm comm, std::int64_t n, std::int64_t first_row, std::int64_t local_rows,
                                   const I* indptr, const J* indices, const double* values,
                                   const std::int64_t* new_row, LeafOrdering leaves, int max_ranks,
                                   ParallelOrderingTimes* times) {
  require(n >= 1, "the matrix has no rows (0 x 0): nothing to order");
  require(n < std::numeric_limits<int>::max(), "parallel ordering: PT-Scotch's ParMETIS interface takes at most "
                                                "2^31 - 1 unknowns, got " + std::to_string(n));
  int P = 0, rank = 0;
  check_mpi(MPI_Comm_size(comm, &P), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  std::int64_t total_rows = 0;
  check_mpi(MPI_Allreduce(&local_rows, &total_rows, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  require(total_rows == n, "parallel ordering: the ranks hold " + std::to_string(total_rows) + " rows of a matrix of " +
                               std::to_string(n));
  for (std::int64_t i = 0; i < local_rows; ++i) {
    const std::int64_t u = new_row != nullptr ? new_row[i] : first_row + i;
    if (u < 0 || u >= n) throw std::invalid_argument("parallel ordering: row index " + std::to_string(u) +
                                                     " outside [0, " + std::to_string(n) + ")");
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p)
      if (indices[p] < 0 || indices[p] >= n)
        throw std::invalid_argument("parallel ordering: column index " + std::to_string(indices[p]) + " in row " +
                                    std::to_string(u) + " outside [0, " + std::to_string(n) + ")");
  }
  const int q = ordering_ranks(P, n, max_ranks);
  if (q > 1) {  // Debian's PT-Scotch is built with threads: without MPI_THREAD_MULTIPLE it can deadlock
    int level = MPI_THREAD_SINGLE;
    check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
    require(level == MPI_THREAD_MULTIPLE, "parallel ordering: PT-Scotch needs MPI initialized with "
                                          "MPI_THREAD_MULTIPLE (mpi4py's default), got a lower thread level");
  }
  const std::vector<std::int64_t> off = block_offsets(n, q);
  auto t = clock_type::now();
  std::vector<int> xadj, adjncy;
  symmetric_block(comm, q, off, first_row, local_rows, indptr, indices, values, new_row, rank, xadj, adjncy);
  if (times != nullptr) times->graph = seconds_since(t);
  // The same ordering for the same graph, run after run: Scotch's threads make it vary, and
  // commsolve runs one thread per rank. A user's own setting of the variable is kept.
  setenv("SCOTCH_PTHREAD_NUMBER", "1", 0);
  // How the leaves are ordered: METIS, or Scotch with large leaves on a 2D mesh.
  LeafOrderer orderer{leaves == LeafOrdering::metis};
  if (leaves != LeafOrdering::metis) {
    t = clock_type::now();
    orderer.mesh = mesh_dimension(comm, off, xadj.data(), adjncy.data());
    if (times != nullptr) times->dimension = seconds_since(t);
    orderer.metis = leaves == LeafOrdering::by_dimension && orderer.mesh == MeshDimension::three;
  }
  if (times != nullptr) times->metis_leaves = orderer.metis;

  t = clock_type::now();
  MPI_Comm sub = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm, rank < q ? 0 : MPI_UNDEFINED, rank, &sub), "MPI_Comm_split");
  const std::int64_t mine = rank < q ? off[rank + 1] - off[rank] : 0;
  std::vector<int> order(static_cast<std::size_t>(std::max<std::int64_t>(mine, 1)), -1);
  // The subdomains' and separators' sizes (2q - 1), then 1 where the leaves are still to order.
  std::vector<int> sizes(2 * static_cast<std::size_t>(q), 0);
  sizes.back() = 1;
  if (sub != MPI_COMM_NULL && q == 1) {
    // One leaf, the whole graph, which the leaf ordering orders next.
    std::iota(order.begin(), order.begin() + mine, 0);
    sizes[0] = static_cast<int>(n);
    check_mpi(MPI_Comm_free(&sub), "MPI_Comm_free");
  } else if (sub != MPI_COMM_NULL) {
    std::vector<int> vtxdist(off.begin(), off.end());
    if (adjncy.empty()) adjncy.push_back(0);  // a valid pointer for a block without edges
    SCOTCH_randomReset();
    int levels = 0;
    while ((1 << levels) < q) ++levels;
    if (!scotch_top_levels(sub, q, levels, vtxdist, xadj, adjncy, order, sizes)) {
      // ParMETIS's arguments are not const: a copy where the graph is read again (the leaves).
      std::vector<int> xadj_in, adjncy_in;
      if (orderer.metis) {
        xadj_in = xadj;
        adjncy_in = adjncy;
      }
      const int numflag = 0, options[3] = {0, 0, 0};
      ParMETIS_V3_NodeND(vtxdist.data(), (orderer.metis ? xadj_in : xadj).data(),
                         (orderer.metis ? adjncy_in : adjncy).data(), &numflag, options, order.data(), sizes.data(),
                         &sub);
      sizes.back() = orderer.metis ? 1 : 0;  // PT-Scotch ordered the leaves itself
    }
    check_mpi(MPI_Comm_free(&sub), "MPI_Comm_free");
  }
  if (times != nullptr) times->nested_dissection = seconds_since(t);

  t = clock_type::now();
  check_mpi(MPI_Bcast(sizes.data(), 2 * q, MPI_INT, 0, comm), "MPI_Bcast");
  const bool leaves_to_order = sizes.back() != 0;
  std::vector<int> counts(P, 0), disp(P + 1, 0);
  for (int r = 0; r < q; ++r) counts[r] = static_cast<int>(off[r + 1] - off[r]);
  for (int r = 0; r < P; ++r) disp[r + 1] = disp[r] + counts[r];
  std::vector<int> all(static_cast<std::size_t>(n));
  check_mpi(MPI_Allgatherv(order.data(), static_cast<int>(mine), MPI_INT, all.data(), counts.data(), disp.data(),
                           MPI_INT, comm),
            "MPI_Allgatherv");
  sizes.resize(2 * static_cast<std::size_t>(q) - 1);
  std::int64_t sized = 0;
  for (int s : sizes) sized += s;
  if (sized != n)
    throw std::runtime_error("PT-Scotch's nested dissection failed: its subdomain and separator sizes add up to " +
                             std::to_string(sized) + ", not n = " + std::to_string(n));
  SeparatorTree tree = tree_from_sizes(sizes, q);
  // PT-Scotch numbers the nodes in postorder (what the tree's column ranges are), unlike the
  // order of `sizes`: new index k is column k, in the node whose range holds it.
  std::vector<int> node_of_column(static_cast<std::size_t>(n));
  for (int k = 0; k < tree.num_nodes(); ++k)
    std::fill(node_of_column.begin() + tree.col_start[k], node_of_column.begin() + tree.col_end[k], k);
  tree.perm.assign(static_cast<std::size_t>(n), -1);
  std::vector<int> node_of_vertex(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int64_t k = all[v];
    if (k < 0 || k >= n) throw std::runtime_error("PT-Scotch's nested dissection failed: vertex " + std::to_string(v) +
                                                  " got the new index " + std::to_string(k));
    if (tree.perm[k] != -1) throw std::runtime_error("PT-Scotch's nested dissection failed: new index " +
                                                     std::to_string(k) + " given to two vertices");
    tree.perm[k] = static_cast<std::int32_t>(v);
    node_of_vertex[v] = node_of_column[k];
  }
  // The separator property on this rank's entries: the nodes of i and j are on one root path.
  auto on_path = [&](int a, int b) {
    for (int x = a; x >= 0; x = tree.parent[x])
      if (x == b) return true;
    return false;
  };
  for (std::int64_t i = 0; i < local_rows; ++i) {
    const std::int64_t u = new_row != nullptr ? new_row[i] : first_row + i;
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
      if (values != nullptr && values[p] == 0.0) continue;
      const int a = node_of_vertex[u], b = node_of_vertex[indices[p]];
      if (a != b && !on_path(a, b) && !on_path(b, a))
        throw std::logic_error("parallel ordering: the entry (" + std::to_string(u) + ", " + std::to_string(indices[p]) +
                               ") joins separator-tree nodes " + std::to_string(a) + " and " + std::to_string(b) +
                               ", neither above the other: PT-Scotch's sizes were misread");
    }
  }
  if (times != nullptr) times->gather = seconds_since(t);
  if (leaves_to_order) {
    t = clock_type::now();
    reorder_leaves(comm, rank, P, q, off, xadj, adjncy, node_of_vertex, orderer, tree);
    if (times != nullptr) times->leaves = seconds_since(t);
  }
  return tree;
}

}  // namespace

SeparatorTree ptscotch_nested_dissection(MPI_Comm comm, std::int64_t n, std::int64_t first_row,
                                         std::int64_t local_rows, const std::int64_t* indptr,
                                         const std::int32_t* indices, const double* values,
                                         const std::int64_t* new_row, LeafOrdering leaves, int max_ranks,
                                         ParallelOrderingTimes* times) {
  return nested_dissection_on(comm, n, first_row, local_rows, indptr, indices, values, new_row, leaves,
                              max_ranks, times);
}

std::vector<std::int32_t> ptscotch_nested_dissection(std::int64_t n, const std::int32_t* xadj,
                                                     const std::int32_t* adjncy, bool metis_leaves) {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  require(initialized != 0, "ordering 'ptscotch' needs MPI initialized (import mpi4py.MPI first)");
  return nested_dissection_on(MPI_COMM_SELF, n, 0, n, xadj, adjncy, nullptr, nullptr,
                              metis_leaves ? LeafOrdering::metis : LeafOrdering::scotch, 1, nullptr)
      .perm;
}

}  // namespace commsolve
