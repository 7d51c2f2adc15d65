#include "commsolve/dense/dense_executor.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/core/stopwatch.hpp"
#include "commsolve/dense/lu_machine.hpp"
#include "commsolve/dense/lu_tournament_machine.hpp"
#include "commsolve/dense/pivots.hpp"
#include "commsolve/dense/matmul_machine.hpp"
#include "commsolve/direct/supernodal_lu.hpp"

namespace commsolve {

namespace {

constexpr int first_tag = 3000, tag_cycle = 1000;

int comm_rank(MPI_Comm comm) {
  int r = 0;
  check_mpi(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  return r;
}

int comm_size(MPI_Comm comm) {
  int p = 0;
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  return p;
}

const Grid25D& checked(const Grid25D& g, MPI_Comm comm) {
  g.validate(comm_size(comm));
  return g;
}

// Rows [r0, r0 + m) x columns [c0, c0 + n) of a column-major array (leading dimension ld),
// copied out to a packed m x n array.
void pack(const double* a, std::int64_t ld, std::int64_t r0, std::int64_t c0, std::int64_t m, std::int64_t n,
          double* out) {
  for (std::int64_t j = 0; j < n; ++j) std::memcpy(out + j * m, a + (c0 + j) * ld + r0, sizeof(double) * m);
}
// Values [off, off + n) of the packed rows x ncols array of a region: copied into it (unpack_range)
// or added to it (add_range).
template <class Op>
void on_range(double* a, std::int64_t ld, std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t off,
              std::int64_t n, const double* v, Op op) {
  for (std::int64_t idx = off; idx < off + n;) {
    const std::int64_t j = idx / rows, i = idx % rows, len = std::min(rows - i, off + n - idx);
    double* col = a + (c0 + j) * ld + r0 + i;
    for (std::int64_t t = 0; t < len; ++t) op(col[t], v[idx - off + t]);
    idx += len;
  }
}
void unpack_range(double* a, std::int64_t ld, std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t off,
                  std::int64_t n, const double* v) {
  on_range(a, ld, r0, c0, rows, off, n, v, [](double& x, double y) { x = y; });
}
void add_range(double* a, std::int64_t ld, std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t off,
               std::int64_t n, const double* v) {
  on_range(a, ld, r0, c0, rows, off, n, v, [](double& x, double y) { x += y; });
}

void hold_piece(std::vector<double>& buf, std::int64_t off, const double* v, std::int64_t n, std::int64_t total) {
  if (static_cast<std::int64_t>(buf.size()) != total) buf.resize(static_cast<std::size_t>(total));
  std::copy(v, v + n, buf.begin() + off);
}

void add_into(std::vector<double>& acc, const double* v, std::int64_t n) {
  if (acc.empty()) acc.assign(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) acc[static_cast<std::size_t>(i)] += v[i];
}

// Keys from p.nids on (messages outside the plan: a pivoted LU's swaps) are counted as `extra`.
void prepare_engine(MessageEngine& e, const DensePlan& p, const Grid25D& g, int& runs, int extra = -1) {
  e.set_kind_of([&p, extra](std::int64_t id) {
    return id >= p.nids && extra >= 0 ? extra : static_cast<int>(p.role[static_cast<std::size_t>(p.index_of(id))]);
  });
  e.set_window(std::max(64, 8 * (g.pr + g.pc + g.c)));
  e.reset_recorded();
  e.set_tag(first_tag + runs++ % tag_cycle);
}

extern "C" void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);

// Partial pivoting (LAPACK's dgetrf) on the m x w array a (column-major, leading dimension m)
// in place: row i of the result is row perm[i] of the input, factored (L unit lower below the
// diagonal, U on and above it, in the first min(m, w) rows). Returns the first column with
// no nonzero finite pivot (-1: none).
std::int64_t partial_pivoting(double* a, std::int64_t m, std::int64_t w, std::vector<std::int64_t>& perm) {
  perm.resize(static_cast<std::size_t>(m));
  std::iota(perm.begin(), perm.end(), 0);
  const std::int64_t d = std::min(m, w);
  if (d == 0) return -1;
  const int mi = static_cast<int>(m), wi = static_cast<int>(w);
  std::vector<int> ip(static_cast<std::size_t>(d));
  int info = 0;
  dgetrf_(&mi, &wi, a, &mi, ip.data(), &info);
  for (std::int64_t i = 0; i < d; ++i) std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(ip[static_cast<std::size_t>(i)] - 1)]);
  for (std::int64_t j = 0; j < d; ++j)
    if (!(std::abs(a[j * m + j]) > 0) || !std::isfinite(a[j * m + j])) return j;
  return -1;
}

}  // namespace

// ---- multiply -------------------------------------------------------------------------------

struct MatmulNumbers {
  Matmul25D& m;
  std::int64_t ma() const { return m.layout_.a_rows.local_size(m.x_); }
  std::int64_t ka() const { return m.layout_.a_cols.local_size(m.y_); }
  std::int64_t kb() const { return m.layout_.b_rows.local_size(m.x_); }
  std::int64_t nbc() const { return m.layout_.b_cols.local_size(m.y_); }

