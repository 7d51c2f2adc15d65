// Row interchanges as LAPACK's getrf reports them (row t swapped with row ipiv[t] >= t, for
// t = 0, 1, ... in order), turned into the moves a pivoted 2.5D LU makes: one step's (the
// rows of the trailing matrix, swapped on every layer) and, at the end, those of each block
// column of L (the interchanges of the steps after it). The MPI executor and the simulator
// both move rows by these.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

namespace commsolve {

// The interchanges of positions [t0, t0 + w): position -> the position its row came from,
// for the positions whose row changes.
inline std::map<std::int64_t, std::int64_t> interchange_moves(const std::vector<std::int64_t>& ipiv, std::int64_t t0,
                                                              std::int64_t w) {
  std::map<std::int64_t, std::int64_t> content;
  const auto at = [&](std::int64_t p) {
    auto it = content.find(p);
    return it == content.end() ? p : it->second;
  };
  for (std::int64_t t = t0; t < t0 + w; ++t) {
    const std::int64_t p = ipiv[static_cast<std::size_t>(t)], a = at(t), b = at(p);
    content[t] = b, content[p] = a;
  }
  for (auto it = content.begin(); it != content.end();) it = it->first == it->second ? content.erase(it) : std::next(it);
  return content;
}

// For each block column j of L (blocks of nb, from the last to the first), f(j, q, s) for
// every row position q >= (j + 1) nb whose row in that column must come from position s
// (what the interchanges of the steps after j did).
template <class F>
void for_left_moves(const std::vector<std::int64_t>& ipiv, std::int64_t n, std::int64_t nb, F&& f) {
  const std::int64_t K = (n + nb - 1) / nb;
  std::vector<std::int64_t> src(static_cast<std::size_t>(n)), inv(static_cast<std::size_t>(n));
  std::iota(src.begin(), src.end(), 0);  // src[q]: where the row at q after the steps > j stood after step j
  std::iota(inv.begin(), inv.end(), 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> upd;
  for (std::int64_t j = K - 1; j >= 0; --j) {
    for (std::int64_t q = (j + 1) * nb; q < n; ++q)
      if (src[static_cast<std::size_t>(q)] != q) f(j, q, src[static_cast<std::size_t>(q)]);
    // step j in front: src[q] = sigma_j(src[q]), sigma_j(p) the position before step j of the row at p after it
    upd.clear();
    for (const auto& [p, before] : interchange_moves(ipiv, j * nb, std::min(nb, n - j * nb)))
      upd.emplace_back(inv[static_cast<std::size_t>(p)], before);
    for (const auto& [q, s] : upd) src[static_cast<std::size_t>(q)] = s;
    for (const auto& [q, s] : upd) inv[static_cast<std::size_t>(s)] = q;
  }
}

}  // namespace commsolve
