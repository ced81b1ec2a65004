// Locked environment access (env.h).
#include <dlprim/env.h>
#include <dlprim/cl.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace dlprim {

namespace {
std::mutex& env_mutex() {
  static std::mutex m;
  return m;
}
} // namespace

const char* env_value(const char* name) {
  static std::set<std::string>* values = new std::set<std::string>();  // never freed: pointers stay valid
  std::lock_guard<std::mutex> lock(env_mutex());
  const char* v = std::getenv(name);
  if (!v) return nullptr;
  return values->insert(v).first->c_str();
}

void env_set(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(env_mutex());
  setenv(name.c_str(), value.c_str(), 1);
}

void env_unset(const std::string& name) {
  std::lock_guard<std::mutex> lock(env_mutex());
  unsetenv(name.c_str());
}

int env_switch(const char* name) {
  const char* v = env_value(name);
  if (!v || !*v) return -1;
  return std::strcmp(v, "0") == 0 ? 0 : 1;
}

long env_int(const char* name, long lo, long hi, long fallback) {
  const char* v = env_value(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end || n < lo || n > hi)
    throw Error(std::string(name) + ": expected a whole number from " + std::to_string(lo) + " to " +
                std::to_string(hi) + ", got '" + v + "'");
  return n;
}

void with_env_lock(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> lock(env_mutex());
  fn();
}

} // namespace dlprim