  void send(int dest, std::int64_t c, const double* v, std::int64_t n, int role) { m.engine_.send(dest, c, v, n, role); }
  const double* replicate_data(int role) { return role == mm_replicate_a ? m.A_ : m.B_; }
  // Panel q's block columns of A (rows of B) here, in order: contiguous in the local array
  // (then a pointer into it, with its leading dimension) or packed into `buf`.
  const double* panel(int role, std::int64_t q, std::vector<double>& buf, std::int64_t& ld) {
    const bool a = role == mm_panel_a;
    const Cyclic1D& d = a ? m.layout_.a_cols : m.layout_.b_rows;
    const int proc = a ? m.y_ : m.x_;
    const std::int64_t lo = m.panels_.ptr[q], hi = m.panels_.ptr[q + 1], other = a ? ma() : nbc();
    bool contiguous = true;
    std::int64_t w = 0;
    for (std::int64_t i = lo; i < hi; ++i) {
      contiguous = contiguous && d.local_start(proc, m.panels_.blocks[i]) == d.local_start(proc, m.panels_.blocks[lo]) + w;
      w += d.width(m.panels_.blocks[i]);
    }
    const std::int64_t first = d.local_start(proc, m.panels_.blocks[lo]);
    if (contiguous) {
      ld = a ? ma() : kb();
      return a ? m.A_ + first * ma() : m.B_ + first;
    }
    buf.resize(static_cast<std::size_t>(w * other));
    std::int64_t off = 0;
    for (std::int64_t i = lo; i < hi; ++i) {
      const std::int64_t kap = m.panels_.blocks[i], wk = d.width(kap), at = d.local_start(proc, kap);
      if (a) {
        std::copy(m.A_ + at * ma(), m.A_ + (at + wk) * ma(), buf.data() + off * ma());
      } else {
        for (std::int64_t j = 0; j < nbc(); ++j)
          std::copy(m.B_ + j * kb() + at, m.B_ + j * kb() + at + wk, buf.data() + j * w + off);
      }
      off += wk;
    }
    ld = a ? ma() : w;
    return buf.data();
  }
  std::int64_t width(std::int64_t q) const { return m.panels_.width(q, m.layout_.a_cols); }
  const double* own_panel(int role, std::int64_t q) {  // as it is sent: packed
    std::int64_t ld = 0;
    const double* p = panel(role, q, m.pack_, ld);
    if (role == mm_panel_b && ld != width(q)) {  // rows of B inside its local array: pack them
      m.pack_.resize(static_cast<std::size_t>(width(q) * nbc()));
      pack(p, ld, 0, 0, width(q), nbc(), m.pack_.data());
      return m.pack_.data();
    }
    return p;
  }
  void hold(int role, std::int64_t s0, std::int64_t off, const double* v, std::int64_t n, std::int64_t total) {
    if (role == mm_replicate_a || role == mm_replicate_b)
      std::copy(v, v + n, (role == mm_replicate_a ? m.a_ : m.b_).begin() + off);
    else
      hold_piece(m.held_[static_cast<std::size_t>(s0)], off, v, n, total);
  }
  void release(std::int64_t s) { std::vector<double>().swap(m.held_[static_cast<std::size_t>(s)]); }
  void gemm(std::int64_t q, std::int64_t sa, std::int64_t sb) {
    const std::int64_t w = width(q), rows = ma(), cols = nbc();
    if (rows == 0 || cols == 0 || w == 0) return;
    std::int64_t lda = rows, ldb = w;
    const double* A = sa >= 0 ? m.held_[static_cast<std::size_t>(sa)].data() : panel(mm_panel_a, q, m.apan_, lda);
    const double* B = sb >= 0 ? m.held_[static_cast<std::size_t>(sb)].data() : panel(mm_panel_b, q, m.bpan_, ldb);
    const auto t = clock_type::now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(cols),
                static_cast<int>(w), 1.0, A, static_cast<int>(lda), B, static_cast<int>(ldb), 1.0, m.C_,
                static_cast<int>(rows));
    m.compute_ += seconds_since(t);
    m.flops_ += 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(w);
  }
  void reduce_add(std::int64_t s, const double* v, std::int64_t n) { add_into(m.acc_[static_cast<std::size_t>(s)], v, n); }
  const double* reduce_out(std::int64_t s, std::int64_t off, std::int64_t n) {
    std::vector<double>& acc = m.acc_[static_cast<std::size_t>(s)];
    m.out_.assign(m.C_ + off, m.C_ + off + n);
    for (std::size_t i = 0; i < acc.size(); ++i) m.out_[i] += acc[i];
    std::vector<double>().swap(acc);
    return m.out_.data();
  }
  void reduce_in(std::int64_t s, std::int64_t off, std::int64_t) {
    std::vector<double>& acc = m.acc_[static_cast<std::size_t>(s)];
    for (std::size_t i = 0; i < acc.size(); ++i) m.C_[off + static_cast<std::int64_t>(i)] += acc[i];
    std::vector<double>().swap(acc);
  }
};

Matmul25D::Matmul25D(MPI_Comm comm, const Topology& topo, const MatmulShape& s, const Grid25D& g,
                     const TreeShape& shape)
    : grid_(checked(g, comm)), layout_(s, g), panels_(summa_panels(s, g)), topo_(topo), rank_(comm_rank(comm)), x_(g.x_of(rank_)),
      y_(g.y_of(rank_)), z_(g.z_of(rank_)), plan_(matmul_plan(s, g, rank_)),
      tree_(build_tree_plan(plan_.set, rank_, shape, topo)), engine_(comm, topo, plan_.max_count(), 0, mm_nroles) {
  require(topo.size() == g.size(), "matrix multiply: the topology has " + std::to_string(topo.size()) +
                                       " ranks, the grid " + std::to_string(g.size()));
}

CommStats Matmul25D::planned() const { return dense_stats(tree_, plan_, topo_); }

