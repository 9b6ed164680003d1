// glasstorch's <torch/extension.h>: the C++ side of torch.utils.cpp_extension.
//
// glasstorch has no ATen library, so this header is the whole C++ API an extension sees:
// a `torch::Tensor` that is a view of a glasstorch tensor (data pointer, sizes, strides,
// dtype, device), accessors, TORCH_CHECK, the AT_DISPATCH_* macros, and factories
// (`torch::empty`, `zeros`, `ones`, `*_like`) that allocate through a callback into
// glasstorch, so every tensor an extension returns is an ordinary glasstorch tensor from
// its allocator. Anything else from ATen (torch::addmm, x.sum(), ...) is not declared here,
// so using it fails at build time with the compiler's error at that line. Functions are
// exported by PYBIND11_MODULE and TORCH_LIBRARY blocks (the end of this file).
//
// A Tensor does not own its bytes: glasstorch keeps every tensor an extension call receives
// or allocates alive until the call returns. Do not keep a Tensor across calls.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ---- the ABI shared with glasstorch/utils/cpp_extension.py ---------------------------------
extern "C" {
struct GtTensorDesc {            // one tensor, as glasstorch hands it over
  void* data;                    // address of element 0 (storage offset applied)
  const int64_t* sizes;
  const int64_t* strides;        // in elements
  int64_t dim;
  int32_t dtype;                 // c10::ScalarType's numbering
  int32_t device_type;           // 0 cpu, 1 cuda
  int32_t device_index;
  int64_t handle;                // glasstorch's id of the tensor for this call
};
// glasstorch -> extension: allocate `fill` (0 empty, 1 zeros, 2 ones) or run a named
// tensor method (`op`, on `nargs` handles); both fill `out`. Nonzero on failure.
typedef int (*GtAllocFn)(int32_t dtype, int32_t device_type, int32_t device_index,
                         int64_t dim, const int64_t* sizes, int32_t fill, GtTensorDesc* out);
typedef int (*GtMethodFn)(const char* op, int64_t nargs, const int64_t* handles,
                          GtTensorDesc* out);
// extension -> glasstorch: one value of a result (kinds below), in order.
typedef void (*GtEmitFn)(void* sink, int32_t kind, int64_t i, double d);
}

namespace gt_detail {
enum EmitKind : int32_t { kTensor = 0, kInt = 1, kDouble = 2, kBool = 3, kList = 4, kTuple = 5,
                          kNone = 6 };
inline GtAllocFn& alloc_fn() { static GtAllocFn fn = nullptr; return fn; }
inline GtMethodFn& method_fn() { static GtMethodFn fn = nullptr; return fn; }
}  // namespace gt_detail

namespace c10 {
// Thrown by TORCH_CHECK; `kind` picks the Python exception glasstorch raises.
struct Error : std::runtime_error {
  int kind;   // 0 RuntimeError, 1 ValueError, 2 TypeError, 3 IndexError, 4 NotImplementedError
  Error(const std::string& what, int kind = 0) : std::runtime_error(what), kind(kind) {}
};
}  // namespace c10

namespace at { enum class ScalarType : int8_t; inline const char* toString(ScalarType t); }

namespace gt_detail {
// Message parts to text (TORCH_CHECK's arguments), without <sstream>: it doubles build time.
inline std::string to_str(const std::string& v) { return v; }
inline std::string to_str(const char* v) { return v; }
inline std::string to_str(char v) { return std::string(1, v); }
inline std::string to_str(bool v) { return v ? "true" : "false"; }
inline std::string to_str(at::ScalarType v) { return at::toString(v); }
template <typename T>
std::enable_if_t<std::is_integral<T>::value, std::string> to_str(T v) { return std::to_string(v); }
template <typename T>
std::enable_if_t<std::is_floating_point<T>::value, std::string> to_str(T v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
  return buffer;
}
inline std::string to_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
template <typename... A>
std::string str(const A&... parts) { std::string s; ((s += to_str(parts)), ...); return s; }
}  // namespace gt_detail

#define GT_CHECK_(KIND, cond, ...)                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::string gt_msg_ = ::gt_detail::str(__VA_ARGS__);                                \
      if (gt_msg_.empty()) gt_msg_ = "Expected " #cond " to be true, but got false.";     \
      throw ::c10::Error(gt_msg_, KIND);                                                  \
    }                                                                                     \
  } while (0)
