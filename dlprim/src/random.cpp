#include <dlprim/embedded.h>
#include <dlprim/random.h>

#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

// One row per distribution. The body assigns v0 (and v1) of the math type `dl_mt` from:
//   U   uniform in [0, 1)        UO  uniform in (0, 1)        Z  standard normal
//   BITS  32 random bits (64 in a wide launch)   x  the input element   a, b, base, range  parameters
struct Row {
  Distribution dist;
  const char* name;
  int n_outputs;
  bool has_input;
  bool integer;          // computed in 64-bit integers from BITS
  bool exclusive_upper;  // a stored value that rounded up to b is replaced by a
  const char* body;
  bool second_input = false;  // x1, a second input (Binomial's probabilities)
};

const Row k_rows[] = {
    {Distribution::Uniform, "uniform", 1, false, false, true, "v0 = a + (b - a) * U;"},
    {Distribution::Normal, "normal", 1, false, false, false, "v0 = a + b * Z;"},
    {Distribution::Bernoulli, "bernoulli", 1, false, false, false, "v0 = U < a;"},
    {Distribution::BernoulliTensor, "bernoulli_tensor", 1, true, false, false, "v0 = U < x;"},
    {Distribution::Exponential, "exponential", 1, false, false, false, "v0 = -log(UO) / a;"},
    // Number of trials up to the first success: UO < 1, so the value is at least 1.
    {Distribution::Geometric, "geometric", 1, false, false, false, "v0 = ceil(log(UO) / log1p(-a));"},
    {Distribution::LogNormal, "log_normal", 1, false, false, false, "v0 = exp(a + b * Z);"},
    {Distribution::Cauchy, "cauchy", 1, false, false, false, "v0 = a + b * tanpi(UO - (dl_mt)0.5);"},
    {Distribution::IntegerRange, "integer_range", 1, false, true, false,
     "v0 = range ? base + (long)(BITS % range) : (long)BITS;"},
    // Like the CPU: x * keep * scale, so a NaN input stays NaN where it is dropped.
    {Distribution::Dropout, "dropout", 2, true, false, false, "v1 = U < a; v0 = x * v1 * b;"},
    // Rejection samplers: as many draws per element as they take (random_rejection.cl)
    {Distribution::Gamma, "gamma", 1, true, false, false, "v0 = dl_sample_gamma(x, seed, i, philox_offset);"},
    {Distribution::Poisson, "poisson", 1, true, false, false, "v0 = dl_sample_poisson(x, seed, i, philox_offset);"},
    {Distribution::Binomial, "binomial", 1, true, false, false,
     "v0 = dl_sample_binomial(x, x1, seed, i, philox_offset);", true},
};

bool rejection(const Row& r) {
  return r.dist == Distribution::Gamma || r.dist == Distribution::Poisson || r.dist == Distribution::Binomial;
}

const Row& row_of(Distribution d) {
  for (const Row& r : k_rows)
    if (r.dist == d) return r;
  throw Error("random: unknown distribution");
}

// Helpers for the math type: U/UO/Z from the words of this element's group.
const char* k_float_helpers = R"CL(
#define U dl_uniform_f(dl_word(r, j))
#define UO dl_uniform_open_f(dl_word(r, j))
#define Z dl_normal_f(r, j)
inline float dl_normal_f(uint4 r, int j) {
  float m = sqrt(-2.0f * log(dl_uniform_open_f(dl_word(r, j & 2))));
  float t = 2.0f * dl_uniform_f(dl_word(r, j | 1));
  return (j & 1) ? m * sinpi(t) : m * cospi(t);
}
)CL";

const char* k_double_helpers = R"CL(
inline ulong dl_bits53(uint4 r, uint4 r2, int j) {
  return ((ulong)dl_word(r, j) << 21) ^ (ulong)(dl_word(r2, j) >> 11);
}
inline double dl_uniform_d(uint4 r, uint4 r2, int j) { return (double)dl_bits53(r, r2, j) * 1.1102230246251565e-16; }
inline double dl_uniform_open_d(uint4 r, uint4 r2, int j) {
  return ((double)dl_bits53(r, r2, j) + 0.5) * 1.1102230246251565e-16;
}
inline double dl_normal_d(uint4 r, uint4 r2, int j) {
  double m = sqrt(-2.0 * log(dl_uniform_open_d(r, r2, j & 2)));
  double t = 2.0 * dl_uniform_d(r, r2, j | 1);
  return (j & 1) ? m * sinpi(t) : m * cospi(t);
}
#define U dl_uniform_d(r, r2, j)
#define UO dl_uniform_open_d(r, r2, j)
#define Z dl_normal_d(r, r2, j)
)CL";