DenseTimes Matmul25D::run(const double* a, const double* b, double* c) {
  const auto t0 = clock_type::now();
  MatmulNumbers be{*this};
  const std::int64_t ma = be.ma(), ka = be.ka(), kb = be.kb(), nc = be.nbc();
  if (z_ == 0) {  // layer 0 works on the caller's arrays
    require((a != nullptr || ma * ka == 0) && (b != nullptr || kb * nc == 0) && (c != nullptr || ma * nc == 0),
            "matrix multiply: layer 0 needs its blocks of A, B and C");
    A_ = a, B_ = b, C_ = c;
    std::fill(c, c + ma * nc, 0.0);
  } else {
    a_.assign(static_cast<std::size_t>(ma * ka), 0.0);
    b_.assign(static_cast<std::size_t>(kb * nc), 0.0);
    c_.assign(static_cast<std::size_t>(ma * nc), 0.0);
    A_ = a_.data(), B_ = b_.data(), C_ = c_.data();
  }
  acc_.assign(tree_.index.size(), {});
  held_.assign(tree_.index.size(), {});
  flops_ = compute_ = 0;
  prepare_engine(engine_, plan_, grid_, runs_);
  MatmulMachine<MatmulNumbers> machine(plan_, tree_, panels_, grid_, rank_, be);
  machine.start();
  engine_.run(machine.expected(),
              [&](int, std::int64_t key, const double* v, std::int64_t n) { machine.arrive(key, v, n); },
              [&] { return machine.idle(); });
  if (!machine.done()) throw std::logic_error("matrix multiply: the run ended with work left");
  A_ = B_ = C_ = nullptr;
  for (std::vector<double>* v : {&a_, &b_, &c_}) std::vector<double>().swap(*v);
  return {seconds_since(t0), compute_};
}

// ---- LU -------------------------------------------------------------------------------------

struct LuNumbers {
  LU25D& m;
  std::int64_t ml() const { return m.rows_.local_size(m.x_); }
  std::int64_t w(std::int64_t k) const { return m.rows_.width(k); }
  std::int64_t r(std::int64_t blk) const { return m.rows_.local_start(m.x_, blk); }
  std::int64_t c(std::int64_t blk) const { return m.cols_.local_start(m.y_, blk); }
  std::int64_t ra(std::int64_t k) const { return ml() - r(k + 1); }
  std::int64_t ca(std::int64_t k) const { return m.cols_.local_size(m.y_) - c(k + 1); }
  double* at(std::int64_t i, std::int64_t j) { return m.A_ + j * ml() + i; }
  void timed_flops(clock_type::time_point t, double f) {
    m.compute_ += seconds_since(t);
    m.flops_ += f;
  }
  // The region of a reduction (role) of step k: block column k from row block k, or block
  // row k right of the diagonal.
  void region(int role, std::int64_t k, std::int64_t& r0, std::int64_t& c0, std::int64_t& rows, std::int64_t& cols) {
    if (role == lu_reduce_col) {
      r0 = r(k), c0 = c(k), rows = ml() - r0, cols = w(k);
    } else {
      r0 = r(k), c0 = c(k + 1), rows = w(k), cols = ca(k);
    }
  }

