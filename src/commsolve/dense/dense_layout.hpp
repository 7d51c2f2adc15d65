// Dense matrices on a 2.5D process grid (Solomonik and Demmel): pr x pc processes per layer,
// c layers. Rank (x, y, z) = z * pr * pc + x * pc + y, so layer 0 is ranks [0, pr * pc) in
// ScaLAPACK's row-major grid order and a layer's ranks are neighbours (on one node where
// they fit). Within a layer a matrix is block-cyclic as ScaLAPACK lays it out: block row I
// on process row I mod pr, block column J on process column J mod pc, each rank's blocks
// stored column-major in one local array (leading dimension its local row count).
#pragma once

#include <algorithm>
#include <cstdint>

namespace commsolve {

struct Grid25D {
  int pr = 1, pc = 1, c = 1;

  int size() const { return pr * pc * c; }
  int layer_size() const { return pr * pc; }
  int rank(int x, int y, int z) const { return z * pr * pc + x * pc + y; }
  int x_of(int r) const { return (r % (pr * pc)) / pc; }
  int y_of(int r) const { return r % pc; }
  int z_of(int r) const { return r / (pr * pc); }
  // Throws std::invalid_argument unless every extent is positive and, when nranks >= 0,
  // the grid has exactly nranks ranks.
  void validate(int nranks = -1) const;
};

// One dimension of a block-cyclic distribution: n indices in blocks of nb over p processes.
struct Cyclic1D {
  std::int64_t n = 0, nb = 1;
  int p = 1;

  std::int64_t nblocks() const { return (n + nb - 1) / nb; }
  int owner(std::int64_t block) const { return static_cast<int>(block % p); }
  std::int64_t width(std::int64_t block) const { return std::min(nb, n - block * nb); }
  // Indices `proc` holds (ScaLAPACK's NUMROC).
  std::int64_t local_size(int proc) const { return local_start(proc, nblocks()); }
  // Local position of the first index `proc` holds with block >= `block`: its count of
  // indices in blocks before `block`.
  std::int64_t local_start(int proc, std::int64_t block) const {
    const std::int64_t nbk = nblocks();
    block = std::min(block, nbk);
    std::int64_t s = (block > proc ? (block - proc + p - 1) / p : 0) * nb;
    if (nbk > 0 && block == nbk && owner(nbk - 1) == proc) s -= nb - width(nbk - 1);  // a short last block
    return s;
  }
};

}  // namespace commsolve