#define TORCH_CHECK(cond, ...) GT_CHECK_(0, cond, ##__VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) GT_CHECK_(1, cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) GT_CHECK_(2, cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) GT_CHECK_(3, cond, ##__VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) GT_CHECK_(4, cond, ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) GT_CHECK_(0, cond, ##__VA_ARGS__)

namespace at {

enum class ScalarType : int8_t {
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
  Bool = 11, BFloat16 = 15, Undefined = -1
};
constexpr ScalarType kByte = ScalarType::Byte, kUInt8 = ScalarType::Byte,
    kChar = ScalarType::Char, kInt8 = ScalarType::Char, kShort = ScalarType::Short,
    kInt16 = ScalarType::Short, kInt = ScalarType::Int, kInt32 = ScalarType::Int,
    kLong = ScalarType::Long, kInt64 = ScalarType::Long, kHalf = ScalarType::Half,
    kFloat16 = ScalarType::Half, kFloat = ScalarType::Float, kFloat32 = ScalarType::Float,
    kDouble = ScalarType::Double, kFloat64 = ScalarType::Double, kBool = ScalarType::Bool,
    kBFloat16 = ScalarType::BFloat16;

inline const char* toString(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "Byte";
    case ScalarType::Char: return "Char";
    case ScalarType::Short: return "Short";
    case ScalarType::Int: return "Int";
    case ScalarType::Long: return "Long";
    case ScalarType::Half: return "Half";
    case ScalarType::Float: return "Float";
    case ScalarType::Double: return "Double";
    case ScalarType::Bool: return "Bool";
    case ScalarType::BFloat16: return "BFloat16";
    default: return "Undefined";
  }
}

// The ScalarType of a C++ element type (data_ptr<T>() checks it).
template <typename T> struct ScalarTypeOf;
#define GT_SCALAR_TYPE_OF_(T, S) \
  template <> struct ScalarTypeOf<T> { static constexpr ScalarType value = ScalarType::S; };
GT_SCALAR_TYPE_OF_(uint8_t, Byte)
GT_SCALAR_TYPE_OF_(int8_t, Char)
GT_SCALAR_TYPE_OF_(int16_t, Short)
GT_SCALAR_TYPE_OF_(int32_t, Int)
GT_SCALAR_TYPE_OF_(int64_t, Long)
GT_SCALAR_TYPE_OF_(float, Float)
GT_SCALAR_TYPE_OF_(double, Double)
GT_SCALAR_TYPE_OF_(bool, Bool)
#undef GT_SCALAR_TYPE_OF_

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA;

struct Device {
  DeviceType type_ = DeviceType::CPU;
  int index_ = -1;
  Device(DeviceType type = DeviceType::CPU, int index = -1) : type_(type), index_(index) {}
  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

struct TensorOptions {
  ScalarType dtype_ = ScalarType::Float;
  Device device_;
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions(DeviceType d) : device_(d) {}
  TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; return o; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  // Autograd is the Python side's business; accepted for source compatibility.
  TensorOptions requires_grad(bool = true) const { return *this; }
};
inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
inline TensorOptions device(Device d) { return TensorOptions(d); }

using IntArrayRef = const std::vector<int64_t>&;

// accessor<T, N>(): indexing with strides, as ATen's TensorAccessor.
template <typename T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  TensorAccessor<T, N - 1> operator[](int64_t i) const {
    return TensorAccessor<T, N - 1>(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1);
  }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t stride(int64_t d) const { return strides_[d]; }
  T* data() const { return data_; }
 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};
template <typename T>
class TensorAccessor<T, 1> {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  T& operator[](int64_t i) const { return data_[strides_[0] * i]; }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t stride(int64_t d) const { return strides_[d]; }
  T* data() const { return data_; }
 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

class Tensor {
 public:
  Tensor() = default;           // undefined, as ATen's default Tensor
  explicit Tensor(const GtTensorDesc& d)
      : data_(d.data), sizes_(d.sizes, d.sizes + d.dim), strides_(d.strides, d.strides + d.dim),
        dtype_(static_cast<ScalarType>(d.dtype)),
        device_(static_cast<DeviceType>(d.device_type), d.device_index), handle_(d.handle) {}