  void send(int dest, std::int64_t cc, const double* v, std::int64_t n, int role) {
    m.engine_.send(dest, cc, v, n, role);
  }
  void hold(std::int64_t s0, std::int64_t off, const double* v, std::int64_t n, std::int64_t total) {
    hold_piece(m.held_[static_cast<std::size_t>(s0)], off, v, n, total);
  }
  const double* held(std::int64_t s) { return m.held_[static_cast<std::size_t>(s)].data(); }
  void release(std::int64_t s) {
    std::vector<double>().swap(m.held_[static_cast<std::size_t>(s)]);
    std::vector<double>().swap(m.packed_[static_cast<std::size_t>(s)]);
  }
  void reduce_add(std::int64_t s, const double* v, std::int64_t n) { add_into(m.acc_[static_cast<std::size_t>(s)], v, n); }
  const double* reduce_out(std::int64_t s0, std::int64_t s, int role, std::int64_t k, std::int64_t off, std::int64_t n) {
    std::vector<double>& packed = m.packed_[static_cast<std::size_t>(s0)];
    if (packed.empty()) {  // this rank's share, packed once for all its pieces
      std::int64_t r0, c0, rows, cols;
      region(role, k, r0, c0, rows, cols);
      packed.resize(static_cast<std::size_t>(rows * cols));
      pack(m.A_, ml(), r0, c0, rows, cols, packed.data());
    }
    std::vector<double>& acc = m.acc_[static_cast<std::size_t>(s)];
    m.out_.assign(packed.begin() + off, packed.begin() + off + n);
    for (std::size_t i = 0; i < acc.size(); ++i) m.out_[i] += acc[i];
    std::vector<double>().swap(acc);
    return m.out_.data();
  }
  void reduce_in(std::int64_t s, int role, std::int64_t k, std::int64_t off, std::int64_t n) {
    std::vector<double>& acc = m.acc_[static_cast<std::size_t>(s)];
    if (acc.empty()) return;
    std::int64_t r0, c0, rows, cols;
    region(role, k, r0, c0, rows, cols);
    add_range(m.A_, ml(), r0, c0, rows, off, n, acc.data());
    std::vector<double>().swap(acc);
  }
  void factor_diag(std::int64_t k) {
    const auto t = clock_type::now();
    PivotRule rule{0.0, 0.0, false};
    try {
      dense_lu(static_cast<int>(w(k)), at(r(k), c(k)), static_cast<int>(ml()), k * m.nb_, rule);
    } catch (const std::runtime_error& e) {  // its message speaks of static pivoting's options
      std::string what = e.what();  // "zero pivot at permuted column j (static pivoting: ...)"
      what = what.substr(0, what.find(" ("));
      const auto at = what.find("permuted ");
      if (at != std::string::npos) what.erase(at, 9);  // no permutation here
      throw std::runtime_error("2.5D LU without pivoting: " + what + ": this matrix needs pivoting");
    }
    timed_flops(t, 2.0 / 3.0 * static_cast<double>(w(k) * w(k) * w(k)));
  }
  const double* diag(std::int64_t k) {  // packed once per step
    if (m.diag_k_ != k) {
      m.diag_.resize(static_cast<std::size_t>(w(k) * w(k)));
      pack(m.A_, ml(), r(k), c(k), w(k), w(k), m.diag_.data());
      m.diag_k_ = k;
    }
    return m.diag_.data();
  }
  void trsm_l(std::int64_t k, const double* d) {
    const auto t = clock_type::now();
    cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(ra(k)),
                static_cast<int>(w(k)), 1.0, d, static_cast<int>(w(k)), at(r(k + 1), c(k)), static_cast<int>(ml()));
    timed_flops(t, static_cast<double>(ra(k) * w(k) * w(k)));
  }
  void trsm_u(std::int64_t k, const double* d) {
    const auto t = clock_type::now();
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(w(k)),
                static_cast<int>(ca(k)), 1.0, d, static_cast<int>(w(k)), at(r(k), c(k + 1)), static_cast<int>(ml()));
    timed_flops(t, static_cast<double>(ca(k) * w(k) * w(k)));
  }
  const double* panel_l(std::int64_t k) {
    m.pack_.resize(static_cast<std::size_t>(ra(k) * w(k)));
    pack(m.A_, ml(), r(k + 1), c(k), ra(k), w(k), m.pack_.data());
    return m.pack_.data();
  }
  const double* panel_u(std::int64_t k) {
    m.pack_.resize(static_cast<std::size_t>(w(k) * ca(k)));
    pack(m.A_, ml(), r(k), c(k + 1), w(k), ca(k), m.pack_.data());
    return m.pack_.data();
  }
  void store(int role, std::int64_t k, std::int64_t off, const double* v, std::int64_t n) {
    if (role == lu_diag) unpack_range(m.A_, ml(), r(k), c(k), w(k), off, n, v);
    else if (role == lu_panel_l) unpack_range(m.A_, ml(), r(k + 1), c(k), ra(k), off, n, v);
    else unpack_range(m.A_, ml(), r(k), c(k + 1), w(k), off, n, v);
  }
  void update(std::int64_t k, std::int64_t ls, std::int64_t us, std::int64_t r0, std::int64_t r1, std::int64_t c0,
              std::int64_t c1) {
    const std::int64_t wk = w(k), rl = r0 - r(k + 1), cu = c0 - c(k + 1);
    const double* L = ls >= 0 ? held(ls) + rl : at(r(k + 1) + rl, c(k));
    const std::int64_t ldl = ls >= 0 ? ra(k) : ml();
    const double* U = us >= 0 ? held(us) + cu * wk : at(r(k), c(k + 1) + cu);
    const std::int64_t ldu = us >= 0 ? wk : ml();
    const auto t = clock_type::now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(r1 - r0), static_cast<int>(c1 - c0),
                static_cast<int>(wk), -1.0, L, static_cast<int>(ldl), U, static_cast<int>(ldu), 1.0, at(r0, c0),
                static_cast<int>(ml()));
    timed_flops(t, 2.0 * static_cast<double>((r1 - r0) * (c1 - c0) * wk));
  }
};

// ---- tournament pivoting --------------------------------------------------------------------

// Candidate rows travel as w * (w + 1) values: their global positions (-1: none), then the
// w x w values of those rows (column-major), as the panel held them before any elimination.
struct TournamentNumbers : LuNumbers {
  std::int64_t global_row(std::int64_t lr) const {  // of a local row
    const std::int64_t nb = m.nb_, lb = lr / nb;
    return (lb * m.grid_.pr + m.x_) * nb + lr % nb;
  }
  std::int64_t local_row(std::int64_t g) const { return r(g / m.nb_) + g % m.nb_; }
  std::vector<double>& cand(std::int64_t s) { return m.cand_[static_cast<std::size_t>(s)]; }  // s >= 0

  // The candidates in `sets` (concatenated) stacked and pivoted (play_stack).
  std::int64_t play(std::int64_t k, const std::vector<double>& sets, std::vector<std::int64_t>& winners) {
    const std::int64_t wk = w(k), len = wk * (wk + 1);
    std::vector<std::int64_t> pos;
    std::vector<std::pair<std::size_t, std::int64_t>> from;  // (set start, row in it)
    for (std::size_t at = 0; at + static_cast<std::size_t>(len) <= sets.size(); at += static_cast<std::size_t>(len))
      for (std::int64_t i = 0; i < wk; ++i)
        if (sets[at + static_cast<std::size_t>(i)] >= 0) {
          pos.push_back(std::llround(sets[at + static_cast<std::size_t>(i)]));
          from.emplace_back(at, i);
        }
    const auto rows = static_cast<std::int64_t>(pos.size());
    std::vector<double> stack(static_cast<std::size_t>(rows * wk));
    for (std::int64_t i = 0; i < rows; ++i) {
      const auto [at, row] = from[static_cast<std::size_t>(i)];
      for (std::int64_t j = 0; j < wk; ++j)
        stack[static_cast<std::size_t>(j * rows + i)] = sets[at + static_cast<std::size_t>(wk + j * wk + row)];
    }
    return play_stack(k, std::move(stack), pos, winners);
  }
  // The rows x w(k) candidates `stack` (column-major; global positions `pos`) pivoted: the
  // winners (at most w(k)) as a candidate set in m.out_, their positions in `winners`, the
  // factored winners in m.diag_; returns the first column without a pivot (-1: none).
  std::int64_t play_stack(std::int64_t k, std::vector<double> stack, const std::vector<std::int64_t>& pos,
                          std::vector<std::int64_t>& winners, std::vector<double>* factored = nullptr) {
    const std::int64_t wk = w(k), rows = static_cast<std::int64_t>(pos.size());
    const std::vector<double> orig = stack;
    std::vector<std::int64_t> perm;
    const auto t = clock_type::now();
    const std::int64_t zero = partial_pivoting(stack.data(), rows, wk, perm);
    timed_flops(t, static_cast<double>(rows * wk * wk));
    const std::int64_t nw = std::min(rows, wk);
    m.out_.assign(static_cast<std::size_t>(wk * (wk + 1)), 0.0);
    std::fill(m.out_.begin(), m.out_.begin() + wk, -1.0);
    winners.clear();
    for (std::int64_t i = 0; i < nw; ++i) {
      const std::int64_t src = perm[static_cast<std::size_t>(i)];
      winners.push_back(pos[static_cast<std::size_t>(src)]);
      m.out_[static_cast<std::size_t>(i)] = static_cast<double>(winners.back());
      for (std::int64_t j = 0; j < wk; ++j)
        m.out_[static_cast<std::size_t>(wk + j * wk + i)] = orig[static_cast<std::size_t>(j * rows + src)];
    }
    m.diag_.resize(static_cast<std::size_t>(wk * wk));
    pack(stack.data(), rows, 0, 0, std::min(rows, wk), wk, m.diag_.data());
    if (factored != nullptr) *factored = std::move(stack);
    return zero;
  }

