#include "commsolve/direct/parallel_symbolic.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commsolve/comm/all_to_all.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/core/stopwatch.hpp"

namespace commsolve {

namespace {

// One range's share of the structure (a leaf's, or all the separators'), in the ordering's
// numbering: its supernodes (first final column, width, the rows of L below them as ordering
// indices) and, for each of its final columns, the ordering index placed there and that
// column's elimination-tree parent (an ordering index, -1 at a root).
struct Piece {
  std::vector<std::int64_t> start, width, rows_ptr{0}, rows;
  std::vector<std::int64_t> position, column, parent;

  // Appended to `out` as int32 (n < 2^31; a piece with 2^31 rows of L is refused).
  void pack(std::vector<std::int32_t>& out) const {
    if (rows.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw std::runtime_error("parallel symbolic: one range's rows of L exceed 2^31 entries");
    out.push_back(static_cast<std::int32_t>(start.size()));
    out.push_back(static_cast<std::int32_t>(position.size()));
    out.push_back(static_cast<std::int32_t>(rows.size()));
    for (const auto* v : {&start, &width, &rows_ptr, &rows, &position, &column, &parent})
      for (std::int64_t x : *v) out.push_back(static_cast<std::int32_t>(x));
  }
};

// A packed piece read in place (no copy): the same arrays as Piece's.
struct PackedPiece {
  std::int64_t ns = 0, nc = 0;
  const std::int32_t *start, *width, *rows_ptr, *rows, *position, *column, *parent;

