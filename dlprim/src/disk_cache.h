// On-disk store of program binaries (SQLite). Every failure degrades to "no disk cache"
// with a warning: the cache must never make a program fail. Thread-safe (one lock around
// every statement: program builds store their binaries from several threads).
#pragma once
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace dlprim {

class DiskCache {
public:
  static DiskCache& instance();
  static bool compiled();

  std::string key(const std::string& device_identity, const std::string& source,
                   const std::string& options) const;
  bool load(const std::string& key, std::vector<unsigned char>* binary);
  // `identity` (DeviceInfo::cache_identity) is recorded next to the binary in program_device,
  // so that `python -m pytorch_ocl cache export` can pick one device's programs.
  void store(const std::string& key, const std::vector<unsigned char>& binary, const std::string& identity);
  // Small text values (autotuning results), in their own table next to the binaries.
  bool load_value(const std::string& key, std::string* value);
  void store_value(const std::string& key, const std::string& value);

  const std::string& path() const { return path_; }
  bool usable() const { return db_ != nullptr; }
  std::string warning() const {
    std::lock_guard<std::mutex> lock(m_);
    return warning_;
  }

private:
  DiskCache();
  ~DiskCache();
  bool open_db();
  bool reopen(int extended_code, const std::string& why);
  // The row of `sql` (one ? bound to `key`) handed to `take` (a sqlite3_stmt*); whether there was one, and in `why`
  // the error of a step that failed ("" when none; an I/O error is met once more on a reopened connection).
  bool read_row(const char* sql, const std::string& key, const std::function<void(void*)>& take, std::string* why);
  void warn(const std::string& msg);

  std::string path_, warning_;
  void* db_ = nullptr;  // sqlite3*, opaque so that this header needs no SQLite
  std::vector<void*> abandoned_;  // connections given up after an I/O error, never closed (reopen)
  bool read_only_ = false, reopened_ = false;
  mutable std::mutex m_;  // guards warning_, read_only_ and the connection
};

} // namespace dlprim