  void tour_leaf(std::int64_t k, std::int64_t s) {  // this rank's rows of the panel
    const std::int64_t wk = w(k), r0 = r(k), rows = ml() - r0;
    std::vector<double> stack(static_cast<std::size_t>(rows * wk));
    pack(m.A_, ml(), r0, c(k), rows, wk, stack.data());
    std::vector<std::int64_t> pos(static_cast<std::size_t>(rows)), winners;
    for (std::int64_t i = 0; i < rows; ++i) pos[static_cast<std::size_t>(i)] = global_row(r0 + i);
    // the only player (s < 0): its partial pivoting is the panel's, L included (put_diag), and
    // its winners, in its order, are the pivots (tour_final plays no second round)
    const std::int64_t zero = play_stack(k, std::move(stack), pos, winners, s < 0 ? &m.whole_ : nullptr);
    m.whole_k_ = s < 0 ? k : -1;
    if (s < 0) {
      m.whole_winners_ = winners;
      m.whole_zero_ = zero;
      return;
    }
    std::vector<double>& acc = cand(s);
    acc.insert(acc.end(), m.out_.begin(), m.out_.end());
  }
  void tour_add(std::int64_t s, const double* v, std::int64_t n) {
    std::vector<double>& acc = cand(s);
    acc.insert(acc.end(), v, v + n);
  }
  const double* tour_out(std::int64_t k, std::int64_t s) {
    std::vector<std::int64_t> winners;
    play(k, cand(s), winners);
    std::vector<double>().swap(cand(s));
    return m.out_.data();
  }
  void tour_final(std::int64_t k, std::int64_t s) {
    const std::int64_t wk = w(k), k0 = k * m.nb_;
    std::vector<std::int64_t> winners;
    std::int64_t zero = -1;
    if (m.whole_k_ == k) {  // the only player: its winners, zero column and diagonal block as its panel has them
      winners.swap(m.whole_winners_);
      zero = m.whole_zero_;
      pack(m.whole_.data(), static_cast<std::int64_t>(m.whole_.size()) / wk, 0, 0, wk, wk, m.diag_.data());
    } else {
      zero = play(k, cand(s), winners);  // the winners factored: the diagonal block
      std::vector<double>().swap(cand(s));
    }
    if (zero >= 0 || static_cast<std::int64_t>(winners.size()) < wk) {
      const std::int64_t j = std::max<std::int64_t>(zero, 0);
      const bool finite = std::isfinite(m.diag_[static_cast<std::size_t>(j * wk + j)]);
      throw std::runtime_error("2.5D LU with tournament pivoting: " +
                               std::string(finite ? "the matrix is singular (no nonzero pivot in column "
                                                  : "a non-finite pivot in column ") +
                               std::to_string(k0 + j) + (finite ? ")" : " (Inf or NaN entries, or overflow)"));
    }
    // the winners in order, as LAPACK's interchanges: row k0 + i with the row holding winner i
    std::map<std::int64_t, std::int64_t> where, content;  // moved rows only: row -> position, position -> row
    const auto at_pos = [&](std::int64_t p) { auto it = content.find(p); return it == content.end() ? p : it->second; };
    const auto pos_of = [&](std::int64_t g) { auto it = where.find(g); return it == where.end() ? g : it->second; };
    for (std::int64_t i = 0; i < wk; ++i) {
      const std::int64_t t = k0 + i, g = winners[static_cast<std::size_t>(i)], p = pos_of(g), a = at_pos(t);
      m.ipiv_[static_cast<std::size_t>(t)] = p;
      content[t] = g, content[p] = a, where[g] = t, where[a] = p;
    }
  }
  const double* pivots(std::int64_t k) {
    m.pack_.assign(m.ipiv_.begin() + k * m.nb_, m.ipiv_.begin() + k * m.nb_ + w(k));
    return m.pack_.data();
  }
  void set_pivots(std::int64_t k, const double* v) {
    for (std::int64_t i = 0; i < w(k); ++i) m.ipiv_[static_cast<std::size_t>(k * m.nb_ + i)] = std::llround(v[i]);
  }
  const double* diag(std::int64_t) { return m.diag_.data(); }
  // The factored diagonal block into place, or the whole factored panel where this rank was
  // the tournament's only player (true: L is there too).
  bool put_diag(std::int64_t k) {
    if (m.whole_k_ != k) {
      unpack_range(m.A_, ml(), r(k), c(k), w(k), 0, w(k) * w(k), m.diag_.data());
      return false;
    }
    const std::int64_t rows = ml() - r(k);
    unpack_range(m.A_, ml(), r(k), c(k), rows, 0, rows * w(k), m.whole_.data());
    std::vector<double>().swap(m.whole_);
    m.whole_k_ = -1;
    return true;
  }

