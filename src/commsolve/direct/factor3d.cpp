#include "direct/factor3d.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "comm/mpi_executor.hpp"
#include "core/error.hpp"

namespace commsolve {

namespace {

constexpr int header_tag = 7001, payload_tag = 7002;

std::int64_t update_entries(const SupernodalStructure& sym, std::int64_t s) {
  const std::int64_t r = sym.rows_ptr[s + 1] - sym.rows_ptr[s];
  return r * r;
}

std::int64_t block_entries(const SupernodalStructure& sym, std::int64_t s) {
  const std::int64_t w = sym.sn_start[s + 1] - sym.sn_start[s], r = sym.rows_ptr[s + 1] - sym.rows_ptr[s];
  return w * w + 2 * r * w;
}

// A status header and a payload to `peer`, recorded.
void send_step(MPI_Comm comm, const Topology& topo, int rank, int peer, std::int64_t status, const std::vector<double>& payload,
               StepStats& rec) {
  check_mpi(MPI_Send(&status, 1, MPI_INT64_T, peer, header_tag, comm), "MPI_Send");
  check_mpi(MPI_Send(payload.data(), static_cast<int>(payload.size()), MPI_DOUBLE, peer, payload_tag, comm),
            "MPI_Send");
  const Locality where = locality(topo, rank, peer);
  rec.add_send(where, 8);
  rec.add_send(where, 8 * static_cast<std::int64_t>(payload.size()));
}

// The status header and payload from `peer`; sizes as MPI counted them.
std::int64_t recv_step(MPI_Comm comm, const Topology& topo, int rank, int peer, std::vector<double>& payload, StepStats& rec) {
  std::int64_t status = 0;
  MPI_Status st;
  check_mpi(MPI_Recv(&status, 1, MPI_INT64_T, peer, header_tag, comm, &st), "MPI_Recv");
  int count = 0;
  check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
  const Locality where = locality(topo, rank, peer);
  rec.add_recv(where, count);
  MPI_Message msg;
  check_mpi(MPI_Mprobe(peer, payload_tag, comm, &msg, &st), "MPI_Mprobe");
  check_mpi(MPI_Get_count(&st, MPI_DOUBLE, &count), "MPI_Get_count");
  payload.resize(static_cast<std::size_t>(count));
  check_mpi(MPI_Mrecv(payload.data(), count, MPI_DOUBLE, &msg, &st), "MPI_Mrecv");
  rec.add_recv(where, 8 * static_cast<std::int64_t>(count));
  return status;
}

}  // namespace

Factor3DPlan factor_3d_plan(const SupernodalStructure& sym, const ForestPartition& forests) {
  const std::vector<std::int64_t> parent = supernode_parents(sym);
  const std::vector<std::int64_t> order = supernode_postorder(parent);
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
  auto payload = [&](const std::vector<std::int64_t>& list, bool blocks) {
    std::int64_t n = 0;
    for (std::int64_t s : list) n += blocks ? block_entries(sym, s) : update_entries(sym, s);
    return 8 * n;
  };
  for (int l = 1; l <= plan.nlev; ++l) {
    const int half = 1 << (l - 1);
    StepStats& red = st.steps[factor_z_reduce];
    StepStats& bc = st.steps[factor_ancestor_bcast];
    if (z % (2 * half) == half) {  // sends its waiting updates down, receives the ancestors
      const Locality where = locality(topo, rank, base(z - half));
      red.add_send(where, 8);
      red.add_send(where, payload(plan.reduce[l][z], false));
      bc.add_recv(where, 8);
      bc.add_recv(where, payload(plan.bcast[l][z - half], true));
    } else if (z % (2 * half) == 0 && z + half < grid.pz) {
      const Locality where = locality(topo, rank, base(z + half));
      red.add_recv(where, 8);
      red.add_recv(where, payload(plan.reduce[l][z + half], false));
      bc.add_send(where, 8);
      bc.add_send(where, payload(plan.bcast[l][z], true));
    }
  }
  return st;
}

Factor3DResult factor_3d(MPI_Comm parent_comm, const Topology& topo, const ProcessGrid3D& grid,
                         const SupernodalStructure& sym, const ForestPartition& forests, const LUEntries& a,
                         double anorm, const LUOptions& opts) {
  OwnedComm owned(parent_comm);
  MPI_Comm comm = owned.get();
  Factor3DResult res;
  res.recorded.steps.resize(num_factor_steps);
  const int rank = owned.rank(), z = grid.z_of(rank);
  require(owned.size() == grid.size(), "3D factorization: the grid and the communicator differ in size");
  if (rank != grid.layer(z).base) return res;
  const auto t0 = std::chrono::steady_clock::now();
  const Factor3DPlan plan = factor_3d_plan(sym, forests);
  res.lu = std::make_unique<SupernodalLU>(sym, forests.mask(z));
  SupernodalLU& lu = *res.lu;
  std::int64_t stack_size = 0;
  for (const auto& order : plan.factor[z]) stack_size = std::max(stack_size, lu.update_stack_size(order));
  const auto t_alloc = std::chrono::steady_clock::now();
  ZeroedArray<double> stack(static_cast<std::size_t>(stack_size));
  stack.prefault();
  const double stack_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_alloc).count();
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
      if (res.ok) {
        if (pending.size() != plan.reduce[l][z].size())
          throw std::logic_error("3D factorization: waiting updates differ from the plan");
        for (std::int64_t s : plan.reduce[l][z]) {
          const std::vector<double>& u = pending.at(s);
          buf.insert(buf.end(), u.begin(), u.end());
        }
      }
      send_step(comm, topo, rank, base(z - half), res.ok ? 1 : 0, buf, red);
      pending.clear();
      break;
    }
    if (l > 0 && z + half < grid.pz) {  // this grid factors level l: its partner's updates first
      const std::int64_t status = recv_step(comm, topo, rank, base(z + half), buf, red);
      if (status == 0 && res.ok) {
        res.ok = false;
        res.error = "grid " + std::to_string(z + half) + " (or one below it) failed";
      }
      if (res.ok) {
        std::size_t at = 0;
        for (std::int64_t s : plan.reduce[l][z + half]) {
          const std::size_t m = static_cast<std::size_t>(update_entries(sym, s));
          if (at + m > buf.size()) throw std::logic_error("3D factorization: a reduction message is too short");
          pending[s].assign(buf.begin() + static_cast<std::ptrdiff_t>(at),
                            buf.begin() + static_cast<std::ptrdiff_t>(at + m));
          at += m;
        }
        if (at != buf.size()) throw std::logic_error("3D factorization: a reduction message is too long");
      }
    }
    if (!res.ok) continue;
    try {
      lu.factor_supernodes(plan.factor[z][l], a, rule, pending, stack);
    } catch (const std::runtime_error& e) {  // a zero or non-finite pivot: reported, not thrown
      res.ok = false;
      res.error = e.what();
    }
  }
  // The factored ancestors go down the same pairs, top level first; the status with them.
  for (int l = plan.nlev; l >= 1; --l) {
    const int half = 1 << (l - 1);
    if (z % (2 * half) == 0 && z + half < grid.pz) {
      buf.clear();
      if (res.ok)
        for (std::int64_t s : plan.bcast[l][z]) {
          const double* v = lu.values(static_cast<std::size_t>(s));
          buf.insert(buf.end(), v, v + block_entries(sym, s));
        }
      send_step(comm, topo, rank, base(z + half), res.ok ? 1 : 0, buf, bc);
    } else if (z % (2 * half) == half) {
      const std::int64_t status = recv_step(comm, topo, rank, base(z - half), buf, bc);
      if (status == 0 && res.ok) {
        res.ok = false;
        res.error = "another grid failed";
      }
      if (!res.ok) continue;
      std::size_t at = 0;
      for (std::int64_t s : plan.bcast[l][z - half]) {
        const std::size_t m = static_cast<std::size_t>(block_entries(sym, s));
        if (at + m > buf.size()) throw std::logic_error("3D factorization: a broadcast message is too short");
        std::copy(buf.begin() + static_cast<std::ptrdiff_t>(at), buf.begin() + static_cast<std::ptrdiff_t>(at + m),
                  lu.values(static_cast<std::size_t>(s)));
        at += m;
      }
      if (at != buf.size()) throw std::logic_error("3D factorization: a broadcast message is too long");
    }
  }
  res.numeric_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - lu.allocate_seconds() - stack_seconds;
  return res;
}

}  // namespace commsolve
