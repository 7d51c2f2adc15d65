#include "commsolve/dense/dense_layout.hpp"

#include <stdexcept>
#include <string>

namespace commsolve {

void Grid25D::validate(int nranks) const {
  if (pr < 1 || pc < 1 || c < 1)
    throw std::invalid_argument("2.5D grid " + std::to_string(pr) + "x" + std::to_string(pc) + "x" +
                                std::to_string(c) + ": every extent must be at least 1");
  if (nranks >= 0 && size() != nranks)
    throw std::invalid_argument("2.5D grid " + std::to_string(pr) + "x" + std::to_string(pc) + "x" +
                                std::to_string(c) + " has " + std::to_string(size()) + " ranks, the communicator " +
                                std::to_string(nranks));
}

}  // namespace commsolve
