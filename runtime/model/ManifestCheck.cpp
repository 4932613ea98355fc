//===- ManifestCheck.cpp - A model library's manifest, validated ----------===//

#include "runtime/model/ManifestCheck.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace lap::model {

namespace {

// The compiler's own bounds (lapc --max-batch/--max-seq, the memory plan).
constexpr int64_t kMaxLimit = int64_t(1) << 30;
constexpr int64_t kMaxBytes = int64_t(1) << 48;

struct Problem : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const nlohmann::json &at(const nlohmann::json &object, const std::string &path,
                         const char *key) {
  std::string where = path.empty() ? key : path + "." + key;
  if (!object.is_object() || !object.contains(key))
    throw Problem(where + " is missing");
  return object[key];
}

int64_t integer(const nlohmann::json &object, const std::string &path,
                const char *key, int64_t least, int64_t most) {
  const nlohmann::json &v = at(object, path, key);
  std::string where = path.empty() ? key : path + "." + key;
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(most)) ||
      v.get<int64_t>() < least || v.get<int64_t>() > most)
    throw Problem(where + " is " + v.dump() + ", not an integer in " +
                  std::to_string(least) + ".." + std::to_string(most));
  return v.get<int64_t>();
}

void string(const nlohmann::json &object, const std::string &path,
            const char *key) {
  if (!at(object, path, key).is_string())
    throw Problem((path.empty() ? key : path + "." + key) +
                  std::string(" is not a string"));
}

void strings(const nlohmann::json &object, const std::string &path,
             const char *key) {
  const nlohmann::json &v = at(object, path, key);
  bool ok = v.is_array();
  for (const auto &e : v)
    ok = ok && e.is_string();
  if (!ok)
    throw Problem(path + "." + key + " is not a list of strings");
}

const nlohmann::json &array(const nlohmann::json &object,
                            const std::string &path, const char *key) {
  const nlohmann::json &v = at(object, path, key);
  if (!v.is_array())
    throw Problem((path.empty() ? key : path + "." + key) +
                  std::string(" is not a list"));
  return v;
}

void checkParameters(const nlohmann::json &m) {
  const nlohmann::json &p = at(m, "", "parameters");
  int64_t total = integer(p, "parameters", "elements", 0, kMaxBytes / 4);
  const nlohmann::json &tensors = array(p, "parameters", "tensors");
  if (integer(p, "parameters", "count", 0, kMaxLimit) !=
      int64_t(tensors.size()))
    throw Problem("parameters.count is not the number of parameters.tensors");
  const nlohmann::json &trainable = at(p, "parameters", "trainable");
  int64_t trainableOffset =
      integer(trainable, "parameters.trainable", "offset", 0, total);
  if (integer(trainable, "parameters.trainable", "elements", 0, total) !=
      total - trainableOffset)
    throw Problem("parameters.trainable does not reach parameters.elements");
  int64_t next = 0; // the table is packed in order
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string path = "parameters.tensors[" + std::to_string(i) + "]";
    const nlohmann::json &t = tensors[i];
    string(t, path, "name");
    int64_t offset = integer(t, path, "offset", 0, total);
    int64_t elements = integer(t, path, "elements", 0, total);
    int64_t product = 1;
    for (const auto &d : array(t, path, "shape")) {
      if (!d.is_number_unsigned() ||
          __builtin_mul_overflow(product, d.get<int64_t>(), &product))
        throw Problem(path + ".shape is not a list of sizes");
    }
    if (product != elements)
      throw Problem(path + ".elements is " + std::to_string(elements) +
                    ", but its shape holds " + std::to_string(product));
    if (offset < next || elements > total - offset)
      throw Problem(path + " (offset " + std::to_string(offset) + ", " +
                    std::to_string(elements) +
                    " elements) overlaps another tensor or goes beyond "
                    "parameters.elements " +
                    std::to_string(total));
    next = offset + elements;
    if (const nlohmann::json &flag = at(t, path, "trainable");
        !flag.is_boolean() || flag.get<bool>() != (offset >= trainableOffset))
      throw Problem(path + ".trainable is not whether it lies past "
                           "parameters.trainable.offset");
    const nlohmann::json &init = at(t, path, "init");
    string(init, path + ".init", "kind");
    if (!at(init, path + ".init", "value").is_number())
      throw Problem(path + ".init.value is not a number");
    if (init.at("kind") == "values") {
      const auto &values = array(init, path + ".init", "values");
      if (int64_t(values.size()) != elements ||
          !std::all_of(values.begin(), values.end(),
                       [](const nlohmann::json &v) { return v.is_number(); }))
        throw Problem(path + ".init.values is not " + std::to_string(elements) +
                      " numbers");
    }
  }
}

