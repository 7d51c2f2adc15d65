// The row-distributed sparse matrix.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/unique_ptr.h>

#include <cstring>

#include "commsolve/bindings/common.hpp"

#include "commsolve/comm/inner_comm.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/comm/record_executor.hpp"
#include "commsolve/parcsr/par_csr.hpp"
#include "commsolve/parcsr/spgemm.hpp"
#include "commsolve/multigrid/classical_level.hpp"
#include "commsolve/multigrid/interpolation.hpp"
#include "commsolve/multigrid/sparsify.hpp"
#include "commsolve/multigrid/strength.hpp"
#include "commsolve/multigrid/independent_sets.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/sparse/kernels.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

LocalRowsView local_rows_view(const In<std::int32_t>& indptr, const In<std::int32_t>& indices, const In<double>& data) {
  const std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
  if (n < 0 || indptr.data()[0] != 0) throw nb::value_error("indptr must start at 0");
  for (std::int64_t i = 0; i < n; ++i)
    if (indptr.data()[i + 1] < indptr.data()[i]) throw nb::value_error("indptr must be non-decreasing");
  require_len(indices, indptr.data()[n], "indices");
  require_len(data, indptr.data()[n], "data");
  return {n, indptr.data(), indices.data(), data.data()};
}

// A's rows over its column space: local_rows_view's checks, one row per local row of A and
// every column inside [owned | halo].
LocalRowsView column_space_rows(const ParCsr& A, const In<std::int32_t>& indptr, const In<std::int32_t>& indices,
                                const In<double>& data) {
  require_len(indptr, A.local_rows() + 1, "indptr");
  const LocalRowsView L = local_rows_view(indptr, indices, data);
  const std::int64_t space = A.local_cols() + static_cast<std::int64_t>(A.col_map().size());
  for (std::size_t k = 0; k < indices.shape(0); ++k)
    if (indices.data()[k] < 0 || indices.data()[k] >= space) throw nb::value_error("column outside the column space");
  return L;
}

nb::tuple product_tuple(ProductResult&& r) {
  return nb::make_tuple(to_numpy(std::move(r.rows.indptr)), to_numpy(std::move(r.rows.indices)),
                        to_numpy(std::move(r.rows.data)), std::move(r.plan), stats_array(r.recorded));
}


RecordsView records_view(const In<std::int64_t>& ptr, const In<std::uint8_t>& data, std::int64_t n, int unit) {
  require_len(ptr, n + 1, "ptr");
  if (ptr.data()[0] != 0) throw nb::value_error("ptr must start at 0");
  for (std::int64_t i = 0; i < n; ++i)
    if (ptr.data()[i + 1] < ptr.data()[i]) throw nb::value_error("ptr must be non-decreasing");
  require_len(data, ptr.data()[n] * unit, "data");
  return {n, ptr.data(), reinterpret_cast<const std::byte*>(data.data())};
}

nb::tuple record_tuple(RecordSet&& r) {
  std::vector<std::uint8_t> bytes(r.data.size());
  if (!bytes.empty()) std::memcpy(bytes.data(), r.data.data(), bytes.size());
  return nb::make_tuple(to_numpy(std::move(r.ptr)), to_numpy(std::move(bytes)));
}

nb::tuple run_records(RecordExecutor& X, const In<std::int64_t>& ptr, const In<std::uint8_t>& data, bool reverse) {
  RecordsView v = records_view(ptr, data, reverse ? X.plan().n_halo : X.plan().n_owned, X.unit_bytes());
  RecordSet r;
  {
    nb::gil_scoped_release nogil;
    r = reverse ? X.reverse(v) : X.forward(v);
  }
  return record_tuple(std::move(r));
}

