#include "commsolve/direct/forests.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <queue>
#include <string>

#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

void check_pz(int pz, const std::string& spelled) {
  require(pz >= 1 && (pz & (pz - 1)) == 0, "Pz must be a power of two, got " + spelled);
}

}  // namespace

void check_grid_3d(const ProcessGrid3D& grid, const std::string& spelled) {
  const std::string name = spelled.empty() ? std::to_string(grid.px) + "x" + std::to_string(grid.py) + "x" +
                                                 std::to_string(grid.pz)
                                           : spelled;
  require(grid.px >= 1 && grid.py >= 1 && grid.pz >= 1, "grid dimensions must be positive, got " + name);
  check_pz(grid.pz, name);
  require(static_cast<std::int64_t>(grid.px) * grid.py * grid.pz <= std::numeric_limits<int>::max(),
          "a " + name + " grid has more ranks than an int numbers");
}

int forest_levels(int pz) {
  check_pz(pz, std::to_string(pz));
  int l = 0;
  while ((1 << l) < pz) ++l;
  return l;
}

ForestPartition checked_forests(const SupernodalStructure& sym, std::vector<std::int32_t> forest, int pz) {
  ForestPartition f;
  f.pz = pz;
  f.nlev = forest_levels(pz);
  f.forest = std::move(forest);
  f.validate(supernodal_etree(sym));
  return f;
}

int ForestPartition::level_of(int f) const {
  int depth = 0;
  while ((f + 1) >> (depth + 1)) ++depth;
  return nlev - depth;
}

std::vector<char> ForestPartition::mask(int z, int lo, int hi) const {
  std::vector<char> in_range(static_cast<std::size_t>(num_forests()), 0);
  for (int l = lo; l <= hi; ++l) in_range[forest_at(z, l)] = 1;
  std::vector<char> m(forest.size());
  for (std::size_t s = 0; s < forest.size(); ++s) m[s] = in_range[forest[s]];
  return m;
}

void ForestPartition::validate(const std::vector<std::int32_t>& parent) const {
  require(pz >= 1 && (pz & (pz - 1)) == 0 && (1 << nlev) == pz, "forests: pz must be 2^nlev");
  require(parent.size() == forest.size(), "forests: " + std::to_string(forest.size()) + " forest ids for " +
                                              std::to_string(parent.size()) + " supernodes");
  for (std::size_t s = 0; s < forest.size(); ++s) {
    const int f = forest[s];
    require(f >= 0 && f < num_forests(), [&] {
      return "forests: supernode " + std::to_string(s) + " in forest " + std::to_string(f) + ", outside [0, " +
             std::to_string(num_forests()) + ")";
    });
    if (parent[s] < 0) continue;
    int g = forest[parent[s]];
    int a = f;  // g must be f or one of its heap ancestors
    while (a > g) a = (a - 1) / 2;
    require(a == g, [&] {
      return "forests: supernode " + std::to_string(s) + " (forest " + std::to_string(f) + ") has its parent " +
             std::to_string(parent[s]) + " in forest " + std::to_string(g) + ", which is not an ancestor forest";
    });
  }
}

ForestPartition nd_forests(std::int64_t nsuper, int pz, int root, const std::vector<int>& left,
                           const std::vector<int>& right, const std::vector<std::int64_t>& sn_first,
                           const std::vector<std::int64_t>& sn_last) {
  const std::size_t nodes = left.size();
  require(right.size() == nodes && sn_first.size() == nodes && sn_last.size() == nodes && root >= 0 &&
              static_cast<std::size_t>(root) < nodes,
          "nd forests: separator tree arrays disagree");
  ForestPartition fp;
  fp.pz = pz;
  fp.nlev = forest_levels(pz);
  fp.forest.assign(static_cast<std::size_t>(nsuper), -1);
  // (node, depth, heap index): below depth nlev a node keeps its ancestor's forest.
  std::vector<std::array<int, 3>> stack{{root, 0, 0}};
  while (!stack.empty()) {
    const auto [node, depth, heap] = stack.back();
    stack.pop_back();
    require(sn_first[node] >= 0 && sn_first[node] <= sn_last[node] && sn_last[node] <= nsuper,
            [&] { return "nd forests: node " + std::to_string(node) + " has a bad supernode range"; });
    std::fill(fp.forest.begin() + sn_first[node], fp.forest.begin() + sn_last[node], heap);
    const bool split = depth < fp.nlev;
    if (left[node] >= 0) stack.push_back({left[node], depth + 1, split ? 2 * heap + 1 : heap});
    if (right[node] >= 0) stack.push_back({right[node], depth + 1, split ? 2 * heap + 2 : heap});
  }
  for (std::int64_t s = 0; s < nsuper; ++s)
    require(fp.forest[s] >= 0,
            [&] { return "nd forests: supernode " + std::to_string(s) + " lies in no separator-tree node"; });
  return fp;
}

