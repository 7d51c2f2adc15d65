#include "commsolve/direct/factor3d.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "commsolve/comm/inner_comm.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/direct/entry_move.hpp"
#include "commsolve/direct/structure_share.hpp"

namespace commsolve {

namespace {

// The inter-grid steps' two tags (header, payload), from the inner communicator's counter.
struct Tags {
  int header, payload;
};

// The phases' messages: one tag per level, so that a rank already in the next level's phase
// cannot be mistaken for one of this level's.
constexpr int first_phase_tag = 100;

// Payloads travel in chunks of at most this many doubles (8 MiB), packed from the block
// store or added into it one chunk at a time: a whole payload packed at once (the
// ancestors' share of a rank's factors, most of them on a 1 x 1 x Pz grid of a 3D problem)
// doubled the rank's peak memory.
constexpr std::int64_t chunk = std::int64_t{1} << 20;

// Where an inter-grid message's values lie in the block store, in order: (offset, length).
using Pieces = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::int64_t total_length(const Pieces& pieces) {
  std::int64_t n = 0;
  for (const auto& piece : pieces) n += piece.second;
  return n;
}

// Walks `pieces` in order, across chunk boundaries: next(n, f) hands the next n values as
// f(offset in the store, offset in the chunk, length), a piece split where a chunk ends.
class PieceCursor {
 public:
  explicit PieceCursor(const Pieces& pieces) : pieces_(pieces) {}
  template <class F>
  void next(std::int64_t n, F&& f) {
    for (std::int64_t done = 0; done < n;) {
      const auto [off, len] = pieces_[p_];
      const std::int64_t take = std::min(len - in_piece_, n - done);
      f(off + in_piece_, done, take);
      done += take;
      in_piece_ += take;
      if (in_piece_ == len) ++p_, in_piece_ = 0;
    }
  }

