#include "commsolve/sim/timing.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/solve_executor.hpp"

namespace commsolve::sim {

namespace {

// Seconds per call of `call(c)` (c = 0 .. count - 1, cycling through distinct data, a value
// returned so the work stays observable), the best of three runs of at least min_seconds
// and one sweep each.
template <class Call>
double best_of_three(std::int64_t count, double min_seconds, Call&& call) {
  using clock = std::chrono::steady_clock;
  double best = 0, sink = 0;
  for (int run = 0; run < 3; ++run) {
    std::int64_t calls = 0;
    const auto t0 = clock::now();
    double elapsed = 0;
    while (elapsed < min_seconds || calls < count) {
      for (std::int64_t c = 0; c < count; ++c) sink += call(c);
      calls += count;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    }
    const double per = elapsed / static_cast<double>(calls);
    best = run == 0 ? per : std::min(best, per);
  }
  volatile double keep = sink;
  (void)keep;
  return best;
}

}  // namespace

double time_panel_products(std::int64_t m, std::int64_t w, int nrhs, std::int64_t count, double min_seconds) {
  require(m >= 1 && w >= 1 && nrhs >= 1 && count >= 1 && min_seconds > 0,
          "kernel timing: m, w, nrhs and count must be at least 1, min_seconds positive");
  std::vector<double> panels(static_cast<std::size_t>(m * w * count)), x(static_cast<std::size_t>(w * nrhs), 1.0),
      out(static_cast<std::size_t>(m * nrhs));
  for (std::size_t i = 0; i < panels.size(); ++i) panels[i] = 1.0 / static_cast<double>(1 + i % 97);
  CpuKernels kernels;
  return best_of_three(count, min_seconds, [&](std::int64_t c) {
    kernels.lower_panel(m, w, nrhs, panels.data() + c * m * w, x.data(), out.data());
    return out[static_cast<std::size_t>(c % m)];
  });
}

double time_triangular_solves(std::int64_t w, int nrhs, std::int64_t count, double min_seconds) {
  require(w >= 1 && nrhs >= 1 && count >= 1 && min_seconds > 0,
          "triangular solve timing: w, nrhs and count must be at least 1, min_seconds positive");
  std::vector<double> blocks(static_cast<std::size_t>(w * w * count)), x(static_cast<std::size_t>(w * nrhs), 1.0);
  for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = 1.0 / static_cast<double>(3 + i % 97);
  return best_of_three(count, min_seconds, [&](std::int64_t c) {
    std::fill(x.begin(), x.end(), 1.0);  // bounded values: the same work every call
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(w), nrhs, 1.0,
                blocks.data() + c * w * w, static_cast<int>(w), x.data(), static_cast<int>(w));
    return x[static_cast<std::size_t>(c % w)];
  });
}

