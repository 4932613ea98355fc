// RUN: lap-opt %s --lap-plan-memory="max-batch=2 max-seq=8" --split-input-file --verify-diagnostics | FileCheck %s

// Offsets by liveness, at B=2, T=8 (512 bytes each). A generated loop
// writes each element after reading it, so a result takes the bytes of an
// operand of its shape that dies there: %a dies at the gelu, %b at the
// relu2, all in one buffer. The returned value goes straight to output 0
// (-2).
// CHECK-LABEL: func @chain
// CHECK-SAME: lap.max_batch = 2 : i64, lap.max_seq = 8 : i64, lap.workspace_bytes = 512 : i64
// CHECK: lap.relu2 {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.gelu {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.relu2 {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.add {{.*}}lap.offsets = array<i64: -2>
func.func @chain(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %a = lap.relu2 %x : tensor<?x?x8xf32>
  %b = lap.gelu %a : tensor<?x?x8xf32>
  %c = lap.relu2 %b : tensor<?x?x8xf32>
  %d = lap.add %c, %x : tensor<?x?x8xf32>
  return %d : tensor<?x?x8xf32>
}

// -----

// Kernel calls never write over their operands (the linear), and a loop
// only over an operand that no later op reads: the gelu gets other bytes
// than %y, which the add reads after it; the add writes over %g. Of a
// lap.fusion, the output written last (%n: the norm comes after the add)
// takes the bytes of the input that dies there (%p); the other output
// gets its own.
// CHECK-LABEL: func @not_in_place
// CHECK-SAME: lap.workspace_bytes = 1024
// CHECK: lap.relu2 {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.linear {{.*}}lap.offsets = array<i64: 512>
// CHECK: lap.gelu {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.add {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.fusion {{.*}}lap.offsets = array<i64: 512, 0>
// CHECK: lap.add {{.*}}lap.offsets = array<i64: -2>
func.func @not_in_place(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %a = lap.relu2 %x : tensor<?x?x8xf32>
  %y = lap.linear %a, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %g = lap.gelu %y : tensor<?x?x8xf32>
  %p = lap.add %g, %y : tensor<?x?x8xf32>
  %h, %n = lap.fusion %x, %p : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  ^bb0(%u: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>):
    %s = lap.add %u, %v : tensor<?x?x8xf32>
    %r = lap.rms_norm %s {eps = 1.0e-6 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    lap.yield %s, %r : tensor<?x?x8xf32>, tensor<?x?x8xf32>
  }
  %out = lap.add %h, %n : tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}

// -----

// Attention keeps its row logsumexp [B, H, T] after its output: 2*8*2*4*4
// bytes of O plus 2*2*8*4 of lse, in one slot. An unused weight gradient of
// a norm gets no bytes (-1); the input gradient does.
// CHECK-LABEL: func @scratch
// CHECK-SAME: lap.workspace_bytes = 1152
// CHECK: lap.attention {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.rms_norm_grad {{.*}}lap.offsets = array<i64: 640, -1>
func.func @scratch(%q: tensor<?x?x2x4xf32>, %dy: tensor<?x?x2x4xf32>) -> tensor<?x?x2x4xf32> {
  %o = lap.attention %q, %q, %q {causal, scale = 0.5 : f32} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x4xf32>
  %dx, %dw = lap.rms_norm_grad %dy, %o {eps = 1.0e-5 : f32} : tensor<?x?x2x4xf32>, tensor<4xf32>
  %r = lap.add %dx, %o : tensor<?x?x2x4xf32>
  return %r : tensor<?x?x2x4xf32>
}

// -----

// Layout-only results share their operand's bytes: merge_heads, and
// dropout outside a training step; the shared bytes stay live until the
// last use of any of them (the add reads %d), so the gelu in between gets
// other bytes. A merge_heads of an argument, returned, goes to its output.
// CHECK-LABEL: func @layout_only
// CHECK-SAME: lap.workspace_bytes = 1024
// CHECK: lap.relu2 {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.merge_heads {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.dropout {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.gelu {{.*}}lap.offsets = array<i64: 512>
// CHECK: lap.add {{.*}}lap.offsets = array<i64: -2>
// CHECK: lap.merge_heads {{.*}}lap.offsets = array<i64: -3>
func.func @layout_only(%x: tensor<?x?x2x4xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %o = lap.relu2 %x : tensor<?x?x2x4xf32>
  %m = lap.merge_heads %o : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
  %d = lap.dropout %m {rate = 0.1 : f32, key = 0} : tensor<?x?x8xf32>
  %g = lap.gelu %d : tensor<?x?x8xf32>
  %r = lap.add %g, %d : tensor<?x?x8xf32>
  %out = lap.merge_heads %x : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
  return %r, %out : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// In a training step dropout draws a mask: its own bytes.
// CHECK-LABEL: func @train_step
// CHECK: lap.relu2 {{.*}}lap.offsets = array<i64: 0>
// CHECK: lap.dropout {{.*}}lap.offsets = array<i64: 512>
func.func @train_step(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %o = lap.relu2 %x : tensor<?x?x8xf32>
  %d = lap.dropout %o {rate = 0.1 : f32, key = 0} : tensor<?x?x8xf32>
  %r = lap.add %d, %o : tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// A column sum carries its partial sums [64, C] after it in its slot
// (32 + 2048 bytes, aligned to 2112), so even returned it lives in the
// workspace, to be copied to its output.
// CHECK-LABEL: func @column_sum_scratch
// CHECK-SAME: lap.workspace_bytes = 2624
// CHECK: lap.relu2 {{.*}}lap.offsets = array<i64: 2112>
// CHECK: lap.column_sum {{.*}}lap.offsets = array<i64: 0>
func.func @column_sum_scratch(%x: tensor<?x?x8xf32>) -> tensor<8xf32> {
  %a = lap.relu2 %x : tensor<?x?x8xf32>
  %s = lap.column_sum %a : tensor<?x?x8xf32> -> tensor<8xf32>
  return %s : tensor<8xf32>
}
