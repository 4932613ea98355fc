//===- ManifestCheckTest.cpp - A manifest validated before use ------------===//
//
// A well-formed manifest passes; each defect a host would trip over (a
// missing key, a wrong type, a limit out of range, a parameter table that
// does not add up) is named by its key.
//
//===----------------------------------------------------------------------===//

#include "runtime/model/ManifestCheck.h"

#include <gtest/gtest.h>

using lap::model::manifestProblem;
using nlohmann::json;

namespace {

json goodManifest() {
  return json::parse(R"({
    "name": "tiny", "family": "gpt", "spec": "name: tiny\n",
    "model_hash": "0123456789abcdef",
    "target": {"device": "cpu", "cpu": "x86-64-v3", "features": ["avx2"],
               "kernel_cpu": "x86-64-v3", "kernel_features": ["avx2"]},
    "limits": {"batch": 4, "seq": 16, "vocab": 300},
    "parameters": {"elements": 40, "count": 2,
      "trainable": {"offset": 32, "elements": 8}, "tensors": [
      {"name": "a", "shape": [4, 4], "offset": 0, "elements": 16,
       "trainable": false, "init": {"kind": "normal", "value": 0.02}},
      {"name": "b", "shape": [8], "offset": 32, "elements": 8,
       "trainable": true, "init": {"kind": "constant", "value": 1}}]},
    "batch": [{"name": "tokens", "dtype": "int32", "shape": [-1, -1]}],
    "outputs": [{"name": "loss", "dtype": "float32", "shape": []}],
    "memory": {"workspace_bytes": 4096, "forward_workspace_bytes": 1024,
               "train_step_workspace_bytes": 4096,
               "features_workspace_bytes": 1024},
    "features": {"layers": 2, "width": 4, "names": ["embedding", "block.0"]},
    "decode": null,
    "images": {"sizes": [28, 12], "tokens": [50, 10]}
  })");
}

TEST(ManifestCheck, AWellFormedManifestPasses) {
  EXPECT_EQ(manifestProblem(goodManifest()), "");
}

/// A two-layer model's decode entry with the given slots per layer.
json decodeOfTwoLayers(const std::vector<int64_t> &slots) {
  return json::object({{"layers", 2},
                       {"kv_heads", 1},
                       {"head_dim", 4},
                       {"capacity", 16},
                       {"slots", slots}});
}

TEST(ManifestCheck, EachDefectIsNamedByItsKey) {
  struct Case {
    json::json_pointer key;
    json value; // discarded: the key removed
    const char *problem;
  } cases[] = {
      {json::json_pointer("/limits/batch"), -1,
       "limits.batch is -1, not an integer in 1..1073741824"},
      {json::json_pointer("/limits/batch"), 4611686018427387904LL,
       "limits.batch is 4611686018427387904, not an integer in 1..1073741824"},
      {json::json_pointer("/limits/seq"), "16",
       "limits.seq is \"16\", not an integer"},
      {json::json_pointer("/memory/workspace_bytes"),
       json(json::value_t::discarded), "memory.workspace_bytes is missing"},
      {json::json_pointer("/memory/forward_workspace_bytes"), 8192,
       "memory.forward_workspace_bytes exceeds memory.workspace_bytes"},
      {json::json_pointer("/parameters/tensors/1/elements"), 9,
       "parameters.tensors[1].elements is 9, but its shape holds 8"},
      {json::json_pointer("/parameters/tensors/1/offset"), 8,
       "parameters.tensors[1] (offset 8, 8 elements) overlaps another tensor"},
      {json::json_pointer("/parameters/tensors/1/offset"), 36,
       "goes beyond parameters.elements 40"},
      {json::json_pointer("/parameters/count"), 3,
       "parameters.count is not the number of parameters.tensors"},
      {json::json_pointer("/parameters/trainable/elements"), 40,
       "parameters.trainable does not reach parameters.elements"},
      {json::json_pointer("/parameters/tensors/0/trainable"), true,
       "parameters.tensors[0].trainable is not whether it lies past "
       "parameters.trainable.offset"},
      {json::json_pointer("/parameters/tensors/1/trainable"),
       json(json::value_t::discarded),
       "parameters.tensors[1].trainable is missing"},
      {json::json_pointer("/target/features"), json::array({1}),
       "target.features is not a list of strings"},
      {json::json_pointer("/model_hash"), json(json::value_t::discarded),
       "model_hash is missing"},
      {json::json_pointer("/decode"), json::object({{"layers", 0}}),
       "decode.layers is 0"},
      {json::json_pointer("/decode"), decodeOfTwoLayers({16}),
       "decode.slots does not hold one entry per layer"},
      {json::json_pointer("/decode"), decodeOfTwoLayers({16, 17}),
       "decode.slots[1] is 17, not an integer in 1..16"},
      {json::json_pointer("/images"), json(json::value_t::discarded),
       "images is missing"},
      {json::json_pointer("/images/tokens"), json::array({50}),
       "images.sizes and images.tokens are not lists of the same length"},
      {json::json_pointer("/images/sizes/1"), 0,
       "images.sizes[1] is 0, not an integer in 1..1073741824"},
      {json::json_pointer("/parameters/tensors/1/init"),
       json::object({{"kind", "values"}, {"value", 0}, {"values", {1, 2}}}),
       "parameters.tensors[1].init.values is not 8 numbers"},
  };
  for (const Case &c : cases) {
    json m = goodManifest();
    if (c.value.is_discarded())
      m[c.key.parent_pointer()].erase(c.key.back());
    else
      m[c.key] = c.value;
    std::string problem = manifestProblem(m);
    EXPECT_NE(problem.find(c.problem), std::string::npos)
        << c.key.to_string() << ": " << problem;
  }
  EXPECT_EQ(manifestProblem(json::array()),
            "the manifest is not a JSON object");
}

} // namespace