void bind_matrix(nb::module_& m) {
  nb::class_<ParCsr>(m, "ParCsr", "Row-distributed sparse matrix (collective construction).")
      .def("__init__", [](ParCsr* self, In<std::int64_t> indptr, In<std::int64_t> indices, In<double> values,
                          const Distribution& rows, const Distribution& cols, const Topology& topo,
                          std::int64_t comm, const std::string& strategy) {
        auto view = rows_view(indptr, indices);
        require_len(values, indices.shape(0), "values");
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) ParCsr(view, values.data(), rows, cols, topo, c, strategy);
      }, "indptr"_a, "indices"_a, "values"_a, "row_dist"_a, "col_dist"_a, "topology"_a, "comm"_a,
           "strategy"_a = "standard")
      .def_static("from_space_rows", [](In<std::int32_t> indptr, In<std::int32_t> indices, In<double> values,
                                        In<std::int64_t> halo, const Distribution& rows, const Distribution& cols,
                                        const Topology& topo, std::int64_t comm, const std::string& strategy) {
        require(indptr.shape(0) >= 1, "from_space_rows: indptr is empty");
        require_len(indices, indptr.data()[indptr.shape(0) - 1], "indices");
        require_len(values, indices.shape(0), "values");
        LocalCsr L;
        L.nrows = static_cast<std::int64_t>(indptr.shape(0)) - 1;
        L.indptr.assign(indptr.data(), indptr.data() + indptr.shape(0));
        for (std::int64_t i = 0; i < L.nrows; ++i)
          require(L.indptr[i] <= L.indptr[i + 1],
                  [&] { return "from_space_rows: indptr decreases at row " + std::to_string(i); });
        L.indices.assign(indices.data(), indices.data() + indices.shape(0));
        L.data.assign(values.data(), values.data() + values.shape(0));
        std::vector<std::int64_t> h(halo.data(), halo.data() + halo.shape(0));
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        return std::make_unique<ParCsr>(std::move(L), h, rows, cols, topo, c, strategy);
      }, "indptr"_a, "indices"_a, "values"_a, "halo"_a, "row_dist"_a, "col_dist"_a, "topology"_a, "comm"_a,
         "strategy"_a = "standard",
         "Collective: from this rank's rows over a column space [owned | halo] (the halo's global columns in "
         "`halo`), as the products return them.")
      .def("with_strategy", [](const ParCsr& A, std::int64_t comm, const std::string& strategy) {
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        return std::make_unique<ParCsr>(A, c, strategy);
      }, "comm"_a, "strategy"_a, "Collective: a copy whose halo plan is built for `strategy`.")
      .def("matvec", [](ParCsr& A, In<double> x, Out<double> y) {
        require_len(x, A.local_cols(), "x");
        require_len(y, A.local_rows(), "y");
        nb::gil_scoped_release nogil;
        A.matvec(x.data(), y.data());
      }, "x"_a, "y"_a.noconvert())
      .def("exchange", [](ParCsr& A, In<double> x, Out<double> halo) {
        require_len(x, A.local_cols(), "x");
        require_len(halo, static_cast<std::int64_t>(A.col_map().size()), "halo");
        nb::gil_scoped_release nogil;
        A.executor().begin(x.data());
        const double* h = A.executor().end();
        std::copy(h, h + A.col_map().size(), halo.data());
      }, "x"_a, "halo"_a.noconvert())
      .def("timed_exchanges", [](ParCsr& A, In<double> x, std::int64_t comm, int repeat) {
        require_len(x, A.local_cols(), "x");
        if (repeat < 1) throw nb::value_error("timed_exchanges: repeat must be at least 1");
        MPI_Comm c = comm_from_handle(comm);
        std::vector<double> t(static_cast<std::size_t>(repeat));
        {
          nb::gil_scoped_release nogil;
          for (double& v : t) {
            MPI_Barrier(c);
            const double t0 = MPI_Wtime();
            A.executor().begin(x.data());
            A.executor().end();
            v = MPI_Wtime() - t0;
          }
        }
        return to_numpy(std::move(t));
      }, "x"_a, "comm"_a, "repeat"_a,
         "Collective: `repeat` exchanges, each after a barrier, timed in C++ on this rank (seconds each).")
      .def("rmatvec", [](ParCsr& A, In<double> x, Out<double> y) {
        require_len(x, A.local_rows(), "x");
        require_len(y, A.local_cols(), "y");
        nb::gil_scoped_release nogil;
        A.rmatvec(x.data(), y.data());
      }, "x"_a, "y"_a.noconvert())
      .def("set_format", [](ParCsr& A, const std::string& format) {
        nb::gil_scoped_release nogil;
        A.set_format(format);
      }, "format"_a, "How matvec streams the on-process block: csr, ell, sliced-ell, sell or sell-C-SIGMA.")
      .def_prop_ro("format", &ParCsr::format)
      .def("zero_start_sgs_residual", [](ParCsr& A, In<double> x, Out<double> r, Out<double> work) {
        require_len(x, A.local_rows(), "x");
        require_len(r, A.local_rows(), "r");
        require_len(work, A.local_rows(), "work");
        nb::gil_scoped_release nogil;
        A.zero_start_sgs_residual(x.data(), r.data(), work.data());
      }, "x"_a, "r"_a.noconvert(), "work"_a.noconvert())
      .def("gauss_seidel", [](const ParCsr& A, In<double> inv, In<double> b,
                              std::optional<In<double>> halo, Out<double> x, bool forward, bool zero, Out<double> work) {
        const std::int64_t n = A.local_rows();
        require_len(inv, n, "inv");
        require_len(b, n, "b");
        require_len(x, n, "x");
        require_len(work, n, "work");
        if (halo) require_len(*halo, static_cast<std::int64_t>(A.col_map().size()), "halo");
        nb::gil_scoped_release nogil;
        A.gauss_seidel(inv.data(), b.data(), halo ? halo->data() : nullptr, x.data(), forward, zero,
                       work.data());
      }, "inv"_a, "b"_a, "halo"_a.none(), "x"_a.noconvert(), "forward"_a, "zero"_a, "work"_a.noconvert(),
         "One hybrid Gauss-Seidel sweep on this rank's rows in the matrix's format (halo None: zero).")
      .def_prop_ro("rank", &ParCsr::rank)
      .def_prop_ro("local_rows", &ParCsr::local_rows)
      .def_prop_ro("local_cols", &ParCsr::local_cols)
      .def_prop_ro("local_nnz", &ParCsr::local_nnz)
      .def_prop_ro("spmv_bytes", &ParCsr::spmv_bytes)
      .def_prop_ro("col_map", [](const ParCsr& A) { return copy_numpy(A.col_map()); })
      .def_prop_ro("pattern", &ParCsr::pattern)
      .def_prop_ro("plan", &ParCsr::plan)
      .def("block", [](const ParCsr& A, const std::string& which) {
        const LocalCsr& b = which == "diag" ? A.diag()
                            : which == "offd_on_node" ? A.offd_on_node()
                            : which == "offd_off_node" ? A.offd_off_node()
                            : throw nb::value_error("block is one of 'diag', 'offd_on_node', 'offd_off_node'");
        return nb::make_tuple(copy_numpy(b.indptr), copy_numpy(b.indices), copy_numpy(b.data), b.nrows, b.ncols);
      }, "which"_a)
      .def("merged_rows", [](const ParCsr& A, In<std::int64_t> owned_globals) {
        require_len(owned_globals, A.local_cols(), "owned_globals");
        GlobalRows r;
        {
          nb::gil_scoped_release nogil;
          r = A.merged_rows(owned_globals.data());
        }
        return nb::make_tuple(to_numpy(std::move(r.indptr)), to_numpy(std::move(r.indices)),
                              to_numpy(std::move(r.data)));
      }, "owned_globals"_a,
         "This rank's rows as one CSR (indptr, indices, data) over global columns (given each owned column's global "
         "index), columns ascending.")
      .def("check_diagonal", [](const ParCsr& A) {
        nb::gil_scoped_release nogil;
        return A.check_diagonal();
      }, "Local: (the first local row whose diagonal entry is missing or zero, else -1; whether every stored value "
         "is finite). Square blocks.")
      .def("diagonal", [](const ParCsr& A, bool l1) {
        std::vector<double> d;
        {
          nb::gil_scoped_release nogil;
          d = A.diagonal(l1);
        }
        return to_numpy(std::move(d));
      }, "l1"_a = false,
         "Local: a_ii of every local row (square blocks); l1: plus the row's sum of |a_ij| over the halo columns.")
      .def("space_rows", [](const ParCsr& A) {
        LocalCsr r;
        {
          nb::gil_scoped_release nogil;
          r = A.space_rows();
        }
        return nb::make_tuple(to_numpy(std::move(r.indptr)), to_numpy(std::move(r.indices)),
                              to_numpy(std::move(r.data)));
      }, "This rank's rows as one CSR (indptr, indices, data; int32 indices) over the column space [owned | halo], "
         "columns ascending.")
      .def("recorded_stats_array", [](ParCsr& A, bool reverse) {
        return stats_array(reverse ? A.executor().recorded_reverse() : A.executor().recorded_forward());
      }, "reverse"_a = false)
      .def("planned_stats_array", [](const ParCsr& A) { return stats_array(plan_stats(A.plan(), A.topology())); })
      .def_prop_ro("forward_runs", [](ParCsr& A) { return A.executor().forward_runs(); })
      .def_prop_ro("reverse_runs", [](ParCsr& A) { return A.executor().reverse_runs(); })
      .def("reset_recorded", [](ParCsr& A) { A.executor().reset_recorded(); });

}

