#include "commsolve/comm/halo_pattern.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

// `visit(f)` calls f(global column) for every entry of the rank's rows.
template <class Visit>
HaloPattern recv_side_from_columns(int rank, const Distribution& cols, Visit visit) {
  HaloPattern p;
  p.rank = rank;
  p.nranks = cols.nranks();
  p.n_owned = cols.local_size(rank);
  const std::int64_t n = cols.global_size();
  std::vector<std::pair<int, std::int64_t>> off;  // (owner, global)
  visit([&](std::int64_t g) {
    if (g < 0 || g >= n)
      throw std::invalid_argument("halo pattern: column index " + std::to_string(g) +
                                  " outside [0, " + std::to_string(n) + ")");
    if (!cols.owns(rank, g)) off.emplace_back(cols.owner(g), g);
  });
  std::sort(off.begin(), off.end());
  off.erase(std::unique(off.begin(), off.end()), off.end());
  p.halo_globals.reserve(off.size());
  for (std::size_t k = 0; k < off.size(); ++k) {
    if (k == 0 || off[k].first != off[k - 1].first) {
      if (k > 0) p.recv_ptr.push_back(static_cast<std::int64_t>(k));
      p.recv_peers.push_back(off[k].first);
    }
    p.halo_globals.push_back(off[k].second);
  }
  if (!off.empty()) p.recv_ptr.push_back(static_cast<std::int64_t>(off.size()));
  return p;
}

void append_send(HaloPattern& p, int peer, const std::int64_t* globals, std::int64_t count,
                 const Distribution& cols) {
  p.send_peers.push_back(peer);
  for (std::int64_t k = 0; k < count; ++k) {
    if (cols.owner(globals[k]) != p.rank)
      throw std::logic_error("halo pattern: rank " + std::to_string(peer) + " asked rank " +
                             std::to_string(p.rank) + " for entry " + std::to_string(globals[k]) +
                             " it does not own");
    p.send_idx.push_back(static_cast<std::int32_t>(cols.local_index(globals[k])));
  }
  p.send_ptr.push_back(static_cast<std::int64_t>(p.send_idx.size()));
}

}  // namespace

template <class Index>
HaloPattern halo_recv_side(int rank, GlobalRowsView<Index> rows, const Distribution& cols) {
  return recv_side_from_columns(rank, cols, [&](auto&& f) {
    if (rows.nrows == 0) return;
    for (Index k = rows.indptr[0]; k < rows.indptr[rows.nrows]; ++k) f(static_cast<std::int64_t>(rows.indices[k]));
  });
}

template <class Index>
HaloPattern halo_recv_side_of_global(int rank, GlobalRowsView<Index> A, const Distribution& row_dist,
                                     const Distribution& cols) {
  require(row_dist.global_size() == A.nrows, "halo pattern: matrix has " + std::to_string(A.nrows) +
                                                 " rows, distribution covers " +
                                                 std::to_string(row_dist.global_size()));
  return recv_side_from_columns(rank, cols, [&](auto&& f) {
    const std::int64_t nloc = row_dist.local_size(rank);
    for (std::int64_t i = 0; i < nloc; ++i) {
      std::int64_t g = row_dist.global_index(rank, i);
      for (Index k = A.indptr[g]; k < A.indptr[g + 1]; ++k) f(static_cast<std::int64_t>(A.indices[k]));
    }
  });
}

void complete_send_sides(std::vector<HaloPattern>& patterns, const Distribution& cols) {
  for (auto& p : patterns) {
    p.send_peers.clear();
    p.send_ptr.assign(1, 0);
    p.send_idx.clear();
  }
  // Ascending requester order keeps every owner's send list sorted by peer.
  for (const HaloPattern& req : patterns)
    for (std::size_t i = 0; i < req.recv_peers.size(); ++i)
      append_send(patterns.at(req.recv_peers[i]), req.rank, req.halo_globals.data() + req.recv_ptr[i],
                  req.recv_ptr[i + 1] - req.recv_ptr[i], cols);
}

void complete_send_side_mpi(HaloPattern& p, const Distribution& cols, MPI_Comm comm) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  require(size == p.nranks, "halo pattern: built for " + std::to_string(p.nranks) +
                                " ranks but the communicator has " + std::to_string(size));
  std::vector<int> scount(size, 0), rcount(size, 0), sdispl(size + 1, 0), rdispl(size + 1, 0);
  for (std::size_t i = 0; i < p.recv_peers.size(); ++i)
    scount[p.recv_peers[i]] = static_cast<int>(p.recv_ptr[i + 1] - p.recv_ptr[i]);
  check_mpi(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, comm), "MPI_Alltoall");
  for (int r = 0; r < size; ++r) {
    sdispl[r + 1] = sdispl[r] + scount[r];
    rdispl[r + 1] = rdispl[r] + rcount[r];
  }
  std::vector<std::int64_t> asked(rdispl[size]);
  check_mpi(MPI_Alltoallv(p.halo_globals.data(), scount.data(), sdispl.data(), MPI_INT64_T, asked.data(),
                          rcount.data(), rdispl.data(), MPI_INT64_T, comm),
            "MPI_Alltoallv");
  p.send_peers.clear();
  p.send_ptr.assign(1, 0);
  p.send_idx.clear();
  for (int r = 0; r < size; ++r)
    if (rcount[r] > 0) append_send(p, r, asked.data() + rdispl[r], rcount[r], cols);
}

template HaloPattern halo_recv_side<std::int32_t>(int, GlobalRowsView<std::int32_t>, const Distribution&);
template HaloPattern halo_recv_side<std::int64_t>(int, GlobalRowsView<std::int64_t>, const Distribution&);
template HaloPattern halo_recv_side_of_global<std::int32_t>(int, GlobalRowsView<std::int32_t>,
                                                            const Distribution&, const Distribution&);
template HaloPattern halo_recv_side_of_global<std::int64_t>(int, GlobalRowsView<std::int64_t>,
                                                            const Distribution&, const Distribution&);

}  // namespace commsolve
