// The simulator layer: network and compute models, and the replays of solves.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "commsolve/bindings/common.hpp"
#include <nanobind/stl/tuple.h>

#include "commsolve/sim/dense_sim.hpp"
#include "commsolve/sim/halo_sim.hpp"
#include "commsolve/sim/timing.hpp"
#include "commsolve/sim/trees_sim.hpp"
#include "commsolve/sim/selinv_sim.hpp"
#include "commsolve/sim/solve_sim.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

// Per rank: seconds by category (the workload's, then idle), finish; (ranks, categories + 1).
nb::object times_array(const std::vector<sim::RankTime>& times, std::size_t categories) {
  const std::size_t cols = categories + 1;
  std::vector<double> v;
  v.reserve(times.size() * cols);
  for (const sim::RankTime& t : times) {
    v.insert(v.end(), t.by_category.begin(), t.by_category.end());
    v.push_back(t.finish);
  }
  auto* heap = new std::vector<double>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<2>>(heap->data(), {times.size(), cols}, owner),
                  nb::rv_policy::reference);  // the capsule owns the data: no copy
}

nb::dict result_dict(const sim::SimResult& r) {
  nb::dict d;
  d["categories"] = r.categories;
  d["times"] = times_array(r.times, r.categories.size());
  std::vector<std::int64_t> msgs, calls, in_cache;
  for (const sim::RankTime& t : r.times) {
    msgs.push_back(t.sent);
    msgs.push_back(t.received);
    calls.push_back(t.calls);
    in_cache.push_back(t.in_cache ? 1 : 0);
  }
  d["messages"] = to_numpy(std::move(msgs));      // per rank: sent, received
  d["calls"] = to_numpy(std::move(calls));        // per rank: kernel calls
  d["in_cache"] = to_numpy(std::move(in_cache));  // per rank: 1 if its working set fits its cache share
  d["recorded"] = stats_array(r.recorded, false);
  std::vector<double> path;
  for (const auto& [rank, t] : r.critical_path) {
    path.push_back(rank);
    path.push_back(t);
  }
  d["critical_path"] = to_numpy(std::move(path));  // (rank, time) pairs, latest first
  std::vector<double> tl;
  for (const sim::Interval& i : r.timeline) tl.insert(tl.end(), {double(i.rank), double(i.category), i.begin, i.end});
  d["timeline"] = to_numpy(std::move(tl));  // (rank, category, begin, end) rows
  std::vector<double> tr;  // (rank, kind, peer, bytes, tag, seconds) rows, each rank's in order
  for (std::size_t q = 0; q < r.trace.size(); ++q)
    for (const sim::TraceOp& o : r.trace[q])
      tr.insert(tr.end(), {double(q), double(o.kind), double(o.peer), double(o.bytes), double(o.tag), o.seconds});
  d["trace"] = to_numpy(std::move(tr));
  d["predicted"] = r.predicted;
  d["events"] = r.events;
  d["build_seconds"] = r.build_seconds;
  d["run_seconds"] = r.run_seconds;
  return d;
}

