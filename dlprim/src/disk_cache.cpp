#include "disk_cache.h"

#include <dlprim/env.h>
#include <dlprim/program_cache.h>

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>

#ifdef DLPRIM_HAVE_SQLITE
#include <sqlite3.h>
#endif

namespace dlprim {

namespace {

WarningHandler g_warning_handler = nullptr;

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string cache_dir() {
  if (const char* d = env_value("PYTORCH_OCL_CACHE_DIR")) return d;
  if (const char* x = env_value("XDG_CACHE_HOME")) return std::string(x) + "/pytorch_ocl";
  if (const char* h = env_value("HOME")) return std::string(h) + "/.cache/pytorch_ocl";
  return ".pytorch_ocl_cache";
}

void make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

} // namespace

void set_warning_handler(WarningHandler handler) { g_warning_handler = handler; }

DiskCache& DiskCache::instance() {
  static DiskCache* cache = new DiskCache();  // never destroyed: used until process exit
  return *cache;
}

void DiskCache::warn(const std::string& msg) {
  warning_ = msg;
  if (g_warning_handler)
    g_warning_handler(msg);
  else
    std::fprintf(stderr, "pytorch_ocl warning: %s\n", msg.c_str());
}

std::string DiskCache::key(const std::string& device_identity, const std::string& source,
                           const std::string& options) const {
  std::string all = device_identity + '\x01' + options + '\x01' + source;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(all, 14695981039346656037ull)),
                static_cast<unsigned long long>(fnv1a(all, 0x84222325cbf29ce4ull ^ all.size())));
  return buf;
}

#ifdef DLPRIM_HAVE_SQLITE

bool DiskCache::compiled() { return true; }

namespace {
// SQLite's result code and extended code in warnings: "disk I/O error" alone does not say which step failed
// (extended codes of sqlite3.h: 3850 SQLITE_IOERR_LOCK, 1034 SQLITE_IOERR_FSYNC, 522 SQLITE_IOERR_SHORT_READ, ...).
std::string sqlite_code(int extended) {
  return "SQLite code " + std::to_string(extended & 0xff) + "/" + std::to_string(extended);
}
// The connection's last error: its message and codes.
std::string sqlite_error(sqlite3* db) {
  return std::string(sqlite3_errmsg(db)) + ", " + sqlite_code(sqlite3_extended_errcode(db));
}
} // namespace

DiskCache::DiskCache() {
  std::string dir = cache_dir();
  make_dirs(dir);
  path_ = dir + "/kernels.sqlite";
  if (!open_db()) {
    // A corrupt file is moved aside and replaced by a fresh database. Only a corrupt one: other processes may have
    // it open (the ranks of a job, their build helpers), and moving a healthy file from under them turns their
    // next reads and writes into I/O errors.
    struct stat st;
    if (stat(path_.c_str(), &st) == 0 && std::rename(path_.c_str(), (path_ + ".corrupt").c_str()) == 0) {
      if (open_db()) warn("kernel cache " + path_ + " was unreadable; moved it to " + path_ + ".corrupt and started a new one");
    }
  }
}

DiskCache::~DiskCache() {
  if (db_) sqlite3_close(static_cast<sqlite3*>(db_));
}

bool DiskCache::open_db() {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    if (db) sqlite3_close(db);
    db = nullptr;
    rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    if (rc != SQLITE_OK) {
      if (db) sqlite3_close(db);
      warn("cannot open kernel cache " + path_ + "; running without the disk cache");
      return true;  // nothing to repair: the location itself is unusable
    }
    read_only_ = true;
    warn("kernel cache " + path_ + " is read-only; new kernels will not be stored");
  }
  sqlite3_busy_timeout(db, 10000);
  char* err = nullptr;
  const char* schema =
      "CREATE TABLE IF NOT EXISTS programs(key TEXT PRIMARY KEY, binary BLOB NOT NULL);"
      "CREATE TABLE IF NOT EXISTS tuning(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS program_device(key TEXT PRIMARY KEY, identity TEXT NOT NULL);";
  rc = read_only_ ? sqlite3_exec(db, "SELECT count(*) FROM programs;", nullptr, nullptr, &err)
                  : sqlite3_exec(db, schema, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string what = err ? err : "unknown error";
    const int extended = sqlite3_extended_errcode(db);
    sqlite3_free(err);
    sqlite3_close(db);
    if (rc == SQLITE_READONLY) {
      warn("kernel cache " + path_ + " is read-only; running without the disk cache");
      return true;
    }
    if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) {
      warn("kernel cache " + path_ + " is unusable (" + what + ")");
      return false;
    }
    // Locked past the busy timeout, an I/O error, ...: the file may be fine, and in use by other processes.
    warn("kernel cache " + path_ + " cannot be read now (" + what + ", " + sqlite_code(extended) +
         "); running without the disk cache");
    return true;
  }
  db_ = db;
  return true;
}

// After an I/O error the connection is replaced once by a new one on the same file (a new descriptor): the error
// may be the descriptor's, not the file's (a driver once closed ours from under SQLite: ExternalMemory.cpp), or a
// passing fault. The old connection is abandoned, never closed: closing it would close its descriptor number,
// which after an outside close may by now belong to another file of the process. A second I/O error, or a failed
// reopening, leaves the process without the disk cache (one warning, not one per lookup).
bool DiskCache::reopen(int extended, const std::string& why) {
  if ((extended & 0xff) != SQLITE_IOERR) return false;
  abandoned_.push_back(db_);
  db_ = nullptr;
  if (reopened_) {
    warn("kernel cache I/O failed again (" + why + "); running without the disk cache");
    return false;
  }
  reopened_ = true;
  read_only_ = false;
  open_db();
  if (db_) warn("kernel cache I/O failed (" + why + "); reopened " + path_);
  return db_ != nullptr;
}

