// RUN: lap-opt %s --lap-plan-memory --verify-diagnostics
// RUN: lap-opt %S/Inputs/beyond-2-48.mlir --lap-plan-memory="max-batch=1073741824 max-seq=1073741824" --verify-diagnostics

// Without the compiled maxima, dynamic sizes cannot be planned.
// expected-error @+1 {{dynamic shapes need max-batch and max-seq}}
func.func @unbounded(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %a = lap.relu2 %x : tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

