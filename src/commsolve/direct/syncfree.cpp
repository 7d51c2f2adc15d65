#include "commsolve/direct/syncfree.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

// The same plan with its tasks renumbered by level (the longest chain of updates that ends
// at them), stably: still an order in which every task comes after those it depends on
// (a level is larger than its sources'), but the independent tasks of one level, from
// every subtree, come together, so that workers taking consecutive tickets rarely wait for
// each other (the postorder hands them the chains of one subtree).
SyncFreePhase by_level(const SyncFreePhase& p) {
  const std::int64_t T = p.tasks();
  std::vector<std::int32_t> level(static_cast<std::size_t>(T), 0);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t u = p.upd_ptr[t]; u < p.upd_ptr[t + 1]; ++u)
      level[p.target[u]] = std::max(level[p.target[u]], level[t] + 1);
  std::vector<std::int32_t> order(static_cast<std::size_t>(T)), rank(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) order[t] = static_cast<std::int32_t>(t);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return level[a] < level[b]; });
  for (std::int64_t q = 0; q < T; ++q) rank[order[q]] = static_cast<std::int32_t>(q);
  SyncFreePhase r;
  r.upper = p.upper;
  r.sum_size = p.sum_size;
  r.max_width = p.max_width;
  r.max_panel_rows = p.max_panel_rows;
  r.max_m = p.max_m;
  r.rows = p.rows;  // updates keep their rows, found through row_ptr
  r.upd_ptr.push_back(0);
  for (std::int32_t t : order) {
    r.deps.push_back(p.deps[t]);
    r.width.push_back(p.width[t]);
    r.sol.push_back(p.sol[t]);
    r.sum.push_back(p.sum[t]);
    r.inv.push_back(p.inv[t]);
    r.panel.push_back(p.panel[t]);
    r.panel_rows.push_back(p.panel_rows[t]);
    for (std::int64_t u = p.upd_ptr[t]; u < p.upd_ptr[t + 1]; ++u) {
      r.target.push_back(rank[p.target[u]]);
      r.values.push_back(p.values[u]);
      r.m.push_back(p.m[u]);
      r.row_ptr.push_back(p.row_ptr[u]);
    }
    r.upd_ptr.push_back(static_cast<std::int64_t>(r.target.size()));
  }
  return r;
}

}  // namespace