void bind_products(nb::module_& m) {
  m.def("spgemm", [](const ParCsr& A, const ParCsr& B, std::int64_t comm, const std::string& strategy,
                     const CommPlan* reuse, bool keep_zeros) {
    MPI_Comm c = comm_from_handle(comm);
    ProductResult r;
    {
      nb::gil_scoped_release nogil;
      r = spgemm(A, B, strategy, c, reuse, keep_zeros);
    }
    return product_tuple(std::move(r));
  }, "A"_a, "B"_a, "comm"_a, "strategy"_a, "reuse"_a.none() = nb::none(), "keep_zeros"_a = false,
     "Collective: this rank's rows of A B -> (indptr, indices, data, plan, recorded stats).");
  m.def("galerkin", [](const ParCsr& A, const ParCsr& P, std::int64_t comm, const std::string& strategy,
                       const CommPlan* reuse_ap, const CommPlan* reuse_rap) {
    MPI_Comm c = comm_from_handle(comm);
    GalerkinResult r;
    {
      nb::gil_scoped_release nogil;
      r = galerkin(A, P, strategy, c, reuse_ap, reuse_rap);
    }
    return nb::make_tuple(to_numpy(std::move(r.rows.indptr)), to_numpy(std::move(r.rows.indices)),
                          to_numpy(std::move(r.rows.data)), to_numpy(std::move(r.halo)), std::move(r.plan_ap),
                          stats_array(r.recorded_ap), std::move(r.plan_rap), stats_array(r.recorded_rap));
  }, "A"_a, "P"_a, "comm"_a, "strategy"_a, "reuse_ap"_a.none() = nb::none(), "reuse_rap"_a.none() = nb::none(),
     "Collective: this rank's rows of P^T (A P) over its column space -> (indptr, indices, data, halo globals, "
     "A P's plan and recorded stats, P^T (A P)'s plan and recorded stats); ParCsr.from_space_rows builds the "
     "matrix.");

  m.def("transpose_rows", [](const ParCsr& A, std::int64_t comm, const std::string& strategy) {
    MPI_Comm c = comm_from_handle(comm);
    ProductResult r;
    {
      nb::gil_scoped_release nogil;
      r = transpose_rows(A, strategy, c);
    }
    return product_tuple(std::move(r));
  }, "A"_a, "comm"_a, "strategy"_a,
     "Collective: this rank's rows of A^T (A's column distribution, global columns) -> (indptr, indices, data, "
     "plan, recorded stats).");

  m.def("extended_i_interpolation", [](const ParCsr& A, In<std::int32_t> indptr, In<std::int32_t> indices,
                                       In<double> data, In<std::uint8_t> strong, In<std::int64_t> global,
                                       In<std::int64_t> coarse, double trunc, int pmax, std::int64_t comm) {
    const LocalRowsView L = column_space_rows(A, indptr, indices, data);
    require_len(strong, indices.shape(0), "strong");
    const std::int64_t space = A.local_cols() + static_cast<std::int64_t>(A.col_map().size());
    require_len(global, space, "global");
    require_len(coarse, space, "coarse");
    const CoarseningView v{L, strong.data(), global.data(), coarse.data()};
    MPI_Comm c = comm_from_handle(comm);
    GlobalRows P;
    {
      nb::gil_scoped_release nogil;
      P = extended_i_interpolation(A, v, c, trunc, pmax);
    }
    return nb::make_tuple(to_numpy(std::move(P.indptr)), to_numpy(std::move(P.indices)), to_numpy(std::move(P.data)));
  }, "A"_a, "indptr"_a, "indices"_a, "data"_a, "strong"_a, "global"_a, "coarse"_a, "trunc"_a, "pmax"_a, "comm"_a,
     "Collective: this rank's rows of the extended+i interpolation (global coarse columns), truncated as "
     "truncate_rows does when trunc > 0 or pmax > 0 (the hierarchy checks both).");

}

