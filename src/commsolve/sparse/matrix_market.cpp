#include "commsolve/sparse/matrix_market.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace commsolve {

namespace {

[[noreturn]] void fail(const std::string& path, std::int64_t line, const std::string& msg) {
  throw std::invalid_argument(path + ":" + std::to_string(line) + ": " + msg);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct File {
  std::FILE* f;
  explicit File(const std::string& path) : f(std::fopen(path.c_str(), "rb")) {
    if (!f) throw std::invalid_argument(path + ": cannot open file: " + std::strerror(errno));
  }
  ~File() { std::fclose(f); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
};

std::int64_t file_size(std::FILE* f) {
  std::fseek(f, 0, SEEK_END);
  std::int64_t n = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  return n;
}

std::string read_range(const std::string& path, std::int64_t begin, std::int64_t end) {
  File file(path);
  std::string buf(static_cast<std::size_t>(std::max<std::int64_t>(0, end - begin)), '\0');
  std::fseek(file.f, begin, SEEK_SET);
  std::size_t got = buf.empty() ? 0 : std::fread(buf.data(), 1, buf.size(), file.f);
  buf.resize(got);
  return buf;
}

// First line start at or after `pos` (a line starts at the data offset or after a '\n').
std::int64_t line_start_at_or_after(std::FILE* f, const MMHeader& h, std::int64_t pos) {
  if (pos <= h.data_offset) return h.data_offset;
  if (pos >= h.file_size) return h.file_size;
  std::fseek(f, pos - 1, SEEK_SET);
  for (int c; (c = std::fgetc(f)) != EOF; ++pos)
    if (c == '\n') return pos;
  return h.file_size;
}

bool is_blank(const char* b, const char* e) {
  for (; b < e; ++b)
    if (!std::isspace(static_cast<unsigned char>(*b))) return false;
  return true;
}

const char* skip_space(const char* p, const char* e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
  return p;
}

}  // namespace

MMHeader mm_read_header(const std::string& path) {
  File file(path);
  MMHeader h;
  h.file_size = file_size(file.f);
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::int64_t lineno = 0;
  if (!std::getline(in, line)) fail(path, 1, "empty file (expected a %%MatrixMarket banner)");
  ++lineno;
  auto banner = split(lower(line));
  if (line.size() >= 2 && static_cast<unsigned char>(line[0]) == 0x1f && static_cast<unsigned char>(line[1]) == 0x8b)
    fail(path, 1, "this is a gzip-compressed file: decompress it first (gunzip)");
  if (banner.empty() || banner[0] != "%%matrixmarket")
    fail(path, 1, "missing %%MatrixMarket banner");
  if (banner.size() != 5)
    fail(path, 1, "banner must read '%%MatrixMarket matrix <format> <field> <symmetry>'");
  if (banner[1] != "matrix") fail(path, 1, "object '" + banner[1] + "' is not supported (only 'matrix')");
  if (banner[2] != "coordinate")
    fail(path, 1, "format '" + banner[2] + "' is not supported (only 'coordinate')");
  h.field = banner[3];
  if (h.field == "complex") fail(path, 1, "complex matrices are not supported");
  if (h.field != "real" && h.field != "integer" && h.field != "pattern")
    fail(path, 1, "unknown field '" + h.field + "' (expected real, integer or pattern)");
  h.symmetry = banner[4];
  if (h.symmetry == "hermitian") fail(path, 1, "hermitian symmetry needs complex values (not supported)");
  if (h.symmetry != "general" && h.symmetry != "symmetric" && h.symmetry != "skew-symmetric")
    fail(path, 1, "unknown symmetry '" + h.symmetry + "'");
  std::int64_t offset = static_cast<std::int64_t>(line.size()) + 1;
  while (true) {
    if (!std::getline(in, line)) fail(path, lineno + 1, "file ends before the size line");
    ++lineno;
    offset += static_cast<std::int64_t>(line.size()) + 1;
    if (!line.empty() && line[0] == '%') continue;
    if (is_blank(line.data(), line.data() + line.size())) continue;
    auto t = split(line);
    if (t.size() != 3) fail(path, lineno, "size line must hold 'rows cols entries'");
    try {
      std::size_t used = 0;
      for (int i = 0; i < 3; ++i) {
        long long v = std::stoll(t[i], &used);
        if (used != t[i].size() || v < 0) throw std::invalid_argument("bad");
        (i == 0 ? h.nrows : i == 1 ? h.ncols : h.nnz) = v;
      }
    } catch (const std::exception&) {
      fail(path, lineno, "size line must hold three non-negative integers, got '" + line + "'");
    }
    break;
  }
  if (h.symmetry != "general" && h.nrows != h.ncols)
    fail(path, lineno, h.symmetry + " matrix must be square, header says " +
                           std::to_string(h.nrows) + " x " + std::to_string(h.ncols));
  h.data_offset = std::min(offset, h.file_size);
  h.data_line = lineno + 1;
  return h;
}

std::pair<std::int64_t, std::int64_t> mm_chunk(const MMHeader& h, const std::string& path,
                                               int part, int nparts) {
  File file(path);
  std::int64_t span = h.file_size - h.data_offset;
  auto cut = [&](int p) {
    std::int64_t raw = h.data_offset + static_cast<std::int64_t>(
                                           static_cast<long double>(span) * p / nparts);
    return line_start_at_or_after(file.f, h, raw);
  };
  return {cut(part), part + 1 == nparts ? h.file_size : cut(part + 1)};
}

MMChunk mm_parse_chunk(const std::string& path, const MMHeader& h, std::int64_t begin,
                       std::int64_t end) {
  MMChunk out;
  const std::string buf = read_range(path, begin, end);
  const char* p = buf.data();
  const char* const stop = buf.data() + buf.size();
  const bool pattern = h.field == "pattern";
  const bool integer = h.field == "integer";
  const bool skew = h.symmetry == "skew-symmetric";
  const bool general = h.symmetry == "general";
  out.rows.reserve(buf.size() / 16);
  out.cols.reserve(buf.size() / 16);
  if (!pattern) out.vals.reserve(buf.size() / 16);

  auto error = [&](const std::string& msg) {
    out.error = msg;
    out.error_line = out.nlines;
  };
  while (p < stop) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', stop - p));
    const char* line_end = eol ? eol : stop;
    if (out.error.empty() && !is_blank(p, line_end) && *p != '%') {
      std::int64_t ij[2];
      const char* q = p;
      for (int k = 0; k < 2 && out.error.empty(); ++k) {
        q = skip_space(q, line_end);
        auto r = std::from_chars(q, line_end, ij[k]);
        if (r.ec != std::errc() || (r.ptr < line_end && !std::isspace(static_cast<unsigned char>(*r.ptr))))
          error(std::string("expected an integer ") + (k == 0 ? "row" : "column") + " index");
        q = r.ptr;
      }
      double v = 1.0;
      if (out.error.empty() && !pattern) {
        q = skip_space(q, line_end);
        std::from_chars_result r;
        if (integer) {
          std::int64_t iv = 0;
          r = std::from_chars(q, line_end, iv);
          v = static_cast<double>(iv);
        } else {
          r = std::from_chars(q, line_end, v);
        }
        if (r.ec != std::errc() || q == line_end)
          error(std::string("expected ") + (integer ? "an integer" : "a real") + " value");
        else if (!std::isfinite(v))
          error("value " + std::string(q, r.ptr) + " is not finite");
        q = r.ptr;
      }
      if (out.error.empty() && !is_blank(q, line_end))
        error(pattern ? "too many values on a pattern entry line (expected 'row col')"
                      : "too many values on an entry line (expected 'row col value')");
      if (out.error.empty()) {
        if (ij[0] < 1 || ij[0] > h.nrows || ij[1] < 1 || ij[1] > h.ncols)
          error("entry (" + std::to_string(ij[0]) + ", " + std::to_string(ij[1]) +
                ") outside the " + std::to_string(h.nrows) + " x " + std::to_string(h.ncols) +
                " matrix (indices are 1-based)");
        else if (skew && ij[0] == ij[1])
          error("skew-symmetric matrix with a diagonal entry");
        else if (!general && ij[0] != ij[1]) {
          std::int64_t& first = ij[0] > ij[1] ? out.first_lower : out.first_upper;
          if (first < 0) first = out.nlines;
        }
      }
      if (out.error.empty()) {
        out.rows.push_back(ij[0] - 1);
        out.cols.push_back(ij[1] - 1);
        if (!pattern) out.vals.push_back(v);
      }
    }
    if (!eol) {
      if (line_end > p) ++out.nlines;
      break;
    }
    ++out.nlines;
    p = eol + 1;
  }
  if (pattern) out.vals.assign(out.rows.size(), 1.0);
  return out;
}

void mm_write(const std::string& path, std::int64_t nrows, std::int64_t ncols,
              const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols,
              const std::vector<double>& vals, const std::string& field,
              const std::string& symmetry, const std::string& comment) {
  if (rows.size() != cols.size() || (!vals.empty() && vals.size() != rows.size()))
    throw std::invalid_argument("mm_write: rows, cols and vals differ in length");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw std::invalid_argument(path + ": cannot open for writing: " + std::strerror(errno));
  std::string out = "%%MatrixMarket matrix coordinate " + field + " " + symmetry + "\n";
  std::istringstream lines(comment);
  for (std::string l; std::getline(lines, l);) out += "%" + l + "\n";
  out += std::to_string(nrows) + " " + std::to_string(ncols) + " " + std::to_string(rows.size()) + "\n";
  char tmp[96];  // two 64-bit integers, a shortest-form double, separators: under 70 bytes
  char* const e = tmp + sizeof(tmp) - 1;  // one byte kept for each separator written below
  auto put = [&](char* p, auto value, char after) {
    auto r = std::to_chars(p, e, value);
    if (r.ec != std::errc()) throw std::runtime_error(path + ": value does not fit the output line");
    *r.ptr = after;
    return r.ptr + 1;
  };
  for (std::size_t k = 0; k < rows.size(); ++k) {
    char* p = put(tmp, rows[k] + 1, ' ');
    p = put(p, cols[k] + 1, vals.empty() ? '\n' : ' ');
    if (!vals.empty())
      p = field == "integer" ? put(p, static_cast<long long>(vals[k]), '\n') : put(p, vals[k], '\n');
    out.append(tmp, p);
    if (out.size() > (1u << 22)) {
      if (std::fwrite(out.data(), 1, out.size(), f.get()) != out.size())
        throw std::runtime_error(path + ": write failed");
      out.clear();
    }
  }
  if (std::fwrite(out.data(), 1, out.size(), f.get()) != out.size())
    throw std::runtime_error(path + ": write failed");
}

}  // namespace commsolve