SyncFreePhase make_syncfree_phase(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                  const BlockStore& store, const PhaseSchedule& ph) {
  sym.require_whole("the sync-free solve");
  const LocalLayout2D& layout = store.layout;
  require(ph.expected == 0 && std::all_of(ph.parent.begin(), ph.parent.end(), [](std::int32_t r) { return r < 0; }) &&
              ph.children.empty(),
          "the sync-free solve runs a phase on one rank (a 1 x 1 x Pz grid); this phase exchanges messages");
  const auto m_entries = static_cast<std::int64_t>(ph.key.size());
  auto width = [&](std::int64_t k) { return static_cast<std::int32_t>(sym.sn_start[k + 1] - sym.sn_start[k]); };

  // The tasks in dependency order: (entry, the broadcast entry whose solution it applies).
  std::vector<std::pair<std::int32_t, std::int32_t>> order;
  if (ph.upper)
    for (std::int32_t e : ph.starts) order.emplace_back(e, e);
  for (std::int64_t q = 0; q < m_entries; ++q) {
    const auto e = static_cast<std::int32_t>(ph.upper ? m_entries - 1 - q : q);
    if (!ph.is_broadcast(e)) order.emplace_back(e, ph.solves[e] ? ph.bcast[e] : -1);
  }
  std::vector<std::int32_t> task_of(static_cast<std::size_t>(m_entries), -1);
  for (std::size_t t = 0; t < order.size(); ++t) task_of[order[t].first] = static_cast<std::int32_t>(t);

  SyncFreePhase p;
  p.upper = ph.upper;
  p.sum_size = ph.sum_size;
  p.upd_ptr.push_back(0);
  std::int64_t solving = 0;
  for (std::size_t t = 0; t < order.size(); ++t) {
    const auto [e, use] = order[t];
    const std::int64_t k = ph.supernode(e);
    const std::int32_t w = width(k);
    const bool known = ph.is_broadcast(e);  // a context supernode's solution (U)
    const std::int64_t d = known ? store.diag_index[k] : ph.diag[e];
    require(d >= 0,
            [&] { return "sync-free solve: supernode " + std::to_string(k) + " has no diagonal block on this rank"; });
    p.deps.push_back(known ? 0 : ph.waiting[e]);
    p.width.push_back(w);
    p.sol.push_back(store.sol_off[d]);
    p.sum.push_back(known ? -1 : ph.sum_off[e]);
    const bool solves = !known && ph.solves[e];
    solving += solves;
    p.inv.push_back(solves ? layout.diag_off[d] + (ph.upper ? std::int64_t{w} * w : 0) : -1);
    p.max_width = std::max(p.max_width, w);
    const std::int32_t loc = use >= 0 ? ph.local[use] : -1;
    p.panel.push_back(!ph.upper && loc >= 0 ? layout.l_panel[loc] : -1);
    p.panel_rows.push_back(!ph.upper && loc >= 0 ? static_cast<std::int32_t>(layout.l_rows[loc]) : 0);
    p.max_panel_rows = std::max(p.max_panel_rows, p.panel_rows.back());
    auto add = [&](std::int64_t blk, std::int32_t target_entry, std::int64_t values, std::int64_t rows_of) {
      const std::int32_t target = target_entry >= 0 ? task_of[target_entry] : -1;
      if (target <= static_cast<std::int32_t>(t))
        throw std::logic_error("sync-free solve: block of supernode " + std::to_string(k) +
                               " adds to a task that does not come after it");
      const std::int64_t lo = blocks.lo[blk], hi = blocks.hi[blk], first = sym.sn_start[rows_of];
      p.target.push_back(target);
      p.values.push_back(values);
      p.m.push_back(static_cast<std::int32_t>(hi - lo));
      p.row_ptr.push_back(static_cast<std::int64_t>(p.rows.size()));
      const std::int32_t* r = sym.rows.data() + sym.rows_ptr[blocks.col[blk]];
      for (std::int64_t a = lo; a < hi; ++a) p.rows.push_back(static_cast<std::int32_t>(r[a] - first));
      p.max_m = std::max(p.max_m, static_cast<std::int32_t>(hi - lo));
    };
    if (loc >= 0 && !ph.upper) {
      for (std::int64_t q = layout.l_ptr[loc]; q < layout.l_ptr[loc + 1]; ++q)  // L(I, K): rows of I
        add(layout.l_block[q], ph.l_target[q], layout.l_row[q], blocks.sn[layout.l_block[q]]);
    } else if (loc >= 0) {
      for (std::int64_t q = ph.u_ptr[loc]; q < ph.u_ptr[loc + 1]; ++q)  // U(K, J): reads rows of J = k
        add(layout.u_block[ph.u_pos[q]], ph.u_target[q], layout.u_off[ph.u_pos[q]], k);
    }
    p.upd_ptr.push_back(static_cast<std::int64_t>(p.target.size()));
  }
  // Every counter falls to zero exactly: as many updates reach a task as it waits for.
  std::vector<std::int32_t> incoming(order.size(), 0);
  for (std::int32_t t : p.target) ++incoming[t];
  if (incoming != p.deps || solving != ph.solved_here)
    throw std::logic_error("sync-free solve: the plan's counters or solved supernodes disagree with the phase's");
  return by_level(p);
}

namespace {

class Chaos {
 public:
  Chaos(const ScheduleChaos& c, int id)
      : on_(c.seed != 0), max_(std::max(1, c.max_sleep_us)), rng_(c.seed * 7919 + id) {}
  void maybe_pause() {
    if (!on_) return;
    const unsigned r = rng_() % 8;
    if (r == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng_() % max_));
    else if (r < 3) std::this_thread::yield();
  }

