#include "runtime/model/LoadedModel.h"
#include <gtest/gtest.h>
