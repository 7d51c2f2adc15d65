#include "commsolve/direct/matching.hpp"

#include <cmath>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

#include "commsolve/core/error.hpp"

namespace commsolve {

LargeDiagonal large_diagonal_matching(std::int64_t n, const std::int64_t* indptr, const std::int32_t* indices,
                                      const double* data) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  require(n >= 1, "large-diagonal matching: the matrix has no rows");
  // Costs c_ij = log(row max) - log|a_ij| (>= 0), zero entries left out.
  std::vector<double> cost(static_cast<std::size_t>(indptr[n]), inf);
  std::vector<double> log_row_max(static_cast<std::size_t>(n), -inf);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {  // log|a_ij| once, into cost
      if (!std::isfinite(data[p]))
        throw std::invalid_argument("large-diagonal matching: entry (" + std::to_string(i) + ", " +
                                    std::to_string(indices[p]) + ") is not finite");
      if (data[p] == 0.0) continue;
      cost[p] = std::log(std::abs(data[p]));
      log_row_max[i] = std::max(log_row_max[i], cost[p]);
    }
    require(log_row_max[i] > -inf, [&] {
      return "the matrix is structurally singular: row " + std::to_string(i) +
             " (counting from 0) has no nonzero entry";
    });
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p)
      if (data[p] != 0.0) cost[p] = log_row_max[i] - cost[p];
  }
  // Duals: u_i = 0 (every row's cheapest entry costs 0), v_j = min over its entries.
  std::vector<double> u(static_cast<std::size_t>(n), 0.0), v(static_cast<std::size_t>(n), inf);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) v[indices[p]] = std::min(v[indices[p]], cost[p]);
  for (std::int64_t j = 0; j < n; ++j)
    require(v[j] < inf, [&] {
      return "the matrix is structurally singular: column " + std::to_string(j) +
             " (counting from 0) has no nonzero entry";
    });
  // Greedy start: a row takes a free column whose reduced cost is zero.
  std::vector<std::int32_t> col_of_row(static_cast<std::size_t>(n), -1), row_of_col(static_cast<std::size_t>(n), -1);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
      const std::int32_t j = indices[p];
      if (row_of_col[j] < 0 && cost[p] - u[i] - v[j] <= 0.0) {
        row_of_col[j] = static_cast<std::int32_t>(i);
        col_of_row[i] = j;
        break;
      }
    }
  // Successive shortest augmenting paths from every free row (Dijkstra on reduced costs).
  std::vector<double> dist(static_cast<std::size_t>(n), inf);
  std::vector<std::int32_t> pred(static_cast<std::size_t>(n), -1);  // the row a column was reached from
  std::vector<char> done(static_cast<std::size_t>(n), 0);
  std::vector<std::int32_t> touched, scanned;
  using Item = std::pair<double, std::int32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  for (std::int64_t r = 0; r < n; ++r) {
    if (col_of_row[r] >= 0) continue;
    auto relax = [&](std::int32_t i, double base) {
      for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
        const std::int32_t j = indices[p];
        if (done[j] || cost[p] == inf) continue;
        const double d = base + std::max(0.0, cost[p] - u[i] - v[j]);
        if (d < dist[j]) {
          if (dist[j] == inf) touched.push_back(j);
          dist[j] = d;
          pred[j] = i;
          heap.emplace(d, j);
        }
      }
    };
    relax(static_cast<std::int32_t>(r), 0.0);
    std::int32_t free_col = -1;
    double D = inf;
    while (!heap.empty()) {
      const auto [d, j] = heap.top();
      heap.pop();
      if (done[j] || d > dist[j]) continue;
      done[j] = 1;
      scanned.push_back(j);
      if (row_of_col[j] < 0) {
        free_col = j;
        D = d;
        break;
      }
      relax(row_of_col[j], d);
    }
    require(free_col >= 0, [&] {
      return "the matrix is structurally singular: no perfect matching (row " + std::to_string(r) +
             ", counting from 0, cannot be matched)";
    });
    // Dual update keeps reduced costs >= 0 and zero along the new matching.
    u[r] += D;
    for (std::int32_t j : scanned) {
      if (j == free_col) continue;
      v[j] -= D - dist[j];
      u[row_of_col[j]] += D - dist[j];
    }
    for (std::int32_t j = free_col; j >= 0;) {  // augment along the path
      const std::int32_t i = pred[j], next = col_of_row[i];
      row_of_col[j] = i;
      col_of_row[i] = j;
      j = next;
    }
    for (std::int32_t j : touched) {
      dist[j] = inf;
      done[j] = 0;
      pred[j] = -1;
    }
    touched.clear();
    scanned.clear();
    while (!heap.empty()) heap.pop();
  }
  LargeDiagonal out;
  out.row_of_col = std::move(row_of_col);
  out.row_scale.resize(static_cast<std::size_t>(n));
  out.col_scale.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out.row_scale[i] = std::exp(u[i] - log_row_max[i]);
  for (std::int64_t j = 0; j < n; ++j) out.col_scale[j] = std::exp(v[j]);
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int32_t i = out.row_of_col[j];
    for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p)
      if (indices[p] == j) out.log_product += std::log(std::abs(data[p]));
  }
  return out;
}

}  // namespace commsolve