  bool defined() const { return handle_ >= 0; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t size(int64_t d) const { return sizes_[wrap(d)]; }
  int64_t stride(int64_t d) const { return strides_[wrap(d)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes_) n *= s;
    return n;
  }
  ScalarType scalar_type() const { return dtype_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool is_cuda() const { return device_.is_cuda(); }
  bool is_cpu() const { return device_.is_cpu(); }
  TensorOptions options() const { return TensorOptions(dtype_).device(device_); }
  int64_t element_size() const {
    switch (dtype_) {
      case ScalarType::Byte: case ScalarType::Char: case ScalarType::Bool: return 1;
      case ScalarType::Short: case ScalarType::Half: case ScalarType::BFloat16: return 2;
      case ScalarType::Int: case ScalarType::Float: return 4;
      default: return 8;
    }
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      if (sizes_[d] == 1) continue;
      if (strides_[d] != expected) return false;
      expected *= sizes_[d];
    }
    return true;
  }
  void* data_ptr() const { return data_; }
  template <typename T>
  T* data_ptr() const {
    TORCH_CHECK(dtype_ == ScalarTypeOf<T>::value, "expected scalar type ",
                ScalarTypeOf<T>::value, " but found ", dtype_);
    return static_cast<T*>(data_);
  }
  template <typename T>
  T* mutable_data_ptr() const { return data_ptr<T>(); }
  template <typename T>
  const T* const_data_ptr() const { return data_ptr<T>(); }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    TORCH_CHECK(dim() == static_cast<int64_t>(N), "TensorAccessor expected ", N,
                " dims but tensor has ", dim());
    return TensorAccessor<T, N>(data_ptr<T>(), sizes_.data(), strides_.data());
  }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;   // the accessor would outlive the tensor
  template <typename T>
  T item() const {
    TORCH_CHECK(numel() == 1, "a Tensor with ", numel(),
                " elements cannot be converted to Scalar");
    return *data_ptr<T>();
  }

  // Methods glasstorch runs for the extension (a callback into Python).
  Tensor contiguous() const { return is_contiguous() ? *this : method("contiguous", {*this}); }
  Tensor clone() const { return method("clone", {*this}); }
  Tensor zero_() const { return method("zero_", {*this}); }

  int64_t handle() const { return handle_; }

  static Tensor method(const char* op, std::initializer_list<Tensor> args) {
    std::vector<int64_t> handles;
    for (const Tensor& t : args) {
      TORCH_CHECK(t.defined(), op, "(): an argument is an undefined tensor");
      handles.push_back(t.handle_);
    }
    GtTensorDesc out{};
    TORCH_CHECK(gt_detail::method_fn() != nullptr, "glasstorch did not load this extension");
    if (gt_detail::method_fn()(op, static_cast<int64_t>(handles.size()), handles.data(), &out))
      throw c10::Error(std::string(op) + "() failed in glasstorch (tensor methods work on "
                       "the thread glasstorch called the extension on)");
    return Tensor(out);
  }

 private:
  int64_t wrap(int64_t d) const {
    int64_t n = dim();
    TORCH_CHECK_INDEX(d >= -n && d < n, "Dimension out of range (expected to be in range of [",
                      -n, ", ", n - 1, "], but got ", d, ")");
    return d < 0 ? d + n : d;
  }
  void* data_ = nullptr;
  std::vector<int64_t> sizes_, strides_;
  ScalarType dtype_ = ScalarType::Undefined;
  Device device_;
  int64_t handle_ = -1;
};

namespace gt_factory {
inline Tensor make(const std::vector<int64_t>& sizes, const TensorOptions& o, int32_t fill) {
  for (int64_t s : sizes)
    TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s);
  GtTensorDesc out{};
  TORCH_CHECK(gt_detail::alloc_fn() != nullptr, "glasstorch did not load this extension");
  if (gt_detail::alloc_fn()(static_cast<int32_t>(o.dtype()),
                            static_cast<int32_t>(o.device().type()), o.device().index(),
                            static_cast<int64_t>(sizes.size()), sizes.data(), fill, &out))
    throw c10::Error("glasstorch could not allocate the tensor (factories work on the "
                     "thread glasstorch called the extension on)");
  return Tensor(out);
}
}  // namespace gt_factory