struct Config {
  const Row* row;
  DType math;
  bool wide;
  std::vector<DType> outs;
  bool has_input;
  DType in;
  DType in2;  // the second input's (Row::second_input)
};

std::string kernel_text(const Config& c, bool strided) {
  std::vector<std::string> names;
  std::ostringstream params, loads, stores;
  for (size_t k = 0; k < c.outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    names.push_back(y);
    params << ", __global " << storage_cl_type(c.outs[k]) << "* " << y << "_p, ulong " << y << "_o";
    if (strided) params << ", dl_dims64 " << y << "_s";
    std::string idx = strided ? "(long)" + y + "_o + off_" + y : y + "_o + i";
    std::string v = "v" + std::to_string(k);
    stores << "    " << store_stmt(c.outs[k], y + "_p", idx, convert_expr(c.math, c.outs[k], v)) << "\n";
    if (k == 0 && c.row->exclusive_upper)
      stores << "    if (" << load_expr(c.outs[k], y + "_p", idx) << " >= b) { "
             << store_stmt(c.outs[k], y + "_p", idx, convert_expr(c.math, c.outs[k], "a")) << " }\n";
  }
  if (c.has_input) {
    names.push_back("x");
    params << ", __global const " << storage_cl_type(c.in) << "* x_p, ulong x_o";
    if (strided) params << ", dl_dims64 x_s";
    std::string idx = strided ? "(long)x_o + off_x" : "x_o + i";
    loads << "    dl_mt x = " << convert_expr(c.in, c.math, load_expr(c.in, "x_p", idx)) << ";\n";
  }
  if (c.row->second_input) {
    names.push_back("x1");
    params << ", __global const " << storage_cl_type(c.in2) << "* x1_p, ulong x1_o";
    if (strided) params << ", dl_dims64 x1_s";
    std::string idx = strided ? "(long)x1_o + off_x1" : "x1_o + i";
    loads << "    dl_mt x1 = " << convert_expr(c.in2, c.math, load_expr(c.in2, "x1_p", idx)) << ";\n";
  }
  std::vector<const char*> cnames;
  for (auto& n : names) cnames.push_back(n.c_str());

  std::ostringstream s;
  s << "__kernel void " << (strided ? "dl_random_strided" : "dl_random_contig") << "(ulong n";
  if (strided) s << ", int rank, dl_dims64 shape";
  s << params.str() << ", ulong seed, ulong philox_offset, dl_mt a, dl_mt b, long base, ulong range) {\n"
    << "  ulong g = get_global_id(0);\n  if (g * 4 >= n) return;\n"
    << "  uint4 r = dl_philox(seed, g, philox_offset);\n";
  if (c.wide) s << "  uint4 r2 = dl_philox(seed, g, philox_offset | DL_WIDE_STREAM);\n";
  s << "  for (int j = 0; j < 4; ++j) {\n    ulong i = g * 4 + j;\n    if (i >= n) break;\n";
  if (strided) s << strided_offsets_code("i", cnames.data(), static_cast<int>(cnames.size()));
  s << loads.str() << "    dl_mt v0 = 0, v1 = 0;\n    { " << c.row->body << " }\n"
    << stores.str() << "  }\n}\n";
  return s.str();
}

