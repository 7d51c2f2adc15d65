// Times the triangular solve's dense block kernel on this machine, for calibrating the
// simulator's compute model (commsolve calibrate): CpuKernels::lower_panel, the product of
// an m x w panel with w x nrhs values, the kernel that dominates a solve's arithmetic.
#pragma once

#include <cstdint>

namespace commsolve::sim {

// Seconds per call, cycling through `count` distinct panels (a working set that stays in
// cache or streams from memory), the best of three runs of at least `min_seconds` each.
double time_panel_products(std::int64_t m, std::int64_t w, int nrhs, std::int64_t count, double min_seconds);

}  // namespace commsolve::sim
