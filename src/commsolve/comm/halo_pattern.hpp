// HaloPattern: what must move for a row-distributed sparse matrix — which off-process
// vector entries each rank needs (its halo) and which owned entries it must provide to
// whom. Strategy-free; a CommPlan decides how the values travel.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "commsolve/sparse/distribution.hpp"

namespace commsolve {

struct HaloPattern {
  int rank = 0;
  int nranks = 0;
  std::int64_t n_owned = 0;  // vector entries this rank owns (column distribution)
  // Halo entries, grouped by owner in ascending rank order, ascending global index within.
  std::vector<std::int64_t> halo_globals;
  std::vector<int> recv_peers;                 // owners, ascending
  std::vector<std::int64_t> recv_ptr{0};       // halo[recv_ptr[i], recv_ptr[i+1]) from recv_peers[i]
  std::vector<int> send_peers;                 // ranks that need owned entries, ascending
  std::vector<std::int64_t> send_ptr{0};
  std::vector<std::int32_t> send_idx;          // local (owned) indices, per peer in its halo order

  std::int64_t n_halo() const { return static_cast<std::int64_t>(halo_globals.size()); }
};

// Borrowed CSR rows whose column indices are global (int32 or int64 indices).
template <class Index>
struct GlobalRowsView {
  std::int64_t nrows;
  const Index* indptr;
  const Index* indices;
};

// Receive side of `rank`: the distinct off-process columns referenced by `rows`
// (the rank's own rows), grouped by owner under `cols`. Local.
template <class Index>
HaloPattern halo_recv_side(int rank, GlobalRowsView<Index> rows, const Distribution& cols);

// Receive side of `rank` taken from a global matrix whose rows are distributed by `row_dist`.
template <class Index>
HaloPattern halo_recv_side_of_global(int rank, GlobalRowsView<Index> A, const Distribution& row_dist,
                                     const Distribution& cols);

// Virtual world: fills the send sides of every rank by inverting all receive sides.
// `patterns[r]` must be rank r's receive side. Local.
void complete_send_sides(std::vector<HaloPattern>& patterns, const Distribution& cols);

// Under MPI: fills this rank's send side by exchanging requested global indices with their
// owners (MPI_Alltoall of counts, MPI_Alltoallv of indices). Collective on comm.
void complete_send_side_mpi(HaloPattern& pattern, const Distribution& cols, MPI_Comm comm);

}  // namespace commsolve