std::string program_text(const Config& c) {
  bool fp64 = c.math == DType::F64 || c.in == DType::F64 || c.in2 == DType::F64;
  for (DType t : c.outs) fp64 = fp64 || t == DType::F64;
  std::string src;
  if (fp64) src += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  src += kernel_source("common");
  src += kernel_source("philox");
  src += std::string("typedef ") + compute_cl_type(c.math) + " dl_mt;\n";
  if (c.row->integer)
    src += c.wide ? "#define BITS (((ulong)dl_word(r2, j) << 32) | (ulong)dl_word(r, j))\n"
                  : "#define BITS ((ulong)dl_word(r, j))\n";
  else
    src += c.math == DType::F64 ? k_double_helpers : k_float_helpers;
  if (rejection(*c.row))
    src += std::string("#define DL_MT_DOUBLE ") + (c.math == DType::F64 ? "1\n" : "0\n") +
           kernel_source("random_rejection");
  src += kernel_text(c, false);
  src += kernel_text(c, true);
  return src;
}

struct Kernels {
  std::mutex m;  // argument setting + enqueue on one cl_kernel must not interleave
  cl_kernel contig = nullptr, strided = nullptr;
};

void add_math(KernelArgs& args, DType math, double v) {
  if (math == DType::F64)
    args.add<cl_double>(v);
  else if (math == DType::F32)
    args.add<cl_float>(static_cast<float>(v));
  else
    args.add<cl_long>(static_cast<cl_long>(v));
}

} // namespace

void random_generate(const Context& ctx, cl_command_queue q, Distribution dist, const RowMajorShape& shape,
                     const std::vector<StridedOperand>& outputs, const StridedOperand* input, uint64_t seed,
                     uint64_t philox_offset, const RandomParams& p, const StridedOperand* input2) {
  const Row& row = row_of(dist);
  if (static_cast<int>(outputs.size()) != row.n_outputs || (input != nullptr) != row.has_input ||
      (input2 != nullptr) != row.second_input)
    throw Error(std::string("random ") + row.name + ": wrong number of operands");
  if (shape.rank > kMaxDims) throw Error(std::string("random ") + row.name + ": more than 8 dims");
  uint64_t n = shape.numel();
  if (n == 0) return;

  Config c{&row, DType::F32, false, {}, row.has_input, input ? input->dtype : DType::F32,
           input2 ? input2->dtype : DType::F32};
  bool any_f64 = (input && input->dtype == DType::F64) || (input2 && input2->dtype == DType::F64);
  for (auto& o : outputs) {
    c.outs.push_back(o.dtype);
    any_f64 = any_f64 || o.dtype == DType::F64;
  }
  if (row.integer) {
    c.math = DType::I64;
    c.wide = p.range == 0 || p.range > 0xFFFFFFFFull;
  } else if (any_f64) {
    c.math = DType::F64;
    c.wide = true;
  }
  if (any_f64 && !ctx.info().fp64)
    throw Error(std::string("random ") + row.name + ": device '" + ctx.info().name +
                "' does not support float64 (no cl_khr_fp64)");

  using Key = std::tuple<cl_context, int, int, bool, std::vector<DType>, DType, DType>;
  static std::mutex map_mutex;
  static std::map<Key, Kernels> cache;
  Kernels* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[Key(ctx.context(), static_cast<int>(dist), static_cast<int>(c.math), c.wide, c.outs, c.in, c.in2)];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->contig) {
    cl_program prog = ctx.program(program_text(c));
    k->contig = create_kernel(prog, "dl_random_contig");
    k->strided = create_kernel(prog, "dl_random_strided");
  }

  std::vector<const StridedOperand*> all;
  for (auto& o : outputs) all.push_back(&o);
  if (input) all.push_back(input);
  if (input2) all.push_back(input2);
  bool contig = all_row_major(shape, all.data(), static_cast<int>(all.size()));
  cl_kernel kernel = contig ? k->contig : k->strided;
  KernelArgs args(kernel);
  args.add<cl_ulong>(n);
  if (!contig) {
    args.add<cl_int>(shape.rank);
    add_dims(args, shape.sizes, shape.rank);
  }
  for (const StridedOperand* o : all) {
    args.add(o->mem).add<cl_ulong>(o->offset);
    if (!contig) add_dims(args, o->strides, shape.rank);
  }
  args.add<cl_ulong>(seed).add<cl_ulong>(philox_offset);
  add_math(args, c.math, p.a);
  add_math(args, c.math, p.b);
  args.add<cl_long>(p.base).add<cl_ulong>(p.range);
  launch_1d(q, kernel, (n + 3) / 4, ctx.work_group_size(256));
}

} // namespace dlprim