  // The piece packed at `p`, which moves past it.
  static PackedPiece read(const std::int32_t*& p) {
    PackedPiece q;
    q.ns = p[0];
    q.nc = p[1];
    const std::int64_t nr = p[2];
    p += 3;
    auto take = [&](const std::int32_t*& field, std::int64_t k) {
      field = p;
      p += k;
    };
    take(q.start, q.ns);
    take(q.width, q.ns);
    take(q.rows_ptr, q.ns + 1);
    take(q.rows, nr);
    take(q.position, q.nc);
    take(q.column, q.nc);
    take(q.parent, q.nc);
    return q;
  }
};

// The symmetric graph on `nv` vertices whose edges are `pairs` (u0, v0, u1, v1, ...; each
// in both directions) as int32 CSR, rows sorted and without repeats.
void local_graph(std::int64_t nv, const std::vector<std::int32_t>& pairs, std::vector<std::int32_t>& ptr,
                 std::vector<std::int32_t>& idx) {
  if (nv >= std::numeric_limits<std::int32_t>::max() ||
      pairs.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::runtime_error("parallel symbolic: a range's graph exceeds 2^31 vertices or entries");
  std::vector<std::int64_t> at(static_cast<std::size_t>(nv) + 1, 0);
  for (std::size_t e = 0; e < pairs.size(); e += 2) {
    ++at[pairs[e] + 1];
    ++at[pairs[e + 1] + 1];
  }
  for (std::int64_t v = 0; v < nv; ++v) at[v + 1] += at[v];
  std::vector<std::int32_t> all(static_cast<std::size_t>(at[nv]));
  std::vector<std::int64_t> fill(at.begin(), at.end() - 1);
  for (std::size_t e = 0; e < pairs.size(); e += 2) {
    all[fill[pairs[e]]++] = static_cast<std::int32_t>(pairs[e + 1]);
    all[fill[pairs[e + 1]]++] = static_cast<std::int32_t>(pairs[e]);
  }
  ptr.assign(1, 0);
  std::size_t kept = 0;  // rows sorted and deduplicated in place, moved down over the repeats
  for (std::int64_t v = 0; v < nv; ++v) {
    const auto b = all.begin() + at[v], e = all.begin() + at[v + 1];
    std::sort(b, e);
    const auto u = std::unique(b, e);
    if (all.begin() + static_cast<std::ptrdiff_t>(kept) != b) std::copy(b, u, all.begin() + static_cast<std::ptrdiff_t>(kept));
    kept += static_cast<std::size_t>(u - b);
    ptr.push_back(static_cast<std::int32_t>(kept));
  }
  all.resize(kept);
  all.shrink_to_fit();
  idx = std::move(all);
}

// symbolic_cholesky of a local graph (`nv` vertices, edges `pairs`, ranges cut at `breaks`)
// whose vertices [lo, hi) are the piece's own: `ids` gives each local vertex's ordering index
// (-1: a stand-in vertex), `positions` the final column of each own slot. With `roots`, each
// own supernode whose last column has a parent at or past `hi` appends [row count, rows...].
Piece analyse(std::int64_t nv, std::vector<std::int32_t> pairs, const std::vector<std::int64_t>& ids,
              std::int64_t lo, std::int64_t hi, const std::vector<std::int64_t>& positions,
              const std::vector<std::int64_t>& breaks, const SymbolicOptions& opts, std::vector<std::int64_t>* roots) {
  std::vector<std::int32_t> ptr, idx;
  local_graph(nv, pairs, ptr, idx);
  std::vector<std::int32_t>().swap(pairs);
  const SupernodalStructure f = symbolic_cholesky(nv, ptr.data(), idx.data(), opts.max_supernode, breaks, opts.relax,
                                                  opts.relax_subtree);
  auto id_at = [&](std::int64_t slot) {
    const std::int64_t id = ids[f.post[slot]];
    if (id < 0) throw std::logic_error("parallel symbolic: a stand-in vertex lies below a separator column");
    return id;
  };
  Piece piece;
  for (std::int64_t s = 0; s < f.nsuper(); ++s) {
    const std::int64_t a = f.sn_start[s], b = f.sn_start[s + 1];
    if (a < lo || a >= hi) continue;
    if (b > hi) throw std::logic_error("parallel symbolic: a supernode crosses the end of its range");
    piece.start.push_back(positions[a - lo]);
    piece.width.push_back(b - a);
    const std::size_t first = piece.rows.size();
    for (std::int64_t p = f.rows_ptr[s]; p < f.rows_ptr[s + 1]; ++p) piece.rows.push_back(id_at(f.rows[p]));
    piece.rows_ptr.push_back(static_cast<std::int64_t>(piece.rows.size()));
    if (roots != nullptr && f.parent[b - 1] >= hi) {
      roots->push_back(static_cast<std::int64_t>(piece.rows.size() - first));
      roots->insert(roots->end(), piece.rows.begin() + static_cast<std::ptrdiff_t>(first), piece.rows.end());
    }
  }
  for (std::int64_t k = lo; k < hi; ++k) {
    piece.position.push_back(positions[k - lo]);
    piece.column.push_back(id_at(k));
    piece.parent.push_back(f.parent[k] < 0 ? -1 : id_at(f.parent[k]));
  }
  return piece;
}

// The pieces, every one on every rank, as one structure in the final numbering.
// Where the pieces put the columns: per final column the ordering index placed there and its
// parent's (an ordering index, -1 at a root); per ordering index its final column.
struct Placement {
  std::vector<std::int32_t> column, parent_id, final_of;
  explicit Placement(std::int64_t n)
      : column(static_cast<std::size_t>(n), -1), parent_id(static_cast<std::size_t>(n), -1) {}
  void place(std::int64_t k, std::int32_t c, std::int32_t parent) {
    if (column[k] != -1) throw std::logic_error("parallel symbolic: column " + std::to_string(k) + " placed twice");
    column[k] = c;
    parent_id[k] = parent;
  }
  // Once every column is placed.
  void close() {
    final_of.assign(column.size(), -1);
    for (std::size_t k = 0; k < column.size(); ++k) {
      if (column[k] < 0) throw std::logic_error("parallel symbolic: no range placed column " + std::to_string(k));
      final_of[column[k]] = static_cast<std::int32_t>(k);
    }
  }
  // `out`'s elimination tree, postorder and permutation, and the ordering's tree attached.
  void finish(SupernodalStructure& out, const SeparatorTree& ordering) const {
    const std::size_t n = column.size();
    out.parent.resize(n);
    out.post.resize(n);
    out.perm.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      out.parent[k] = parent_id[k] < 0 ? -1 : final_of[parent_id[k]];
      out.post[k] = column[k];
      out.perm[k] = ordering.perm[column[k]];
    }
    attach_tree(out, ordering);
  }
};

SupernodalStructure assemble(std::int64_t n, const std::vector<PackedPiece>& pieces, const SeparatorTree& ordering) {
  Placement placed(n);
  for (const PackedPiece& piece : pieces)
    for (std::int64_t c = 0; c < piece.nc; ++c) placed.place(piece.position[c], piece.column[c], piece.parent[c]);
  placed.close();
  const std::vector<std::int32_t>& final_of = placed.final_of;
  struct Ref {
    std::int64_t start;
    std::size_t piece, s;
  };
  std::vector<Ref> order;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (std::int64_t s = 0; s < pieces[i].ns; ++s) order.push_back({pieces[i].start[s], i, static_cast<std::size_t>(s)});
  std::sort(order.begin(), order.end(), [](const Ref& a, const Ref& b) { return a.start < b.start; });
  SupernodalStructure out;
  out.n = n;
  out.sn_start.assign(1, 0);
  out.rows_ptr.assign(1, 0);
  for (const Ref& ref : order) {
    const PackedPiece& piece = pieces[ref.piece];
    if (ref.start != out.sn_start.back())
      throw std::logic_error("parallel symbolic: the supernodes do not tile the columns at " + std::to_string(ref.start));
    out.sn_start.push_back(ref.start + piece.width[ref.s]);
    const std::size_t first = out.rows.size();
    for (std::int64_t p = piece.rows_ptr[ref.s]; p < piece.rows_ptr[ref.s + 1]; ++p)
      out.rows.push_back(final_of[piece.rows[p]]);
    std::sort(out.rows.begin() + static_cast<std::ptrdiff_t>(first), out.rows.end());
    out.rows_ptr.push_back(static_cast<std::int64_t>(out.rows.size()));
  }
  placed.finish(out, ordering);
  out.validate();
  return out;
}

// Step 4 on a grid: this rank's share of the pieces' structure (structure_share.hpp). Every
// rank receives the O(n) column arrays and O(nsuper) supernode arrays; each piece's owner
// renumbers its supernodes' rows, cuts them into blocks and sends each rank of every layer
// the blocks of its process row and column, and, where that rank takes part in the
// supernode's broadcasts, the process rows and columns of all its blocks.
SupernodalStructure assemble_share(MPI_Comm comm, std::int64_t n, const std::vector<std::int32_t>& packed,
                                   const SeparatorTree& ordering, const ShareGrid& grid, int rank, int P) {
  const int px = grid.px, py = grid.py, ls = px * py, pz = P / ls;
  std::vector<PackedPiece> pieces;
  for (const std::int32_t* p = packed.data(); p < packed.data() + packed.size();) pieces.push_back(PackedPiece::read(p));
  // Columns: (final position, ordering index, parent's ordering index); supernodes: (first
  // final column, width, rows below, its first row's ordering index or -1).
  std::vector<std::int32_t> cols, sns;
  for (const PackedPiece& piece : pieces) {
    for (std::int64_t c = 0; c < piece.nc; ++c)
      cols.insert(cols.end(), {piece.position[c], piece.column[c], piece.parent[c]});
    for (std::int64_t k = 0; k < piece.ns; ++k) {
      const std::int32_t below = piece.rows_ptr[k + 1] - piece.rows_ptr[k];
      std::int32_t first = -1;  // the smallest final row: found after renumbering, below
      sns.insert(sns.end(), {piece.start[k], piece.width[k], below, first});
    }
  }
  const std::vector<std::int32_t> all_cols = all_gather(comm, cols);
  std::vector<std::int32_t>().swap(cols);
  Placement placed(n);
  for (std::size_t e = 0; e < all_cols.size(); e += 3) placed.place(all_cols[e], all_cols[e + 1], all_cols[e + 2]);
  placed.close();
  const std::vector<std::int32_t>& final_of = placed.final_of;
  // Each own supernode's rows in the final numbering, ascending; its first row told to all.
  std::vector<std::vector<std::int32_t>> own_rows;
  std::size_t at = 0;
  for (const PackedPiece& piece : pieces)
    for (std::int64_t k = 0; k < piece.ns; ++k, at += 4) {
      std::vector<std::int32_t> r;
      for (std::int64_t p = piece.rows_ptr[k]; p < piece.rows_ptr[k + 1]; ++p) r.push_back(final_of[piece.rows[p]]);
      std::sort(r.begin(), r.end());
      if (!r.empty()) sns[at + 3] = r.front();
      own_rows.push_back(std::move(r));
    }
  const std::vector<std::int32_t> all_sns = all_gather(comm, sns);
  const std::int64_t ns = static_cast<std::int64_t>(all_sns.size() / 4);
  std::vector<std::int64_t> by_start(static_cast<std::size_t>(ns));
  for (std::int64_t k = 0; k < ns; ++k) by_start[k] = k;
  std::sort(by_start.begin(), by_start.end(), [&](std::int64_t a, std::int64_t b) { return all_sns[4 * a] < all_sns[4 * b]; });
  SupernodalStructure out;
  out.n = n;
  out.sn_start.assign(1, 0);
  auto sh = std::make_shared<StructureShare>();
  sh->px = px;
  sh->py = py;
  const int q = rank % ls;
  sh->x = q / py;
  sh->y = q % py;
  for (std::int64_t k : by_start) {
    if (all_sns[4 * k] != out.sn_start.back())
      throw std::logic_error("parallel symbolic: the supernodes do not tile the columns at " +
                             std::to_string(all_sns[4 * k]));
    out.sn_start.push_back(all_sns[4 * k] + all_sns[4 * k + 1]);
    sh->below.push_back(all_sns[4 * k + 2]);
  }
  const std::vector<std::int32_t> sn_of = supernode_of_columns(out.sn_start);
  sh->sn_parent.assign(static_cast<std::size_t>(ns), -1);
  for (std::int64_t j = 0; j < ns; ++j) {
    const std::int32_t first = all_sns[4 * by_start[j] + 3];
    if (first >= 0) sh->sn_parent[j] = sn_of[first];
  }
  // Each own supernode's messages: [K, rows..., R..., C...] with their lengths first.
  std::vector<std::vector<std::int32_t>> to(static_cast<std::size_t>(P));
  std::vector<std::int32_t> bsn, blo, bhi, xs, ys;
  std::vector<std::int64_t> ox, oy;  // block indices grouped by process row / column
  std::vector<std::int64_t> xptr(static_cast<std::size_t>(px) + 1), yptr(static_cast<std::size_t>(py) + 1);
  std::vector<char> on_row(static_cast<std::size_t>(px), 0), on_col(static_cast<std::size_t>(py), 0);
  std::vector<std::int32_t> kept;
  at = 0;
  std::size_t own = 0;
  for (const PackedPiece& piece : pieces)
    for (std::int64_t s = 0; s < piece.ns; ++s, ++own) {
      const std::int32_t k = sn_of[piece.start[s]];
      const std::vector<std::int32_t>& r = own_rows[own];
      bsn.clear();
      blo.clear();
      bhi.clear();
      xs.clear();
      ys.clear();
      for (std::size_t a = 0; a < r.size();) {
        std::size_t e = a + 1;
        while (e < r.size() && sn_of[r[e]] == sn_of[r[a]]) ++e;
        const std::int32_t i = sn_of[r[a]];
        bsn.push_back(i);
        blo.push_back(static_cast<std::int32_t>(a));
        bhi.push_back(static_cast<std::int32_t>(e));
        if (!on_row[i % px]) on_row[i % px] = 1, xs.push_back(i % px);
        if (!on_col[i % py]) on_col[i % py] = 1, ys.push_back(i % py);
        a = e;
      }
      // counting sorts of the blocks by process row and by process column (stable: ascending I)
      auto group = [&](int p, std::vector<std::int64_t>& ptr, std::vector<std::int64_t>& idx) {
        std::fill(ptr.begin(), ptr.end(), 0);
        for (std::int32_t i : bsn) ++ptr[i % p + 1];
        for (int v = 0; v < p; ++v) ptr[v + 1] += ptr[v];
        idx.resize(bsn.size());
        std::vector<std::int64_t> next(ptr.begin(), ptr.end() - 1);
        for (std::size_t b = 0; b < bsn.size(); ++b) idx[next[bsn[b] % p]++] = static_cast<std::int64_t>(b);
      };
      group(px, xptr, ox);
      group(py, yptr, oy);
      const int kx = k % px, ky = k % py;
      auto send = [&](int x, int y) {
        kept.clear();  // blocks of row x and of column y, merged by block index
        std::int64_t a = xptr[x], b = yptr[y];
        while (a < xptr[x + 1] || b < yptr[y + 1]) {
          std::int64_t blk;
          if (b == yptr[y + 1] || (a < xptr[x + 1] && ox[a] < oy[b])) blk = ox[a++];
          else if (a == xptr[x + 1] || oy[b] < ox[a]) blk = oy[b++];
          else blk = ox[a++], ++b;  // in both
          kept.insert(kept.end(), r.begin() + blo[blk], r.begin() + bhi[blk]);
        }
        const bool part = (on_row[x] || x == kx) && (on_col[y] || y == ky);
        for (int z = 0; z < pz; ++z) {
          std::vector<std::int32_t>& m = to[static_cast<std::size_t>(z * ls + x * py + y)];
          m.insert(m.end(), {k, static_cast<std::int32_t>(kept.size()), part ? static_cast<std::int32_t>(xs.size()) : 0,
                             part ? static_cast<std::int32_t>(ys.size()) : 0});
          m.insert(m.end(), kept.begin(), kept.end());
          if (part) {
            m.insert(m.end(), xs.begin(), xs.end());
            m.insert(m.end(), ys.begin(), ys.end());
          }
        }
      };
      for (int x : xs)
        for (int y = 0; y < py; ++y) send(x, y);
      for (int y : ys)
        for (int x = 0; x < px; ++x)
          if (!on_row[x]) send(x, y);
      if (!on_row[kx] && !on_col[ky]) send(kx, ky);
      for (std::int32_t v : xs) on_row[v] = 0;
      for (std::int32_t v : ys) on_col[v] = 0;
    }
  std::vector<std::vector<std::int32_t>>().swap(own_rows);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(P));
  std::vector<std::int32_t> flat;
  for (int d = 0; d < P; ++d) {
    counts[d] = static_cast<std::int64_t>(to[d].size());
    flat.insert(flat.end(), to[d].begin(), to[d].end());
    std::vector<std::int32_t>().swap(to[d]);
  }
  const std::vector<std::int32_t> got = all_to_all(comm, flat, int_counts(counts));
  std::vector<std::int32_t>().swap(flat);
  // This rank's share, supernode by supernode.
  std::vector<std::int64_t> msg(static_cast<std::size_t>(ns), -1);
  for (std::size_t e = 0; e < got.size(); e += 4 + static_cast<std::size_t>(got[e + 1] + got[e + 2] + got[e + 3]))
    msg[got[e]] = static_cast<std::int64_t>(e);
  out.rows_ptr.assign(1, 0);
  sh->rows_ptr.assign(1, 0);
  sh->cols_ptr.assign(1, 0);
  for (std::int64_t k = 0; k < ns; ++k) {
    if (msg[k] >= 0) {
      const std::int32_t* m = got.data() + msg[k];
      const std::int32_t* body = m + 4;
      out.rows.insert(out.rows.end(), body, body + m[1]);
      sh->rows.insert(sh->rows.end(), body + m[1], body + m[1] + m[2]);
      sh->cols.insert(sh->cols.end(), body + m[1] + m[2], body + m[1] + m[2] + m[3]);
    }
    out.rows_ptr.push_back(static_cast<std::int64_t>(out.rows.size()));
    sh->rows_ptr.push_back(static_cast<std::int64_t>(sh->rows.size()));
    sh->cols_ptr.push_back(static_cast<std::int64_t>(sh->cols.size()));
  }
  placed.finish(out, ordering);
  out.share = std::move(sh);
  out.validate();
  return out;
}

}  // namespace

SupernodalStructure parallel_symbolic(MPI_Comm comm, std::int64_t n, std::int64_t local_rows,
                                      const std::int64_t* indptr, const std::int32_t* indices, const double* values,
                                      const std::int64_t* row_index, const SeparatorTree& ordering,
                                      const SymbolicOptions& opts, int root, ParallelSymbolicTimes* times,
                                      ShareGrid share_grid) {
  opts.check();
  require(n >= 1, "the matrix has no rows (0 x 0): nothing to factor");
  require(n < std::numeric_limits<std::int32_t>::max(), "parallel symbolic: at most 2^31 - 1 unknowns, got " +
                                                            std::to_string(n));
  int P = 0, rank = 0;
  check_mpi(MPI_Comm_size(comm, &P), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  require(root >= 0 && root < P, "parallel symbolic: root " + std::to_string(root) + " outside the communicator");
  require(share_grid.px == 0 ? share_grid.py == 0
                             : share_grid.px >= 1 && share_grid.py >= 1 && P % (share_grid.px * share_grid.py) == 0,
          [&] {
            return "parallel symbolic: shares on a " + std::to_string(share_grid.px) + " x " +
                   std::to_string(share_grid.py) + " layer, which does not divide " + std::to_string(P) + " ranks";
          });
  require(static_cast<std::int64_t>(ordering.perm.size()) == n,
          "parallel symbolic: the ordering has " + std::to_string(ordering.perm.size()) + " entries for " +
              std::to_string(n) + " unknowns");
  require(ordering.num_nodes() >= 1 && ordering.left.size() == ordering.parent.size() &&
              ordering.col_start.size() == ordering.parent.size() && ordering.col_end.size() == ordering.parent.size(),
          "parallel symbolic: the ordering needs a separator tree (nodes with left, col_start, col_end)");
  // Each ordering index's node, each B index's ordering index.
  std::vector<int> node_of(static_cast<std::size_t>(n), -1);
  for (int k = 0; k < ordering.num_nodes(); ++k) {
    require(ordering.col_start[k] >= 0 && ordering.col_start[k] <= ordering.col_end[k] && ordering.col_end[k] <= n,
            [&] { return "parallel symbolic: node " + std::to_string(k) + "'s columns lie outside the matrix"; });
    for (std::int64_t c = ordering.col_start[k]; c < ordering.col_end[k]; ++c) {
      require(node_of[c] == -1, [&] { return "parallel symbolic: column " + std::to_string(c) + " in two nodes"; });
      node_of[c] = k;
    }
  }
  std::vector<std::int32_t> index_of(static_cast<std::size_t>(n), -1);
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t v = ordering.perm[k];
    require(node_of[k] >= 0,
            [&] { return "parallel symbolic: column " + std::to_string(k) + " in no node of the ordering's tree"; });
    require(v >= 0 && v < n && index_of[v] < 0, "parallel symbolic: the ordering is not a permutation");
    index_of[v] = static_cast<std::int32_t>(k);
  }
  std::vector<int> leaf_of(ordering.num_nodes(), -1), leaves;
  for (int k = 0; k < ordering.num_nodes(); ++k)
    if (ordering.left[k] < 0) {
      leaf_of[k] = static_cast<int>(leaves.size());
      leaves.push_back(k);
    }
  // Each ordering index's leaf rank (leaf i on rank i mod P), -1 in a separator.
  std::vector<int> leaf_rank(static_cast<std::size_t>(n));
  for (std::int64_t c = 0; c < n; ++c) {
    const int leaf = leaf_of[node_of[c]];
    leaf_rank[c] = leaf < 0 ? -1 : leaf % P;
  }

  // 1. Each entry (a, b) of B, in ordering indices, to the rank of a's leaf and as (b, a) to
  //    the rank of b's (once where both lie in one leaf: the graph built there is symmetric),
  //    or to the root when a and b are both separator columns.
  auto t = clock_type::now();
  std::string error;  // this rank's rows checked first, the verdict agreed before any exchange
  for (std::int64_t i = 0; i < local_rows && error.empty(); ++i) {
    const std::int64_t u = row_index[i];
    if (u < 0 || u >= n) error = "parallel symbolic: row index " + std::to_string(u) + " outside [0, " +
                                 std::to_string(n) + ")";
    for (std::int64_t p = indptr[i]; p < indptr[i + 1] && error.empty(); ++p)
      if (indices[p] < 0 || indices[p] >= n)
        error = "parallel symbolic: column index " + std::to_string(indices[p]) + " in row " + std::to_string(u) +
                " outside [0, " + std::to_string(n) + ")";
  }
  agree_on_error(comm, error, "parallel symbolic");
  auto each_pair = [&](auto&& visit) {
    for (std::int64_t i = 0; i < local_rows; ++i) {
      const std::int64_t u = row_index[i];
      for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
        const std::int64_t v = indices[p];
        if (v == u || (values != nullptr && values[p] == 0.0)) continue;
        const std::int64_t a = index_of[u], b = index_of[v];
        const int ra = leaf_rank[a], rb = leaf_rank[b];
        if (ra >= 0) visit(ra, a, b);
        if (rb >= 0 && node_of[b] != node_of[a]) visit(rb, b, a);  // inside one leaf: sent once
        if (ra < 0 && rb < 0) visit(root, a, b);
      }
    }
  };
  std::vector<std::int64_t> counted(P, 0);
  each_pair([&](int to, std::int64_t, std::int64_t) { counted[to] += 2; });
  const std::vector<int> send_count = int_counts(counted);
  const std::vector<int> send_disp = displacements(send_count);
  std::vector<std::int32_t> send(static_cast<std::size_t>(send_disp[P]));
  {
    std::vector<int> at(send_disp.begin(), send_disp.end() - 1);
    each_pair([&](int to, std::int64_t a, std::int64_t b) {
      send[at[to]++] = static_cast<std::int32_t>(a);
      send[at[to]++] = static_cast<std::int32_t>(b);
    });
  }
  std::vector<std::int32_t> received = all_to_all(comm, send, send_count);
  std::vector<std::int32_t>().swap(send);
  if (times != nullptr) times->exchange = seconds_since(t);

