//===- MemoryPlan.cpp - Offsets in one workspace by liveness ----*- C++ -*-===//
//
// Every function here is one block of ops without control flow, so a live
// range is an interval of op indices. Values are placed largest first at the
// lowest offset that does not overlap a placed value whose interval meets
// theirs (greedy by size, as TFLite's arena planner does): near the lower
// bound, the largest set of simultaneously live bytes, for transformer
// steps, where big activations dominate. A result that only reinterprets
// its operand's layout (lap.merge_heads: [B, T, H, D] as [B, T, H D]; and
// dropout outside training) shares the operand's bytes: one interval for
// both, no copy. So does the last output of a generated loop nest and an
// input of its shape that dies there: it is written in place.
//
//===----------------------------------------------------------------------===//

#include "compiler/Memory/MemoryPlan.h"
#include "compiler/Memory/Layout.h"
#include "compiler/Memory/Passes.h"
#include "dialects/Lap/IR/LapOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace lap {
#define GEN_PASS_DEF_LAPPLANMEMORY
#include "compiler/Memory/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

int64_t lap::scratchBytes(Value result, int64_t maxBatch, int64_t maxSeq) {
  Operation *op = result.getDefiningOp();
  if (auto attention = dyn_cast_or_null<AttentionOp>(op)) {
    auto q = cast<ShapedType>(attention.getQ().getType());
    return maxDimSize(q, 0, maxBatch, maxSeq) * attention.getNumHeads() *
           maxDimSize(q, 1, maxBatch, maxSeq) * 4;
  }
  if (auto fusion = dyn_cast_or_null<FusionOp>(op))
    op = cast<YieldOp>(fusion.getBody().front().getTerminator())
             .getValues()[cast<OpResult>(result).getResultNumber()]
             .getDefiningOp();
  if (isa_and_nonnull<ColumnSumOp>(op))
    return kColumnSumChunks * cast<ShapedType>(result.getType()).getDimSize(0) *
           4;
  return 0;
}

int64_t lap::scratchOffset(Value result, int64_t maxBatch, int64_t maxSeq) {
  return llvm::alignTo(
      maxBytes(cast<ShapedType>(result.getType()), maxBatch, maxSeq), 16);
}

