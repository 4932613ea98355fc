// RUN: lap-opt %s --lap-lower-head-kinds --split-input-file | FileCheck %s

// A mixed layer: heads attn, attn, laplacian, laplacian.
// CHECK-LABEL: func @mixed_layer
func.func @mixed_layer(%q: tensor<?x?x4x16xf32>) -> tensor<?x?x4x16xf32> {
  // CHECK: lap.attention %{{.*}}, %{{.*}}, %{{.*}} {alpha = array<f32: 1.000000e+00, 1.000000e+00, -1.000000e+00, -1.000000e+00>, beta = array<f32: 0.000000e+00, 0.000000e+00, 1.000000e+00, 1.000000e+00>, causal, scale = 2.500000e-01 : f32}
  // CHECK-NOT: kinds
  %o = lap.attention %q, %q, %q {causal, scale = 0.25 : f32, kinds = ["attn", "attn", "laplacian", "laplacian"]}
       : tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32> -> tensor<?x?x4x16xf32>
  return %o : tensor<?x?x4x16xf32>
}

// -----

// An all-Laplacian layer, non-causal (vit).
// CHECK-LABEL: func @all_laplacian
func.func @all_laplacian(%q: tensor<?x50x2x16xf32>) -> tensor<?x50x2x16xf32> {
  // CHECK: lap.attention {{.*}} {alpha = array<f32: -1.000000e+00, -1.000000e+00>, beta = array<f32: 1.000000e+00, 1.000000e+00>, scale = 2.500000e-01 : f32}
  %o = lap.attention %q, %q, %q {scale = 0.25 : f32, kinds = ["laplacian", "laplacian"]}
       : tensor<?x50x2x16xf32>, tensor<?x50x2x16xf32>, tensor<?x50x2x16xf32> -> tensor<?x50x2x16xf32>
  return %o : tensor<?x50x2x16xf32>
}

// -----

// An all-attn layer stays plain attention: no coefficients at all.
// CHECK-LABEL: func @all_attn
func.func @all_attn(%q: tensor<?x?x2x16xf32>) -> tensor<?x?x2x16xf32> {
  // CHECK: lap.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 2.500000e-01 : f32} :
  %o = lap.attention %q, %q, %q {causal, scale = 0.25 : f32, kinds = ["attn", "attn"]}
       : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// GQA: four query heads over two kv heads; the kinds follow the query heads.
// CHECK-LABEL: func @gqa
func.func @gqa(%q: tensor<?x?x4x16xf32>, %kv: tensor<?x?x2x16xf32>) -> tensor<?x?x4x16xf32> {
  // CHECK: lap.attention {{.*}} {alpha = array<f32: 1.000000e+00, 1.000000e+00, 1.000000e+00, -1.000000e+00>, beta = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00>, causal
  %o = lap.attention %q, %kv, %kv {causal, scale = 0.25 : f32, kinds = ["attn", "attn", "attn", "laplacian"]}
       : tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x4x16xf32>
  return %o : tensor<?x?x4x16xf32>
}

// -----

// Coefficients already lowered are left alone.
// CHECK-LABEL: func @already_lowered
func.func @already_lowered(%q: tensor<?x?x1x16xf32>) -> tensor<?x?x1x16xf32> {
  // CHECK: lap.attention {{.*}} {alpha = array<f32: 5.000000e-01>, beta = array<f32: 5.000000e-01>, scale
  %o = lap.attention %q, %q, %q {scale = 0.25 : f32, alpha = array<f32: 0.5>, beta = array<f32: 0.5>}
       : tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32> -> tensor<?x?x1x16xf32>
  return %o : tensor<?x?x1x16xf32>
}

// -----

// Cached attention (decoding) gets the same coefficients.
// CHECK-LABEL: func @cached
func.func @cached(%q: tensor<?x?x2x16xf32>, %first: i64) -> tensor<?x?x2x16xf32> {
  // CHECK: lap.cached_attention {{.*}} {alpha = array<f32: 1.000000e+00, -1.000000e+00>, beta = array<f32: 0.000000e+00, 1.000000e+00>, scale = 2.500000e-01 : f32}
  %o = lap.cached_attention %q, %q, %q into %q, %q at %first {scale = 0.25 : f32, kinds = ["attn", "laplacian"]}
       : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}
