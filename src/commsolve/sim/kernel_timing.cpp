#include "sim/kernel_timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.hpp"
#include "direct/solve_executor.hpp"

namespace commsolve::sim {

double time_panel_products(std::int64_t m, std::int64_t w, int nrhs, std::int64_t count, double min_seconds) {
  require(m >= 1 && w >= 1 && nrhs >= 1 && count >= 1 && min_seconds > 0,
          "kernel timing: m, w, nrhs and count must be at least 1, min_seconds positive");
  std::vector<double> panels(static_cast<std::size_t>(m * w * count)), x(static_cast<std::size_t>(w * nrhs), 1.0),
      out(static_cast<std::size_t>(m * nrhs));
  for (std::size_t i = 0; i < panels.size(); ++i) panels[i] = 1.0 / static_cast<double>(1 + i % 97);
  CpuKernels kernels;
  using clock = std::chrono::steady_clock;
  double best = 0;
  double sink = 0;
  for (int run = 0; run < 3; ++run) {
    std::int64_t calls = 0;
    const auto t0 = clock::now();
    double elapsed = 0;
    while (elapsed < min_seconds || calls < count) {
      for (std::int64_t c = 0; c < count; ++c) {
        kernels.lower_panel(m, w, nrhs, panels.data() + c * m * w, x.data(), out.data());
        sink += out[static_cast<std::size_t>(c % m)];
      }
      calls += count;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    }
    const double per = elapsed / static_cast<double>(calls);
    best = run == 0 ? per : std::min(best, per);
  }
  volatile double keep = sink;  // the products stay observable
  (void)keep;
  return best;
}

}  // namespace commsolve::sim