namespace {

/// Whether the kernel of `op` skips result `i` when given no buffer.
bool mayDropResult(Operation *op, unsigned i) {
  return isa<LinearGradOp, LinearHeadsGradOp>(op) ||
         (isa<LinearGeluOp>(op) && i == 0) ||
         (isa<GeluLinearGradOp>(op) && i == 1) ||
         (isa<LinearCrossEntropyOp>(op) && i == 2) ||
         (isa<LayerNormGradOp, RMSNormGradOp>(op) && i > 0) ||
         (isa<PrependTokensGradOp, LayerScaleGradOp>(op) && i == 0);
}

/// Op positions in a one-block function; live ranges are intervals of them.
DenseMap<Operation *, int64_t> positions(Block &body) {
  DenseMap<Operation *, int64_t> index;
  for (Operation &op : body)
    index[&op] = index.size();
  return index;
}

/// The last position that reads `result` (its own when nothing does).
int64_t lastUse(Value result, const DenseMap<Operation *, int64_t> &index) {
  int64_t last = index.lookup(result.getDefiningOp());
  for (Operation *user : result.getUsers())
    last = std::max(last, index.lookup(user));
  return last;
}

/// Bytes of `result` at the largest batch and sequence, with the scratch
/// it carries (scratchBytes).
int64_t resultBytes(Value result, int64_t maxBatch, int64_t maxSeq) {
  const int64_t scratch = scratchBytes(result, maxBatch, maxSeq);
  return scratch
             ? scratchOffset(result, maxBatch, maxSeq) + scratch
             : maxBytes(cast<ShapedType>(result.getType()), maxBatch, maxSeq);
}

struct Interval {
  Value value;
  int64_t bytes, begin, end, offset = 0;
};

/// The operand whose bytes `op`'s result can be, unchanged: layout-only
/// ops, and dropout and drop path outside a training step (they copy
/// there).
Value layoutSource(Operation *op, bool training) {
  if (isa<MergeHeadsOp, MergeHeadsGradOp>(op) ||
      (!training && isa<DropoutOp, DropPathOp>(op)))
    return op->getOperand(0);
  return Value();
}

/// For a generated loop nest (a loop-fusible op, or a lap.fusion), the
/// result it writes last: the nest reads every element its inputs have at
/// an index before it writes that index of its last output, so that output
/// may overwrite an input of its type that dies there.
Value writtenLast(Operation *op) {
  if (isLoopFusible(op))
    return op->getResult(0);
  auto fusion = dyn_cast<FusionOp>(op);
  if (!fusion)
    return Value();
  Block &body = fusion.getBody().front();
  DenseMap<Operation *, int64_t> order = positions(body);
  auto yield = cast<YieldOp>(body.getTerminator());
  auto values = yield.getValues();
  auto last = llvm::max_element(values, [&](Value a, Value b) {
    return order.lookup(a.getDefiningOp()) < order.lookup(b.getDefiningOp());
  });
  return fusion.getResult(std::distance(values.begin(), last));
}

/// Plans one function; returns the workspace size, or a failure (with an
/// error on the op) for a tensor beyond kMaxPlannedBytes.
FailureOr<int64_t> planFunction(func::FuncOp func, int64_t maxBatch,
                                int64_t maxSeq) {
  Block &body = func.getBody().front();
  DenseMap<Operation *, int64_t> index = positions(body);

  // Results returned once go straight to the caller's output buffers,
  // but for those with scratch beside them (a column sum's partial sums),
  // which are copied there.
  DenseMap<Value, int64_t> outputs, returnCounts;
  Operation *ret = body.getTerminator();
  for (Value v : ret->getOperands())
    ++returnCounts[v];
  for (auto [k, v] : llvm::enumerate(ret->getOperands()))
    if (v.getDefiningOp() && returnCounts[v] == 1 &&
        scratchBytes(v, maxBatch, maxSeq) == 0)
      outputs[v] = outputSlot(k);

  // Layout-only results join their source's interval when both live in
  // the workspace (not a batch argument, not an output); so does the last
  // output of a loop nest and an input it overwrites, when no value that
  // shares the input's bytes is read after the nest.
  const bool training = isTrainStep(func.getName());
  DenseMap<Value, Value> aliasOf;
  DenseMap<Value, int64_t> sharedUntil; ///< by root: the last read of any
  auto rootOf = [&](Value v) {
    while (aliasOf.count(v))
      v = aliasOf.lookup(v);
    return v;
  };
  auto readUntil = [&](Value root) -> int64_t & {
    return sharedUntil.try_emplace(root, lastUse(root, index)).first->second;
  };
  auto share = [&](Value result, Value source) {
    Value root = rootOf(source);
    aliasOf[result] = root;
    int64_t &until = readUntil(root);
    until = std::max({until, lastUse(source, index), lastUse(result, index)});
  };
  auto inWorkspace = [&](Value v) {
    return v.getDefiningOp() && !outputs.count(v);
  };
  for (Operation &op : body) {
    if (Value source = layoutSource(&op, training);
        source && inWorkspace(source) && inWorkspace(op.getResult(0))) {
      share(op.getResult(0), source);
      continue;
    }
    Value result = writtenLast(&op);
    if (!result || !inWorkspace(result))
      continue;
    for (Value input : op.getOperands()) {
      if (input.getType() != result.getType() || !inWorkspace(input))
        continue;
      Value root = rootOf(input);
      if (!isa<AttentionOp>(root.getDefiningOp()) &&
          readUntil(root) == index.lookup(&op)) {
        share(result, input);
        break;
      }
    }
  }

  std::vector<Interval> intervals;
  DenseMap<Value, size_t> intervalOf;
  for (Operation &op : body) {
    for (Value result : op.getResults()) {
      auto type = dyn_cast<ShapedType>(result.getType());
      if (!type)
        continue;
      // Outputs too: the caller allocates them from the manifest.
      int64_t bytes = resultBytes(result, maxBatch, maxSeq);
      if (bytes > kMaxPlannedBytes)
        return op.emitError("its result needs more than 2^48 bytes (256 TiB) "
                            "at batch <= ")
               << maxBatch << " and sequence <= " << maxSeq
               << "; compile for a smaller --max-batch or --max-seq";
      if (outputs.count(result) ||
          (result.use_empty() &&
           mayDropResult(&op, cast<OpResult>(result).getResultNumber())))
        continue;
      if (auto root = aliasOf.find(result); root != aliasOf.end()) {
        if (auto it = intervalOf.find(root->second); it != intervalOf.end()) {
          Interval &shared = intervals[it->second];
          shared.end = std::max(shared.end, lastUse(result, index));
          continue;
        }
        aliasOf.erase(root); // its source has no workspace bytes
      }
      intervalOf[result] = intervals.size();
      intervals.push_back(
          {result, alignTo(bytes), index[&op], lastUse(result, index)});
    }
  }

  std::vector<Interval *> bySize;
  for (Interval &i : intervals)
    bySize.push_back(&i);
  std::stable_sort(bySize.begin(), bySize.end(), [](Interval *a, Interval *b) {
    return a->bytes > b->bytes;
  });
  // Placed intervals stay sorted by offset (ties in placement order), so
  // that the first gap among those live at the same time is found in one
  // pass that stops there, without sorting the live ones per interval.
  std::vector<Interval *> placed;
  int64_t workspace = 0;
  for (Interval *v : bySize) {
    int64_t offset = 0;
    for (Interval *p : placed) {
      if (p->begin > v->end || v->begin > p->end)
        continue;
      if (p->offset - offset >= v->bytes)
        break;
      offset = std::max(offset, p->offset + p->bytes);
    }
    v->offset = offset;
    workspace = std::max(workspace, offset + v->bytes);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), v,
                                   [](Interval *a, Interval *b) {
                                     return a->offset < b->offset;
                                   }),
                  v);
  }

  DenseMap<Value, int64_t> offsets;
  for (Interval &i : intervals)
    offsets[i.value] = i.offset;
  for (auto [alias, root] : aliasOf)
    if (auto it = offsets.find(root); it != offsets.end())
      offsets[alias] = it->second;
  Builder builder(func.getContext());
  for (Operation &op : body) {
    if (op.getNumResults() == 0)
      continue;
    SmallVector<int64_t> slots;
    for (Value result : op.getResults()) {
      if (auto it = outputs.find(result); it != outputs.end())
        slots.push_back(it->second);
      else if (auto it = offsets.find(result); it != offsets.end())
        slots.push_back(it->second);
      else
        slots.push_back(kUnused);
    }
    op.setAttr(kOffsetsAttr, builder.getDenseI64ArrayAttr(slots));
  }
  if (workspace > kMaxPlannedBytes)
    return func.emitError("the workspace needs more than 2^48 bytes (256 TiB) "
                          "at batch <= ")
           << maxBatch << " and sequence <= " << maxSeq
           << "; compile for a smaller --max-batch or --max-seq";
  func->setAttr(kWorkspaceAttr, builder.getI64IntegerAttr(workspace));
  func->setAttr(kMaxBatchAttr, builder.getI64IntegerAttr(maxBatch));
  func->setAttr(kMaxSeqAttr, builder.getI64IntegerAttr(maxSeq));
  return workspace;
}

