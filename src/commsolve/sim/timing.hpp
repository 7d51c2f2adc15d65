// Micro-benchmarks that calibrate the simulator on this machine (commsolve calibrate): the
// triangular solve's dense block kernel (CpuKernels::lower_panel, the product of an m x w
// panel with w x nrhs values, which dominates a solve's arithmetic) for the compute model,
// the CPU time of posting a message for the network model's overhead o, and ping-pong for
// latency and rate (in C++, as the solves send: mpi4py adds about a microsecond a message).
#pragma once

#include <mpi.h>

#include <cstdint>

namespace commsolve::sim {

// Seconds per call, cycling through `count` distinct panels (a working set that stays in
// cache or streams from memory), the best of three runs of at least `min_seconds` each.
double time_panel_products(std::int64_t m, std::int64_t w, int nrhs, std::int64_t count, double min_seconds);

// Seconds per pack of `n` doubles gathered through an index array (as a halo exchange packs
// and a solve adds received values), source and destination in cache, the best of three
// runs of at least `min_seconds`.
double time_pack(std::int64_t n, double min_seconds);

// Collective over `comm`. Rank `sender` posts `count` nonblocking sends of `bytes` bytes to
// `receiver`, whose receives are already posted; returns, on every rank, the sender's CPU
// seconds per posted send (LogGP's o at the sending end), the best of `reps` rounds.
double time_send_overhead(MPI_Comm comm, int sender, int receiver, int count, int bytes, int reps);

// Collective over `comm`. `sender` sends `count` messages of `bytes` bytes to `receiver`,
// which, once they have all arrived, takes them as the solve's message engine does (`posted`
// any-source receives, MPI_Waitany, the slot reposted); returns, on every rank, the
// receiver's CPU seconds per message (the overhead o at the receiving end), best of `reps`.
double time_receive_overhead(MPI_Comm comm, int sender, int receiver, int count, int bytes, int posted, int reps);

// One-way seconds of a `bytes`-byte message between this rank and `partner` (`first` sends
// first), averaged over `reps` round trips. Only the two ranks call it. With `posted` > 0
// each side sends as commsolve's message engines do: MPI_Isend, and `posted` any-source
// receives kept posted and completed by MPI_Waitany; with 0, MPI_Send and MPI_Recv.
double time_pingpong(MPI_Comm comm, int partner, bool first, int bytes, int reps, int posted = 0);

}  // namespace commsolve::sim
