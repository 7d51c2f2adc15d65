// Wall-clock seconds for the phase timings the solvers report.
#pragma once

#include <chrono>

namespace commsolve {

using clock_type = std::chrono::steady_clock;

// Seconds elapsed since `t`.
inline double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

}  // namespace commsolve