void bind_models(nb::module_& m) {
  nb::class_<sim::NetworkModel>(m, "NetworkModel", "The simulator's network: alpha and rate per locality and protocol.")
      .def("__init__", [](sim::NetworkModel* self, const std::vector<double>& alpha, const std::vector<double>& rate,
                          const std::vector<double>& injection, std::int64_t short_max, std::int64_t eager_max,
                          double overhead, int socket_size, double any_source, double engine_overhead,
                          double gamma, double link_rate, double hop_latency) {
        if (alpha.size() != 9 || rate.size() != 9 || injection.size() != 3)
          throw nb::value_error("NetworkModel: alpha and rate need 9 values (3 localities x 3 protocols), "
                                "injection 3");
        new (self) sim::NetworkModel();
        for (int l = 0; l < 3; ++l)
          for (int p = 0; p < 3; ++p) {
            if (!(alpha[3 * l + p] >= 0) || !(rate[3 * l + p] > 0))
              throw nb::value_error("NetworkModel: alpha must be >= 0 and rate > 0");
            self->alpha[l][p] = alpha[3 * l + p];
            self->rate[l][p] = rate[3 * l + p];
          }
        for (int p = 0; p < 3; ++p) self->injection[p] = injection[p];
        if (!(0 <= short_max && short_max <= eager_max) || !(overhead >= 0) || socket_size < 0 ||
            !(any_source >= 0) || !(engine_overhead >= 0) || !(gamma >= 0) || !(link_rate >= 0) ||
            !(hop_latency >= 0))
          throw nb::value_error("NetworkModel: need 0 <= short_max <= eager_max, overhead >= 0, socket_size >= 0, "
                                "any_source >= 0, engine_overhead >= 0, gamma >= 0, link_rate >= 0, hop_latency >= 0");
        self->link_rate = link_rate;
        self->hop_latency = hop_latency;
        self->any_source = any_source;
        self->gamma = gamma;
        self->engine_overhead = engine_overhead;
        self->short_max = short_max;
        self->eager_max = eager_max;
        self->overhead = overhead;
        self->socket_size = socket_size;
      }, "alpha"_a, "rate"_a, "injection"_a, "short_max"_a, "eager_max"_a, "overhead"_a, "socket_size"_a,
         "any_source"_a = 0.0, "engine_overhead"_a = 0.0, "gamma"_a = 0.0, "link_rate"_a = 0.0,
         "hop_latency"_a = 0.0)
      .def_ro("overhead", &sim::NetworkModel::overhead);
  nb::class_<sim::ComputeModel>(m, "ComputeModel",
                                "The simulator's compute: flop rate, memory bandwidth, call overhead, copy rate, "
                                "last-level cache per node and its bandwidth (0, 0: no cache modelled).")
      .def("__init__", [](sim::ComputeModel* self, double flop_rate, double bandwidth, double call_overhead,
                          double copy_rate, double cache_bytes, double cache_bandwidth, double triangular_rate) {
        if (!(flop_rate > 0) || !(bandwidth > 0) || !(call_overhead >= 0) || !(copy_rate > 0))
          throw nb::value_error("ComputeModel: flop_rate, bandwidth and copy_rate must be > 0, call_overhead >= 0");
        if (!(cache_bytes >= 0) || !(cache_bandwidth >= 0) || (cache_bytes > 0) != (cache_bandwidth > 0))
          throw nb::value_error("ComputeModel: cache_bytes and cache_bandwidth must both be > 0 (a cache) or both 0");
        if (!(triangular_rate >= 0)) throw nb::value_error("ComputeModel: triangular_rate must be >= 0 (0: flop_rate)");
        new (self) sim::ComputeModel{flop_rate, bandwidth, call_overhead, copy_rate, cache_bytes, cache_bandwidth,
                                     triangular_rate};
      }, "flop_rate"_a, "bandwidth"_a, "call_overhead"_a, "copy_rate"_a, "cache_bytes"_a = 0.0,
         "cache_bandwidth"_a = 0.0, "triangular_rate"_a = 0.0)
      .def_ro("flop_rate", &sim::ComputeModel::flop_rate)
      .def_ro("bandwidth", &sim::ComputeModel::bandwidth)
      .def_ro("call_overhead", &sim::ComputeModel::call_overhead)
      .def_ro("copy_rate", &sim::ComputeModel::copy_rate)
      .def_ro("cache_bytes", &sim::ComputeModel::cache_bytes)
      .def_ro("cache_bandwidth", &sim::ComputeModel::cache_bandwidth)
      .def_ro("triangular_rate", &sim::ComputeModel::triangular_rate);
}

void bind_timing(nb::module_& m) {

  m.def("time_panel_products", [](std::int64_t m_, std::int64_t w, int nrhs, std::int64_t count, double min_seconds) {
    nb::gil_scoped_release nogil;
    return sim::time_panel_products(m_, w, nrhs, count, min_seconds);
  }, "m"_a, "w"_a, "nrhs"_a, "count"_a, "min_seconds"_a,
        "Seconds per call of the solve's panel product (m x w times w x nrhs) over `count` distinct panels.");
  m.def("time_triangular_solves", [](std::int64_t w, int nrhs, std::int64_t count, double min_seconds) {
    nb::gil_scoped_release nogil;
    return sim::time_triangular_solves(w, nrhs, count, min_seconds);
  }, "w"_a, "nrhs"_a, "count"_a, "min_seconds"_a,
        "Seconds per dtrsm of a unit lower w x w block against w x nrhs values, over `count` distinct blocks.");
  m.def("time_pack", [](std::int64_t n, double min_seconds) {
    nb::gil_scoped_release nogil;
    return sim::time_pack(n, min_seconds);
  }, "n"_a, "min_seconds"_a, "Seconds per pack of n doubles gathered through an index array (in cache).");
  m.def("time_send_overhead", [](std::int64_t comm, int sender, int receiver, int count, int bytes, int reps) {
    MPI_Comm c = comm_from_handle(comm);
    nb::gil_scoped_release nogil;
    return sim::time_send_overhead(c, sender, receiver, count, bytes, reps);
  }, "comm"_a, "sender"_a, "receiver"_a, "count"_a, "bytes"_a, "reps"_a,
        "Collective: the sender's CPU seconds per posted MPI_Isend (LogGP o), best of reps rounds.");
  m.def("time_pingpong", [](std::int64_t comm, int partner, bool first, int bytes, int reps, int posted) {
    MPI_Comm c = comm_from_handle(comm);
    nb::gil_scoped_release nogil;
    return sim::time_pingpong(c, partner, first, bytes, reps, posted);
  }, "comm"_a, "partner"_a, "first"_a, "bytes"_a, "reps"_a, "posted"_a = 0,
        "One-way seconds of a bytes-byte message with partner, over reps round trips (both ranks call it); "
        "posted > 0: sent and received as commsolve's engines do (Isend; any-source receives, Waitany).");
}

