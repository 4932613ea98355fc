#include "runtime/kernels/cpu/Kernels.h"
#include <gtest/gtest.h>