inline Tensor empty(const std::vector<int64_t>& sizes, TensorOptions o = {}) {
  return gt_factory::make(sizes, o, 0);
}
inline Tensor zeros(const std::vector<int64_t>& sizes, TensorOptions o = {}) {
  return gt_factory::make(sizes, o, 1);
}
inline Tensor ones(const std::vector<int64_t>& sizes, TensorOptions o = {}) {
  return gt_factory::make(sizes, o, 2);
}
inline Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.options()); }
inline Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.options()); }
inline Tensor ones_like(const Tensor& t) { return ones(t.sizes(), t.options()); }
inline Tensor empty_like(const Tensor& t, TensorOptions o) { return empty(t.sizes(), o); }
inline Tensor zeros_like(const Tensor& t, TensorOptions o) { return zeros(t.sizes(), o); }
inline Tensor ones_like(const Tensor& t, TensorOptions o) { return ones(t.sizes(), o); }

}  // namespace at

namespace torch {
using namespace at;
}  // namespace torch

// AT_DISPATCH_*: run the lambda with `scalar_t` bound to the tensor's element type.
#define GT_DISPATCH_CASE_(ENUM, TYPE, ...) \
  case ::at::ScalarType::ENUM: { using scalar_t = TYPE; return __VA_ARGS__(); }
#define GT_DISPATCH_DEFAULT_(TYPE, NAME) \
  default: throw ::c10::Error(::gt_detail::str('"', NAME, "\" not implemented for '", \
                                               ::at::toString(TYPE), "'"), 4);
#define GT_FLOATING_CASES_(...)                                                           \
  GT_DISPATCH_CASE_(Float, float, __VA_ARGS__)                                            \
  GT_DISPATCH_CASE_(Double, double, __VA_ARGS__)
#define GT_INTEGRAL_CASES_(...)                                                           \
  GT_DISPATCH_CASE_(Byte, uint8_t, __VA_ARGS__)                                           \
  GT_DISPATCH_CASE_(Char, int8_t, __VA_ARGS__)                                            \
  GT_DISPATCH_CASE_(Short, int16_t, __VA_ARGS__)                                          \
  GT_DISPATCH_CASE_(Int, int32_t, __VA_ARGS__)                                            \
  GT_DISPATCH_CASE_(Long, int64_t, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                                       \
  [&] {                                                                                   \
    switch (TYPE) {                                                                       \
      GT_FLOATING_CASES_(__VA_ARGS__)                                                     \
      GT_DISPATCH_DEFAULT_(TYPE, NAME)                                                    \
    }                                                                                     \
  }()
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...)                                       \
  [&] {                                                                                   \
    switch (TYPE) {                                                                       \
      GT_INTEGRAL_CASES_(__VA_ARGS__)                                                     \
      GT_DISPATCH_DEFAULT_(TYPE, NAME)                                                    \
    }                                                                                     \
  }()
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...)                                            \
  [&] {                                                                                   \
    switch (TYPE) {                                                                       \
      GT_INTEGRAL_CASES_(__VA_ARGS__)                                                     \
      GT_FLOATING_CASES_(__VA_ARGS__)                                                     \
      GT_DISPATCH_DEFAULT_(TYPE, NAME)                                                    \
    }                                                                                     \
  }()

