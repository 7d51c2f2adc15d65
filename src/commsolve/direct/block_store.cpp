#include "commsolve/direct/block_store.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "commsolve/core/error.hpp"

extern "C" void dtrtri_(const char* uplo, const char* diag, const int* n, double* a, const int* lda, int* info);

namespace commsolve {

namespace {

constexpr int factors_tag = 3;
constexpr std::int64_t chunk = std::int64_t{1} << 28;  // doubles per MPI call (count is an int)

void transfer(MPI_Comm comm, double* data, std::int64_t count, int peer, bool send) {
  for (std::int64_t at = 0; at < count; at += chunk) {
    const int c = static_cast<int>(std::min(chunk, count - at));
    if (send)
      check_mpi(MPI_Send(data + at, c, MPI_DOUBLE, peer, factors_tag, comm), "MPI_Send");
    else
      check_mpi(MPI_Recv(data + at, c, MPI_DOUBLE, peer, factors_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  }
}

LocalLayout2D rank_layout(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid3D& grid,
                          const ForestPartition& forests, int rank) {
  const int z = grid.z_of(rank);
  return local_layout_2d(sym, blocks, grid.layer(z), rank, grid.pz > 1 ? forests.mask(z) : std::vector<char>{});
}

}  // namespace

void invert_triangles(std::int64_t w, double* l, double* u) {
  const int wi = static_cast<int>(w);
  int info = 0;
  dtrtri_("L", "U", &wi, l, &wi, &info);
  if (info == 0) dtrtri_("U", "N", &wi, u, &wi, &info);
  if (info != 0) throw std::runtime_error("diagonal block: dtrtri reports a zero on the diagonal of U11 (info " +
                                          std::to_string(info) + ")");
}

void invert_diagonal_block(std::int64_t w, const double* lu, double* out) {
  double* il = out;
  double* iu = il + w * w;
  // LAPACK's triangular inverse in place (a third of the work of solving against the
  // identity), each triangle copied in and the other one cleared.
  for (std::int64_t j = 0; j < w; ++j)
    for (std::int64_t i = 0; i < w; ++i) {
      const double v = lu[j * w + i];
      il[j * w + i] = i > j ? v : i == j ? 1.0 : 0.0;
      iu[j * w + i] = i <= j ? v : 0.0;
    }
  invert_triangles(w, il, iu);
}

void pack_blocks(const SupernodalLU& lu, const SupernodeBlocks& blocks, const LocalLayout2D& layout, double* out) {
  const SupernodalStructure& sym = lu.structure();
  auto width = [&](std::int64_t s) { return sym.sn_start[s + 1] - sym.sn_start[s]; };
  for (std::size_t d = 0; d < layout.diag_sn.size(); ++d) {
    const std::int64_t s = layout.diag_sn[d];
    invert_diagonal_block(width(s), lu.diag(s), out + layout.diag_off[d]);
  }
  for (std::size_t c = 0; c < layout.l_col.size(); ++c) {
    const std::int64_t k = layout.l_col[c], w = width(k), r = sym.rows_ptr[k + 1] - sym.rows_ptr[k];
    const std::int64_t M = layout.l_rows[c];
    for (std::int64_t p = layout.l_ptr[c]; p < layout.l_ptr[c + 1]; ++p) {  // rows lo..hi of L21 (r x w)
      const std::int64_t b = layout.l_block[p], m = blocks.hi[b] - blocks.lo[b];
      for (std::int64_t j = 0; j < w; ++j) {
        const double* src = lu.l21(static_cast<std::size_t>(k)) + j * r + blocks.lo[b];
        std::copy(src, src + m, out + layout.l_panel[c] + j * M + layout.l_row[p]);
      }
    }
  }
  for (std::int64_t p = 0; p < static_cast<std::int64_t>(layout.u_block.size()); ++p) {  // columns lo..hi of U12
    const std::int64_t b = layout.u_block[p], k = blocks.col[b], w = width(k);
    const double* src = lu.u12(static_cast<std::size_t>(k)) + blocks.lo[b] * w;
    std::copy(src, src + (blocks.hi[b] - blocks.lo[b]) * w, out + layout.u_off[p]);
  }
}

BlockStore block_store_layout(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid3D& grid,
                              const ForestPartition& forests, int rank) {
  BlockStore st;
  st.layout = rank_layout(sym, blocks, grid, forests, rank);
  const std::size_t ns = sym.sn_start.size() - 1;
  st.diag_index.assign(ns, -1);
  for (std::size_t d = 0; d < st.layout.diag_sn.size(); ++d) {
    const std::int32_t k = st.layout.diag_sn[d];
    st.diag_index[k] = static_cast<std::int64_t>(d);
    st.sol_off.push_back(st.sol_rows);
    st.sol_rows += sym.sn_start[k + 1] - sym.sn_start[k];
  }
  return st;
}

void distribute_blocks(MPI_Comm comm, int root, const SupernodalLU* lu, const SupernodeBlocks& blocks,
                       const ProcessGrid3D& grid, const ForestPartition& forests, BlockStore& store) {
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  require(root >= 0 && root < size, "distributed solve: root " + std::to_string(root) + " outside the communicator");
  if ((rank == root) != (lu != nullptr))
    throw std::logic_error("distributed solve: the factors must be given on the root rank, and only there");
  store.values = ZeroedArray<double>(static_cast<std::size_t>(store.layout.total));
  if (rank != root) {
    transfer(comm, store.values.data(), store.layout.total, root, false);
    return;
  }
  HugeVector<double> buf;
  for (int z = 0; z < grid.pz; ++z) {
    const std::vector<LocalLayout2D> layouts = local_layouts_2d(
        lu->structure(), blocks, grid.layer(z), grid.pz > 1 ? forests.mask(z) : std::vector<char>{});
    for (int q = 0; q < grid.layer_size(); ++q) {
      const int r = grid.layer(z).base + q;
      if (r == rank) {
        pack_blocks(*lu, blocks, store.layout, store.values.data());
        continue;
      }
      buf.resize(static_cast<std::size_t>(layouts[q].total));  // pack writes every entry
      pack_blocks(*lu, blocks, layouts[q], buf.data());
      transfer(comm, buf.data(), layouts[q].total, r, true);
    }
  }
}

}  // namespace commsolve