void bind_coarsening(nb::module_& m) {
  m.def("classical_strength", [](In<std::int32_t> indptr, In<std::int32_t> indices, In<double> data, double theta) {
    const LocalRowsView L = local_rows_view(indptr, indices, data);
    std::vector<std::uint8_t> strong;
    {
      nb::gil_scoped_release nogil;
      strong = classical_strength(L, theta);
    }
    return to_numpy(std::move(strong));
  }, "indptr"_a, "indices"_a, "data"_a, "theta"_a,
     "Local: 1 for each strong entry of the rank's rows (column space; hypre's classical measure).");
  m.def("strength_graphs", [](const ParCsr& A, In<std::int32_t> indptr, In<std::int32_t> indices, In<double> data,
                              In<std::uint8_t> strong, const std::string& strategy, std::int64_t comm) {
    const LocalRowsView L = column_space_rows(A, indptr, indices, data);
    require_len(strong, indices.shape(0), "strong");
    MPI_Comm c = comm_from_handle(comm);
    StrengthGraphs g;
    {
      nb::gil_scoped_release nogil;
      g = strength_graphs(A, L, strong.data(), strategy, c);
    }
    return nb::make_tuple(std::move(g.S), std::move(g.G), to_numpy(std::move(g.depends_on_me)));
  }, "A"_a, "indptr"_a, "indices"_a, "data"_a, "strong"_a, "strategy"_a, "comm"_a,
     "Collective: (S, the pattern of S + S^T, |S^T_i| per owned point) for the strong entries of A's rows.");

  m.attr("PMIS_UNDECIDED") = kUndecided;
  m.attr("PMIS_COARSE") = kCoarse;
  m.attr("PMIS_FINE") = kFine;
  m.def("pmis_split", [](ParCsr& G, ParCsr& S, In<double> weight, In<double> state, std::int64_t comm) {
    require_len(weight, G.local_rows(), "weight");
    require_len(state, G.local_rows(), "state");
    MPI_Comm c = comm_from_handle(comm);
    std::vector<double> out;
    {
      nb::gil_scoped_release nogil;
      out = pmis_split(G, S, to_vector(weight), to_vector(state), c);
    }
    return to_numpy(std::move(out));
  }, "G"_a, "S"_a, "weight"_a, "state"_a, "comm"_a,
     "Collective: PMIS's rounds from the initial states (0 undecided, -1 fine, 1 coarse: chosen beforehand, as "
     "HMIS) -> every point's state (1 coarse, -1 fine); G: S + S^T's pattern, S: the strength matrix.");

  m.def("classical_level", [](ParCsr& A, In<std::int64_t> ids, double theta, bool hmis, std::uint64_t seed,
                              double trunc, int pmax, bool direct, bool aggressive, const std::string& strategy,
                              const std::string& product_strategy, const std::string& result_strategy,
                              std::int64_t comm) {
    require_len(ids, A.local_rows(), "ids");
    const ClassicalLevelOptions o{theta, hmis, seed, trunc, pmax, direct, aggressive, strategy, product_strategy,
                                  result_strategy};
    MPI_Comm c = comm_from_handle(comm);
    ClassicalLevel r;
    {
      nb::gil_scoped_release nogil;
      r = classical_level(A, ids.data(), o, c);
    }
    const bool coarsens = r.P != nullptr;
    nb::dict times;
    for (const auto& [step, s] : r.times) times[step.c_str()] = s;
    nb::list setup;
    for (ProductExchange& e : r.setup_exchanges)
      setup.append(nb::make_tuple(e.kernel, std::move(e.plan), stats_array(e.recorded), to_numpy(std::move(e.halo))));
    return nb::make_tuple(times, to_numpy(std::move(r.state)), to_numpy(std::move(r.coarse_offsets)), std::move(r.P),
                          std::move(r.Ac), coarsens ? nb::cast(std::move(r.plan_ap)) : nb::none(),
                          coarsens ? nb::cast(stats_array(r.recorded_ap)) : nb::none(),
                          coarsens ? nb::cast(std::move(r.plan_rap)) : nb::none(),
                          coarsens ? nb::cast(stats_array(r.recorded_rap)) : nb::none(), setup);
  }, "A"_a, "ids"_a, "theta"_a, "hmis"_a, "seed"_a, "trunc"_a, "pmax"_a, "direct"_a, "aggressive"_a, "strategy"_a,
     "product_strategy"_a, "result_strategy"_a, "comm"_a,
     "Collective: one level of classical AMG in C++ (strength, PMIS/HMIS split, coarse numbering, extended+i "
     "or direct truncated, or aggressive: a second split and multipass, then P^T A P) -> (seconds per step, state, coarse "
     "offsets, P, Ac, A P's plan and stats, P^T (A P)'s plan and stats, the aggressive products' exchanges as "
     "(kernel, plan, stats, halo)); P, Ac and the plans None when the split does not coarsen.");
  m.def("classical_split", [](ParCsr& G, ParCsr& S, In<double> depends_on_me, In<std::int64_t> ids,
                              std::uint64_t seed, bool hmis, std::int64_t comm) {
    require_len(depends_on_me, S.local_rows(), "depends_on_me");
    require_len(ids, S.local_rows(), "ids");
    MPI_Comm c = comm_from_handle(comm);
    std::vector<double> out;
    {
      nb::gil_scoped_release nogil;
      out = classical_split(G, S, to_vector(depends_on_me), ids.data(), seed, hmis, c);
    }
    return to_numpy(std::move(out));
  }, "G"_a, "S"_a, "depends_on_me"_a, "ids"_a, "seed"_a, "hmis"_a, "comm"_a,
     "Collective: the PMIS (hmis: HMIS) split from the strength graphs -> 1 coarse, -1 fine per point.");
  m.def("coarse_numbering", [](ParCsr& A, In<double> state, std::int64_t comm) {
    require_len(state, A.local_rows(), "state");
    MPI_Comm c = comm_from_handle(comm);
    CoarseNumbering r;
    {
      nb::gil_scoped_release nogil;
      r = coarse_numbering(A, to_vector(state), c);
    }
    return nb::make_tuple(to_numpy(std::move(r.coarse)), to_numpy(std::move(r.offsets)));
  }, "A"_a, "state"_a, "comm"_a,
     "Collective: each column-space entry's coarse index (-1: fine) and the coarse Distribution's offsets.");
  m.def("hash_uniform", [](In<std::int64_t> ids, std::uint64_t seed) {
    std::vector<double> out(ids.shape(0));
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = hash_uniform(ids.data()[k], seed);
    return to_numpy(std::move(out));
  }, "ids"_a, "seed"_a, "Local: a number in [0, 1) per global index (splitmix64 of the index and the seed), the same "
                        "on every rank: the random part of a PMIS weight.");

  m.def("rs_first_pass", [](const ParCsr& S) {
    std::vector<char> c;
    {
      nb::gil_scoped_release nogil;
      c = rs_first_pass(S);
    }
    return to_numpy(std::vector<std::uint8_t>(c.begin(), c.end()));
  }, "S"_a, "Local: the first pass of Ruge-Stueben coarsening over the rank's own points (S's diagonal block) -> "
            "1 for each coarse point.");

  m.attr("NOT_ROOT") = kNotRoot;
  m.attr("FIRST_ROOT") = kFirstRoot;
  m.attr("LATER_ROOT") = kLaterRoot;
  m.def("aggregate_roots", [](ParCsr& G, In<double> weight, int min_left_neighbours, std::int64_t comm) {
    require_len(weight, G.local_rows(), "weight");
    MPI_Comm c = comm_from_handle(comm);
    std::vector<std::int8_t> out;
    {
      nb::gil_scoped_release nogil;
      out = aggregate_roots(G, to_vector(weight), min_left_neighbours, c);
    }
    return to_numpy(std::move(out));
  }, "G"_a, "weight"_a, "min_left_neighbours"_a, "comm"_a,
     "Collective: smoothed aggregation's roots over the symmetric strength graph G (per point NOT_ROOT, "
     "FIRST_ROOT: the distance-2 independent set, LATER_ROOT: roots among the points it leaves).");

}

