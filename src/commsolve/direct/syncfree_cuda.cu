// The sync-free solve phase on an NVIDIA GPU (SC'23 Algorithm 4; SuperLU_DIST's
// dlsum_fmod_inv_gpu_mrhs / dlsum_bmod_inv_gpu_mrhs): one thread block per supernode task,
// its thread 0 spinning on the task's counter, the block applying the inverted diagonal
// block and its updates, the partial sums of the supernodes it updates added to by
// atomicAdd, then a fence, then their counters decremented.
//
// Tasks are taken from one ticket counter in the plan's order by persistent blocks (not by
// blockIdx, whose scheduling order CUDA does not promise): a block waits only on a task
// whose dependencies were all taken earlier by blocks already running, which is the
// progress argument of direct/syncfree.hpp.
//
// Products: threads over the rows of a block (coalesced: blocks are column-major), each
// thread keeping a tile of up to four right-hand sides in registers, so that a factor entry
// is read once per four right-hand sides (nrhs 1: one GEMV per block).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "commsolve/direct/device_solve.hpp"

namespace commsolve {

namespace {

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(err));
}

template <class T>
T* upload_array(const T* data, std::size_t n) {
  T* d = nullptr;
  check_cuda(cudaMalloc(&d, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  if (n > 0) check_cuda(cudaMemcpy(d, data, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}

template <class T>
T* upload_array(const std::vector<T>& v) {
  return upload_array(v.data(), v.size());
}

constexpr int threads_per_block = 256;
// Cycles a task may wait for its dependencies before the kernel traps (about 30 s at 2 GHz):
// only a wrong plan waits that long.
constexpr long long spin_limit = 60'000'000'000LL;
constexpr int tile = 4;  // right-hand sides per thread and pass

// One phase's plan on the device (direct/syncfree.hpp's SyncFreePhase, array for array).
struct DevicePhase {
  bool upper = false;
  std::int64_t tasks = 0, sum_size = 0;
  std::int32_t max_width = 0;
  std::int32_t *deps = nullptr, *width = nullptr, *panel_rows = nullptr, *target = nullptr, *m = nullptr,
               *rows = nullptr;
  std::int64_t *sol = nullptr, *sum = nullptr, *inv = nullptr, *panel = nullptr, *upd_ptr = nullptr,
               *values = nullptr, *row_ptr = nullptr;
};

struct KernelArgs {
  DevicePhase p;
  const double* factors;
  double* sol;
  double* sums;
  double* scratch;  // per resident block: max_width x nrhs
  int* counter;
  unsigned long long* ticket;
  int nrhs;
};

// out[r + c * ldo] (r < rows, c < nrhs) = sum_j A[r + j * lda] * X[j + c * ldx] for j < k,
// handed to `put(r, c, value)`; X's row j may be indirect (xrow(j)).
template <class Put, class XRow>
__device__ void block_product(int rows, int k, const double* A, std::int64_t lda, const double* X, std::int64_t ldx,
                              int nrhs, XRow xrow, Put put) {
  for (int c0 = 0; c0 < nrhs; c0 += tile) {
    const int nc = min(tile, nrhs - c0);
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
      double acc[tile] = {0.0, 0.0, 0.0, 0.0};
      for (int j = 0; j < k; ++j) {
        const double a = A[r + j * lda];
        const std::int64_t xj = xrow(j);
#pragma unroll
        for (int c = 0; c < tile; ++c)
          if (c < nc) acc[c] += a * X[xj + (c0 + c) * ldx];
      }
#pragma unroll
      for (int c = 0; c < tile; ++c)
        if (c < nc) put(r, c0 + c, acc[c]);
    }
  }
}

__global__ void syncfree_phase(KernelArgs a) {
  __shared__ long long task;
  const DevicePhase& p = a.p;
  const int nrhs = a.nrhs;
  double* tmp = a.scratch + static_cast<std::int64_t>(blockIdx.x) * p.max_width * nrhs;
  for (;;) {
    if (threadIdx.x == 0) {
      task = static_cast<long long>(atomicAdd(a.ticket, 1ULL));
      if (task < p.tasks) {
        volatile int* cnt = a.counter + task;
        const long long start = clock64();
        while (*cnt != 0) {
          __nanosleep(64);
          if (clock64() - start > spin_limit) __trap();  // a plan bug, not a slow GPU: fail, do not hang
        }
        __threadfence();  // the updates that zeroed the counter are seen before the sum is read
      }
    }
    __syncthreads();
    const long long t = task;
    if (t >= p.tasks) return;
    const int w = p.width[t];
    double* x = a.sol + p.sol[t] * nrhs;
    if (p.sum[t] >= 0) {
      const double* s = a.sums + p.sum[t] * nrhs;  // read from L2 (__ldcg): L1 may hold an older line of it
      for (int i = threadIdx.x; i < w * nrhs; i += blockDim.x) x[i] -= __ldcg(s + i);
      __syncthreads();
    }
    if (p.inv[t] >= 0) {  // x = inv(diagonal block) x
      block_product(w, w, a.factors + p.inv[t], w, x, w, nrhs, [](int j) { return std::int64_t{j}; },
                    [&](int r, int c, double v) { tmp[r + c * w] = v; });
      __syncthreads();
      for (int i = threadIdx.x; i < w * nrhs; i += blockDim.x) x[i] = tmp[i];
      __syncthreads();
    }
    for (std::int64_t u = p.upd_ptr[t]; u < p.upd_ptr[t + 1]; ++u) {
      const int tt = p.target[u], m = p.m[u], wt = p.width[tt];
      const std::int32_t* rows = p.rows + p.row_ptr[u];
      double* s = a.sums + p.sum[tt] * nrhs;
      if (!p.upper) {  // L(I, K) y(K): the block's rows of the panel, into I's sum at its rows
        const std::int64_t M = p.panel_rows[t];
        block_product(m, w, a.factors + p.panel[t] + p.values[u], M, x, w, nrhs,
                      [](int j) { return std::int64_t{j}; },
                      [&](int r, int c, double v) { atomicAdd(s + c * wt + rows[r], v); });
      } else {  // U(K, J) x(J) with the rows of x(J) the block reads, into K's sum
        block_product(wt, m, a.factors + p.values[u], wt, x, w, nrhs, [&](int j) { return std::int64_t{rows[j]}; },
                      [&](int r, int c, double v) { atomicAdd(s + c * wt + r, v); });
      }
    }
    __threadfence();  // every thread's additions visible device-wide before any counter falls
    __syncthreads();
    for (std::int64_t u = p.upd_ptr[t] + threadIdx.x; u < p.upd_ptr[t + 1]; u += blockDim.x) {
      __threadfence();  // release by the signalling thread itself, after the barrier (grid-sync's pattern)
      atomicSub(a.counter + p.target[u], 1);
    }
    __syncthreads();  // `task` is rewritten only after every thread has read it
  }
}

class CudaSolver final : public DeviceSolver {
 public:
  CudaSolver(const BlockStore& store, const std::vector<SyncFreePhase>& phases) {
    try {
      setup(store, phases);
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaSolver() override { release(); }

  void upload(const double* sol, std::int64_t rows, int nrhs) override {
    reserve(nrhs);
    check_cuda(cudaMemcpy(sol_, sol, rows * nrhs * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy (sol)");
  }
  void download(double* sol, std::int64_t rows, int nrhs) override {
    check_cuda(cudaMemcpy(sol, sol_, rows * nrhs * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy (sol)");
  }

  void run(std::size_t i, int nrhs) override {
    const DevicePhase& d = phases_.at(i);
    if (d.tasks == 0) return;
    reserve(nrhs);
    // Counters reset from the plan, sums zeroed, tickets from 0: every solve starts afresh.
    check_cuda(cudaMemcpyAsync(counter_, d.deps, d.tasks * sizeof(int), cudaMemcpyDeviceToDevice), "reset counters");
    check_cuda(cudaMemsetAsync(sums_, 0, std::max<std::int64_t>(d.sum_size * nrhs, 1) * sizeof(double)), "zero sums");
    check_cuda(cudaMemsetAsync(ticket_, 0, sizeof(unsigned long long)), "reset ticket");
    KernelArgs a{d, factors_, sol_, sums_, scratch_, counter_, ticket_, nrhs};
    const int blocks = static_cast<int>(std::min<std::int64_t>(resident_, d.tasks));
    syncfree_phase<<<blocks, threads_per_block>>>(a);
    check_cuda(cudaGetLastError(), "kernel launch");
    check_cuda(cudaDeviceSynchronize(), "sync-free phase (a trap here: a task waited ~30 s, a plan bug)");
  }

 private:
  void setup(const BlockStore& store, const std::vector<SyncFreePhase>& phases) {
    // One GPU per rank on a node of several: the node-local rank picks it.
    int count = 0;
    check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
      if (const char* v = std::getenv(var)) {
        check_cuda(cudaSetDevice(std::atoi(v) % std::max(count, 1)), "cudaSetDevice");
        break;
      }
    check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    int per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, syncfree_phase, threads_per_block, 0),
               "occupancy");
    // As many blocks as fit at once (tickets make progress independent of which are resident).
    resident_ = std::max(1, per_sm) * prop.multiProcessorCount;
    factors_ = upload_array(store.values.data(), static_cast<std::size_t>(store.layout.total));
    sol_rows_ = store.sol_rows;
    for (const SyncFreePhase& h : phases) {
      DevicePhase& d = phases_.emplace_back();  // kept at once: release() frees what was uploaded
      d.upper = h.upper;
      d.tasks = h.tasks();
      d.sum_size = h.sum_size;
      d.max_width = h.max_width;
      if (d.tasks > 0) {
        d.deps = upload_array(h.deps), d.width = upload_array(h.width), d.panel_rows = upload_array(h.panel_rows);
        d.target = upload_array(h.target), d.m = upload_array(h.m), d.rows = upload_array(h.rows);
        d.sol = upload_array(h.sol), d.sum = upload_array(h.sum), d.inv = upload_array(h.inv);
        d.panel = upload_array(h.panel), d.upd_ptr = upload_array(h.upd_ptr), d.values = upload_array(h.values);
        d.row_ptr = upload_array(h.row_ptr);
      }
      max_tasks_ = std::max(max_tasks_, d.tasks);
      max_sum_ = std::max(max_sum_, d.sum_size);
      max_width_ = std::max(max_width_, std::int64_t{d.max_width});
    }
    check_cuda(cudaMalloc(&counter_, std::max<std::int64_t>(max_tasks_, 1) * sizeof(int)), "cudaMalloc");
    check_cuda(cudaMalloc(&ticket_, sizeof(unsigned long long)), "cudaMalloc");
  }

  void release() {
    for (DevicePhase& d : phases_)
      for (void* ptr : {static_cast<void*>(d.deps), static_cast<void*>(d.width), static_cast<void*>(d.panel_rows),
                        static_cast<void*>(d.target), static_cast<void*>(d.m), static_cast<void*>(d.rows),
                        static_cast<void*>(d.sol), static_cast<void*>(d.sum), static_cast<void*>(d.inv),
                        static_cast<void*>(d.panel), static_cast<void*>(d.upd_ptr), static_cast<void*>(d.values),
                        static_cast<void*>(d.row_ptr)})
        cudaFree(ptr);
    phases_.clear();
    for (void* ptr : {static_cast<void*>(factors_), static_cast<void*>(sol_), static_cast<void*>(sums_),
                      static_cast<void*>(scratch_), static_cast<void*>(counter_), static_cast<void*>(ticket_)})
      cudaFree(ptr);
    factors_ = sol_ = sums_ = scratch_ = nullptr;
    counter_ = nullptr;
    ticket_ = nullptr;
  }

  void reserve(int nrhs) {
    if (nrhs <= nrhs_) return;
    for (void* ptr : {static_cast<void*>(sol_), static_cast<void*>(sums_), static_cast<void*>(scratch_)}) cudaFree(ptr);
    sol_ = sums_ = scratch_ = nullptr;
    nrhs_ = 0;
    check_cuda(cudaMalloc(&sol_, std::max<std::int64_t>(sol_rows_ * nrhs, 1) * sizeof(double)), "cudaMalloc (sol)");
    check_cuda(cudaMalloc(&sums_, std::max<std::int64_t>(max_sum_ * nrhs, 1) * sizeof(double)), "cudaMalloc (sums)");
    check_cuda(cudaMalloc(&scratch_, std::max<std::int64_t>(resident_ * max_width_ * nrhs, 1) * sizeof(double)),
               "cudaMalloc (scratch)");
    nrhs_ = nrhs;
  }

  int device_ = 0;
  std::int64_t resident_ = 1, sol_rows_ = 0, max_tasks_ = 0, max_sum_ = 0, max_width_ = 0;
  std::vector<DevicePhase> phases_;
  double* factors_ = nullptr;
  double *sol_ = nullptr, *sums_ = nullptr, *scratch_ = nullptr;
  int* counter_ = nullptr;
  unsigned long long* ticket_ = nullptr;
  int nrhs_ = 0;
};

}  // namespace

bool cuda_device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::unique_ptr<DeviceSolver> make_cuda_solver(const BlockStore& store, const std::vector<SyncFreePhase>& phases) {
  return std::make_unique<CudaSolver>(store, phases);
}

}  // namespace commsolve
