// lapk.call is checked against the kernel's prototype in Kernels.def.
// RUN: lap-opt %s --split-input-file --verify-diagnostics

func.func @unknown(%y: memref<4xf32>) {
  // expected-error @+1 {{calls 'linear_fwd', which is not a kernel of Kernels.def}}
  lapk.call "linear_fwd"(%y) : memref<4xf32>
  return
}

// -----

func.func @arity(%y: memref<4xf32>, %n: i64) {
  // expected-error @+1 {{passes 2 arguments to 'l2_normalize_forward', which takes 5}}
  lapk.call "l2_normalize_forward"(%y, %n) : memref<4xf32>, i64
  return
}

// -----

func.func @scalar_for_buffer(%y: memref<4xf32>, %n: i64, %e: f32) {
  // expected-error @+1 {{argument 1 of 'l2_normalize_forward' must be an f32 buffer, not 'i64'}}
  lapk.call "l2_normalize_forward"(%y, %n, %n, %n, %e) : memref<4xf32>, i64, i64, i64, f32
  return
}

// -----

func.func @index_buffer(%y: memref<4xf32>, %t: memref<4xf32>, %n: i64) {
  // Embedding indices are int32.
  // expected-error @+1 {{argument 2 of 'embedding_forward' must be an i32 buffer, not 'memref<4xf32>'}}
  lapk.call "embedding_forward"(%y, %y, %t, %n, %n, %n) : memref<4xf32>, memref<4xf32>, memref<4xf32>, i64, i64, i64
  return
}

// -----

func.func @enum_width(%y: memref<4xf32>, %n: i64, %t: f32) {
  // The loss kind (KernelEnums.h) is an i32.
  // expected-error @+1 {{argument 5 of 'row_loss_forward' must be an i32, not 'i64'}}
  lapk.call "row_loss_forward"(%y, %y, %y, %n, %n, %n, %t) : memref<4xf32>, memref<4xf32>, memref<4xf32>, i64, i64, i64, f32
  return
}
