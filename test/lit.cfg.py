# lit configuration for lap: FileCheck tests of everything lapc and lap-opt
# print, and --verify-diagnostics tests of bad specs and bad IR.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "lap"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".yaml", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lap_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "Inputs", "unit", "fuzz"]

config.substitutions.append(("%specs", os.path.join(config.lap_src_root, "specs")))
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["lapc", "lap-opt", "lapc-run", "lap-comm-tests",
                                   "lap-data-parallel-tests", "lap-gemm-bench"],
                                  [config.lap_tools_dir])

# MLIR's runtime for tests that run code with mlir-cpu-runner.
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(os.path.dirname(config.llvm_tools_dir), "lib",
                  "libmlir_c_runner_utils.so")))

# Tests that build CUDA libraries need the toolkit (ptxas, the CUDA
# libraries); those that only print GPU code run everywhere.
if config.lap_have_cuda:
    config.available_features.add("cuda")

# Data-parallel tests run ranks on this machine: more ranks than cores is
# fine (--oversubscribe), CI runs as root, and after mpirun's SIGTERM on
# Ctrl-C the ranks get 10 s to write their checkpoint before SIGKILL.
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
config.substitutions.append(
    ("%mpirun", "mpirun --oversubscribe --mca odls_base_sigkill_timeout 10"))

# Tests of a full disk mount a small tmpfs in a user and mount namespace of
# their own (unshare -rm), where the kernel allows one; elsewhere lit
# reports them unsupported.
import subprocess
try:
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    if probe.returncode == 0:
        config.available_features.add("tmpfs-namespace")
except (OSError, subprocess.TimeoutExpired):
    pass