void bind_sparsify(nb::module_& m) {
  m.def("lump_to_strong_neighbours", [](const ParCsr& A, In<std::int32_t> indptr, In<std::int32_t> indices,
                                        In<double> data, In<std::uint8_t> keep, double theta, std::int64_t comm) {
    const LocalRowsView L = column_space_rows(A, indptr, indices, data);
    require_len(keep, indices.shape(0), "keep");
    MPI_Comm c = comm_from_handle(comm);
    Lumped r;
    {
      nb::gil_scoped_release nogil;
      r = lump_to_strong_neighbours(A, L, keep.data(), theta, c);
    }
    return nb::make_tuple(to_numpy(std::move(r.rows.indptr)), to_numpy(std::move(r.rows.indices)),
                          to_numpy(std::move(r.rows.data)), to_numpy(std::move(r.must_keep)),
                          stats_array(r.recorded));
  }, "A"_a, "indptr"_a, "indices"_a, "data"_a, "keep"_a, "theta"_a, "comm"_a,
     "Collective: the rows of L, the dropped entries (keep 0) of A's rows lumped to the strong neighbours their "
     "rows keep (global columns) -> (indptr, indices, data, must_keep per entry (no strong neighbour takes it), the "
     "halo-row fetch's recorded stats).");
}

void bind_records(nb::module_& m) {
  nb::class_<RecordExecutor>(m, "RecordExchange", "Variable-length records moved along a plan (collective calls).")
      .def("__init__", [](RecordExecutor* self, const CommPlan& plan, const Topology& topo, std::int64_t comm,
                          int unit_bytes) {
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) RecordExecutor(plan, topo, c, unit_bytes);
      }, "plan"_a, "topology"_a, "comm"_a, "unit_bytes"_a)
      .def("forward", [](RecordExecutor& X, In<std::int64_t> ptr, In<std::uint8_t> data) {
        return run_records(X, ptr, data, false);
      }, "ptr"_a, "data"_a, "Collective: the owners' records (n_owned) -> this rank's halo records.")
      .def("reverse", [](RecordExecutor& X, In<std::int64_t> ptr, In<std::uint8_t> data) {
        return run_records(X, ptr, data, true);
      }, "ptr"_a, "data"_a, "Collective: halo records (n_halo) -> per owned entry, every contribution.")
      .def_prop_ro("plan", &RecordExecutor::plan)
      .def("recorded_stats_array", [](const RecordExecutor& X, bool reverse) {
        return stats_array(reverse ? X.recorded_reverse() : X.recorded_forward());
      }, "reverse"_a = false);
  m.def("record_stats_virtual", [](const std::vector<CommPlan>& plans, const Topology& topo,
                                   const std::vector<std::vector<std::int64_t>>& lengths, int unit_bytes, bool reverse) {
    return stats_array(record_stats_virtual(plans, topo, lengths, unit_bytes, reverse), false);
  }, "plans"_a, "topology"_a, "lengths"_a, "unit_bytes"_a, "reverse"_a,
     "Planned statistics of moving records along every rank's plan, shape (ranks, steps, 8).");
  m.def("inner_comm_count", &InnerComm::live_duplicates,
        "Communicator duplicates commsolve objects hold in this process.");
}

}  // namespace

void bind_parcsr(nb::module_& m) {
  bind_matrix(m);
  bind_products(m);
  bind_coarsening(m);
  bind_sparsify(m);
  bind_records(m);
}

}  // namespace commsolve::bindings
