// The device backends' entry points; the CUDA one is compiled only with -DCOMMSOLVE_CUDA=ON.
#include "commsolve/direct/device_solve.hpp"

#include <stdexcept>

namespace commsolve {

#ifdef COMMSOLVE_WITH_CUDA
bool cuda_device_present();  // direct/syncfree_cuda.cu
std::unique_ptr<DeviceSolver> make_cuda_solver(const BlockStore& store, const std::vector<SyncFreePhase>& phases);
#endif

namespace {

void check_device_name(const std::string& device) {
  if (device != "cuda")
    throw std::invalid_argument("unknown device '" + device + "' (known: cuda)");
}

}  // namespace

bool device_available(const std::string& device) {
  check_device_name(device);
#ifdef COMMSOLVE_WITH_CUDA
  return cuda_device_present();
#else
  return false;
#endif
}

std::unique_ptr<DeviceSolver> make_device_solver(const std::string& device, const BlockStore& store,
                                                 const std::vector<SyncFreePhase>& phases) {
  check_device_name(device);
#ifdef COMMSOLVE_WITH_CUDA
  if (!cuda_device_present()) throw std::runtime_error("device 'cuda': no CUDA device is present on this node");
  return make_cuda_solver(store, phases);
#else
  (void)store;
  (void)phases;
  throw std::runtime_error(
      "device 'cuda': this build of commsolve has no CUDA backend (rebuild with "
      "SKBUILD_CMAKE_DEFINE=COMMSOLVE_CUDA=ON python3 scripts/build.py, nvcc on the PATH)");
#endif
}

}  // namespace commsolve
