//===- Passes.td - lap dialect passes ----------------------*- tablegen -*-===//

#ifndef LAP_TRANSFORMS_PASSES
#define LAP_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def LapLowerHeadKinds : Pass<"lap-lower-head-kinds"> {
  let summary = "Turn head kinds into per-head (alpha, beta) coefficients";
  let description = [{
    Replaces the `kinds` of every `lap.attention` by the coefficient arrays
    `alpha` and `beta` of O_h = alpha_h P V_h + beta_h V_h, read from the
    table of head kinds, so that one fused kernel serves every head of the
    layer whatever the mix. A layer whose heads are all `attn` becomes plain
    attention (no coefficients), which code generation can treat as such.

    Before:
    ```mlir
    %o = lap.attention %q, %k, %v {causal, scale = 0.125 : f32,
           kinds = ["attn", "laplacian"]} : ...
    %p = lap.attention %q, %k, %v {causal, scale = 0.125 : f32,
           kinds = ["attn", "attn"]} : ...
    ```
    After:
    ```mlir
    %o = lap.attention %q, %k, %v {alpha = array<f32: 1.0, -1.0>,
           beta = array<f32: 0.0, 1.0>, causal, scale = 0.125 : f32} : ...
    %p = lap.attention %q, %k, %v {causal, scale = 0.125 : f32} : ...
    ```
  }];
}

#endif // LAP_TRANSFORMS_PASSES
