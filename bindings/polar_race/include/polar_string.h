// polar_string.h: PolarString, the byte-string view of the PolarDB 2018
// engine contest's interface (a (pointer, size) pair like rocksdb::Slice).
// It does not own its bytes: they must outlive it. Keys and values may
// hold NUL bytes. C++11.

#ifndef POLAR_RACE_INCLUDE_POLAR_STRING_H_
#define POLAR_RACE_INCLUDE_POLAR_STRING_H_

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include <string>

namespace polar_race {

class PolarString {
 public:
  // The empty string.
  PolarString() : data_(""), size_(0) {}

  // d[0, n). d may be NULL only when n is 0.
  PolarString(const char* d, size_t n) : data_(d ? d : ""), size_(n) {}

  // The bytes of s (not a copy: s must outlive this view).
  PolarString(const std::string& s) : data_(s.data()), size_(s.size()) {}  // NOLINT

  // A NUL-terminated string, without its NUL.
  PolarString(const char* s) : data_(s), size_(strlen(s)) {}  // NOLINT

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  char operator[](size_t n) const {
    assert(n < size_);
    return data_[n];
  }

  // Makes this the empty string.
  void clear() {
    data_ = "";
    size_ = 0;
  }

  // A copy of the bytes.
  std::string ToString() const { return std::string(data_, size_); }

  // < 0, 0 or > 0 as *this is before, equal to or after b in unsigned byte
  // order (memcmp); of two strings equal up to the shorter's length, the
  // shorter comes first.
  int compare(const PolarString& b) const {
    const size_t min_len = size_ < b.size_ ? size_ : b.size_;
    int r = min_len == 0 ? 0 : memcmp(data_, b.data_, min_len);
    if (r == 0) {
      if (size_ < b.size_) {
        r = -1;
      } else if (size_ > b.size_) {
        r = +1;
      }
    }
    return r;
  }

  // True when x is a prefix of *this.
  bool starts_with(const PolarString& x) const {
    return size_ >= x.size_ && (x.size_ == 0 || memcmp(data_, x.data_, x.size_) == 0);
  }

 private:
  const char* data_;
  size_t size_;
};

// Free functions, so that `PolarString == std::string` (and `const char*`)
// work through the implicit conversions.
inline bool operator==(const PolarString& x, const PolarString& y) {
  return x.size() == y.size() && (x.size() == 0 || memcmp(x.data(), y.data(), x.size()) == 0);
}

inline bool operator!=(const PolarString& x, const PolarString& y) { return !(x == y); }

}  // namespace polar_race

#endif  // POLAR_RACE_INCLUDE_POLAR_STRING_H_