  std::int64_t swap_plan(std::int64_t k) {
    LU25D::Swap& sw = m.swaps_[static_cast<std::size_t>(k)];
    sw.c0 = m.z_ == static_cast<int>(k % m.grid_.c) ? c(k) : c(k + 1);
    sw.ncols = m.cols_.local_size(m.y_) - sw.c0;
    if (sw.ncols == 0) return 0;
    sw.moved = interchange_moves(m.ipiv_, k * m.nb_, w(k));
    std::map<int, std::vector<std::int64_t>> out, in;
    for (const auto& [q, src] : sw.moved) {
      const int xq = m.rows_.owner(q / m.nb_), xs = m.rows_.owner(src / m.nb_);
      if (xs == m.x_ && xq != m.x_) out[xq].push_back(q);
      if (xq == m.x_ && xs != m.x_) in[xs].push_back(q);
    }
    sw.out.assign(out.begin(), out.end());
    sw.in.assign(in.begin(), in.end());
    return static_cast<std::int64_t>(sw.in.size());
  }
  // Local rows `lr` x columns [c0, c0 + nc) of this rank's share, copied out to (gather) or
  // in from (scatter) an lr.size() x nc column-major array.
  void gather(const std::vector<std::int64_t>& lr, std::int64_t c0, std::int64_t nc, double* out) {
    const std::size_t nr = lr.size();
    for (std::int64_t j = 0; j < nc; ++j) {
      const double* col = at(0, c0 + j);
      for (std::size_t i = 0; i < nr; ++i) out[static_cast<std::size_t>(j) * nr + i] = col[lr[i]];
    }
  }
  void scatter(const std::vector<std::int64_t>& lr, std::int64_t c0, std::int64_t nc, const double* v) {
    const std::size_t nr = lr.size();
    for (std::int64_t j = 0; j < nc; ++j) {
      double* col = at(0, c0 + j);
      for (std::size_t i = 0; i < nr; ++i) col[lr[i]] = v[static_cast<std::size_t>(j) * nr + i];
    }
  }
  // Rows brought up to date with every pending update on the columns it has not reached (from
  // column c0 on: no column before is still pending): local rows [r0, r0 + nr) of the share in
  // place (buf null), or the rows `lr` gathered in buf (nr x (nl - c0), column-major).
  void catch_up(const std::vector<PendingUpdate>& pend, std::int64_t r0, std::int64_t nr, std::int64_t c0,
                const std::vector<std::int64_t>* lr = nullptr, double* buf = nullptr) {
    const std::int64_t nl = m.cols_.local_size(m.y_);
    std::vector<double> Lg;
    for (const PendingUpdate& p : pend) {
      const std::int64_t cp = std::max(c(p.bnext), c0), wk = w(p.k), ldl = ra(p.k), nc = nl - cp;
      if (nc <= 0 || nr == 0) continue;
      const double* L = m.lcopy_[static_cast<std::size_t>(p.k)].data() - r(p.k + 1);  // indexed by local row
      if (lr != nullptr) {
        Lg.resize(static_cast<std::size_t>(nr * wk));
        for (std::int64_t j = 0; j < wk; ++j)
          for (std::int64_t i = 0; i < nr; ++i) Lg[static_cast<std::size_t>(j * nr + i)] = L[j * ldl + (*lr)[static_cast<std::size_t>(i)]];
      }
      const double* U = p.uslot >= 0 ? held(p.uslot) + (cp - c(p.k + 1)) * wk : at(r(p.k), cp);
      const std::int64_t ldu = p.uslot >= 0 ? wk : ml();
      const auto t = clock_type::now();
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(nr), static_cast<int>(nc),
                  static_cast<int>(wk), -1.0, lr ? Lg.data() : L + r0, static_cast<int>(lr ? nr : ldl), U,
                  static_cast<int>(ldu), 1.0, lr ? buf + (cp - c0) * nr : at(r0, cp), static_cast<int>(lr ? nr : ml()));
      timed_flops(t, 2.0 * static_cast<double>(nr * nc * wk));
    }
  }
  // Swap k's messages hold their rows' moving columns as a rows x ncols column-major array,
  // rows in ascending order of the positions they go to. A row that leaves for another process
  // row goes up to date (its pending updates applied first); a row that comes from one arrives
  // so, and its position's rows of the pending steps' L are zeroed (the updates to come leave
  // it alone); a row that moves within this rank takes its pending updates along (its rows of
  // L move with it). Block row k is brought up to date once its rows are in (swap_finish).
  void swap_send(std::int64_t k, std::vector<PendingUpdate>& pend) {
    LU25D::Swap& sw = m.swaps_[static_cast<std::size_t>(k)];
    if (sw.ncols == 0) return;  // (nothing pending either: updates touch only the columns that move)
    const std::map<std::int64_t, std::int64_t>& mv = sw.moved;
    std::vector<std::int64_t> from, to, zeroed;  // zeroed: positions a row from another rank comes to
    for (const auto& [xq, qs] : sw.out) {
      from.clear();
      for (const std::int64_t q : qs) from.push_back(local_row(mv.at(q)));
      m.pack_.resize(from.size() * static_cast<std::size_t>(sw.ncols));
      gather(from, sw.c0, sw.ncols, m.pack_.data());
      catch_up(pend, 0, static_cast<std::int64_t>(from.size()), sw.c0, &from, m.pack_.data());
      send(m.grid_.rank(xq, m.y_, m.z_), m.plan_.nids + k, m.pack_.data(), static_cast<std::int64_t>(m.pack_.size()),
           lu_swap);
    }
    from.clear();
    for (const auto& [q, src] : mv)
      if (m.rows_.owner(q / m.nb_) == m.x_ && m.rows_.owner(src / m.nb_) == m.x_) {
        to.push_back(local_row(q));
        from.push_back(local_row(src));
      }
    std::vector<double> tmp(from.size() * static_cast<std::size_t>(sw.ncols));  // read them all, then write
    gather(from, sw.c0, sw.ncols, tmp.data());
    scatter(to, sw.c0, sw.ncols, tmp.data());
    for (const auto& [xs, qs] : sw.in)
      for (const std::int64_t q : qs) zeroed.push_back(local_row(q));
    for (const PendingUpdate& p : pend) {
      double* L = m.lcopy_[static_cast<std::size_t>(p.k)].data() - r(p.k + 1);
      const std::int64_t ldl = ra(p.k);
      for (std::int64_t j = 0; j < w(p.k); ++j) {
        double* Lj = L + j * ldl;
        for (std::size_t i = 0; i < from.size(); ++i) tmp[i] = Lj[from[i]];
        for (std::size_t i = 0; i < to.size(); ++i) Lj[to[i]] = tmp[i];
        for (const std::int64_t lr : zeroed) Lj[lr] = 0.0;
      }
    }
  }
  void swap_arrive(std::int64_t k, int source, const double* v, std::int64_t n) {
    m.swaps_[static_cast<std::size_t>(k)].got.emplace_back(source, std::vector<double>(v, v + n));
  }
  void swap_finish(std::int64_t k, const std::vector<PendingUpdate>& pend) {
    LU25D::Swap& sw = m.swaps_[static_cast<std::size_t>(k)];
    for (const auto& [src, v] : sw.got) {
      const int xs = m.grid_.x_of(src);
      auto it = std::find_if(sw.in.begin(), sw.in.end(), [xs](const auto& e) { return e.first == xs; });
      if (it == sw.in.end() || m.grid_.y_of(src) != m.y_ || m.grid_.z_of(src) != m.z_ ||
          static_cast<std::int64_t>(v.size()) != static_cast<std::int64_t>(it->second.size()) * sw.ncols)
        throw std::logic_error("LU: a swap message for step " + std::to_string(k) + " this rank did not expect");
      std::vector<std::int64_t> to;
      for (const std::int64_t q : it->second) to.push_back(local_row(q));
      scatter(to, sw.c0, sw.ncols, v.data());
    }
    if (m.x_ == m.rows_.owner(k)) catch_up(pend, r(k), w(k), sw.c0);  // block row k becomes final
    sw = LU25D::Swap{};
  }
  void keep_l(std::int64_t k, std::int64_t lslot) {
    std::vector<double>& L = m.lcopy_[static_cast<std::size_t>(k)];
    if (lslot >= 0) {
      L.swap(m.held_[static_cast<std::size_t>(lslot)]);
      release(lslot);
    } else {
      L.resize(static_cast<std::size_t>(ra(k) * w(k)));
      pack(m.A_, ml(), r(k + 1), c(k), ra(k), w(k), L.data());
    }
  }
  void drop_l(std::int64_t k) { std::vector<double>().swap(m.lcopy_[static_cast<std::size_t>(k)]); }
  void update(const PendingUpdate& p, std::int64_t r0, std::int64_t c0, std::int64_t c1) {
    const std::int64_t r1 = ml(), wk = w(p.k);
    if (r0 >= r1) return;
    const double* L = m.lcopy_[static_cast<std::size_t>(p.k)].data() + (r0 - r(p.k + 1));
    const double* U = p.uslot >= 0 ? held(p.uslot) + (c0 - c(p.k + 1)) * wk : at(r(p.k), c0);
    const std::int64_t ldu = p.uslot >= 0 ? wk : ml();
    const auto t = clock_type::now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(r1 - r0), static_cast<int>(c1 - c0),
                static_cast<int>(wk), -1.0, L, static_cast<int>(ra(p.k)), U, static_cast<int>(ldu), 1.0, at(r0, c0),
                static_cast<int>(ml()));
    timed_flops(t, 2.0 * static_cast<double>((r1 - r0) * (c1 - c0) * wk));
  }
};

