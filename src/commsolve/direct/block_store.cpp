#include "direct/block_store.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"

namespace commsolve {

namespace {

constexpr int factors_tag = 3;
constexpr std::int64_t chunk = std::int64_t{1} << 28;  // doubles per MPI call (count is an int)

// Copies the blocks `layout` places on one rank out of the serial factors; the diagonal
// blocks go as inv(L11) and inv(U11), computed here, so the solve applies them by GEMM.
void pack(const SupernodalLU& lu, const SupernodeBlocks& blocks, const LocalLayout2D& layout, double* out) {
  const SupernodalStructure& sym = lu.structure();
  auto width = [&](std::int64_t s) { return sym.sn_start[s + 1] - sym.sn_start[s]; };
  for (std::size_t d = 0; d < layout.diag_sn.size(); ++d) {
    const std::int64_t s = layout.diag_sn[d], w = width(s);
    double* il = out + layout.diag_off[d];
    double* iu = il + w * w;
    std::fill(il, iu + w * w, 0.0);
    for (std::int64_t j = 0; j < w; ++j) il[j * w + j] = iu[j * w + j] = 1.0;
    const int wi = static_cast<int>(w);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, wi, wi, 1.0, lu.diag(s), wi, il, wi);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, wi, wi, 1.0, lu.diag(s), wi, iu, wi);
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
  const int z_mine = grid.z_of(rank);
  const int source = root >= 0 ? root : grid.layer(z_mine).base;  // who holds this rank's blocks
  if ((rank == source) != (lu != nullptr))
    throw std::logic_error(root >= 0 ? "distributed solve: the factors must be given on the root rank, and only there"
                                     : "distributed solve: the factors must be given on each layer's first rank, "
                                       "and only there");
  store.values.resize(static_cast<std::size_t>(store.layout.total));
  if (rank != source) {
    transfer(comm, store.values.data(), store.layout.total, source, false);
    return;
  }
  HugeVector<double> buf;
  for (int z = root >= 0 ? 0 : z_mine; z < (root >= 0 ? grid.pz : z_mine + 1); ++z) {  // the layers it serves
    const std::vector<LocalLayout2D> layouts = local_layouts_2d(
        lu->structure(), blocks, grid.layer(z), grid.pz > 1 ? forests.mask(z) : std::vector<char>{});
    for (int q = 0; q < grid.layer_size(); ++q) {
      const int r = grid.layer(z).base + q;
      if (r == rank) {
        pack(*lu, blocks, store.layout, store.values.data());
        continue;
      }
      buf.resize(static_cast<std::size_t>(layouts[q].total));  // pack writes every entry
      pack(*lu, blocks, layouts[q], buf.data());
      transfer(comm, buf.data(), layouts[q].total, r, true);
    }
  }
}

}  // namespace commsolve