struct PlanMemory : lap::impl::LapPlanMemoryBase<PlanMemory> {
  using LapPlanMemoryBase::LapPlanMemoryBase;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (!func.getBody().hasOneBlock()) {
        func.emitError("the memory plan needs a function of one block");
        return signalPassFailure();
      }
      bool dynamic = false;
      func.walk([&](Operation *op) {
        for (Type t : op->getResultTypes())
          if (auto shaped = dyn_cast<ShapedType>(t))
            for (unsigned i = 0; i < shaped.getRank(); ++i)
              if (shaped.isDynamicDim(i)) {
                dynamic = true;
                if (i > 1)
                  op->emitError("only the batch (dimension 0) and the "
                                "sequence (dimension 1) may be dynamic");
              }
      });
      if (dynamic && (maxBatch <= 0 || maxSeq <= 0)) {
        func.emitError("dynamic shapes need max-batch and max-seq");
        return signalPassFailure();
      }
      if (failed(planFunction(func, maxBatch, maxSeq)))
        return signalPassFailure();
    }
  }
};

std::string shapeString(ShapedType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  for (unsigned i = 0; i < type.getRank(); ++i)
    os << (i ? "x" : "")
       << (type.isDynamicDim(i) ? (i == 0 ? "B" : "T")
                                : std::to_string(type.getDimSize(i)));
  return s.empty() ? "scalar" : s;
}

