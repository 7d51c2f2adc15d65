// Matrix Market coordinate files: header, chunked entry parsing (for reading in parallel:
// every rank parses its own byte range), and writing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commsolve {

struct MMHeader {
  std::string field;      // real | integer | pattern
  std::string symmetry;   // general | symmetric | skew-symmetric
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  std::int64_t data_offset = 0;  // byte where the first entry line starts
  std::int64_t data_line = 0;    // 1-based line number of the first entry line
  std::int64_t file_size = 0;
};

// Reads and validates the banner and size line. Throws std::invalid_argument naming the
// file and line for anything malformed or unsupported (array format, complex, hermitian).
MMHeader mm_read_header(const std::string& path);

// Byte range [begin, end) of the entry lines assigned to `part` of `nparts`: the file's
// data section cut in equal byte ranges, each line belonging to the range holding its
// first byte.
std::pair<std::int64_t, std::int64_t> mm_chunk(const MMHeader& h, const std::string& path,
                                               int part, int nparts);

struct MMChunk {
  std::vector<std::int64_t> rows, cols;  // 0-based
  std::vector<double> vals;
  std::int64_t nlines = 0;       // lines in the chunk (for global line numbers)
  std::int64_t error_line = -1;  // 0-based line within the chunk of the first error
  std::string error;             // empty when the chunk parsed cleanly
  // Symmetric and skew-symmetric files: 0-based lines within the chunk of the first entry
  // below and of the first above the diagonal (-1: none). Either triangle may be stored (as
  // scipy reads them), not both: the reader checks that over every chunk.
  std::int64_t first_lower = -1, first_upper = -1;
};

// Parses the entry lines in [begin, end). Errors are returned, not thrown, so that a
// parallel reader can agree on them collectively before anyone raises.
MMChunk mm_parse_chunk(const std::string& path, const MMHeader& h, std::int64_t begin,
                       std::int64_t end);

// Writes a coordinate file. `vals` empty means field "pattern". Values are written in the
// shortest form that reads back to the same double.
void mm_write(const std::string& path, std::int64_t nrows, std::int64_t ncols,
              const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols,
              const std::vector<double>& vals, const std::string& field,
              const std::string& symmetry, const std::string& comment);

}  // namespace commsolve