ForestPartition greedy_forests(const SupernodalStructure& sym, int pz, double imbalance) {
  require(imbalance >= 0.0 && imbalance < 1.0, "greedy forests: imbalance must lie in [0, 1), got " +
                                                   std::to_string(imbalance));
  const int nlev = forest_levels(pz);
  const std::vector<std::int32_t> parent = supernodal_etree(sym);
  const std::size_t ns = parent.size();
  ForestPartition fp;
  fp.pz = pz;
  fp.nlev = nlev;
  fp.forest.assign(ns, 0);
  if (fp.nlev == 0) return fp;

  // Children lists, depth (sum of the ancestors' sizes), weight size x depth, subtree weight.
  std::vector<std::int64_t> child_ptr(ns + 1, 0);
  for (std::int32_t p : parent)
    if (p >= 0) ++child_ptr[p + 1];
  for (std::size_t s = 0; s < ns; ++s) child_ptr[s + 1] += child_ptr[s];
  std::vector<std::int32_t> children(child_ptr[ns]);
  {
    std::vector<std::int64_t> next(child_ptr.begin(), child_ptr.end() - 1);
    for (std::size_t s = 0; s < ns; ++s)
      if (parent[s] >= 0) children[next[parent[s]]++] = static_cast<std::int32_t>(s);
  }
  auto size = [&](std::size_t s) { return static_cast<double>(sym.sn_start[s + 1] - sym.sn_start[s]); };
  std::vector<double> depth(ns, 0.0), subtree(ns, 0.0);
  for (std::size_t q = ns; q-- > 0;)  // parents come after their children
    if (parent[q] >= 0) depth[q] = depth[parent[q]] + size(parent[q]);
  for (std::size_t s = 0; s < ns; ++s) {
    subtree[s] += size(s) * depth[s];
    if (parent[s] >= 0) subtree[parent[s]] += subtree[s];
  }
  auto nchildren = [&](std::int32_t s) { return child_ptr[s + 1] - child_ptr[s]; };

  // Greedy two-bin split, heaviest first into the lighter bin; returns |w1 - w2| / (w1 + w2).
  auto split = [&](std::vector<std::int32_t> heads, std::vector<std::int32_t>* bins) {
    std::sort(heads.begin(), heads.end(), [&](std::int32_t a, std::int32_t b) {
      return subtree[a] != subtree[b] ? subtree[a] > subtree[b] : a < b;
    });
    double w[2] = {0.0, 0.0};
    for (std::size_t i = 0; i < heads.size(); ++i) {
      const int bin = i == 0 ? 0 : (w[0] > w[1] ? 1 : 0);
      w[bin] += subtree[heads[i]];
      if (bins) bins[bin].push_back(heads[i]);
    }
    return w[0] + w[1] > 0.0 ? std::abs(w[0] - w[1]) / (w[0] + w[1]) : 0.0;
  };
  auto assign_subtree = [&](std::int32_t head, int f) {
    std::vector<std::int32_t> todo{head};
    while (!todo.empty()) {
      const std::int32_t s = todo.back();
      todo.pop_back();
      fp.forest[s] = f;
      for (std::int64_t c = child_ptr[s]; c < child_ptr[s + 1]; ++c) todo.push_back(children[c]);
    }
  };

  std::vector<std::vector<std::int32_t>> work(static_cast<std::size_t>(fp.num_forests()));
  for (std::size_t s = 0; s < ns; ++s)
    if (parent[s] < 0) work[0].push_back(static_cast<std::int32_t>(s));
  for (int d = 0; d < fp.nlev; ++d)
    for (int t = (1 << d) - 1; t < (1 << (d + 1)) - 1; ++t) {
      // Heaviest subtree on top; ties to the lower supernode.
      auto lighter = [&](std::int32_t a, std::int32_t b) {
        return subtree[a] != subtree[b] ? subtree[a] < subtree[b] : a > b;
      };
      std::priority_queue<std::int32_t, std::vector<std::int32_t>, decltype(lighter)> heap(lighter, work[t]);
      double total = 0.0;
      for (std::int32_t h : work[t]) total += subtree[h];
      while (!heap.empty()) {
        const double top = subtree[heap.top()];
        // Greedy packing keeps |w1 - w2| <= the heaviest subtree, and its bin weighs at
        // least that much: only between the two bounds does the split need computing.
        if (top <= imbalance * total) break;
        if (top <= (1.0 + imbalance) / 2.0 * total) {
          std::vector<std::int32_t> heads(heap.size());
          auto copy = heap;
          for (std::size_t i = 0; !copy.empty(); ++i, copy.pop()) heads[i] = copy.top();
          if (split(heads, nullptr) <= imbalance) break;
        }
        std::int32_t cur = heap.top();
        while (nchildren(cur) == 1) cur = children[child_ptr[cur]];
        if (nchildren(cur) == 0) break;  // a chain: nothing left to split
        const std::int32_t head = heap.top();
        heap.pop();
        total -= subtree[head];
        for (std::int32_t s = cur;; s = parent[s]) {  // the chain joins the ancestor forest
          fp.forest[s] = t;
          if (s == head) break;
        }
        for (std::int64_t c = child_ptr[cur]; c < child_ptr[cur + 1]; ++c) {
          heap.push(children[c]);
          total += subtree[children[c]];
        }
      }
      std::vector<std::int32_t> heads;
      for (; !heap.empty(); heap.pop()) heads.push_back(heap.top());
      std::vector<std::int32_t> bins[2];
      split(heads, bins);
      for (int b = 0; b < 2; ++b) {
        if (d == fp.nlev - 1)
          for (std::int32_t h : bins[b]) assign_subtree(h, 2 * t + 1 + b);
        else
          work[2 * t + 1 + b] = std::move(bins[b]);
      }
    }
  return fp;
}

}  // namespace commsolve
