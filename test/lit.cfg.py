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
llvm_config.add_tool_substitutions(["lapc", "lap-opt", "lapc-run"], [config.lap_tools_dir])