// Layer 0 after a pivoted run: block column j of L holds its rows as they stood after step j;
// each moves to where the interchanges of the steps after j took it (LAPACK's getrf applies
// them to the left columns as it goes). One message per pair of process rows that trade rows.
void LU25D::swap_left_columns() {
  const int tag = first_tag + runs_++ % tag_cycle;  // every rank: the tags stay in step
  const std::int64_t K = rows_.nblocks();
  if (z_ != 0 || K == 0) return;
  TournamentNumbers be{*this};
  struct Group {  // rows of one block column moving between two process rows (or within this one)
    std::int64_t j;
    std::vector<std::int64_t> to, from;  // local rows here (to: received; from: sent)
  };
  std::map<int, std::vector<Group>> out, in;  // per process row; local moves under this rank's own
  const auto group = [](std::vector<Group>& gs, std::int64_t j) -> Group& {
    if (gs.empty() || gs.back().j != j) gs.push_back({j, {}, {}});
    return gs.back();
  };
  for_left_moves(ipiv_, n_, nb_, [&](std::int64_t j, std::int64_t q, std::int64_t s) {
    if (cols_.owner(j) != y_) return;
    const int xq = rows_.owner(q / nb_), xs = rows_.owner(s / nb_);
    if (xs == x_) group(out[xq], j).from.push_back(be.local_row(s));
    if (xq == x_) group(in[xs], j).to.push_back(be.local_row(q));
  });
  // A message: each group's rows x width(j), column-major, the groups in order.
  const auto pack_groups = [&](const std::vector<Group>& gs, std::vector<double>& buf) {
    buf.clear();
    for (const Group& g : gs) {
      const std::size_t at = buf.size(), w = static_cast<std::size_t>(rows_.width(g.j));
      buf.resize(at + g.from.size() * w);
      be.gather(g.from, cols_.local_start(y_, g.j), rows_.width(g.j), buf.data() + at);
    }
  };
  const auto unpack_groups = [&](const std::vector<Group>& gs, const double* v, std::int64_t n) {
    std::int64_t need = 0;
    for (const Group& g : gs) need += static_cast<std::int64_t>(g.to.size()) * rows_.width(g.j);
    if (need != n) throw std::logic_error("LU: an unexpected message while swapping L's rows");
    for (const Group& g : gs) {
      be.scatter(g.to, cols_.local_start(y_, g.j), rows_.width(g.j), v);
      v += static_cast<std::int64_t>(g.to.size()) * rows_.width(g.j);
    }
  };
  std::vector<double> buf;
  engine_.set_tag(tag);
  for (const auto& [xq, gs] : out)
    if (xq != x_) {
      pack_groups(gs, buf);
      engine_.send(grid_.rank(xq, y_, 0), plan_.nids + K, buf.data(), static_cast<std::int64_t>(buf.size()), lu_swap);
    }
  if (out.count(x_)) {  // within this rank: read them all, then write
    pack_groups(out[x_], buf);
    unpack_groups(in[x_], buf.data(), static_cast<std::int64_t>(buf.size()));
  }
  in.erase(x_);
  engine_.run(static_cast<std::int64_t>(in.size()), [&](int source, std::int64_t, const double* v, std::int64_t n) {
    const auto it = in.find(grid_.x_of(source));
    if (it == in.end()) throw std::logic_error("LU: an unexpected message while swapping L's rows");
    unpack_groups(it->second, v, n);
  });
}