void bind_replays(nb::module_& m) {
  m.def("solve_categories", &sim::solve_categories, "What a simulated solve's time goes to (idle added).");
  m.def("simulate_halo", [](const std::vector<CommPlan>& plans, const Topology& topo, int block, int repeat,
                            const sim::NetworkModel& net, const sim::ComputeModel& cpu, bool timeline, bool trace) {
    sim::SimResult r;
    {
      nb::gil_scoped_release nogil;
      r = sim::simulate_halo(plans, topo, net, cpu, block, repeat, {timeline, trace});
    }
    return result_dict(r);
  }, "plans"_a, "topology"_a, "block"_a, "repeat"_a, "network"_a, "compute"_a, "timeline"_a, "trace"_a = false,
        "Every rank's halo-exchange plan replayed as the MPI executor runs it: categories (comm, idle), times per "
        "rank, messages, recorded statistics, critical path, timeline, predicted.");
  m.def("simulate_collectives", [](const CollectiveSet& set, const TreeShape& tree, const Topology& topo,
                                   const sim::NetworkModel& net, const sim::ComputeModel& cpu, bool timeline,
                                   bool trace) {
    sim::SimResult r;
    {
      nb::gil_scoped_release nogil;
      r = sim::simulate_collectives(set, tree, topo, net, cpu, {timeline, trace});
    }
    return result_dict(r);
  }, "collectives"_a, "tree"_a, "topology"_a, "network"_a, "compute"_a, "timeline"_a, "trace"_a = false,
        "Every rank's restricted collectives replayed as the MPI engine runs them (all in flight at once): "
        "categories compute, comm, idle.");
  m.def("simulate_dense", [](const std::string& kind, std::int64_t m_, std::int64_t n, std::int64_t k,
                             std::int64_t nb, const std::tuple<int, int, int>& grid, std::int64_t panel,
                             std::int64_t piece, const TreeShape& tree, const Topology& topo,
                             const sim::NetworkModel& net, const sim::ComputeModel& cpu, bool timeline, bool trace,
                             bool tournament) {
    const Grid25D g{std::get<0>(grid), std::get<1>(grid), std::get<2>(grid)};
    if (kind != "matmul" && kind != "lu") throw nb::value_error("kind must be 'matmul' or 'lu'");
    if (kind == "lu" && (m_ != n || k != n)) throw nb::value_error("LU of a square matrix: m = n = k");
    sim::SimResult r;
    {
      nb::gil_scoped_release nogil;
      r = kind == "matmul" ? sim::simulate_matmul(MatmulShape{m_, n, k, nb, panel, piece}, g, tree, topo, net, cpu,
                                                  {timeline, trace})
                           : sim::simulate_lu(n, nb, g, tree, topo, net, cpu, {timeline, trace}, piece, tournament);
    }
    return result_dict(r);
  }, "kind"_a, "m"_a, "n"_a, "k"_a, "nb"_a, "grid"_a, "panel"_a, "piece"_a, "tree"_a, "topology"_a, "network"_a,
        "compute"_a,
        "timeline"_a = false, "trace"_a = false, "tournament"_a = false,
        "The 2.5D multiply or LU (tournament: with tournament pivoting, a random matrix's pivots modelled) replayed "
        "as the MPI run does it (the same machines): categories (compute, comm, idle), per-rank times, recorded "
        "statistics per role, critical path, predicted.");
  m.def("selinv_categories", &sim::selinv_categories, "What a simulated selected inversion's time goes to.");
  m.def("simulate_selinv", [](const SolveLayout& layout, const TreeShape& tree, bool symmetric, const Topology& topo,
                              const sim::NetworkModel& net, const sim::ComputeModel& cpu, bool timeline, bool trace) {
    sim::SimResult r;
    {
      nb::gil_scoped_release nogil;
      r = sim::simulate_selinv(layout, tree, symmetric, topo, net, cpu, {timeline, trace});
    }
    return result_dict(r);
  }, "layout"_a, "tree"_a, "symmetric"_a, "topology"_a, "network"_a, "compute"_a, "timeline"_a, "trace"_a = false,
        "Parallel selected inversion replayed as the MPI run does it (SelinvMachine): categories (compute, comm, "
        "idle), per-rank times, recorded statistics per role, critical path, predicted.");
  m.def("simulate_solve", [](const SolveLayout& layout, const SolveOptions& opts, int nrhs, const RhsMap* rhs,
                             const Topology& topo, const sim::NetworkModel& net, const sim::ComputeModel& cpu,
                             bool timeline, bool trace) {
    sim::SimResult r;
    {
      nb::gil_scoped_release nogil;
      r = sim::simulate_solve(layout, opts, nrhs, rhs, topo, net, cpu, {timeline, trace});
    }
    return result_dict(r);
  }, "layout"_a, "options"_a, "nrhs"_a, "rhs"_a.none(), "topology"_a, "network"_a, "compute"_a, "timeline"_a,
        "trace"_a = false,
        "One solve replayed in the simulator: categories (fp, xy_comm, z_comm, redistribute, idle), per-rank times "
        "(ranks, categories + 1: the last the finish), messages, recorded statistics, critical path, timeline, "
        "predicted, events.");
}

}  // namespace

void bind_sim(nb::module_& m) {
  bind_models(m);
  bind_timing(m);
  bind_replays(m);
}

}  // namespace commsolve::bindings