void checkTensorList(const nlohmann::json &m, const char *key) {
  for (const auto &t : array(m, "", key)) {
    string(t, key, "name");
    string(t, key, "dtype");
    for (const auto &d : array(t, key, "shape"))
      if (!d.is_number_integer() || d.get<int64_t>() < -1)
        throw Problem(std::string(key) + " has a shape that is not of sizes");
  }
}

/// `images`: the sizes an image model runs, the compiled one first, and
/// the tokens of each.
void checkImageSizes(const nlohmann::json &images) {
  const nlohmann::json &sizes = array(images, "images", "sizes"),
                       &tokens = array(images, "images", "tokens");
  if (sizes.empty() || sizes.size() != tokens.size())
    throw Problem("images.sizes and images.tokens are not lists of the same "
                  "length");
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::string index = "[" + std::to_string(i) + "]";
    integer(nlohmann::json{{"sizes" + index, sizes[i]}}, "images",
            ("sizes" + index).c_str(), 1, kMaxLimit);
    integer(nlohmann::json{{"tokens" + index, tokens[i]}}, "images",
            ("tokens" + index).c_str(), 1, kMaxLimit);
  }
}

/// Each layer's cache holds 1 .. capacity positions.
void checkDecode(const nlohmann::json &decode) {
  for (const char *key : {"layers", "kv_heads", "head_dim", "capacity"})
    integer(decode, "decode", key, 1, kMaxLimit);
  const nlohmann::json &slots = array(decode, "decode", "slots");
  if (slots.size() != decode["layers"].get<size_t>())
    throw Problem("decode.slots does not hold one entry per layer");
  for (size_t l = 0; l < slots.size(); ++l) {
    std::string key = "slots[" + std::to_string(l) + "]";
    integer(nlohmann::json{{key, slots[l]}}, "decode", key.c_str(), 1,
            decode["capacity"].get<int64_t>());
  }
}

} // namespace

std::string manifestProblem(const nlohmann::json &m) {
  try {
    if (!m.is_object())
      throw Problem("the manifest is not a JSON object");
    string(m, "", "name");
    string(m, "", "family");
    string(m, "", "spec");
    string(m, "", "model_hash");
    const nlohmann::json &limits = at(m, "", "limits");
    integer(limits, "limits", "batch", 1, kMaxLimit);
    integer(limits, "limits", "seq", 1, kMaxLimit);
    integer(limits, "limits", "vocab", 0, INT32_MAX);
    const nlohmann::json &target = at(m, "", "target");
    for (const char *key : {"device", "cpu", "kernel_cpu"})
      string(target, "target", key);
    const std::string device = target.at("device");
    if (device != "cpu" && device != "cuda")
      throw Problem("target.device is \"" + device +
                    "\", not \"cpu\" or \"cuda\"");
    if (device == "cuda")
      string(target, "target", "arch");
    strings(target, "target", "features");
    strings(target, "target", "kernel_features");
    checkParameters(m);
    const nlohmann::json &memory = at(m, "", "memory");
    int64_t workspace =
        integer(memory, "memory", "workspace_bytes", 0, kMaxBytes);
    for (const char *key :
         {"forward_workspace_bytes", "train_step_workspace_bytes",
          "features_workspace_bytes"})
      if (integer(memory, "memory", key, 0, kMaxBytes) > workspace)
        throw Problem(std::string("memory.") + key +
                      " exceeds memory.workspace_bytes");
    checkTensorList(m, "batch");
    checkTensorList(m, "outputs");
    const nlohmann::json &features = at(m, "", "features");
    integer(features, "features", "layers", 0, kMaxLimit);
    integer(features, "features", "width", 0, kMaxLimit);
    if (const nlohmann::json &d = at(m, "", "decode"); !d.is_null())
      checkDecode(d);
    if (const nlohmann::json &i = at(m, "", "images"); !i.is_null())
      checkImageSizes(i);
  } catch (const Problem &p) {
    return p.what();
  }
  return "";
}

} // namespace lap::model
