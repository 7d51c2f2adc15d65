// The sync-free solve phases (direct/syncfree.hpp) on an accelerator: one rank's factors and
// phase plans uploaded once, the solve vector moved to the device before a run of phases
// and back after it (the inter-grid steps go through MPI from the host). Built with CUDA
// (CMake -DCOMMSOLVE_CUDA=ON: direct/syncfree_cuda.cu); without it make_device_solver
// throws, saying so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "commsolve/direct/syncfree.hpp"

namespace commsolve {

class DeviceSolver {
 public:
  virtual ~DeviceSolver() = default;
  // The host solve vector (rows x nrhs) to the device, and back.
  virtual void upload(const double* sol, std::int64_t rows, int nrhs) = 0;
  virtual void download(double* sol, std::int64_t rows, int nrhs) = 0;
  // Runs phase `i` (an index into the plans it was made with) on the device's solve vector.
  virtual void run(std::size_t i, int nrhs) = 0;
};

// Whether this build has a device backend ("cuda") and a device it can use.
bool device_available(const std::string& device);
// The device solver of `store` and `phases` (per op of the program; phases with no tasks are
// inter-grid steps). Throws std::invalid_argument for an unknown device, std::runtime_error
// when the build has no such backend or no device is present.
std::unique_ptr<DeviceSolver> make_device_solver(const std::string& device, const BlockStore& store,
                                                 const std::vector<SyncFreePhase>& phases);

}  // namespace commsolve