double time_pack(std::int64_t n, double min_seconds) {
  require(n >= 1 && min_seconds > 0, "pack timing: n must be at least 1, min_seconds positive");
  std::vector<double> src(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  std::vector<std::int32_t> idx(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    src[static_cast<std::size_t>(k)] = 1.0 / static_cast<double>(k + 1);
    idx[static_cast<std::size_t>(k)] = static_cast<std::int32_t>((k * 7919) % n);  // scattered, every entry once
  }
  using clock = std::chrono::steady_clock;
  double best = 0, sink = 0;
  for (int run = 0; run < 3; ++run) {
    std::int64_t calls = 0;
    const auto t0 = clock::now();
    double elapsed = 0;
    while (elapsed < min_seconds) {
      for (int rep = 0; rep < 16; ++rep, ++calls) {
        for (std::size_t k = 0; k < out.size(); ++k) out[k] = src[static_cast<std::size_t>(idx[k])];
        sink += out[static_cast<std::size_t>(calls % n)];
        src[static_cast<std::size_t>(calls % n)] += 1e-300;  // the next pack reads new data
      }
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    }
    const double per = elapsed / static_cast<double>(calls);
    best = run == 0 ? per : std::min(best, per);
  }
  volatile double keep = sink;
  (void)keep;
  return best;
}

double time_send_overhead(MPI_Comm comm, int sender, int receiver, int count, int bytes, int reps) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  require(sender != receiver && sender >= 0 && receiver >= 0 && sender < size && receiver < size,
          "send overhead timing: sender and receiver must be two distinct ranks of the communicator");
  require(count >= 1 && bytes >= 0 && reps >= 1, "send overhead timing: count and reps >= 1, bytes >= 0");
  std::vector<char> buf(static_cast<std::size_t>(count) * static_cast<std::size_t>(std::max(bytes, 1)));
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(count));
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    if (rank == receiver)
      for (int i = 0; i < count; ++i)
        MPI_Irecv(buf.data() + static_cast<std::size_t>(i) * std::max(bytes, 1), bytes, MPI_BYTE, sender, 7, comm,
                  &reqs[static_cast<std::size_t>(i)]);
    MPI_Barrier(comm);
    double per = 0;
    if (rank == sender) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < count; ++i)
        MPI_Isend(buf.data() + static_cast<std::size_t>(i) * std::max(bytes, 1), bytes, MPI_BYTE, receiver, 7, comm,
                  &reqs[static_cast<std::size_t>(i)]);
      per = (MPI_Wtime() - t0) / count;
    }
    if (rank == sender || rank == receiver) MPI_Waitall(count, reqs.data(), MPI_STATUSES_IGNORE);
    best = r == 0 ? per : std::min(best, per);
  }
  MPI_Bcast(&best, 1, MPI_DOUBLE, sender, comm);
  return best;
}

double time_pingpong(MPI_Comm comm, int partner, bool first, int bytes, int reps, int posted) {
  require(bytes >= 0 && reps >= 1 && posted >= 0, "ping-pong timing: bytes >= 0, reps >= 1, posted >= 0");
  const std::size_t len = static_cast<std::size_t>(std::max(bytes, 1));
  std::vector<char> buf(len);
  if (posted == 0) {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < reps; ++i) {
      if (first) {
        MPI_Send(buf.data(), bytes, MPI_BYTE, partner, 1, comm);
        MPI_Recv(buf.data(), bytes, MPI_BYTE, partner, 1, comm, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf.data(), bytes, MPI_BYTE, partner, 1, comm, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), bytes, MPI_BYTE, partner, 1, comm);
      }
    }
    return (MPI_Wtime() - t0) / (2.0 * reps);
  }
  std::vector<std::vector<char>> rbuf(static_cast<std::size_t>(posted), std::vector<char>(len));
  std::vector<MPI_Request> rreq(static_cast<std::size_t>(posted));
  for (int s = 0; s < posted; ++s)
    MPI_Irecv(rbuf[static_cast<std::size_t>(s)].data(), bytes, MPI_BYTE, MPI_ANY_SOURCE, 1, comm,
              &rreq[static_cast<std::size_t>(s)]);
  auto send = [&] {
    MPI_Request req;
    MPI_Isend(buf.data(), bytes, MPI_BYTE, partner, 1, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  };
  auto receive = [&] {
    int slot = MPI_UNDEFINED;
    MPI_Waitany(posted, rreq.data(), &slot, MPI_STATUS_IGNORE);
    MPI_Irecv(rbuf[static_cast<std::size_t>(slot)].data(), bytes, MPI_BYTE, MPI_ANY_SOURCE, 1, comm,
              &rreq[static_cast<std::size_t>(slot)]);
  };
  MPI_Barrier(MPI_COMM_SELF);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) {
    if (first) {
      send();
      receive();
    } else {
      receive();
      send();
    }
  }
  const double t = (MPI_Wtime() - t0) / (2.0 * reps);
  for (MPI_Request& r : rreq) {
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  return t;
}

}  // namespace commsolve::sim
