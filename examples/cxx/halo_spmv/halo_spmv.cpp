// A distributed sparse matrix-vector product with commsolve's C++ core: the 5-point Laplacian
// of an n x n grid, rows split in contiguous blocks, its halo exchange planned with a
// strategy ("standard", "node-aware", "node-aware-2step") on a topology of `ppn` ranks per
// node (0: the real nodes, from MPI_Comm_split_type), run by persistent MPI requests.
//
// It checks y = A x against the stencil applied to x(i) = sin(i) directly, and the messages
// and bytes that went through MPI against the plan's own count; it prints both and exits
// non-zero if either disagrees.
//
// Usage: mpiexec -n P halo_spmv [n=64] [strategy=standard] [ppn=0] [repeat=10]
#include <commsolve/comm/comm_stats.hpp>
#include <commsolve/core/error.hpp>
#include <commsolve/parcsr/par_csr.hpp>
#include <commsolve/sparse/distribution.hpp>
#include <commsolve/topology/topology.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace cs = commsolve;

namespace {

double x_at(std::int64_t i) { return std::sin(static_cast<double>(i)); }

int run(int argc, char** argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::int64_t n = argc > 1 ? std::stoll(argv[1]) : 64;
  const std::string strategy = argc > 2 ? argv[2] : "standard";
  const int ppn = argc > 3 ? std::stoi(argv[3]) : 0;
  const int repeat = argc > 4 ? std::stoi(argv[4]) : 10;
  cs::require(n >= 2 && repeat >= 1, "n must be >= 2 and repeat >= 1");

  const std::int64_t N = n * n;
  const cs::Distribution dist = cs::Distribution::contiguous(N, size);
  const cs::Topology topo = ppn > 0 ? cs::Topology::regular(size, ppn) : cs::Topology::from_comm(MPI_COMM_WORLD);

  // This rank's rows with global column indices.
  const std::int64_t first = dist.offsets()[rank], rows = dist.local_size(rank);
  std::vector<std::int64_t> indptr{0}, cols;
  std::vector<double> vals;
  for (std::int64_t g = first; g < first + rows; ++g) {
    const std::int64_t i = g / n, j = g % n;
    const auto add = [&](std::int64_t c, double v) { cols.push_back(c); vals.push_back(v); };
    if (i > 0) add(g - n, -1.0);
    if (j > 0) add(g - 1, -1.0);
    add(g, 4.0);
    if (j < n - 1) add(g + 1, -1.0);
    if (i < n - 1) add(g + n, -1.0);
    indptr.push_back(static_cast<std::int64_t>(cols.size()));
  }
  cs::ParCsr A(cs::GlobalRowsView<std::int64_t>{rows, indptr.data(), cols.data()}, vals.data(), dist, dist, topo,
               MPI_COMM_WORLD, strategy);

  std::vector<double> x(rows), y(rows);
  for (std::int64_t k = 0; k < rows; ++k) x[k] = x_at(first + k);
  A.executor().reset_recorded();
  double seconds = 0;
  for (int r = 0; r < repeat; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    A.matvec(x.data(), y.data());
    seconds += MPI_Wtime() - t0;
  }

  double err = 0;  // the stencil applied to x directly (x known everywhere by formula)
  for (std::int64_t k = 0; k < rows; ++k) {
    const std::int64_t g = first + k, i = g / n, j = g % n;
    double expect = 4.0 * x_at(g);
    if (i > 0) expect -= x_at(g - n);
    if (j > 0) expect -= x_at(g - 1);
    if (j < n - 1) expect -= x_at(g + 1);
    if (i < n - 1) expect -= x_at(g + n);
    err = std::max(err, std::abs(y[k] - expect));
  }
  double max_err = 0, max_seconds = 0;
  MPI_Allreduce(&err, &max_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&seconds, &max_seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  // What went through MPI against the plan: messages and bytes sent, repeat runs of it.
  const cs::StepStats planned = cs::plan_stats(A.plan(), topo).total();
  const cs::StepStats recorded = A.executor().recorded_forward().total();
  std::int64_t mine[4] = {0, 0, 0, 0};
  for (int where : {0, 1}) {
    mine[0] += recorded.msgs_sent[where];
    mine[1] += recorded.bytes_sent[where];
    mine[2] += planned.msgs_sent[where] * repeat;
    mine[3] += planned.bytes_sent[where] * repeat;
  }
  const int same = mine[0] == mine[2] && mine[1] == mine[3];
  int all_same = 0;
  MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  std::int64_t total[4];
  MPI_Allreduce(mine, total, 4, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

  const bool ok = max_err <= 1e-12 && all_same == 1;
  if (rank == 0) {
    std::printf("halo_spmv: %lld x %lld grid, %lld rows on %d ranks, %d nodes, strategy %s\n",
                static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(N), size,
                topo.num_nodes(), strategy.c_str());
    std::printf("max |y - A x| = %.3g over %d products, %.3g s per product (slowest rank)\n", max_err, repeat,
                max_seconds / repeat);
    std::printf("messages sent %lld (plan %lld), bytes %lld (plan %lld): %s\n", static_cast<long long>(total[0]),
                static_cast<long long>(total[2]), static_cast<long long>(total[1]),
                static_cast<long long>(total[3]), all_same ? "as planned" : "NOT as planned");
    std::printf("%s\n", ok ? "OK" : "FAILED");
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halo_spmv: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return rc;
}