  // 2. This rank's leaves, each with its outside neighbours appended after one break.
  t = clock_type::now();
  std::vector<std::vector<std::int32_t>> pairs_of_leaf(leaves.size());
  std::vector<std::int32_t> separator_pairs;
  for (std::size_t e = 0; e < received.size(); e += 2) {
    const int leaf = leaf_of[node_of[received[e]]];
    auto& to = leaf < 0 ? separator_pairs : pairs_of_leaf[leaf];
    to.push_back(received[e]);
    to.push_back(received[e + 1]);
  }
  std::vector<std::int32_t>().swap(received);
  std::vector<std::int32_t> packed;
  std::vector<std::int64_t> roots;
  for (std::size_t leaf = static_cast<std::size_t>(rank); leaf < leaves.size(); leaf += static_cast<std::size_t>(P)) {
    const int node = leaves[leaf];
    const std::int64_t c0 = ordering.col_start[node], c1 = ordering.col_end[node], m = c1 - c0;
    std::vector<std::int32_t>& pairs = pairs_of_leaf[leaf];
    if (m == 0 || !error.empty()) continue;
    std::vector<std::int64_t> outside;
    for (std::size_t e = 0; e < pairs.size() && error.empty(); e += 2) {
      const std::int64_t y = pairs[e + 1];
      if (y < c0)
        error = "parallel symbolic: the entry (" + std::to_string(ordering.perm[pairs[e]]) + ", " +
                std::to_string(ordering.perm[y]) + ") joins leaf " + std::to_string(node) +
                " of the separator tree to a column numbered before it: the tree does not separate the pattern";
      if (y >= c1) outside.push_back(y);
    }
    if (!error.empty()) continue;
    std::sort(outside.begin(), outside.end());
    outside.erase(std::unique(outside.begin(), outside.end()), outside.end());
    std::vector<std::int64_t> ids(static_cast<std::size_t>(m)), positions(static_cast<std::size_t>(m));
    for (std::int64_t c = 0; c < m; ++c) ids[c] = positions[c] = c0 + c;
    ids.insert(ids.end(), outside.begin(), outside.end());
    for (std::int32_t& x : pairs)
      x = static_cast<std::int32_t>(x < c1 ? x - c0
                                           : m + (std::lower_bound(outside.begin(), outside.end(), x) - outside.begin()));
    analyse(static_cast<std::int64_t>(ids.size()), std::move(pairs), ids, 0, m, positions, {m}, opts, &roots)
        .pack(packed);
  }
  agree_on_error(comm, error, "parallel symbolic");
  if (times != nullptr) times->leaves = seconds_since(t);

