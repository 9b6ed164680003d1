// glasstorch: the same subset as <torch/extension.h> (see there).
#pragma once
#include <torch/extension.h>
