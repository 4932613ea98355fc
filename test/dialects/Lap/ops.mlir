// Every op parses, verifies and prints back to the same text, in custom and
// generic form.
// RUN: lap-opt %s | lap-opt | FileCheck %s
// RUN: lap-opt %s --mlir-print-op-generic | lap-opt | FileCheck %s

// CHECK-LABEL: func @mixed_layer_attention
func.func @mixed_layer_attention(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
                                 %v: tensor<?x?x4x64xf32>) -> tensor<?x?x4x64xf32> {
  // CHECK: %[[O:.*]] = lap.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, kinds = ["attn", "attn", "laplacian", "laplacian"], scale = 1.250000e-01 : f32} : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32> -> tensor<?x?x4x64xf32>
  %o = lap.attention %q, %k, %v {causal, scale = 0.125 : f32,
         kinds = ["attn", "attn", "laplacian", "laplacian"]}
       : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32> -> tensor<?x?x4x64xf32>
  // CHECK: return %[[O]]
  return %o : tensor<?x?x4x64xf32>
}

// A sliding window: query t sees keys t - 8 < s <= t.
// CHECK-LABEL: func @sliding_window
func.func @sliding_window(%q: tensor<?x?x2x16xf32>) -> tensor<?x?x2x16xf32> {
  // CHECK: lap.attention {{.*}} {causal, kinds = ["attn", "laplacian"], scale = 2.500000e-01 : f32, window = 8 : i64}
  %o = lap.attention %q, %q, %q {causal, scale = 0.25 : f32,
         kinds = ["attn", "laplacian"], window = 8}
       : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// Documents: each token's document start, which attention confines its
// keys to.
// CHECK-LABEL: func @packed_documents
func.func @packed_documents(%q: tensor<?x?x2x16xf32>, %tokens: tensor<?x?xi32>) -> tensor<?x?x2x16xf32> {
  // CHECK: %[[S:.*]] = lap.document_starts %{{.*}} {bos = 255 : i64} : tensor<?x?xi32>
  %s = lap.document_starts %tokens {bos = 255} : tensor<?x?xi32>
  // CHECK: lap.attention {{.*}} starts %[[S]] {causal, kinds = ["attn", "laplacian"], scale = 2.500000e-01 : f32} : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> starts tensor<?x?xi32> -> tensor<?x?x2x16xf32>
  %o = lap.attention %q, %q, %q starts %s {causal, scale = 0.25 : f32,
         kinds = ["attn", "laplacian"]}
       : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> starts tensor<?x?xi32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// Padding: each sequence's key count, under full or causal attention, and
// its gradient carries it.
// CHECK-LABEL: func @padded_keys
func.func @padded_keys(%q: tensor<?x?x2x16xf32>, %n: tensor<?xi32>, %s: tensor<?x?xi32>) -> tensor<?x?x2x16xf32> {
  // CHECK: lap.attention {{.*}} lengths %{{.*}} {kinds = ["attn", "laplacian"], scale = 2.500000e-01 : f32} : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> lengths tensor<?xi32> -> tensor<?x?x2x16xf32>
  %o = lap.attention %q, %q, %q lengths %n {scale = 0.25 : f32,
         kinds = ["attn", "laplacian"]}
       : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> lengths tensor<?xi32> -> tensor<?x?x2x16xf32>
  // CHECK: lap.attention {{.*}} starts %{{.*}} lengths %{{.*}} {causal, scale = 2.500000e-01 : f32} : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> starts tensor<?x?xi32> lengths tensor<?xi32> -> tensor<?x?x2x16xf32>
  %c = lap.attention %o, %o, %o starts %s lengths %n {causal, scale = 0.25 : f32}
       : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> starts tensor<?x?xi32> lengths tensor<?xi32> -> tensor<?x?x2x16xf32>
  // CHECK: lap.attention_grad {{.*}} lengths %{{.*}} {causal, scale = 2.500000e-01 : f32} : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> lengths tensor<?xi32>
  %dq, %dk, %dv = lap.attention_grad %c, %o, %o, %o, %c lengths %n {causal, scale = 0.25 : f32}
       : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> lengths tensor<?xi32>
  return %dq : tensor<?x?x2x16xf32>
}

// CHECK-LABEL: func @coefficients_and_gqa
func.func @coefficients_and_gqa(%q: tensor<2x16x8x32xf32>, %kv: tensor<2x16x2x32xf32>) -> tensor<2x16x8x32xf32> {
  // CHECK: lap.attention {{.*}} {alpha = array<f32: 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, -1.000000e+00, -1.000000e+00, -1.000000e+00, -1.000000e+00>, beta = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00>, scale
  %o = lap.attention %q, %kv, %kv {scale = 0.17677669 : f32,
         alpha = array<f32: 1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0>,
         beta = array<f32: 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0>}
       : tensor<2x16x8x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32> -> tensor<2x16x8x32xf32>
  return %o : tensor<2x16x8x32xf32>
}

// CHECK-LABEL: func @plain_cross_attention
func.func @plain_cross_attention(%q: tensor<?x1x6x64xf32>, %kv: tensor<?x?x6x64xf32>) -> tensor<?x1x6x64xf32> {
  // CHECK: lap.attention {{.*}} {cross, scale = 1.250000e-01 : f32}
  %o = lap.attention %q, %kv, %kv {cross, scale = 0.125 : f32}
       : tensor<?x1x6x64xf32>, tensor<?x?x6x64xf32>, tensor<?x?x6x64xf32> -> tensor<?x1x6x64xf32>
  return %o : tensor<?x1x6x64xf32>
}

// CHECK-LABEL: func @gpt_block_pieces
func.func @gpt_block_pieces(%ids: tensor<?x?xi32>, %table: tensor<256x64xf32>,
                            %w: tensor<192x64xf32>, %b: tensor<192xf32>,
                            %g: tensor<64xf32>, %q: tensor<?x?x4x16xf32>) -> tensor<f32> {
  // CHECK: %[[X:.*]] = lap.embedding %{{.*}}[%{{.*}}] : tensor<256x64xf32>, tensor<?x?xi32> -> tensor<?x?x64xf32>
  %x = lap.embedding %table[%ids] : tensor<256x64xf32>, tensor<?x?xi32> -> tensor<?x?x64xf32>
  // CHECK: lap.rms_norm %[[X]] {eps = 9.99999997E-7 : f32} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %n = lap.rms_norm %x {eps = 1.0e-6 : f32} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: lap.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} {eps = 9.99999974E-6 : f32}
  %ln = lap.layer_norm %n weight %g bias %g {eps = 1.0e-5 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: lap.layer_norm %{{.*}} {eps
  %ln2 = lap.layer_norm %ln {eps = 1.0e-5 : f32} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: lap.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  %h = lap.linear %ln2, %w, %b : (tensor<?x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  // CHECK: lap.relu2 %{{.*}} : tensor<?x?x192xf32>
  %a = lap.relu2 %h : tensor<?x?x192xf32>
  // CHECK: lap.linear_gelu %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> (tensor<?x?x192xf32>, tensor<?x?x192xf32>)
  %pre, %g1 = lap.linear_gelu %ln2, %w, %b : (tensor<?x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> (tensor<?x?x192xf32>, tensor<?x?x192xf32>)
  // CHECK: lap.gelu_tanh
  %a2 = lap.gelu_tanh %a : tensor<?x?x192xf32>
  // CHECK: lap.gelu
  %a3 = lap.gelu %a2 : tensor<?x?x192xf32>
  // CHECK: lap.softcap %{{.*}} {cap = 1.500000e+01 : f32}
  %c = lap.softcap %a3 {cap = 15.0 : f32} : tensor<?x?x192xf32>
  // CHECK: lap.add
  %r = lap.add %x, %ln2 : tensor<?x?x64xf32>
  // CHECK: lap.dropout %{{.*}} {key = 0 : i64, rate = 1.000000e-01 : f32} : tensor<?x?x64xf32>
  %dr = lap.dropout %r {rate = 0.1 : f32, key = 0} : tensor<?x?x64xf32>
  // CHECK: lap.drop_path %{{.*}} {key = 1 : i64, rate = 2.000000e-01 : f32} : tensor<?x?x64xf32>
  %dp = lap.drop_path %dr {rate = 0.2 : f32, key = 1} : tensor<?x?x64xf32>
  // CHECK: lap.rope %{{.*}} {base = 1.000000e+04 : f32} : tensor<?x?x4x16xf32>
  %rq = lap.rope %q {base = 10000.0 : f32} : tensor<?x?x4x16xf32>
  // CHECK: lap.cross_entropy %{{.*}}, %{{.*}} {label_smoothing = 1.000000e-01 : f32} : tensor<?x?x192xf32>, tensor<?x?xi32> -> tensor<f32>
  %loss = lap.cross_entropy %c, %ids {label_smoothing = 0.1 : f32} : tensor<?x?x192xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func @heads_and_positions
func.func @heads_and_positions(%x: tensor<?x?x128xf32>, %wpe: tensor<32x64xf32>,
                               %e: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = lap.split_heads %{{.*}} : tensor<?x?x128xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>
  %q, %k, %v = lap.split_heads %x : tensor<?x?x128xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>
  // CHECK: lap.merge_heads %{{.*}} : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  %m = lap.merge_heads %q : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  // CHECK: lap.add_positions %{{.*}}, %{{.*}} {offset = 1 : i64} : tensor<?x?x64xf32>, tensor<32x64xf32>
  %p = lap.add_positions %m, %wpe {offset = 1} : tensor<?x?x64xf32>, tensor<32x64xf32>
  return %p : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @image_pieces
func.func @image_pieces(%img: tensor<?x1x28x28xf32>, %cls: tensor<1x16xf32>, %g: tensor<16xf32>,
                        %v: tensor<32x16xf32>, %m: tensor<32x1xf32>, %t: tensor<?x32xf32>) -> tensor<f32> {
  // CHECK: lap.patchify %{{.*}} {patch = 7 : i64} : tensor<?x1x28x28xf32> -> tensor<?x16x49xf32>
  %p = lap.patchify %img {patch = 7} : tensor<?x1x28x28xf32> -> tensor<?x16x49xf32>
  %w = arith.constant dense<0.0> : tensor<16x49xf32>
  %x = lap.linear %p, %w : (tensor<?x16x49xf32>, tensor<16x49xf32>) -> tensor<?x16x16xf32>
  // CHECK: lap.prepend_tokens %{{.*}}, %{{.*}} : tensor<?x16x16xf32>, tensor<1x16xf32> -> tensor<?x17x16xf32>
  %y = lap.prepend_tokens %x, %cls : tensor<?x16x16xf32>, tensor<1x16xf32> -> tensor<?x17x16xf32>
  // CHECK: lap.layer_scale %{{.*}}, %{{.*}} : tensor<?x17x16xf32>, tensor<16xf32>
  %s = lap.layer_scale %y, %g : tensor<?x17x16xf32>, tensor<16xf32>
  // CHECK: lap.take_token %{{.*}} {index = 0 : i64} : tensor<?x17x16xf32> -> tensor<?x16xf32>
  %c = lap.take_token %s {index = 0} : tensor<?x17x16xf32> -> tensor<?x16xf32>
  // CHECK: lap.mean_tokens %{{.*}} {skip = 1 : i64} : tensor<?x17x16xf32> -> tensor<?x16xf32>
  %a = lap.mean_tokens %s {skip = 1} : tensor<?x17x16xf32> -> tensor<?x16xf32>
  // CHECK: lap.l2_normalize %{{.*}} {eps = 9.99999996E-13 : f32} : tensor<?x16xf32>
  %z = lap.l2_normalize %c {eps = 1.0e-12 : f32} : tensor<?x16xf32>
  // CHECK: lap.weight_norm %{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<32x1xf32>
  %wn = lap.weight_norm %v, %m : tensor<32x16xf32>, tensor<32x1xf32>
  %l = lap.linear %z, %wn : (tensor<?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
  // CHECK: lap.residual_add %{{.*}}, %{{.*}} gamma %{{.*}} {drop_rate = 1.000000e-01 : f32, key = 2 : i64} : tensor<?x17x16xf32>, tensor<16xf32>
  %res = lap.residual_add %y, %s gamma %g {drop_rate = 0.1 : f32, key = 2} : tensor<?x17x16xf32>, tensor<16xf32>
  // CHECK: lap.residual_add %{{.*}}, %{{.*}} {drop_rate = 0.000000e+00 : f32, key = 0 : i64} : tensor<?x17x16xf32>
  %res2 = lap.residual_add %res, %s {drop_rate = 0.0 : f32, key = 0} : tensor<?x17x16xf32>
  // CHECK: lap.soft_cross_entropy %{{.*}}, %{{.*}} : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  %ce = lap.soft_cross_entropy %l, %t : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  // CHECK: lap.bce_with_logits %{{.*}}, %{{.*}} : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  %bce = lap.bce_with_logits %l, %t : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  // CHECK: lap.dino_loss %{{.*}}, %{{.*}} {temperature = 1.000000e-01 : f32} : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  %dino = lap.dino_loss %l, %t {temperature = 0.1 : f32} : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  return %dino : tensor<f32>
}

// Decoding: positions from a run-time first position, attention against
// key/value caches.
// CHECK-LABEL: func @decoding
func.func @decoding(%x: tensor<?x?x64xf32>, %wpe: tensor<32x64xf32>, %q: tensor<?x?x4x16xf32>,
                    %kv: tensor<?x?x2x16xf32>, %kc: tensor<?x?x2x16xf32>,
                    %vc: tensor<?x?x2x16xf32>, %first: i64) -> tensor<?x?x4x16xf32> {
  // CHECK: lap.add_positions %{{.*}}, %{{.*}} at %{{.*}} : tensor<?x?x64xf32>, tensor<32x64xf32>
  %p = lap.add_positions %x, %wpe at %first : tensor<?x?x64xf32>, tensor<32x64xf32>
  // CHECK: lap.rope %{{.*}} at %{{.*}} {base = 1.000000e+04 : f32} : tensor<?x?x4x16xf32>
  %rq = lap.rope %q at %first {base = 10000.0 : f32} : tensor<?x?x4x16xf32>
  // CHECK: lap.cached_attention %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}} at %{{.*}} {kinds = ["attn", "attn", "laplacian", "laplacian"], scale = 2.500000e-01 : f32} : tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x4x16xf32>
  %o = lap.cached_attention %rq, %kv, %kv into %kc, %vc at %first
         {scale = 0.25 : f32, kinds = ["attn", "attn", "laplacian", "laplacian"]}
       : tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x4x16xf32>
  return %o : tensor<?x?x4x16xf32>
}

// bf16 ops, with an f32 loss.
// CHECK-LABEL: func @bf16_block
func.func @bf16_block(%x: tensor<?x?x64xbf16>, %w: tensor<128x64xbf16>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // CHECK: lap.linear {{.*}} -> tensor<?x?x128xbf16>
  %h = lap.linear %x, %w : (tensor<?x?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x?x128xbf16>
  // CHECK: lap.cross_entropy {{.*}} : tensor<?x?x128xbf16>, tensor<?x?xi32> -> tensor<f32>
  %loss = lap.cross_entropy %h, %t : tensor<?x?x128xbf16>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func @fusion
func.func @fusion(%x: tensor<?x?x64xf32>, %p: tensor<?x?x64xf32>, %w: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: %{{.*}}:2 = lap.fusion %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: lap.rms_norm %{{.*}} weight
  // CHECK: lap.yield %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %h, %n = lap.fusion %x, %p, %w : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  ^bb0(%a: tensor<?x?x64xf32>, %b: tensor<?x?x64xf32>, %g: tensor<64xf32>):
    %s = lap.add %a, %b : tensor<?x?x64xf32>
    %r = lap.rms_norm %s weight %g {eps = 1.0e-06 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    lap.yield %s, %r : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  }
  return %h, %n : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func @add_bias
func.func @add_bias(%x: tensor<?x50x64xf32>, %b: tensor<64xf32>) -> tensor<?x50x64xf32> {
  // CHECK: lap.add_bias %{{.*}}, %{{.*}} : tensor<?x50x64xf32>, tensor<64xf32>
  %y = lap.add_bias %x, %b : tensor<?x50x64xf32>, tensor<64xf32>
  return %y : tensor<?x50x64xf32>
}

// CHECK-LABEL: func @linear_heads
func.func @linear_heads(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x8xf32>) {
  // CHECK: lap.linear_heads %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>)
  %q, %k, %v = lap.linear_heads %x, %w, %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>)
  // CHECK: lap.linear_heads_grad %{{.*}} : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  %dx, %dw, %db = lap.linear_heads_grad %q, %k, %v, %x, %w : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %q, %dx : tensor<?x?x2x4xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func @column_sum
func.func @column_sum(%x: tensor<?x?x64xf32>) -> tensor<64xf32> {
  // CHECK: lap.column_sum %{{.*}} : tensor<?x?x64xf32> -> tensor<64xf32>
  %s = lap.column_sum %x : tensor<?x?x64xf32> -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// CHECK-LABEL: func @interpolated_positions
func.func @interpolated_positions(%pos: tensor<50x32xf32>, %d: tensor<10x32xf32>) -> (tensor<10x32xf32>, tensor<50x32xf32>) {
  // CHECK: lap.interpolate_positions %{{.*}} {keep = 1 : i64} : tensor<50x32xf32> -> tensor<10x32xf32>
  %p = lap.interpolate_positions %pos {keep = 1} : tensor<50x32xf32> -> tensor<10x32xf32>
  // CHECK: lap.interpolate_positions_grad %{{.*}} {keep = 1 : i64} : tensor<10x32xf32> -> tensor<50x32xf32>
  %g = lap.interpolate_positions_grad %d {keep = 1} : tensor<10x32xf32> -> tensor<50x32xf32>
  return %p, %g : tensor<10x32xf32>, tensor<50x32xf32>
}

// CHECK-LABEL: func @convert
func.func @convert(%p: tensor<4x8xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // CHECK: lap.convert %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %w = lap.convert %p : tensor<4x8xf32> to tensor<4x8xbf16>
  // A fusion holding a conversion reads and yields both precisions.
  // CHECK: lap.fusion %{{.*}} : (tensor<?x?x8xf32>) -> (tensor<?x?x8xbf16>, tensor<?x?x8xf32>)
  %b, %r = lap.fusion %x : (tensor<?x?x8xf32>) -> (tensor<?x?x8xbf16>, tensor<?x?x8xf32>) {
  ^bb0(%a: tensor<?x?x8xf32>):
    %h = lap.convert %a : tensor<?x?x8xf32> to tensor<?x?x8xbf16>
    %n = lap.rms_norm %h {eps = 1.0e-06 : f32} : (tensor<?x?x8xbf16>) -> tensor<?x?x8xbf16>
    %o = lap.convert %n : tensor<?x?x8xbf16> to tensor<?x?x8xf32>
    lap.yield %h, %o : tensor<?x?x8xbf16>, tensor<?x?x8xf32>
  }
  return %r : tensor<?x?x8xf32>
}