LU25D::LU25D(MPI_Comm comm, const Topology& topo, std::int64_t n, std::int64_t nb, const Grid25D& g,
             const TreeShape& shape, std::int64_t piece, bool tournament)
    : n_(n), nb_(nb), tournament_(tournament), grid_(checked(g, comm)), rows_{n, nb, g.pr}, cols_{n, nb, g.pc}, topo_(topo),
      rank_(comm_rank(comm)), x_(g.x_of(rank_)), y_(g.y_of(rank_)), z_(g.z_of(rank_)),
      plan_(lu_plan(n, nb, g, piece, rank_, tournament)),
      tree_(build_tree_plan(plan_.set, rank_, shape, topo)), engine_(comm, topo, plan_.max_count(), 0, lu_nroles) {
  require(topo.size() == g.size(), "LU: the topology has " + std::to_string(topo.size()) + " ranks, the grid " +
                                       std::to_string(g.size()));
}

CommStats LU25D::planned() const { return dense_stats(tree_, plan_, topo_); }

DenseTimes LU25D::run(double* a) {
  const auto t0 = clock_type::now();
  const std::int64_t ml = rows_.local_size(x_), nl = cols_.local_size(y_);
  if (z_ == 0) {  // layer 0 factors the caller's array in place
    require(a != nullptr || ml * nl == 0, "LU: layer 0 needs its blocks of A");
    A_ = a;
  } else {
    a_.assign(static_cast<std::size_t>(ml * nl), 0.0);
    A_ = a_.data();
  }
  held_.assign(tree_.index.size(), {});
  acc_.assign(tree_.index.size(), {});
  packed_.assign(tree_.index.size(), {});
  diag_k_ = -1;
  flops_ = compute_ = 0;
  prepare_engine(engine_, plan_, grid_, runs_, lu_swap);
  if (tournament_) {
    const std::int64_t K = rows_.nblocks();
    ipiv_.assign(static_cast<std::size_t>(n_), -1);
    cand_.assign(tree_.index.size(), {});
    lcopy_.assign(static_cast<std::size_t>(K), {});
    swaps_.assign(static_cast<std::size_t>(K), {});
    TournamentNumbers be{*this};
    TournamentLuMachine<TournamentNumbers> machine(plan_, tree_, n_, nb_, grid_, rank_, be);
    machine.start();
    engine_.run_until([&] { return machine.done(); },
                      [&](int src, std::int64_t key, const double* v, std::int64_t len) { machine.arrive(src, key, v, len); },
                      [&] { return machine.idle(); });
    if (!machine.done()) throw std::logic_error("LU: the run ended with work left (" + machine.state() + ")");
    swap_left_columns();
  } else {
    LuNumbers be{*this};
    LuMachine<LuNumbers> machine(plan_, tree_, n_, nb_, grid_, rank_, be);
    machine.start();
    engine_.run(machine.expected(),
                [&](int, std::int64_t key, const double* v, std::int64_t len) { machine.arrive(key, v, len); },
                [&] { return machine.idle(); });
    if (!machine.done()) throw std::logic_error("LU: the run ended with work left (" + machine.state() + ")");
  }
  A_ = nullptr;
  std::vector<double>().swap(a_);
  return {seconds_since(t0), compute_};
}

}  // namespace commsolve
