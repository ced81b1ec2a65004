// On-disk store of program binaries (SQLite). Every failure degrades to "no disk cache"
// with a warning: the cache must never make a program fail.
#pragma once
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
  void store(const std::string& key, const std::vector<unsigned char>& binary);
  // Small text values (autotuning results), in their own table next to the binaries.
  bool load_value(const std::string& key, std::string* value);
  void store_value(const std::string& key, const std::string& value);

  const std::string& path() const { return path_; }
  bool usable() const { return db_ != nullptr; }
  const std::string& warning() const { return warning_; }

private:
  DiskCache();
  ~DiskCache();
  bool open_db();
  void warn(const std::string& msg);

  std::string path_, warning_;
  void* db_ = nullptr;  // sqlite3*, opaque so that this header needs no SQLite
  bool read_only_ = false;
};

} // namespace dlprim