std::string mib(int64_t bytes) {
  return llvm::formatv("{0:F2} MiB", double(bytes) / (1 << 20)).str();
}

} // namespace

void lap::printMemoryPlan(ModuleOp module, raw_ostream &os) {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto workspace = func->getAttrOfType<IntegerAttr>(kWorkspaceAttr);
    if (!workspace)
      continue;
    int64_t maxBatch = func->getAttrOfType<IntegerAttr>(kMaxBatchAttr).getInt();
    int64_t maxSeq = func->getAttrOfType<IntegerAttr>(kMaxSeqAttr).getInt();
    int64_t paramFloats = 0, inputs = 0, outputs = 0, unshared = 0;
    parameterOffsets(func, paramFloats);
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto type = dyn_cast<ShapedType>(func.getArgument(i).getType());
          type && !isParameter(func, i))
        inputs += maxBytes(type, maxBatch, maxSeq);
    for (Type t : func.getResultTypes())
      outputs += maxBytes(cast<ShapedType>(t), maxBatch, maxSeq);

    os << "memory plan of @" << func.getName() << " (batch <= " << maxBatch
       << ", sequence <= " << maxSeq << ")\n";
    os << llvm::formatv("{0,6} {1,12} {2,12} {3,9}  {4,-22} {5,-16} {6}\n",
                        "op", "offset", "bytes", "live", "operation", "shape",
                        "where");
    DenseMap<Operation *, int64_t> positionOf =
        positions(func.getBody().front());
    for (Operation &op : func.getBody().front()) {
      int64_t index = positionOf.lookup(&op);
      if (auto slots = op.getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr)) {
        for (auto [result, slot] :
             llvm::zip(op.getResults(), slots.asArrayRef())) {
          auto type = cast<ShapedType>(result.getType());
          int64_t bytes = resultBytes(result, maxBatch, maxSeq);
          int64_t last = lastUse(result, positionOf);
          std::string where =
              slot >= 0         ? std::to_string(slot)
              : slot == kUnused ? "unused"
                                : "output " + std::to_string(outputIndex(slot));
          if (slot >= 0)
            unshared += alignTo(bytes);
          os << llvm::formatv(
              "{0,6} {1,12} {2,12} {3,4}-{4,-4}  {5,-22} {6,-16} {7}\n", index,
              where, bytes, index, last, op.getName().getStringRef(),
              shapeString(type), partName(op.getLoc()));
        }
      }
    }
    int64_t params = paramFloats * 4;
    bool training = isTrainStep(func.getName());
    int64_t peak =
        params + (training ? params : outputs) + inputs + workspace.getInt();
    os << "workspace: " << workspace.getInt() << " bytes ("
       << mib(workspace.getInt()) << "); without reuse " << unshared
       << " bytes (" << mib(unshared) << ")\n";
    os << "parameters: " << params << " bytes; batch: " << inputs << " bytes; "
       << (training ? "gradients" : "outputs") << ": "
       << (training ? params : outputs) << " bytes\n";
    os << "peak of one call: " << peak << " bytes (" << mib(peak) << ")\n\n";
  }
}