bool DiskCache::read_row(const char* sql, const std::string& key, const std::function<void(void*)>& take,
                         std::string* why) {
  for (;;) {
    why->clear();
    if (!db_) return false;
    auto* db = static_cast<sqlite3*>(db_);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {  // `why` stays "": nothing was read
      if (reopen(sqlite3_extended_errcode(db), sqlite_error(db))) continue;
      return false;
    }
    sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) take(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) *why = sqlite_error(db);
    const int extended = sqlite3_extended_errcode(db);
    sqlite3_finalize(st);
    if (why->empty()) return rc == SQLITE_ROW;
    if (reopen(extended, *why)) continue;
    return false;
  }
}

bool DiskCache::load(const std::string& key, std::vector<unsigned char>* binary) {
  std::lock_guard<std::mutex> lock(m_);
  std::string why;
  bool found = read_row("SELECT binary FROM programs WHERE key = ?;", key, [binary](void* stmt) {
    auto* st = static_cast<sqlite3_stmt*>(stmt);
    auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(st, 0));
    binary->assign(p, p + sqlite3_column_bytes(st, 0));
  }, &why);
  if (!why.empty() && db_) warn("kernel cache read failed (" + why + ")");  // not an I/O error (locked, ...)
  return found;
}

void DiskCache::store(const std::string& key, const std::vector<unsigned char>& binary, const std::string& identity) {
  std::lock_guard<std::mutex> lock(m_);
  for (;;) {
    if (!db_ || read_only_ || binary.empty()) return;
    auto* db = static_cast<sqlite3*>(db_);
    // The binary and its device in one transaction (one sync instead of two).
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr) == SQLITE_OK ? SQLITE_DONE : SQLITE_BUSY;
    auto run = [&](const char* sql, const std::string& text, const std::vector<unsigned char>* blob) {
      sqlite3_stmt* st = nullptr;
      if (rc != SQLITE_DONE) return;
      if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
        rc = SQLITE_ERROR;
        return;
      }
      sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
      if (blob)
        sqlite3_bind_blob(st, 2, blob->data(), static_cast<int>(blob->size()), SQLITE_TRANSIENT);
      else
        sqlite3_bind_text(st, 2, text.c_str(), -1, SQLITE_TRANSIENT);
      rc = sqlite3_step(st);
      sqlite3_finalize(st);
    };
    run("INSERT OR REPLACE INTO programs(key, binary) VALUES(?, ?);", "", &binary);
    run("INSERT OR REPLACE INTO program_device(key, identity) VALUES(?, ?);", identity, nullptr);
    if (rc == SQLITE_DONE) rc = sqlite3_exec(db, "COMMIT;", nullptr, nullptr, nullptr) == SQLITE_OK ? SQLITE_DONE : SQLITE_ERROR;
    if (rc != SQLITE_DONE) {
      // The cause first: a ROLLBACK replaces the connection's message (a BEGIN refused because another process held
      // the database past the busy timeout was once reported as "cannot rollback - no transaction is active").
      std::string why = sqlite_error(db);
      const int extended = sqlite3_extended_errcode(db);
      if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK;", nullptr, nullptr, nullptr);
      if (reopen(extended, why)) continue;
      if (!db_) return;
      read_only_ = true;  // warn once, then stop trying
      warn("kernel cache write failed (" + why + "); new kernels will not be stored");
    }
    return;
  }
}

bool DiskCache::load_value(const std::string& key, std::string* value) {
  std::lock_guard<std::mutex> lock(m_);
  std::string why;  // not reported: a read-only cache made by an older version may lack the table
  bool found = false;
  read_row("SELECT value FROM tuning WHERE key = ?;", key, [&](void* stmt) {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(static_cast<sqlite3_stmt*>(stmt), 0));
    if (p) {
      value->assign(p);
      found = true;
    }
  }, &why);
  return found;
}

void DiskCache::store_value(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(m_);
  for (;;) {
    if (!db_ || read_only_) return;
    auto* db = static_cast<sqlite3*>(db_);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO tuning(key, value) VALUES(?, ?);", -1, &st, nullptr) !=
        SQLITE_OK)
      return;
    sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, value.c_str(), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    // The message before finalizing the statement, as the store above keeps it before its ROLLBACK.
    std::string why = rc == SQLITE_DONE ? "" : sqlite_error(db);
    const int extended = sqlite3_extended_errcode(db);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      if (reopen(extended, why)) continue;
      if (!db_) return;
      read_only_ = true;
      warn("kernel cache write failed (" + why + "); tuning results will not be stored");
    }
    return;
  }
}

#else  // no SQLite at build time: memory cache only

bool DiskCache::compiled() { return false; }
DiskCache::DiskCache() {}
DiskCache::~DiskCache() {}
bool DiskCache::open_db() { return false; }
bool DiskCache::load(const std::string&, std::vector<unsigned char>*) { return false; }
void DiskCache::store(const std::string&, const std::vector<unsigned char>&, const std::string&) {}
bool DiskCache::load_value(const std::string&, std::string*) { return false; }
void DiskCache::store_value(const std::string&, const std::string&) {}

#endif

} // namespace dlprim
