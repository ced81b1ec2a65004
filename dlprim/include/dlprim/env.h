#pragma once
// Environment variables read from any thread. dlprim reads its switches (PYTORCH_OCL_*) at each use, also on
// background build threads, while Python code may change the environment (os.environ, pytest's monkeypatch):
// glibc's getenv racing a setenv that grows the environment reads a freed array (a worker crashed that way on
// an H100). Both sides take one lock: env_value here, env_set/env_unset from Python (pytorch_ocl routes
// os.putenv / os.unsetenv through them).
#include <functional>
#include <string>

namespace dlprim {

// getenv under the lock. The value is copied into storage that lives as long as the process (one copy per
// distinct value), so the pointer stays valid after the variable changes; nullptr when unset.
const char* env_value(const char* name);

// An on / off setting: -1 when unset or empty, 0 for "0", 1 for anything else (a caller's default decides -1).
int env_switch(const char* name);

// A whole-number setting: `fallback` when unset or empty, else the value, which must be a whole number in
// [lo, hi] (an Error naming the variable otherwise). Throws: read it on an op's thread, never on a build thread.
long env_int(const char* name, long lo, long hi, long fallback);

void env_set(const std::string& name, const std::string& value);
void env_unset(const std::string& name);

// Runs fn holding the lock: for code that reads `environ` itself (posix_spawn of a build worker).
void with_env_lock(const std::function<void()>& fn);

} // namespace dlprim
