#include "commsolve/comm/mpi_executor.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "commsolve/core/error.hpp"

namespace commsolve {

OwnedComm::OwnedComm(MPI_Comm parent) {
  check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

OwnedComm::~OwnedComm() {
  if (comm_ != MPI_COMM_NULL && mpi_alive()) MPI_Comm_free(&comm_);
}

int OwnedComm::rank() const {
  int r = 0;
  check_mpi(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank");
  return r;
}

int OwnedComm::size() const {
  int s = 0;
  check_mpi(MPI_Comm_size(comm_, &s), "MPI_Comm_size");
  return s;
}

bool persistent_requests() {
  static const bool on = [] {
    const char* v = std::getenv("COMMSOLVE_PERSISTENT");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

void RequestSet::add(bool send, double* buf, std::int64_t count, int peer, int tag, MPI_Comm comm) {
  const Op op{send, buf, static_cast<int>(count), peer, tag, comm};
  ops_.push_back(op);
  persistent_ = persistent_requests();
  if (!persistent_) return;
  MPI_Request r;
  if (send)
    check_mpi(MPI_Send_init(buf, op.count, MPI_DOUBLE, peer, tag, comm, &r), "MPI_Send_init");
  else
    check_mpi(MPI_Recv_init(buf, op.count, MPI_DOUBLE, peer, tag, comm, &r), "MPI_Recv_init");
  reqs_.push_back(r);
}

RequestSet::~RequestSet() {
  if (!mpi_alive()) return;
  if (active_) {
    std::fprintf(stderr, "commsolve: destroying requests still in flight; waiting for them\n");
    MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
  }
  if (persistent_)
    for (auto& r : reqs_)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

void RequestSet::start() {
  if (ops_.empty()) return;
  if (persistent_) {
    check_mpi(MPI_Startall(static_cast<int>(reqs_.size()), reqs_.data()), "MPI_Startall");
  } else {
    reqs_.assign(ops_.size(), MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const Op& o = ops_[i];
      if (o.send)
        check_mpi(MPI_Isend(o.buf, o.count, MPI_DOUBLE, o.peer, o.tag, o.comm, &reqs_[i]), "MPI_Isend");
      else
        check_mpi(MPI_Irecv(o.buf, o.count, MPI_DOUBLE, o.peer, o.tag, o.comm, &reqs_[i]), "MPI_Irecv");
    }
  }
  active_ = true;
}

void RequestSet::wait(std::vector<MPI_Status>& statuses) {
  if (ops_.empty()) return;
  statuses.resize(reqs_.size());
  int rc = MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), statuses.data());
  active_ = false;
  check_mpi(rc, "MPI_Waitall");
}

HaloExecutor::HaloExecutor(CommPlan plan, const Topology& topo, MPI_Comm comm, int block)
    : plan_(std::move(plan)), block_(block), topo_(topo), comm_(comm, executor_tags) {
  require(block_ >= 1, "executor: block must be at least 1, got " + std::to_string(block_));
  check_plan_fits(plan_, comm_.rank(), comm_.size(), topo_.size(), "executor");
  tail_.assign(static_cast<std::size_t>((plan_.n_halo + plan_.n_work) * block_), 0.0);
  for (const PlanStep& st : plan_.steps) {
    sendbuf_.emplace_back(st.send_idx.size() * block_);
    owned_only_.push_back(std::all_of(st.send_idx.begin(), st.send_idx.end(),
                                      [&](std::int32_t i) { return i < plan_.n_owned; }));
  }
  forward_stats_.steps.resize(plan_.steps.size());
  reverse_stats_.steps.resize(plan_.steps.size());
  setup_forward();
}

void HaloExecutor::setup_forward() {
  MPI_Comm c = comm_.get();
  for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
    const PlanStep& st = plan_.steps[s];
    const int tag = comm_.tag_base() + static_cast<int>(s);
    StepRequests sr;
    for (std::size_t i = 0; i < st.recv_peers.size(); ++i)
      sr.reqs.add(false, space(st.recv_offset[i]), st.recv_count[i] * block_, st.recv_peers[i], tag, c);
    sr.nrecv = st.recv_peers.size();
    for (std::size_t i = 0; i < st.send_peers.size(); ++i)
      sr.reqs.add(true, sendbuf_[s].data() + st.send_ptr[i] * block_, st.send_count(i) * block_,
                     st.send_peers[i], tag, c);
    forward_.push_back(std::move(sr));
  }
}

// Reverse requests are made on first use: most matrices are never applied transposed.
void HaloExecutor::setup_reverse() {
  MPI_Comm c = comm_.get();
  for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
    const PlanStep& st = plan_.steps[s];
    recvbuf_.emplace_back(st.send_idx.size() * block_);
    const int tag = comm_.tag_base() + static_cast<int>(max_plan_steps + s);
    StepRequests sr;
    for (std::size_t i = 0; i < st.send_peers.size(); ++i)
      sr.reqs.add(false, recvbuf_[s].data() + st.send_ptr[i] * block_, st.send_count(i) * block_,
                     st.send_peers[i], tag, c);
    sr.nrecv = st.send_peers.size();
    for (std::size_t i = 0; i < st.recv_peers.size(); ++i)
      sr.reqs.add(true, space(st.recv_offset[i]), st.recv_count[i] * block_, st.recv_peers[i], tag, c);
    reverse_.push_back(std::move(sr));
  }
  reverse_ready_ = true;
}

void HaloExecutor::pack(std::size_t s, const double* owned) {
  const std::vector<std::int32_t>& idx = plan_.steps[s].send_idx;
  double* __restrict out = sendbuf_[s].data();
  const std::size_t n = idx.size();
  const std::int64_t n_owned = plan_.n_owned;
  if (block_ == 1) {
    if (owned_only_[s]) {
      for (std::size_t k = 0; k < n; ++k) out[k] = owned[idx[k]];
    } else {
      const double* rest = tail_.data() - n_owned;
      for (std::size_t k = 0; k < n; ++k) out[k] = idx[k] < n_owned ? owned[idx[k]] : rest[idx[k]];
    }
    return;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const double* src = entry(idx[k], owned);
    std::copy(src, src + block_, out + k * block_);
  }
}

void HaloExecutor::start_forward(std::size_t s) {
  const PlanStep& st = plan_.steps[s];
  pack(s, owned_);
  forward_[s].reqs.start();
  for (std::size_t i = 0; i < st.send_peers.size(); ++i)
    forward_stats_.steps[s].add_send(locality(topo_, plan_.rank, st.send_peers[i]),
                                     st.send_count(i) * block_ * static_cast<std::int64_t>(sizeof(double)));
}

void HaloExecutor::finish_forward(std::size_t s) {
  forward_[s].reqs.wait(statuses_);
  for (std::size_t i = 0; i < forward_[s].nrecv; ++i) {
    int bytes = 0;
    check_mpi(MPI_Get_count(&statuses_[i], MPI_BYTE, &bytes), "MPI_Get_count");
    forward_stats_.steps[s].add_recv(locality(topo_, plan_.rank, statuses_[i].MPI_SOURCE), bytes);
  }
}

void HaloExecutor::begin(const double* owned) {
  owned_ = owned;
  if (!plan_.steps.empty()) start_forward(0);
}

const double* HaloExecutor::end() {
  for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
    if (s > 0) start_forward(s);
    finish_forward(s);
  }
  // Values that arrived in the work area (or are owned) move to their halo entries.
  for (std::size_t i = 0; i < plan_.copy_src.size(); ++i) {
    const double* src = entry(plan_.copy_src[i], owned_);
    std::copy(src, src + block_, space(plan_.copy_dst[i]));
  }
  owned_ = nullptr;
  ++forward_runs_;
  return tail_.data();
}

void HaloExecutor::start_reverse(std::size_t s) {
  const PlanStep& st = plan_.steps[s];
  reverse_[s].reqs.start();
  for (std::size_t i = 0; i < st.recv_peers.size(); ++i)
    reverse_stats_.steps[s].add_send(locality(topo_, plan_.rank, st.recv_peers[i]),
                                     st.recv_count[i] * block_ * static_cast<std::int64_t>(sizeof(double)));
}

void HaloExecutor::finish_reverse(std::size_t s, double* owned) {
  const PlanStep& st = plan_.steps[s];
  reverse_[s].reqs.wait(statuses_);
  for (std::size_t i = 0; i < reverse_[s].nrecv; ++i) {
    int bytes = 0;
    check_mpi(MPI_Get_count(&statuses_[i], MPI_BYTE, &bytes), "MPI_Get_count");
    reverse_stats_.steps[s].add_recv(locality(topo_, plan_.rank, statuses_[i].MPI_SOURCE), bytes);
  }
  // Scatter-add the received contributions to where the forward step packed them from.
  const double* in = recvbuf_[s].data();
  for (std::size_t k = 0; k < st.send_idx.size(); ++k) {
    const std::int32_t i = st.send_idx[k];
    double* to = i < plan_.n_owned ? owned + static_cast<std::int64_t>(i) * block_ : space(i);
    for (int c = 0; c < block_; ++c) to[c] += in[k * block_ + c];
  }
}

void HaloExecutor::reverse_begin() {
  if (!reverse_ready_) setup_reverse();
  std::fill(tail_.begin() + plan_.n_halo * block_, tail_.end(), 0.0);  // work area accumulates
  // Reverse of the final copies: contributions to copied halo entries go back to the work
  // area (owned sources are handled in reverse_end, where the owned array is known).
  for (std::size_t i = 0; i < plan_.copy_src.size(); ++i)
    if (plan_.copy_src[i] >= plan_.n_owned) {
      double* to = space(plan_.copy_src[i]);
      const double* from = space(plan_.copy_dst[i]);
      for (int c = 0; c < block_; ++c) to[c] += from[c];
    }
  if (!plan_.steps.empty()) start_reverse(plan_.steps.size() - 1);
}

void HaloExecutor::reverse_end(double* owned) {
  for (std::size_t i = 0; i < plan_.copy_src.size(); ++i)
    if (plan_.copy_src[i] < plan_.n_owned) {
      double* to = owned + static_cast<std::int64_t>(plan_.copy_src[i]) * block_;
      const double* from = space(plan_.copy_dst[i]);
      for (int c = 0; c < block_; ++c) to[c] += from[c];
    }
  for (std::size_t s = plan_.steps.size(); s-- > 0;) {
    if (s + 1 < plan_.steps.size()) start_reverse(s);
    finish_reverse(s, owned);
  }
  ++reverse_runs_;
}

void HaloExecutor::reset_recorded() {
  forward_stats_ = CommStats{std::vector<StepStats>(plan_.steps.size())};
  reverse_stats_ = CommStats{std::vector<StepStats>(plan_.steps.size())};
  forward_runs_ = reverse_runs_ = 0;
}

}  // namespace commsolve
