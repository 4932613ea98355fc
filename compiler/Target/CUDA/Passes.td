//===- Passes.td - The CUDA target --------------------------*- tablegen -*-===//

#ifndef LAP_TARGET_CUDA_PASSES
#define LAP_TARGET_CUDA_PASSES

include "mlir/Pass/PassBase.td"

def LapkToCUDA : Pass<"lapk-to-cuda", "::mlir::ModuleOp"> {
  let summary = "Lower the kernel form to CUDA: generated loops as GPU kernels, lap_cuda_* calls";
  let description = [{
    The CUDA target's part of code generation, after `--lap-to-kernels`:

    - each `scf.parallel` is outlined into a kernel, `gpu.func
      @lap_gen_f_loop_N(values..., n) kernel` in `gpu.module @lap_kernels`,
      one thread per iteration (iterations past n do nothing), several
      for an elementwise loop (ThreadIterations.h), or one warp or one
      block per iteration where the iteration walks a row
      (IterationLanes.h); the host enqueues it on the call's stream
      through `lap_cuda_launch(name, n, lanes, frame, slots)`, the values
      it uses in an on-stack frame of 8-byte slots, as kernel parameters. What the kernel form does with memory
      outside its loops (the loss gradient's seed, learned head
      coefficients) becomes a kernel of one iteration: the host touches no
      device memory, and a value read from it that the host would need is
      an error.
    - constants (`memref.global`) live in the GPU module; the host passes
      them to kernels at their device address (`lap_cuda_symbol`).
    - `lapk.call "k"` becomes a call of `lap_cuda_k` (runtime/kernels/cuda/
      Kernels.h), declared from Kernels.def.
    - each entry gets the ABI signature of runtime/include/lap/model.h, as
      on the CPU; its pointers are device memory.
    - tanh, erf and exp become the same polynomials as on the CPU, so that
      the two targets compute the same function.

    The GPU module is then lowered to NVVM and a binary (PTX, or a fatbin
    of the sm_90 cubin and the PTX); `--lap-embed-gpu-binary` makes the binary a global of the
    host code (`lap_gen_cuda_image`).
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::gpu::GPUDialect",
    "::mlir::NVVM::NVVMDialect",
  ];
}

def LapEmbedGpuBinary : Pass<"lap-embed-gpu-binary", "::mlir::ModuleOp"> {
  let summary = "Make the GPU module's binary a global of the host code";
  let description = [{
    Replaces `gpu.binary @lap_kernels` (one object: the fatbin of the
    cubin ptxas made and the PTX)
    by the LLVM globals `lap_gen_cuda_image` (its bytes),
    `lap_gen_cuda_image_size`, which the runtime loads
    (runtime/abi/CudaLaunch.cpp), and `lap_gen_cuda_arch`, the
    architecture it was compiled for ("sm_90", NUL-terminated).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LapCudaKernelsOnHost : Pass<"lap-cuda-kernels-on-host", "::mlir::ModuleOp"> {
  let summary = "For tests: the GPU kernels as host functions that run their grid";
  let description = [{
    After `--lapk-to-cuda`, so that tests run the generated kernels on the
    CPU: each `gpu.func` of `gpu.module @lap_kernels` becomes `func.func`
    of the same name and parameters and a block count, which runs that
    many blocks of the runtime's 256 threads (runtime/abi/CudaLaunch.cpp)
    one thread after another. Only kernels whose threads need not run
    together qualify (no barrier, shuffle or other GPU op than the block
    and thread indices); another is an error. The host code that launches
    them (`lap_gen_*`, which calls the runtime) and the GPU module are
    dropped; a declaration of a kernel's name is replaced by it.
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
  ];
}

#endif // LAP_TARGET_CUDA_PASSES