// ---- the generated wrappers' machinery ----------------------------------------------------
namespace gt_detail {

// Argument conversion: what glasstorch passes (a pointer per argument) -> the C++ type.
template <typename T, typename = void> struct Arg {
  static_assert(sizeof(T) == 0,
                "glasstorch cpp_extension: this argument type is not supported (use "
                "torch::Tensor, int64_t, double, bool, std::vector<torch::Tensor> or "
                "std::vector<int64_t>)");
};
template <> struct Arg<at::Tensor> {
  static constexpr const char* schema = "Tensor";
  static at::Tensor get(void* p) { return at::Tensor(*static_cast<GtTensorDesc*>(p)); }
};
template <typename T>
struct Arg<T, std::enable_if_t<std::is_integral<T>::value && !std::is_same<T, bool>::value>> {
  static constexpr const char* schema = "int";
  static T get(void* p) { return static_cast<T>(*static_cast<int64_t*>(p)); }
};
template <typename T>
struct Arg<T, std::enable_if_t<std::is_floating_point<T>::value>> {
  static constexpr const char* schema = "float";
  static T get(void* p) { return static_cast<T>(*static_cast<double*>(p)); }
};
template <> struct Arg<bool> {
  static constexpr const char* schema = "bool";
  static bool get(void* p) { return *static_cast<uint8_t*>(p) != 0; }
};
struct GtList { int64_t n; void* items; };   // a list argument: n items, packed
template <> struct Arg<std::vector<at::Tensor>> {
  static constexpr const char* schema = "Tensor[]";
  static std::vector<at::Tensor> get(void* p) {
    auto* list = static_cast<GtList*>(p);
    auto* descs = static_cast<GtTensorDesc*>(list->items);
    return std::vector<at::Tensor>(descs, descs + list->n);
  }
};
template <> struct Arg<std::vector<int64_t>> {
  static constexpr const char* schema = "int[]";
  static std::vector<int64_t> get(void* p) {
    auto* list = static_cast<GtList*>(p);
    auto* items = static_cast<int64_t*>(list->items);
    return std::vector<int64_t>(items, items + list->n);
  }
};

// Result emission: a flat stream of (kind, value) that glasstorch rebuilds.
struct Out { GtEmitFn fn; void* sink; void operator()(int32_t k, int64_t i = 0, double d = 0)
                                       const { fn(sink, k, i, d); } };
template <typename T, typename = void> struct Ret {
  static_assert(sizeof(T) == 0,
                "glasstorch cpp_extension: this return type is not supported (use void, "
                "torch::Tensor, int64_t, double, bool, std::vector<torch::Tensor> or a "
                "std::tuple of these)");
};
template <> struct Ret<at::Tensor> {
  static std::string schema() { return "Tensor"; }
  static void emit(const Out& o, const at::Tensor& t) {
    if (!t.defined()) throw c10::Error("an extension function returned an undefined tensor");
    o(kTensor, t.handle());
  }
};
template <typename T>
struct Ret<T, std::enable_if_t<std::is_integral<T>::value && !std::is_same<T, bool>::value>> {
  static std::string schema() { return "int"; }
  static void emit(const Out& o, T v) { o(kInt, static_cast<int64_t>(v)); }
};
template <typename T>
struct Ret<T, std::enable_if_t<std::is_floating_point<T>::value>> {
  static std::string schema() { return "float"; }
  static void emit(const Out& o, T v) { o(kDouble, 0, static_cast<double>(v)); }
};
template <> struct Ret<bool> {
  static std::string schema() { return "bool"; }
  static void emit(const Out& o, bool v) { o(kBool, v ? 1 : 0); }
};
template <> struct Ret<std::vector<at::Tensor>> {
  static std::string schema() { return "Tensor[]"; }
  static void emit(const Out& o, const std::vector<at::Tensor>& v) {
    o(kList, static_cast<int64_t>(v.size()));
    for (const auto& t : v) Ret<at::Tensor>::emit(o, t);
  }
};
template <typename... T> struct Ret<std::tuple<T...>> {
  static std::string schema() {
    std::string s = "(";
    const char* sep = "";
    for (const std::string& part : {Ret<std::decay_t<T>>::schema()...}) {
      s += sep + part;
      sep = ", ";
    }
    return s + ")";
  }
  static void emit(const Out& o, const std::tuple<T...>& v) {
    o(kTuple, static_cast<int64_t>(sizeof...(T)));
    std::apply([&](const auto&... item) {
      (Ret<std::decay_t<decltype(item)>>::emit(o, item), ...);
    }, v);
  }
};

template <typename R, typename... A>
std::string signature(R (*)(A...)) {
  std::string s;
  const char* sep = "";
  for (const char* a : {static_cast<const char*>(Arg<std::decay_t<A>>::schema)..., ""}) {
    if (*a) { s += sep; s += a; sep = ","; }
  }
  if constexpr (std::is_void<R>::value) return s + "->";
  else return s + "->" + Ret<std::decay_t<R>>::schema();
}

template <typename R, typename... A, size_t... I>
void invoke(R (*fn)(A...), void** args, const Out& out, std::index_sequence<I...>) {
  // Held as lvalues, so that `torch::Tensor&` (an out= argument) binds too.
  std::tuple<std::decay_t<A>...> values{Arg<std::decay_t<A>>::get(args[I])...};
  if constexpr (std::is_void<R>::value) {
    fn(std::get<I>(values)...);
    out(kNone);
  } else {
    Ret<std::decay_t<R>>::emit(out, fn(std::get<I>(values)...));
  }
}

// Run fn; an exception becomes (kind, message) for glasstorch to raise. Returns 0 or 1.
template <typename R, typename... A>
int call(R (*fn)(A...), void** args, GtEmitFn emit, void* sink, int32_t* kind, char* msg,
         int64_t msg_size) {
  auto fail = [&](int k, const char* what) {
    *kind = k;
    std::strncpy(msg, what, static_cast<size_t>(msg_size - 1));
    msg[msg_size - 1] = '\0';
    return 1;
  };
  try {
    invoke(fn, args, Out{emit, sink}, std::index_sequence_for<A...>{});
    return 0;
  } catch (const c10::Error& e) {
    return fail(e.kind, e.what());
  } catch (const std::exception& e) {
    return fail(0, e.what());
  } catch (...) {
    return fail(0, "an extension function threw a C++ exception that is not a std::exception");
  }
}

}  // namespace gt_detail

