// Micro-benchmarks that calibrate the simulator on this machine (commsolve calibrate): the
// triangular solve's dense block kernel (CpuKernels::lower_panel, the product of an m x w
// panel with w x nrhs values, which dominates a solve's arithmetic) for the compute model,
// packs of message data, the CPU time of posting a message for the network model's overhead
// o, and ping-pong for latency and rate, plain or through an any-source engine (timed in C++:
// mpi4py adds about a microsecond a message). The cost models (model/calibrate.py) use the
// ping-pong too.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace commsolve::sim {

// Seconds per call, cycling through `count` distinct panels (a working set that stays in
// cache or streams from memory), the best of three runs of at least `min_seconds` each.
double time_panel_products(std::int64_t m, std::int64_t w, int nrhs, std::int64_t count, double min_seconds);

// Seconds per triangular solve (dtrsm, unit lower w x w against w x nrhs values, as the
// per-block kernels apply a diagonal block), cycling through `count` distinct blocks, the
// best of three runs of at least `min_seconds` each.
double time_triangular_solves(std::int64_t w, int nrhs, std::int64_t count, double min_seconds);

// Seconds per pack of `n` doubles gathered through an index array (as a halo exchange packs
// and a solve adds received values), source and destination in cache, the best of three
// runs of at least `min_seconds`.
double time_pack(std::int64_t n, double min_seconds);

// Collective over `comm`. Rank `sender` posts `count` nonblocking sends of `bytes` bytes to
// `receiver`, whose receives are already posted; returns, on every rank, the sender's CPU
// seconds per posted send (LogGP's o at the sending end), the best of `reps` rounds.
double time_send_overhead(MPI_Comm comm, int sender, int receiver, int count, int bytes, int reps);

// One-way seconds of a `bytes`-byte message between this rank and `partner` (`first` sends
// first), averaged over `reps` round trips. Only the two ranks call it. With `posted` > 0
// each side sends as commsolve's message engines do: MPI_Isend, and `posted` any-source
// receives kept posted and completed by MPI_Waitany; with 0, MPI_Send and MPI_Recv.
double time_pingpong(MPI_Comm comm, int partner, bool first, int bytes, int reps, int posted = 0);

}  // namespace commsolve::sim