 private:
  const Pieces& pieces_;
  std::size_t p_ = 0;
  std::int64_t in_piece_ = 0;  // values of pieces_[p_] already handed out
};

// A header (status, payload length) to `peer`, then the store's values at `pieces` (none
// when status is 0: a failure), a chunk at a time through `buf`, recorded.
void send_step(MPI_Comm comm, Tags tags, const Topology& topo, int rank, int peer, std::int64_t status,
               const Pieces& pieces, const double* values, std::vector<double>& buf, StepStats& rec) {
  const std::int64_t header[2] = {status, status ? total_length(pieces) : 0};
  check_mpi(MPI_Send(header, 2, MPI_INT64_T, peer, tags.header, comm), "MPI_Send");
  const Locality where = locality(topo, rank, peer);
  rec.add_send(where, static_cast<std::int64_t>(sizeof header));
  PieceCursor cursor(pieces);
  for (std::int64_t at = 0; at < header[1]; at += chunk) {
    const std::int64_t count = std::min(chunk, header[1] - at);
    buf.resize(static_cast<std::size_t>(count));
    cursor.next(count, [&](std::int64_t from, std::int64_t to, std::int64_t len) {
      std::copy(values + from, values + from + len, buf.begin() + to);
    });
    check_mpi(MPI_Send(buf.data(), static_cast<int>(count), MPI_DOUBLE, peer, tags.payload, comm), "MPI_Send");
    rec.add_send(where, 8 * count);
  }
}

// The header and payload from `peer` (its status returned), sizes as MPI counted them; with
// `apply`, each chunk added (or copied) into the store's values at `pieces` as it arrives.
std::int64_t recv_step(MPI_Comm comm, Tags tags, const Topology& topo, int rank, int peer, const Pieces& pieces,
                       double* values, bool apply, bool add, std::vector<double>& buf, StepStats& rec) {
  std::int64_t header[2] = {0, 0};
  MPI_Status st;
  check_mpi(MPI_Recv(header, 2, MPI_INT64_T, peer, tags.header, comm, &st), "MPI_Recv");
  int count = 0;
  check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
  const Locality where = locality(topo, rank, peer);
  rec.add_recv(where, count);
  apply = apply && header[0] != 0;
  // A payload of the wrong length is still received whole (the sender's chunks matched)
  // before the error is said.
  const std::int64_t expected = total_length(pieces);
  const bool wrong_length = apply && header[1] != expected;
  apply = apply && !wrong_length;
  PieceCursor cursor(pieces);
  for (std::int64_t at = 0; at < header[1]; at += chunk) {
    const std::int64_t n = std::min(chunk, header[1] - at);
    buf.resize(static_cast<std::size_t>(n));
    check_mpi(MPI_Recv(buf.data(), static_cast<int>(n), MPI_DOUBLE, peer, tags.payload, comm, &st), "MPI_Recv");
    check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
    rec.add_recv(where, count);
    if (apply)
      cursor.next(n, [&](std::int64_t to, std::int64_t from, std::int64_t len) {
        double* dst = values + to;
        const double* src = buf.data() + from;
        if (add)
          for (std::int64_t i = 0; i < len; ++i) dst[i] += src[i];
        else
          std::copy(src, src + len, dst);
      });
  }
  if (wrong_length)
    throw std::logic_error("3D factorization: an inter-grid message of " + std::to_string(header[1]) +
                           " values where its parts hold " + std::to_string(expected));
  return header[0];
}

// Planned counterpart: the header, then the payload's chunks.
void plan_step(StepStats& st, Locality where, std::int64_t doubles, bool send) {
  auto add = [&](std::int64_t bytes) { send ? st.add_send(where, bytes) : st.add_recv(where, bytes); };
  add(16);
  for (std::int64_t at = 0; at < doubles; at += chunk) add(8 * std::min(chunk, doubles - at));
}

// What the lower grid z of a pair broadcasts at level l, from each rank (x, y): every part it
// holds of the supernodes of its forests at levels >= l (indexed x py + y).
std::vector<PartList> bcast_parts(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                  const ForestPartition& forests, const ProcessGrid2D& layer, int z, int l) {
  std::vector<PartList> out(static_cast<std::size_t>(layer.size()));
  const std::vector<char> m = forests.mask(z, l, forests.nlev);
  for (std::size_t k = 0; k < m.size(); ++k) {
    if (!m[k]) continue;
    const PartSizes ps = part_sizes(sym, blocks, layer, static_cast<std::int64_t>(k), true);
    for (int x = 0; x < layer.px; ++x)
      for (int y = 0; y < layer.py; ++y)
        for (std::int8_t part : {part_diag, part_l, part_u})
          if (ps.of(layer, static_cast<std::int64_t>(k), x, y, static_cast<FactorPart>(part)) > 0)
            out[x * layer.py + y].emplace_back(static_cast<std::int32_t>(k), part);
  }
  return out;
}

// Doubles of a rank's parts in a list.
std::int64_t list_size(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& layer, int x,
                       int y, const PartList& list, bool inverted, std::vector<PartSizes>& cache) {
  std::int64_t n = 0;
  for (const auto& [k, part] : list) {
    if (cache[k].l.empty()) cache[k] = part_sizes(sym, blocks, layer, k, inverted);
    n += cache[k].of(layer, k, x, y, static_cast<FactorPart>(part));
  }
  return n;
}

}  // namespace

std::vector<char> phase_mask(const ForestPartition& forests, int z, int l) {
  std::vector<char> m(forests.forest.size(), 0);
  const int f = forests.forest_at(z, l);
  if (forests.lowest_grid(f) != z) return m;
  for (std::size_t s = 0; s < m.size(); ++s) m[s] = forests.forest[s] == f;
  return m;
}

std::vector<PartList> reduce_parts(const SupernodeBlocks& blocks, const ForestPartition& forests,
                                   const ProcessGrid2D& layer, int z, int l) {
  require(l >= 1 && l <= forests.nlev, "3D factorization: no reduction at level " + std::to_string(l));
  const int g = forests.forest_at(z, l - 1);
  // The heap subtree of forest g: forests at levels <= l - 1 whose ancestor there is g.
  std::vector<char> in_sub(forests.forest.size(), 0);
  for (std::size_t s = 0; s < in_sub.size(); ++s) {
    const int f = forests.forest[s], lf = forests.level_of(f);
    in_sub[s] = lf <= l - 1 && ((f + 1) >> (l - 1 - lf)) - 1 == g;
  }
  std::vector<PartList> out(static_cast<std::size_t>(layer.size()));
  std::vector<std::int32_t> max_x, max_y;
  for (std::size_t s = 0; s < in_sub.size(); ++s)
    if (in_sub[s])
      for_each_update_target(blocks, layer, static_cast<std::int64_t>(s), max_x, max_y,
                             [&](int x, int y, std::int32_t k, FactorPart part) {
                               if (!in_sub[k]) out[x * layer.py + y].emplace_back(k, part);
                             });
  for (PartList& list : out) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return out;
}

std::vector<CommStats> factor_3d_planned(const SolveLayout& layout, const Topology& topo, const TreeShape& shape) {
  layout.sym().require_whole("the factorization's plan of every rank");
  const SupernodalStructure& sym = layout.sym();
  const ProcessGrid3D& grid = layout.grid();
  const ForestPartition& forests = layout.forests();
  const SupernodeBlocks& blocks = layout.blocks();
  check_tree_shape(shape);
  require(topo.size() == grid.size(), "3D factorization plan: grid and topology differ in size");
  std::vector<CommStats> st(static_cast<std::size_t>(grid.size()));
  for (auto& s : st) s.steps.resize(num_factor_steps);
  for (int z = 0; z < grid.pz; ++z)
    for (int l = 0; l <= forests.nlev; ++l) {
      const std::vector<char> m = phase_mask(forests, z, l);
      if (std::find(m.begin(), m.end(), 1) == m.end()) continue;
      add_phase_planned(factor_phase_collectives(sym, blocks, grid.layer(z), m), shape, topo, factor_xy, st);
    }
  const int ls = grid.layer_size();
  const ProcessGrid2D shape2d = grid.layer(0);
  std::vector<PartSizes> factored(sym.sn_start.size() - 1), inverted(sym.sn_start.size() - 1);
  for (int l = 1; l <= forests.nlev; ++l) {
    const int half = 1 << (l - 1);
    for (int z = half; z < grid.pz; z += 2 * half) {  // z sends its updates down, receives the ancestors
      const std::vector<PartList> red = reduce_parts(blocks, forests, shape2d, z, l);
      const std::vector<PartList> bc = bcast_parts(sym, blocks, forests, shape2d, z - half, l);
      for (int q = 0; q < ls; ++q) {
        const int up = z * ls + q, down = (z - half) * ls + q, x = q / grid.py, y = q % grid.py;
        const Locality where = locality(topo, up, down);
        const std::int64_t nr = list_size(sym, blocks, shape2d, x, y, red[q], false, factored);
        const std::int64_t nb = list_size(sym, blocks, shape2d, x, y, bc[q], true, inverted);
        plan_step(st[up].steps[factor_z_reduce], where, nr, true);
        plan_step(st[down].steps[factor_z_reduce], where, nr, false);
        plan_step(st[down].steps[factor_ancestor_bcast], where, nb, true);
        plan_step(st[up].steps[factor_ancestor_bcast], where, nb, false);
      }
    }
  }
  return st;
}

CommStats factor_3d_planned_rank(const SolveLayout& layout, const Topology& topo, const TreeShape& shape, int rank) {
  const SupernodalStructure& sym = layout.sym();
  const ProcessGrid3D& grid = layout.grid();
  const ForestPartition& forests = layout.forests();
  const SupernodeBlocks& blocks = layout.blocks();
  check_tree_shape(shape);
  require(topo.size() == grid.size() && rank >= 0 && rank < grid.size(),
          "3D factorization plan: rank " + std::to_string(rank) + " outside a grid of " + std::to_string(grid.size()));
  const int ls = grid.layer_size(), z = grid.z_of(rank), q = rank % ls, x = q / grid.py, y = q % grid.py;
  check_share_of(sym, grid.px, grid.py, x, y, "3D factorization plan");
  CommStats st;
  st.steps.resize(num_factor_steps);
  const ProcessGrid2D layer = grid.layer(z);
  for (int l = 0; l <= forests.nlev; ++l) {
    const std::vector<char> m = phase_mask(forests, z, l);
    if (std::find(m.begin(), m.end(), 1) == m.end()) continue;
    const FactorSchedule sch = factor_schedule(sym, blocks, layer, rank, m, shape, topo);
    for (std::size_t i = 0; i < sch.plan.index.size(); ++i) {
      const std::size_t c = static_cast<std::size_t>(sch.plan.index[i]);
      const TreeLinks& t = sch.plan.links[i];
      add_link_stats(st.steps[factor_xy + sch.coll.role[c]], rank, t.parent, t.children.data(), t.children.size(),
                     true, 8 + 8 * sch.coll.set.count[c], topo);
    }
  }
  std::vector<PartSizes> factored(sym.sn_start.size() - 1), inverted(sym.sn_start.size() - 1);
  for (int l = 1; l <= forests.nlev; ++l) {
    const int half = 1 << (l - 1);
    const bool up = z % (2 * half) == half, down = z % (2 * half) == 0 && z + half < grid.pz;
    if (!up && !down) continue;
    const int zu = up ? z : z + half, peer = up ? rank - half * ls : rank + half * ls;
    const Locality where = locality(topo, rank, peer);
    const std::int64_t nr = list_size(sym, blocks, layer, x, y, reduce_parts(blocks, forests, layer, zu, l)[q], false,
                                      factored);
    const std::int64_t nb = list_size(sym, blocks, layer, x, y, bcast_parts(sym, blocks, forests, layer, zu - half, l)[q],
                                      true, inverted);
    plan_step(st.steps[factor_z_reduce], where, nr, up);
    plan_step(st.steps[factor_ancestor_bcast], where, nb, down);
  }
  return st;
}

std::vector<std::int64_t> factor_entries_per_rank(const SolveLayout& layout) {
  layout.sym().require_whole("every rank's factor entries");
  const SupernodalStructure& sym = layout.sym();
  const ProcessGrid3D& grid = layout.grid();
  const ForestPartition& forests = layout.forests();
  const SupernodeBlocks& blocks = layout.blocks();
  const ProcessGrid2D layer = grid.layer(0);
  std::vector<std::int64_t> out(static_cast<std::size_t>(grid.size()), 0);
  for (std::size_t k = 0; k + 1 < sym.sn_start.size(); ++k) {
    const PartSizes ps = part_sizes(sym, blocks, layer, static_cast<std::int64_t>(k), true);
    const int f = forests.forest[k], first = forests.lowest_grid(f), kx = static_cast<int>(k % grid.px),
              ky = static_cast<int>(k % grid.py);
    for (int z = first; z < first + (1 << forests.level_of(f)); ++z) {  // the grids sharing its forest
      std::int64_t* r = out.data() + static_cast<std::size_t>(z) * grid.layer_size();
      r[kx * grid.py + ky] += ps.diag;
      for (int x = 0; x < grid.px; ++x) r[x * grid.py + ky] += ps.l[x];
      for (int y = 0; y < grid.py; ++y) r[kx * grid.py + y] += ps.u[y];
    }
  }
  return out;
}

Factor3DResult factor_3d(MPI_Comm parent_comm, const Topology& topo, const SolveLayout& layout,
                         const EntryTriples& mine, double anorm, const LUOptions& opts, const TreeShape& shape,
                         std::int64_t send_window) {
  const ProcessGrid3D& grid = layout.grid();
  const ForestPartition& forests = layout.forests();
  check_tree_shape(shape);
  const auto t_move = std::chrono::steady_clock::now();
  const MovedEntries moved = move_entries(parent_comm, topo, layout, mine);
  const EntryTriples entries = moved.triples();
  const InnerComm inner(parent_comm, 2);
  const MPI_Comm comm = inner.get();
  const Tags tags{inner.tag_base(), inner.tag_base() + 1};
  require(inner.size() == grid.size(), "3D factorization: the grid and the communicator differ in size");
  require(topo.size() == grid.size(), "3D factorization: topology size differs from the communicator's");
  const int rank = inner.rank(), z = grid.z_of(rank), ls = grid.layer_size();
  const ProcessGrid2D layer = grid.layer(z);
  const int q = rank - layer.base, x = q / grid.py, y = q % grid.py;
  // The layout may hold the whole structure or this rank's share (structure_share.hpp).
  check_share_of(layout.sym(), grid.px, grid.py, x, y, "3D factorization");
  const SupernodalStructure& sym = layout.sym();
  const SupernodeBlocks& blocks = layout.blocks();
  auto seconds = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  Factor3DResult res;
  res.recorded.steps.resize(num_factor_steps);
  res.recorded.steps[factor_entries] = moved.recorded;
  res.move_seconds = seconds(t_move);
  // Storage and A's entries on every rank, then all start factoring together: a rank slower
  // to allocate makes the others wait here, in the allocation phase, not in the numeric one;
  // and a failure so far (memory, an entry out of place) ends it on every rank at once.
  const auto t_alloc = std::chrono::steady_clock::now();
  std::unique_ptr<StoreIndex> index;
  std::string early;
  try {
    res.store = block_store_layout(sym, blocks, grid, forests, rank);
    res.store.values = ZeroedArray<double>(static_cast<std::size_t>(res.store.layout.total));
    res.store.values.prefault();
    res.allocate_seconds = seconds(t_alloc);
    const auto t_arrange = std::chrono::steady_clock::now();
    index = std::make_unique<StoreIndex>(sym, blocks, res.store);
    assemble_entries(sym, blocks, *index, res.store, entries);
    res.arrange_seconds = seconds(t_arrange);
  } catch (const std::exception& e) {
    early = e.what();
  }
  const auto t_wait = std::chrono::steady_clock::now();
  int bad = early.empty() ? 0 : 1, any_bad = 0;
  check_mpi(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  res.allocate_seconds += seconds(t_wait);
  if (any_bad) {
    res.ok = false;
    res.error = early;
    return res;
  }
  const auto t0 = std::chrono::steady_clock::now();
  PivotRule rule = PivotRule::scaled(anorm, opts);
  MessageEngine engine(comm, topo, 1, 0, factor_xy_steps);
  engine.set_window(send_window > 0 ? send_window : std::max(64, 8 * ls));
  FactorExecutor exec(sym, blocks, res.store, *index, engine, rule);
  std::vector<double> buf;  // one chunk of an inter-grid message
  double* v = res.store.values.data();
  auto pieces = [&](const PartList& list, bool inverted) {
    Pieces out;
    for (const auto& [k, part] : list)
      for_each_piece(sym, blocks, res.store, *index, k, static_cast<FactorPart>(part), inverted,
                     [&](std::int64_t off, std::int64_t len) { out.emplace_back(off, len); });
    return out;
  };
  StepStats& red = res.recorded.steps[factor_z_reduce];
  StepStats& bc = res.recorded.steps[factor_ancestor_bcast];
  for (int l = 0; l <= forests.nlev; ++l) {
    const int half = l > 0 ? 1 << (l - 1) : 0;
    if (l > 0 && z % (2 * half) == half) {  // hand the ancestors' updates down; this grid is done
      send_step(comm, tags, topo, rank, rank - half * ls, exec.ok() ? 1 : 0,
                pieces(reduce_parts(blocks, forests, layer, z, l)[q], false), v, buf, red);
      break;
    }
    if (l > 0) {  // this grid factors level l: its partner's updates first, added in
      const Pieces theirs = pieces(reduce_parts(blocks, forests, layer, z + half, l)[q], false);
      if (recv_step(comm, tags, topo, rank, rank + half * ls, theirs, v, exec.ok(), true, buf, red) == 0)
        exec.heard_failure();
    }
    exec.run(factor_schedule(sym, blocks, layer, rank, phase_mask(forests, z, l), shape, topo), first_phase_tag + l);
  }
  // The factored ancestors go down the same pairs, top level first; the status with them.
  for (int l = forests.nlev; l >= 1; --l) {
    const int half = 1 << (l - 1);
    if (z % (2 * half) == 0) {
      send_step(comm, tags, topo, rank, rank + half * ls, exec.ok() ? 1 : 0,
                pieces(bcast_parts(sym, blocks, forests, layer, z, l)[q], true), v, buf, bc);
    } else if (z % (2 * half) == half) {  // copied in
      const Pieces factored = pieces(bcast_parts(sym, blocks, forests, layer, z - half, l)[q], true);
      if (recv_step(comm, tags, topo, rank, rank - half * ls, factored, v, exec.ok(), false, buf, bc) == 0)
        exec.heard_failure();
    }
  }
  res.numeric_seconds = seconds(t0);
  for (int s = 0; s < factor_xy_steps; ++s) res.recorded.steps[factor_xy + s] = engine.recorded().steps[s];
  res.ok = exec.ok();
  res.error = exec.error();
  res.replaced = rule.replaced;
  res.flops = exec.flops();
  return res;
}

}  // namespace commsolve