// ---- the extension's function table: PYBIND11_MODULE and TORCH_LIBRARY -----------------------
// glasstorch has no pybind11 and no dispatcher in C++: `m.def(name, &fn, doc, py::arg("x"))`
// in PYBIND11_MODULE, and `m.def(schema)`, `m.def(schema, &fn)`, `m.impl(name, &fn)` in
// TORCH_LIBRARY / TORCH_LIBRARY_FRAGMENT / TORCH_LIBRARY_IMPL, record entries in one table,
// filled when the library loads; glasstorch reads it through the gt_table_* functions below
// and registers the operators itself. Each function's signature comes from its C++ type.
namespace gt_detail {
struct Entry {
  int kind = 0;         // 0 module function, 1 kernel (impl), 2 schema only, 3 schema + kernel
  std::string name, signature, doc, arg_names, defaults, ns, schema, key;
  int nargs = 0;
  void (*fn)() = nullptr;                             // the function, type-erased
  int (*call)(void (*)(), void**, GtEmitFn, void*, int32_t*, char*, int64_t) = nullptr;
};
inline std::vector<Entry>& table() { static std::vector<Entry> t; return t; }

template <typename R, typename... A>
int erased(void (*fn)(), void** args, GtEmitFn emit, void* sink, int32_t* kind, char* msg,
           int64_t size) {
  return call(reinterpret_cast<R (*)(A...)>(fn), args, emit, sink, kind, msg, size);
}
template <typename R, typename... A>
Entry entry(int kind, const char* name, R (*fn)(A...)) {
  Entry e;
  e.kind = kind;
  e.name = name;
  e.signature = signature(fn);
  e.fn = reinterpret_cast<void (*)()>(fn);
  e.call = &erased<R, A...>;
  return e;
}
}  // namespace gt_detail

#define GT_EXPORT extern "C" __attribute__((visibility("default"), used)) inline
GT_EXPORT int64_t gt_table_init(GtAllocFn alloc, GtMethodFn method) {
  gt_detail::alloc_fn() = alloc;
  gt_detail::method_fn() = method;
  return static_cast<int64_t>(gt_detail::table().size());
}
GT_EXPORT const char* gt_table_entry(int64_t i, int32_t field) {
  const gt_detail::Entry& e = gt_detail::table()[static_cast<size_t>(i)];
  const std::string* fields[] = {&e.name, &e.signature, &e.doc, &e.arg_names, &e.defaults,
                                 &e.ns, &e.schema, &e.key};
  static const char* kinds[] = {"0", "1", "2", "3"};
  return field < 8 ? fields[field]->c_str() : kinds[e.kind];
}
GT_EXPORT int gt_table_call(int64_t i, void** args, GtEmitFn emit, void* sink, int32_t* kind,
                            char* msg, int64_t size) {
  const gt_detail::Entry& e = gt_detail::table()[static_cast<size_t>(i)];
  return e.call(e.fn, args, emit, sink, kind, msg, size);
}

