//===- LapkOps.td - lapk dialect ops -----------------------*- tablegen -*-===//

#ifndef LAPK_OPS
#define LAPK_OPS

include "LapkDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lapk_CallOp : Lapk_Op<"call"> {
  let summary = "a call of a library kernel, checked against its signature";
  let description = [{
    Calls kernel `kernel` of runtime/kernels/Kernels.def. The verifier
    checks the arguments against the kernel's parameters, which the table
    derives from the C prototype: a `float *` takes an f32 buffer, an
    `int32_t *` an i32 buffer, a `const uint64_t *` an i64 buffer, `int64_t`
    an i64, `float` an f32, `int32_t` (and an enumeration) an i32. A buffer may be `lapk.null` where the
    kernel documents the pointer as nullable.

    ```mlir
    lapk.call "linear_forward"(%y, %x, %w, %b, %n, %in, %out)
      : memref<64xf32>, memref<32xf32>, memref<16xf32>, memref<0xf32>, i64, i64, i64
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<AnyType>:$args);
  let assemblyFormat = "$kernel `(` $args `)` attr-dict `:` type($args)";
  let hasVerifier = 1;
}

def Lapk_NullOp : Lapk_Op<"null", [Pure]> {
  let summary = "no buffer: a nullable kernel argument left out";
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Lapk_ProfileBeginOp : Lapk_Op<"profile_begin"> {
  let summary = "the start of the code of one lap op, timed by the profiler";
  let description = [{
    With `lapc --profile`, the code of every lap op sits between a
    `lapk.profile_begin` and a `lapk.profile_end` with the op's label
    ("lap.linear blocks.0.attn.qkv"); a target times what lies between.
  }];
  let arguments = (ins StrAttr:$label);
  let assemblyFormat = "$label attr-dict";
}

def Lapk_ProfileEndOp : Lapk_Op<"profile_end"> {
  let summary = "the end of the code of one lap op (see lapk.profile_begin)";
  let arguments = (ins StrAttr:$label);
  let assemblyFormat = "$label attr-dict";
}

#endif // LAPK_OPS
