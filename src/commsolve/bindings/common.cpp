#include "commsolve/bindings/common.hpp"

#include <mpi.h>

#include <stdexcept>

namespace commsolve::bindings {

MPI_Comm comm_from_handle(std::int64_t fortran_handle) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw std::runtime_error("MPI is not initialized (import mpi4py.MPI first)");
  return MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
}

namespace {

// Per step: [msgs_sent, bytes_sent, msgs_recv, bytes_recv] x [intra, inter], flattened to 8.
void append_stats(std::vector<std::int64_t>& out, const CommStats& s) {
  for (const StepStats& st : s.steps)
    for (const auto* a : {&st.msgs_sent, &st.bytes_sent, &st.msgs_recv, &st.bytes_recv})
      out.insert(out.end(), a->begin(), a->end());
}

}  // namespace

nb::object stats_array(const std::vector<CommStats>& all, bool squeeze) {
  auto* heap = new std::vector<std::int64_t>();
  for (const CommStats& s : all) append_stats(*heap, s);
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<std::int64_t>*>(p); });
  const std::size_t steps = all.empty() ? 0 : all.front().steps.size();
  if (squeeze)
    return nb::cast(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<2>>(heap->data(), {steps, 8}, owner),
                    nb::rv_policy::reference);  // the capsule owns the data: no copy
  return nb::cast(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<3>>(heap->data(), {all.size(), steps, 8}, owner),
                  nb::rv_policy::reference);  // the capsule owns the data: no copy
}

nb::object stats_array(const CommStats& s) { return stats_array(std::vector<CommStats>{s}, true); }


}  // namespace commsolve::bindings