namespace pybind11 {
struct arg {
  std::string name, default_;
  explicit arg(const char* n) : name(n) {}
  template <typename T>
  arg operator=(const T& value) const {
    arg a = *this;
    if constexpr (std::is_same<T, bool>::value) a.default_ = value ? "True" : "False";
    else a.default_ = gt_detail::to_str(value);
    return a;
  }
};

class module_ {
 public:
  template <typename R, typename... A, typename... Extra>
  module_& def(const char* name, R (*fn)(A...), const Extra&... extra) {
    gt_detail::Entry e = gt_detail::entry(0, name, fn);
    (take(e, extra), ...);
    gt_detail::table().push_back(std::move(e));
    return *this;
  }

 private:
  static void take(gt_detail::Entry& e, const char* doc) { e.doc = doc; }
  static void take(gt_detail::Entry& e, const arg& a) {   // names by ',', defaults by '\x1f'
    if (e.nargs++) { e.arg_names += ','; e.defaults += '\x1f'; }
    e.arg_names += a.name;
    e.defaults += a.default_;
  }
};
using module = module_;
}  // namespace pybind11
namespace py = pybind11;

namespace torch {
// PyTorch wraps bound functions to translate errors; glasstorch's table does that already.
template <typename F>
F wrap_pybind_function(F f) { return f; }

// TORCH_LIBRARY's `m`: operator definitions and kernels for glasstorch to register.
class Library {
 public:
  Library(const char* ns, const char* key) : ns_(ns), key_(key) {}
  Library& def(const char* schema) {
    gt_detail::Entry e;
    e.kind = 2;
    e.schema = schema;
    return add(std::move(e));
  }
  template <typename R, typename... A>
  Library& def(const char* schema_or_name, R (*fn)(A...)) {
    std::string text = schema_or_name;
    gt_detail::Entry e = gt_detail::entry(3, text.substr(0, text.find('(')).c_str(), fn);
    if (text.find('(') != std::string::npos) e.schema = text;
    return add(std::move(e));
  }
  template <typename R, typename... A>
  Library& impl(const char* name, R (*fn)(A...)) {
    return add(gt_detail::entry(1, name, fn));
  }

 private:
  Library& add(gt_detail::Entry e) {
    e.ns = ns_;
    e.key = key_;
    gt_detail::table().push_back(std::move(e));
    return *this;
  }
  std::string ns_, key_;
};
}  // namespace torch
#define TORCH_FN(f) (&(f))

namespace gt_detail {
struct Registrar {      // runs a registration block when the library loads
  template <typename M>
  Registrar(void (*body)(M&), M m) { body(m); }
};
}  // namespace gt_detail
#define GT_CAT2_(a, b) a##b
#define GT_CAT_(a, b) GT_CAT2_(a, b)
#define GT_REGISTER_(TYPE, ARGS, VAR, ID)                                                 \
  static void ID(TYPE& VAR);                                                              \
  static const ::gt_detail::Registrar GT_CAT_(ID, _registrar)(&ID, TYPE ARGS);            \
  static void ID(TYPE& VAR)

#define PYBIND11_MODULE(NAME, VAR) \
  GT_REGISTER_(::pybind11::module_, (), VAR, GT_CAT_(gt_module_, __COUNTER__))
#define TORCH_LIBRARY(NS, VAR) \
  GT_REGISTER_(::torch::Library, (#NS, "DEF"), VAR, GT_CAT_(gt_library_, __COUNTER__))
#define TORCH_LIBRARY_FRAGMENT(NS, VAR) \
  GT_REGISTER_(::torch::Library, (#NS, "FRAGMENT"), VAR, GT_CAT_(gt_library_, __COUNTER__))
#define TORCH_LIBRARY_IMPL(NS, KEY, VAR) \
  GT_REGISTER_(::torch::Library, (#NS, #KEY), VAR, GT_CAT_(gt_library_, __COUNTER__))
