#include "commsolve/comm/comm_plan.hpp"

#include <algorithm>
#include <stdexcept>

namespace commsolve {

namespace {

void check(bool ok, const CommPlan& p, std::size_t step, const std::string& what) {
  if (!ok)
    throw std::logic_error("comm plan of rank " + std::to_string(p.rank) + ", step " +
                           std::to_string(step) + ": " + what);
}

void check_distinct_peers(const CommPlan& p, std::size_t s, std::vector<int> peers, const char* side) {
  for (int q : peers) check(q >= 0 && q < p.nranks, p, s, std::string(side) + " peer out of range");
  std::sort(peers.begin(), peers.end());
  check(std::adjacent_find(peers.begin(), peers.end()) == peers.end(), p, s,
        std::string("repeated ") + side + " peer (one message per pair and step)");
}

}  // namespace

void CommPlan::validate() const {
  const std::int64_t space = space_size();
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const PlanStep& st = steps[s];
    check(st.send_ptr.size() == st.send_peers.size() + 1, *this, s, "send_ptr size");
    check(st.send_ptr.back() == static_cast<std::int64_t>(st.send_idx.size()), *this, s, "send_ptr end");
    check(st.recv_offset.size() == st.recv_peers.size() && st.recv_count.size() == st.recv_peers.size(),
          *this, s, "receive arrays differ in length");
    check_distinct_peers(*this, s, st.send_peers, "send");
    check_distinct_peers(*this, s, st.recv_peers, "receive");
    for (std::int32_t i : st.send_idx) check(i >= 0 && i < space, *this, s, "send index outside the space");
    std::vector<std::pair<std::int64_t, std::int64_t>> regions;
    for (std::size_t i = 0; i < st.recv_peers.size(); ++i) {
      check(st.recv_count[i] >= 0, *this, s, "negative receive count");
      check(st.recv_offset[i] >= n_owned && st.recv_offset[i] + st.recv_count[i] <= space, *this, s,
            "receive region outside the halo and work areas");
      regions.emplace_back(st.recv_offset[i], st.recv_offset[i] + st.recv_count[i]);
    }
    std::sort(regions.begin(), regions.end());
    for (std::size_t i = 1; i < regions.size(); ++i)
      check(regions[i].first >= regions[i - 1].second, *this, s, "receive regions overlap");
  }
  const std::size_t last = steps.size();
  check(copy_src.size() == copy_dst.size(), *this, last, "copy lists differ in length");
  for (std::size_t i = 0; i < copy_src.size(); ++i) {
    bool src_ok = copy_src[i] >= 0 && copy_src[i] < space &&
                  (copy_src[i] < n_owned || copy_src[i] >= n_owned + n_halo);
    check(src_ok, *this, last, "copy source inside the halo or outside the space");
    check(copy_dst[i] >= n_owned && copy_dst[i] < n_owned + n_halo, *this, last, "copy target outside the halo");
  }
}

CommPlan standard_plan(const HaloPattern& pattern) {
  CommPlan plan;
  plan.rank = pattern.rank;
  plan.nranks = pattern.nranks;
  plan.strategy = "standard";
  plan.n_owned = pattern.n_owned;
  plan.n_halo = pattern.n_halo();
  PlanStep st;
  st.send_peers = pattern.send_peers;
  st.send_ptr = pattern.send_ptr;
  st.send_idx = pattern.send_idx;  // owned entries sit at the start of the space
  st.recv_peers = pattern.recv_peers;
  for (std::size_t i = 0; i < pattern.recv_peers.size(); ++i) {
    st.recv_offset.push_back(plan.n_owned + pattern.recv_ptr[i]);
    st.recv_count.push_back(pattern.recv_ptr[i + 1] - pattern.recv_ptr[i]);
  }
  plan.steps.push_back(std::move(st));
  return plan;
}

void check_plan_fits(const CommPlan& plan, int rank, int size, int topo_size, const std::string& who) {
  if (size != plan.nranks)
    throw std::invalid_argument(who + ": plan is for " + std::to_string(plan.nranks) + " ranks, communicator has " +
                                std::to_string(size));
  if (rank != plan.rank)
    throw std::invalid_argument(who + ": plan of rank " + std::to_string(plan.rank) + " used on rank " +
                                std::to_string(rank));
  if (topo_size != plan.nranks) throw std::invalid_argument(who + ": topology size differs from the plan's");
  if (plan.steps.size() > max_plan_steps) throw std::invalid_argument(who + ": too many plan steps");
  plan.validate();
}

}  // namespace commsolve
