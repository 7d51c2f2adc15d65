#include "commsolve/direct/entry_move.hpp"

#include <bit>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/halo_pattern.hpp"
#include "commsolve/comm/mpi_executor.hpp"
#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

// An entry's row and column, both below 2^31, as the bits of one double (never read as a number).
double pack_index(std::int32_t i, std::int32_t j) {
  return std::bit_cast<double>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(i)) << 32) |
                               static_cast<std::uint32_t>(j));
}

void unpack_index(double packed, std::int32_t& i, std::int32_t& j) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(packed);
  i = static_cast<std::int32_t>(bits >> 32);
  j = static_cast<std::int32_t>(bits & 0xffffffffu);
}

}  // namespace

PermutedEntries permuted_entries(std::int64_t n, std::int64_t local_rows, const std::int64_t* indptr,
                                 const std::int32_t* indices, const double* data, const std::int64_t* row_of,
                                 const std::int32_t* row_order, const std::int32_t* col_order,
                                 const double* row_scale, const double* col_scale) {
  // (lazy messages: these checks run once per unknown and per entry)
  const auto outside = [n](const char* what, std::int64_t i) {
    return [=] {
      return std::string("permuted entries: ") + what + " " + std::to_string(i) + " outside the " +
             std::to_string(n) + " unknowns";
    };
  };
  auto inverse = [n](const std::int32_t* order, const char* what) {
    std::vector<std::int32_t> inv(static_cast<std::size_t>(n), -1);
    for (std::int64_t k = 0; k < n; ++k) {
      require(order[k] >= 0 && order[k] < n && inv[order[k]] < 0, [&] {
        return std::string("permuted entries: ") + what + " is not a permutation of the " + std::to_string(n) +
               " unknowns";
      });
      inv[order[k]] = static_cast<std::int32_t>(k);
    }
    return inv;
  };
  const std::vector<std::int32_t> inv_row = inverse(row_order, "the row order"),
                                  inv_col = inverse(col_order, "the column order");
  PermutedEntries out;
  const std::size_t nnz = static_cast<std::size_t>(indptr[local_rows] - indptr[0]);
  out.rows.reserve(nnz);
  out.cols.reserve(nnz);
  out.values.reserve(nnz);
  for (std::int64_t i = 0; i < local_rows; ++i) {
    const std::int64_t r = row_of[i];
    require(r >= 0 && r < n, outside("row", r));
    const std::int32_t k = inv_row[r];
    const double rs = row_scale[r];
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
      const std::int32_t c = indices[p];
      require(c >= 0 && c < n, outside("column", c));
      if (data[p] == 0.0) continue;
      out.rows.push_back(k);
      out.cols.push_back(inv_col[c]);
      out.values.push_back(rs * data[p] * col_scale[c]);
    }
  }
  return out;
}

std::vector<int> entry_destinations(const SolveLayout& layout, const EntryTriples& entries) {
  const SupernodalStructure& sym = layout.sym();
  const ProcessGrid3D& grid = layout.grid();
  const ForestPartition& forests = layout.forests();
  const std::vector<std::int32_t> sn_of = supernode_of_columns(sym.sn_start);
  std::vector<int> dest(static_cast<std::size_t>(entries.nnz));
  for (std::int64_t e = 0; e < entries.nnz; ++e) {
    const std::int32_t i = entries.rows[e], j = entries.cols[e];
    if (i < 0 || i >= sym.n || j < 0 || j >= sym.n)  // (the message built only when it is needed)
      throw std::invalid_argument("entry (" + std::to_string(i) + ", " + std::to_string(j) + ") outside the " +
                                  std::to_string(sym.n) + " unknowns");
    const std::int32_t I = sn_of[i], J = sn_of[j];
    const int z = forests.lowest_grid(forests.forest[std::min(I, J)]);
    dest[e] = grid.layer(z).owner(I, J);
  }
  return dest;
}

