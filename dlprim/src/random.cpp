#include <dlprim/embedded.h>
#include <dlprim/random.h>

#include <map>
#include <mutex>
#include <tuple>

namespace dlprim {

namespace {

// Per-dtype, per-distribution definitions of DL_TRANSFORM for philox.cl.
std::string transform_macro(Distribution dist, bool dbl) {
  if (!dbl) {
    if (dist == Distribution::Uniform)
      return "#define DL_TRANSFORM(r, a, b, v) { v[0] = a + (b - a) * dl_uniform_f(r.x); "
             "v[1] = a + (b - a) * dl_uniform_f(r.y); v[2] = a + (b - a) * dl_uniform_f(r.z); "
             "v[3] = a + (b - a) * dl_uniform_f(r.w); }\n";
    return "#define DL_TRANSFORM(r, a, b, v) { "
           "float m0 = sqrt(-2.0f * log(dl_uniform_open_f(r.x))), t0 = 6.2831853071795864f * dl_uniform_f(r.y); "
           "float m1 = sqrt(-2.0f * log(dl_uniform_open_f(r.z))), t1 = 6.2831853071795864f * dl_uniform_f(r.w); "
           "v[0] = a + b * m0 * cos(t0); v[1] = a + b * m0 * sin(t0); "
           "v[2] = a + b * m1 * cos(t1); v[3] = a + b * m1 * sin(t1); }\n";
  }
  // float64: 53-bit uniforms from two 32-bit words; a second Philox draw gives the other two.
  std::string head =
      "#define DL_U53(hi, lo) ((double)(((ulong)(hi) << 21) ^ (ulong)((lo) >> 11)) * 1.1102230246251565e-16)\n"
      "#define DL_DRAWS(r) uint4 r2 = dl_philox(seed, g, philox_offset | 0x8000000000000000UL); "
      "double u[4] = {DL_U53(r.x, r.y), DL_U53(r.z, r.w), DL_U53(r2.x, r2.y), DL_U53(r2.z, r2.w)};\n";
  if (dist == Distribution::Uniform)
    return head +
           "#define DL_TRANSFORM(r, a, b, v) { DL_DRAWS(r) for (int j = 0; j < 4; ++j) v[j] = a + (b - a) * u[j]; }\n";
  return head +
         "#define DL_TRANSFORM(r, a, b, v) { DL_DRAWS(r) "
         "double m0 = sqrt(-2.0 * log(1.0 - u[0])), t0 = 6.283185307179586 * u[1]; "
         "double m1 = sqrt(-2.0 * log(1.0 - u[2])), t1 = 6.283185307179586 * u[3]; "
         "v[0] = a + b * m0 * cos(t0); v[1] = a + b * m0 * sin(t0); "
         "v[2] = a + b * m1 * cos(t1); v[3] = a + b * m1 * sin(t1); }\n";
}

struct Entry {
  std::mutex m;
  cl_kernel kernel = nullptr;
};

} // namespace

uint64_t random_offset_increment(uint64_t) { return 1; }

void fill_random(const Context& ctx, cl_command_queue q, Distribution dist, DType dtype, cl_mem mem,
                 uint64_t offset, uint64_t n, uint64_t seed, uint64_t philox_offset, double a, double b) {
  if (n == 0) return;
  if (!is_floating(dtype))
    throw Error(std::string("random fill: dtype ") + dtype_name(dtype) + " is not a floating type");
  bool dbl = dtype == DType::F64;
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, int, int>, Entry> entries;
  Entry* e;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    e = &entries[std::make_tuple(ctx.context(), int(dist), int(dtype))];
  }
  std::lock_guard<std::mutex> lock(e->m);
  if (!e->kernel) {
    std::string src;
    if (dbl) src += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    src += kernel_source("common");
    src += std::string("#define DL_T ") + storage_cl_type(dtype) + "\n";
    src += std::string("#define DL_CT ") + compute_cl_type(dtype) + "\n";
    std::string store = store_stmt(dtype, "p", "i", "v");
    if (dist == Distribution::Uniform) {
      // [a, b) must exclude b, but a value just below b can round up to it when stored
      // (always possible in 16-bit types): read back what was stored and use a instead.
      store = "{ " + store + " if (" + load_expr(dtype, "p", "i") + " >= b) { " +
              store_stmt(dtype, "p", "i", "a") + " } }";
    }
    src += "#define DL_STORE(p, i, v) " + store + "\n";
    src += transform_macro(dist, dbl);
    src += kernel_source("philox");
    e->kernel = create_kernel(ctx.program(src), "dl_random_fill");
  }
  KernelArgs args(e->kernel);
  args.add(mem).add<cl_ulong>(offset).add<cl_ulong>(n).add<cl_ulong>(seed).add<cl_ulong>(philox_offset);
  if (dbl)
    args.add<cl_double>(a).add<cl_double>(b);
  else
    args.add<cl_float>(static_cast<float>(a)).add<cl_float>(static_cast<float>(b));
  launch_1d(q, e->kernel, (n + 3) / 4, ctx.work_group_size(256));
}

} // namespace dlprim