 private:
  bool on_;
  unsigned max_;
  std::minstd_rand rng_;
};

}  // namespace

void run_syncfree(const SyncFreePhase& p, const double* values, double* sol, int nrhs, ThreadTeam& team,
                  BlockKernels& kernels, const ScheduleChaos& chaos) {
  const std::int64_t T = p.tasks();
  std::vector<double> sums(static_cast<std::size_t>(p.sum_size * nrhs), 0.0);
  std::unique_ptr<std::atomic<std::int32_t>[]> counter(new std::atomic<std::int32_t>[static_cast<std::size_t>(T)]);
  for (std::int64_t t = 0; t < T; ++t) counter[t].store(p.deps[t], std::memory_order_relaxed);
  std::unique_ptr<SpinLock[]> lock(new SpinLock[static_cast<std::size_t>(T)]);  // one per partial sum
  std::atomic<std::int64_t> ticket{0};
  std::atomic<bool> failed{false};

  team.run([&](int id) {
    Chaos chaos_here(chaos, id);
    std::vector<double> out(static_cast<std::size_t>(std::max(p.max_panel_rows, p.max_width)) * nrhs);
    std::vector<double> tmp, xg(static_cast<std::size_t>(p.max_m) * nrhs);
    try {
      for (;;) {
        chaos_here.maybe_pause();
        const std::int64_t t = ticket.fetch_add(1, std::memory_order_relaxed);
        if (t >= T) return;
        for (int spins = 0; counter[t].load(std::memory_order_acquire) != 0;) {
          if (failed.load(std::memory_order_relaxed)) return;
          back_off(spins);
        }
        const std::int64_t w = p.width[t];
        double* x = sol + p.sol[t] * nrhs;
        settle_solution(kernels, w, nrhs, p.sum[t] >= 0 ? sums.data() + p.sum[t] * nrhs : nullptr,
                        p.inv[t] >= 0 ? values + p.inv[t] : nullptr, x, tmp);
        const std::int64_t M = p.panel_rows[t];
        if (p.panel[t] >= 0) kernels.lower_panel(M, w, nrhs, values + p.panel[t], x, out.data());
        for (std::int64_t u = p.upd_ptr[t]; u < p.upd_ptr[t + 1]; ++u) {
          const std::int32_t tt = p.target[u], m = p.m[u];
          const std::int64_t wt = p.width[tt];
          const std::int32_t* rows = p.rows.data() + p.row_ptr[u];
          double* s = sums.data() + p.sum[tt] * nrhs;
          if (!p.upper) {  // L(I, K) y(K): rows of the panel product into I's sum
            const double* part = out.data() + p.values[u];
            lock[tt].lock();
            for (int c = 0; c < nrhs; ++c)
              for (std::int32_t a = 0; a < m; ++a) s[c * wt + rows[a]] += part[c * M + a];
            lock[tt].unlock();
          } else {  // U(K, J) x(J), with the rows of x(J) the block reads, into K's sum
            for (int c = 0; c < nrhs; ++c)
              for (std::int32_t a = 0; a < m; ++a) xg[c * m + a] = x[c * w + rows[a]];
            std::fill(out.begin(), out.begin() + wt * nrhs, 0.0);
            kernels.upper_block(wt, m, nrhs, values + p.values[u], xg.data(), out.data());
            lock[tt].lock();
            for (std::int64_t a = 0; a < wt * nrhs; ++a) s[a] += out[a];
            lock[tt].unlock();
          }
          chaos_here.maybe_pause();
          counter[tt].fetch_sub(1, std::memory_order_release);
        }
      }
    } catch (...) {
      failed.store(true, std::memory_order_relaxed);
      throw;
    }
  });
}

}  // namespace commsolve
