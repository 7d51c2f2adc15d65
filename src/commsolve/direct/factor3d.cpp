#include "direct/factor3d.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "comm/inner_comm.hpp"
#include "core/error.hpp"

namespace commsolve {

namespace {

// The factorization's two tags (header, payload), from the inner communicator's counter.
struct Tags {
  int header, payload;
};

std::int64_t update_entries(const SupernodalStructure& sym, std::int64_t s) {
  const std::int64_t r = sym.rows_ptr[s + 1] - sym.rows_ptr[s];
  return r * r;
}

std::int64_t block_entries(const SupernodalStructure& sym, std::int64_t s) {
  const std::int64_t w = sym.sn_start[s + 1] - sym.sn_start[s], r = sym.rows_ptr[s + 1] - sym.rows_ptr[s];
  return w * w + 2 * r * w;
}

// Payloads travel in chunks of at most this many doubles (MPI counts are ints).
constexpr std::int64_t chunk = std::int64_t{1} << 27;

// A header (status, payload length) and the payload to `peer`, recorded.
void send_step(MPI_Comm comm, Tags tags, const Topology& topo, int rank, int peer, std::int64_t status,
               const std::vector<double>& payload, StepStats& rec) {
  const std::int64_t header[2] = {status, static_cast<std::int64_t>(payload.size())};
  check_mpi(MPI_Send(header, 2, MPI_INT64_T, peer, tags.header, comm), "MPI_Send");
  const Locality where = locality(topo, rank, peer);
  rec.add_send(where, static_cast<std::int64_t>(sizeof header));
  for (std::int64_t at = 0; at < header[1]; at += chunk) {
    const int count = static_cast<int>(std::min(chunk, header[1] - at));
    check_mpi(MPI_Send(payload.data() + at, count, MPI_DOUBLE, peer, tags.payload, comm), "MPI_Send");
    rec.add_send(where, 8 * static_cast<std::int64_t>(count));
  }
}

// The header and payload from `peer` (its status returned); sizes as MPI counted them.
std::int64_t recv_step(MPI_Comm comm, Tags tags, const Topology& topo, int rank, int peer,
                       std::vector<double>& payload, StepStats& rec) {
  std::int64_t header[2] = {0, 0};
  MPI_Status st;
  check_mpi(MPI_Recv(header, 2, MPI_INT64_T, peer, tags.header, comm, &st), "MPI_Recv");
  int count = 0;
  check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
  const Locality where = locality(topo, rank, peer);
  rec.add_recv(where, count);
  payload.resize(static_cast<std::size_t>(header[1]));
  for (std::int64_t at = 0; at < header[1]; at += chunk) {
    check_mpi(MPI_Recv(payload.data() + at, static_cast<int>(std::min(chunk, header[1] - at)), MPI_DOUBLE, peer,
                       tags.payload, comm, &st),
              "MPI_Recv");
    check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
    rec.add_recv(where, count);
  }
  return header[0];
}

// Planned counterpart: the header, then the payload's chunks.
void plan_step(StepStats& st, Locality where, std::int64_t doubles, bool send) {
  auto add = [&](std::int64_t bytes) { send ? st.add_send(where, bytes) : st.add_recv(where, bytes); };
  add(16);
  for (std::int64_t at = 0; at < doubles; at += chunk) add(8 * std::min(chunk, doubles - at));
}

}  // namespace

Factor3DPlan factor_3d_plan(const SupernodalStructure& sym, const ForestPartition& forests) {
  const std::vector<std::int32_t> parent = supernodal_etree(sym);
  const std::vector<std::int64_t> order = forest_postorder(parent);
  Factor3DPlan plan;
  plan.pz = forests.pz;
  plan.nlev = forests.nlev;
  const int pz = plan.pz, nlev = plan.nlev;
  plan.factor.assign(pz, std::vector<std::vector<std::int64_t>>(nlev + 1));
  plan.reduce.assign(nlev + 1, std::vector<std::vector<std::int64_t>>(pz));
  plan.bcast.assign(nlev + 1, std::vector<std::vector<std::int64_t>>(pz));
  for (int z = 0; z < pz; ++z)
    for (int l = 0; l <= nlev; ++l) {
      const int f = forests.forest_at(z, l);
      if (forests.lowest_grid(f) != z) continue;
      for (std::int64_t s : order)
        if (forests.forest[s] == f) plan.factor[z][l].push_back(s);
    }
  // Which updates wait where: after a grid factors a level, the updates of its supernodes
  // whose parent it has not factored wait; at the next level the upper grid of each pair
  // hands all of its waiting updates to the lower one.
  std::vector<std::vector<std::int64_t>> waiting(pz);
  std::vector<char> factored(parent.size(), 0);
  for (int l = 0; l <= nlev; ++l) {
    const int half = l > 0 ? 1 << (l - 1) : 0;
    if (l > 0)
      for (int z = half; z < pz; z += 2 * half) {
        std::sort(waiting[z].begin(), waiting[z].end());
        plan.reduce[l][z] = waiting[z];
        waiting[z - half].insert(waiting[z - half].end(), waiting[z].begin(), waiting[z].end());
        waiting[z].clear();
      }
    for (int z = 0; z < pz; ++z) {
      if (l > 0 && z % (2 * half) != 0) continue;  // grids that handed their updates down
      const std::vector<std::int64_t>& S = plan.factor[z][l];
      for (std::int64_t s : S) factored[s] = 1;
      std::vector<std::int64_t> still;
      for (std::int64_t c : waiting[z])
        if (!factored[parent[c]]) still.push_back(c);
      for (std::int64_t s : S)
        if (parent[s] >= 0 && !factored[parent[s]]) still.push_back(s);
      waiting[z] = std::move(still);
    }
  }
  for (int l = 1; l <= nlev; ++l) {
    const int half = 1 << (l - 1);
    for (int z = 0; z < pz; z += 2 * half) {
      const std::vector<char> m = forests.mask(z, l, nlev);
      for (std::size_t s = 0; s < m.size(); ++s)
        if (m[s]) plan.bcast[l][z].push_back(static_cast<std::int64_t>(s));
    }
  }
  return plan;
}

CommStats factor_3d_planned(const Factor3DPlan& plan, const SupernodalStructure& sym, const ProcessGrid3D& grid,
                            const Topology& topo, int rank) {
  CommStats st;
  st.steps.resize(num_factor_steps);
  const int z = grid.z_of(rank);
  if (rank != grid.layer(z).base) return st;
  auto base = [&](int g) { return grid.layer(g).base; };
  auto doubles = [&](const std::vector<std::int64_t>& list, bool blocks) {
    std::int64_t n = 0;
    for (std::int64_t s : list) n += blocks ? block_entries(sym, s) : update_entries(sym, s);
    return n;
  };
  for (int l = 1; l <= plan.nlev; ++l) {
    const int half = 1 << (l - 1);
    StepStats& red = st.steps[factor_z_reduce];
    StepStats& bc = st.steps[factor_ancestor_bcast];
    if (z % (2 * half) == half) {  // sends its waiting updates down, receives the ancestors
      const Locality where = locality(topo, rank, base(z - half));
      plan_step(red, where, doubles(plan.reduce[l][z], false), true);
      plan_step(bc, where, doubles(plan.bcast[l][z - half], true), false);
    } else if (z % (2 * half) == 0) {
      const Locality where = locality(topo, rank, base(z + half));
      plan_step(red, where, doubles(plan.reduce[l][z + half], false), false);
      plan_step(bc, where, doubles(plan.bcast[l][z], true), true);
    }
  }
  return st;
}

Factor3DResult factor_3d(MPI_Comm parent_comm, const Topology& topo, const ProcessGrid3D& grid,
                         const SupernodalStructure& sym, const ForestPartition& forests, const EntryTriples& entries,
                         double anorm, const LUOptions& opts) {
  check_grid_3d(grid);
  require(forests.pz == grid.pz, "3D factorization: forests for Pz = " + std::to_string(forests.pz) + ", grid Pz = " +
                                     std::to_string(grid.pz));
  forests.validate(supernodal_etree(sym));
  const InnerComm inner(parent_comm, 2);
  const MPI_Comm comm = inner.get();
  const Tags tags{inner.tag_base(), inner.tag_base() + 1};
  Factor3DResult res;
  res.recorded.steps.resize(num_factor_steps);
  const int rank = inner.rank(), z = grid.z_of(rank);
  require(inner.size() == grid.size(), "3D factorization: the grid and the communicator differ in size");
  const bool first = rank == grid.layer(z).base;
  const Factor3DPlan plan = first ? factor_3d_plan(sym, forests) : Factor3DPlan{};
  auto seconds = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  // Any failure on this grid (a zero pivot, memory, a broken invariant) is caught, reported
  // with its message, and from then on this grid only keeps the message schedule with a
  // failed status, so that every grid learns of it and none waits for a message that will
  // not come. Failures relayed from other grids leave `error` empty.
  auto attempt = [&](auto&& step) {
    if (!res.ok) return;
    try {
      step();
    } catch (const std::exception& e) {
      res.ok = false;
      res.error = e.what();
    }
  };
  std::unique_ptr<LUEntryArrays> a;
  ZeroedArray<double> stack;
  if (first)
    attempt([&] {
      const auto t = std::chrono::steady_clock::now();
      a = std::make_unique<LUEntryArrays>(sym.n, entries.nnz, entries.rows, entries.cols, entries.values);
      res.arrange_seconds = seconds(t);
    });
  // Storage on every grid, then all start factoring together: a grid slower to allocate
  // makes the others wait here, in the allocation phase, not in the numeric one.
  const auto t_alloc = std::chrono::steady_clock::now();
  if (first)
    attempt([&] {
      res.lu = std::make_unique<SupernodalLU>(sym, forests.mask(z));
      std::int64_t stack_size = 0;
      for (const auto& order : plan.factor[z]) stack_size = std::max(stack_size, res.lu->update_stack_size(order));
      stack = ZeroedArray<double>(static_cast<std::size_t>(stack_size));
      stack.prefault();
    });
  check_mpi(MPI_Barrier(comm), "MPI_Barrier");
  res.allocate_seconds = seconds(t_alloc);
  if (!first) return res;
  const auto t0 = std::chrono::steady_clock::now();
  PivotRule rule = PivotRule::scaled(anorm, opts);
  PendingUpdates pending;
  std::vector<double> buf;
  auto base = [&](int g) { return grid.layer(g).base; };
  StepStats& red = res.recorded.steps[factor_z_reduce];
  StepStats& bc = res.recorded.steps[factor_ancestor_bcast];
  for (int l = 0; l <= plan.nlev; ++l) {
    const int half = l > 0 ? 1 << (l - 1) : 0;
    if (l > 0 && z % (2 * half) == half) {  // hand the waiting updates down; this grid is done
      buf.clear();
      attempt([&] {
        if (pending.size() != plan.reduce[l][z].size())
          throw std::logic_error("3D factorization: waiting updates differ from the plan");
        for (std::int64_t s : plan.reduce[l][z]) {
          const std::vector<double>& u = pending.at(s);
          buf.insert(buf.end(), u.begin(), u.end());
        }
      });
      if (!res.ok) buf.clear();
      send_step(comm, tags, topo, rank, base(z - half), res.ok ? 1 : 0, buf, red);
      pending.clear();
      break;
    }
    if (l > 0) {  // this grid factors level l: its partner's updates first
      const std::int64_t status = recv_step(comm, tags, topo, rank, base(z + half), buf, red);
      if (status == 0) res.ok = false;  // relayed: the failing grid has the message
      attempt([&] {
        std::size_t at = 0;
        for (std::int64_t s : plan.reduce[l][z + half]) {
          const std::size_t m = static_cast<std::size_t>(update_entries(sym, s));
          if (at + m > buf.size()) throw std::logic_error("3D factorization: a reduction message is too short");
          pending[s].assign(buf.begin() + static_cast<std::ptrdiff_t>(at),
                            buf.begin() + static_cast<std::ptrdiff_t>(at + m));
          at += m;
        }
        if (at != buf.size()) throw std::logic_error("3D factorization: a reduction message is too long");
      });
    }
    attempt([&] { res.lu->factor_supernodes(plan.factor[z][l], a->view(), rule, pending, stack); });
  }
  // The factored ancestors go down the same pairs, top level first; the status with them.
  for (int l = plan.nlev; l >= 1; --l) {
    const int half = 1 << (l - 1);
    if (z % (2 * half) == 0) {
      buf.clear();
      attempt([&] {
        for (std::int64_t s : plan.bcast[l][z]) {
          const double* v = res.lu->values(static_cast<std::size_t>(s));
          buf.insert(buf.end(), v, v + block_entries(sym, s));
        }
      });
      if (!res.ok) buf.clear();
      send_step(comm, tags, topo, rank, base(z + half), res.ok ? 1 : 0, buf, bc);
    } else if (z % (2 * half) == half) {
      const std::int64_t status = recv_step(comm, tags, topo, rank, base(z - half), buf, bc);
      if (status == 0) res.ok = false;
      attempt([&] {
        std::size_t at = 0;
        for (std::int64_t s : plan.bcast[l][z - half]) {
          const std::size_t m = static_cast<std::size_t>(block_entries(sym, s));
          if (at + m > buf.size()) throw std::logic_error("3D factorization: a broadcast message is too short");
          std::copy(buf.begin() + static_cast<std::ptrdiff_t>(at),
                    buf.begin() + static_cast<std::ptrdiff_t>(at + m), res.lu->values(static_cast<std::size_t>(s)));
          at += m;
        }
        if (at != buf.size()) throw std::logic_error("3D factorization: a broadcast message is too long");
      });
    }
  }
  res.numeric_seconds = seconds(t0);
  res.replaced = rule.replaced;
  return res;
}

}  // namespace commsolve
