// Helpers shared by the binding files: array types validated at the boundary (dtype,
// contiguity, length), numpy hand-over without copies, communicators from mpi4py handles,
// statistics as arrays.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/comm/halo_pattern.hpp"

namespace commsolve::bindings {

namespace nb = nanobind;

template <class T>
using In = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using Out = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using NumpyArray = nb::ndarray<nb::numpy, T, nb::ndim<1>>;

// Hands a vector to numpy without copying (the capsule owns it).
// Returned as a plain object so getters' reference_internal policy does not apply.
template <class T>
nb::object to_numpy(std::vector<T> v) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(NumpyArray<T>(heap->data(), {heap->size()}, owner), nb::rv_policy::reference);  // the capsule owns the data: no copy
}

template <class T>
nb::object copy_numpy(const std::vector<T>& v) { return to_numpy(std::vector<T>(v)); }

template <class T>
std::vector<T> to_vector(const In<T>& a) { return std::vector<T>(a.data(), a.data() + a.shape(0)); }

template <class A>
void require_len(const A& a, std::int64_t n, const char* name) {
  if (static_cast<std::int64_t>(a.shape(0)) != n)
    throw nb::value_error((std::string(name) + " has length " + std::to_string(a.shape(0)) +
                           ", expected " + std::to_string(n)).c_str());
}

// CSR rows with global column indices, checked for length.
template <class Index>
GlobalRowsView<Index> rows_view(const In<Index>& indptr, const In<Index>& indices) {
  if (indptr.shape(0) < 1) throw nb::value_error("indptr must have at least one entry");
  std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
  std::int64_t nnz = static_cast<std::int64_t>(indptr.data()[n] - indptr.data()[0]);
  if (static_cast<std::int64_t>(indices.shape(0)) < nnz)
    throw nb::value_error("indices shorter than indptr says");
  return {n, indptr.data(), indices.data()};
}

MPI_Comm comm_from_handle(std::int64_t fortran_handle);

// Statistics of several ranks as one array of shape (ranks, steps, 8) (or (steps, 8)): per
// step [msgs_sent, bytes_sent, msgs_recv, bytes_recv] x [intra, inter].
nb::object stats_array(const std::vector<CommStats>& all, bool squeeze);
nb::object stats_array(const CommStats& s);

// A read-only numpy view of a vector held by a bound object: return it from a property or
// method with the reference_internal policy (a def_prop_ro's default), which keeps the object
// alive while the view lives.
template <class T>
nb::ndarray<nb::numpy, const T, nb::ndim<1>> view(const std::vector<T>& v) {
  return nb::ndarray<nb::numpy, const T, nb::ndim<1>>(v.data(), {v.size()});
}

// One function per layer, each binding its part of the core into the module.
void bind_sparse(nb::module_& m);
void bind_comm(nb::module_& m);
void bind_trees(nb::module_& m);
void bind_symbolic(nb::module_& m);
void bind_layout(nb::module_& m);
void bind_factor(nb::module_& m);
void bind_solve(nb::module_& m);
void bind_parcsr(nb::module_& m);
void bind_sim(nb::module_& m);
void bind_selinv(nb::module_& m);
void bind_dense(nb::module_& m);

}  // namespace commsolve::bindings