  // 3. The separators on the root, each leaf root that has a separator parent standing in as
  //    one vertex adjacent to its rows.
  t = clock_type::now();
  std::vector<std::int64_t> to_root(P, 0);
  to_root[root] = static_cast<std::int64_t>(roots.size());
  const std::vector<std::int64_t> root_rows = all_to_all(comm, roots, int_counts(to_root));
  std::vector<std::int64_t>().swap(roots);
  if (rank == root) {
    std::vector<std::int64_t> separators;  // ordering indices, ascending
    for (int k = 0; k < ordering.num_nodes(); ++k)
      if (leaf_of[k] < 0)
        for (std::int64_t c = ordering.col_start[k]; c < ordering.col_end[k]; ++c) separators.push_back(c);
    std::sort(separators.begin(), separators.end());
    if (!separators.empty()) {
      std::int64_t stand_ins = 0;
      for (std::size_t e = 0; e < root_rows.size(); e += 1 + static_cast<std::size_t>(root_rows[e])) ++stand_ins;
      auto local = [&](std::int64_t c) {
        return stand_ins + (std::lower_bound(separators.begin(), separators.end(), c) - separators.begin());
      };
      std::vector<std::int32_t> pairs;
      std::int32_t t_vertex = 0;
      for (std::size_t e = 0; e < root_rows.size(); e += 1 + static_cast<std::size_t>(root_rows[e]), ++t_vertex)
        for (std::int64_t j = 0; j < root_rows[e]; ++j) {
          pairs.push_back(t_vertex);
          pairs.push_back(static_cast<std::int32_t>(local(root_rows[e + 1 + j])));
        }
      for (std::int32_t x : separator_pairs) pairs.push_back(static_cast<std::int32_t>(local(x)));
      std::vector<std::int32_t>().swap(separator_pairs);
      std::vector<std::int64_t> ids(static_cast<std::size_t>(stand_ins), -1), breaks{stand_ins};
      ids.insert(ids.end(), separators.begin(), separators.end());
      for (int k = 0; k < ordering.num_nodes(); ++k)
        if (leaf_of[k] < 0 && ordering.col_end[k] > ordering.col_start[k]) breaks.push_back(local(ordering.col_start[k]));
      std::sort(breaks.begin(), breaks.end());
      breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
      const std::int64_t nv = static_cast<std::int64_t>(ids.size());
      try {
        analyse(nv, std::move(pairs), ids, stand_ins, nv, separators, breaks, opts, nullptr).pack(packed);
      } catch (const std::exception& e) {
        error = std::string("parallel symbolic, the separators: ") + e.what();
      }
    }
  }
  agree_on_error(comm, error, "parallel symbolic");  // the root's failure, not a wait in the gather
  if (times != nullptr) times->separators = seconds_since(t);

  // 4. Every piece to every rank, renumbered into the final order (on a grid: each rank's share).
  t = clock_type::now();
  if (share_grid.px > 0) {
    SupernodalStructure mine = assemble_share(comm, n, packed, ordering, share_grid, rank, P);
    if (times != nullptr) times->assemble = seconds_since(t);
    return mine;
  }
  const std::vector<std::int32_t> all = all_gather(comm, packed);
  std::vector<std::int32_t>().swap(packed);
  std::vector<PackedPiece> pieces;
  for (const std::int32_t* p = all.data(); p < all.data() + all.size();) pieces.push_back(PackedPiece::read(p));
  SupernodalStructure structure = assemble(n, pieces, ordering);
  if (times != nullptr) times->assemble = seconds_since(t);
  return structure;
}

}  // namespace commsolve