MovedEntries move_entries(MPI_Comm comm, const Topology& topo, const SolveLayout& layout, const EntryTriples& mine) {
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  require(size == layout.grid().size() && topo.size() == size,
          "moving entries: the grid, the topology and the communicator differ in size");
  std::vector<int> dest;
  std::string error;
  try {
    dest = entry_destinations(layout, mine);
  } catch (const std::invalid_argument& e) {
    error = e.what();
  }
  std::vector<std::int64_t> send(static_cast<std::size_t>(size), 0), recv(static_cast<std::size_t>(size), 0);
  for (int d : dest) ++send[d];
  // A message's bytes are counted in an int (MPI_Get_count): at most this many entries a peer.
  const std::int64_t most = std::numeric_limits<int>::max() / entry_bytes;
  if (error.empty() && mine.nnz > std::numeric_limits<std::int32_t>::max())
    error = "the 3D factorization: more than 2^31 - 1 entries on one rank (use more ranks)";
  for (int q = 0; error.empty() && q < size; ++q)
    if (send[q] > most)
      error = "the 3D factorization: " + std::to_string(send[q]) + " entries for one rank, more than MPI's counts "
              "reach (" + std::to_string(most) + "; use more ranks)";
  int bad = error.empty() ? 0 : 1, any = 0;
  check_mpi(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (any) throw std::invalid_argument(error.empty() ? "the 3D factorization: bad entries on another rank" : error);
  check_mpi(MPI_Alltoall(send.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, comm), "MPI_Alltoall");

  // The pattern: owned entries are this rank's, in their order; the halo receives each
  // source's entries in a block, sources ascending.
  HaloPattern p;
  p.rank = rank;
  p.nranks = size;
  p.n_owned = mine.nnz;
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    if (send[q] > 0) {
      p.send_peers.push_back(q);
      p.send_ptr.push_back(p.send_ptr.back() + send[q]);
    }
    if (recv[q] > 0) {
      p.recv_peers.push_back(q);
      p.recv_ptr.push_back(p.recv_ptr.back() + recv[q]);
    }
  }
  p.halo_globals.resize(static_cast<std::size_t>(p.recv_ptr.back()));
  std::iota(p.halo_globals.begin(), p.halo_globals.end(), 0);
  std::vector<std::int64_t> next(p.send_ptr.begin(), p.send_ptr.end() - 1), slot(static_cast<std::size_t>(size), -1);
  for (std::size_t i = 0; i < p.send_peers.size(); ++i) slot[p.send_peers[i]] = static_cast<std::int64_t>(i);
  p.send_idx.resize(static_cast<std::size_t>(p.send_ptr.back()));
  std::vector<double> owned(static_cast<std::size_t>(2 * mine.nnz));
  MovedEntries out;
  const std::size_t kept = static_cast<std::size_t>(send[rank] + p.recv_ptr.back());
  out.rows.reserve(kept);
  out.cols.reserve(kept);
  out.values.reserve(kept);
  for (std::int64_t e = 0; e < mine.nnz; ++e) {
    owned[2 * e] = pack_index(mine.rows[e], mine.cols[e]);
    owned[2 * e + 1] = mine.values[e];
    if (dest[e] == rank) {  // stays here
      out.rows.push_back(mine.rows[e]);
      out.cols.push_back(mine.cols[e]);
      out.values.push_back(mine.values[e]);
    } else {
      p.send_idx[next[slot[dest[e]]]++] = static_cast<std::int32_t>(e);
    }
  }

  HaloExecutor exec(standard_plan(p), topo, comm, 2);
  exec.begin(owned.data());
  const double* got = exec.end();
  for (std::int64_t h = 0; h < p.n_halo(); ++h) {
    std::int32_t i = 0, j = 0;
    unpack_index(got[2 * h], i, j);
    out.rows.push_back(i);
    out.cols.push_back(j);
    out.values.push_back(got[2 * h + 1]);
  }
  out.recorded = exec.recorded_forward().steps[0];
  return out;
}

}  // namespace commsolve
