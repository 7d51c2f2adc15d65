#include "dense/dense_executor.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "dense/lu_machine.hpp"
#include "dense/matmul_machine.hpp"
#include "direct/supernodal_lu.hpp"

namespace commsolve {

namespace {

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

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

void prepare_engine(MessageEngine& e, const DensePlan& p, const Grid25D& g, int& runs) {
  e.set_kind_of([&p](std::int64_t id) { return static_cast<int>(p.role[static_cast<std::size_t>(p.index_of(id))]); });
  e.set_window(std::max(64, 8 * (g.pr + g.pc + g.c)));
  e.reset_recorded();
  e.set_tag(first_tag + runs++ % tag_cycle);
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
    m.compute_ += since(t);
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
  return {since(t0), compute_};
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
    m.compute_ += since(t);
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

LU25D::LU25D(MPI_Comm comm, const Topology& topo, std::int64_t n, std::int64_t nb, const Grid25D& g,
             const TreeShape& shape, std::int64_t piece)
    : n_(n), nb_(nb), grid_(checked(g, comm)), rows_{n, nb, g.pr}, cols_{n, nb, g.pc}, topo_(topo),
      rank_(comm_rank(comm)), x_(g.x_of(rank_)), y_(g.y_of(rank_)), z_(g.z_of(rank_)), plan_(lu_plan(n, nb, g, piece, rank_)),
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
  prepare_engine(engine_, plan_, grid_, runs_);
  LuNumbers be{*this};
  LuMachine<LuNumbers> machine(plan_, tree_, n_, nb_, grid_, rank_, be);
  machine.start();
  engine_.run(machine.expected(),
              [&](int, std::int64_t key, const double* v, std::int64_t len) { machine.arrive(key, v, len); },
              [&] { return machine.idle(); });
  if (!machine.done()) throw std::logic_error("LU: the run ended with work left (" + machine.state() + ")");
  A_ = nullptr;
  std::vector<double>().swap(a_);
  return {since(t0), compute_};
}

}  // namespace commsolve
