// Shape checks for every op kind: the contract of ops.h as code. A failure is a bug in the
// builder that emitted the op, so it stops the process with the op's name and the numbers.
#pragma once

#include <vector>

#include "graph/batch.h"
#include "graph/ops.h"
#include "graph/state.h"

namespace zinc::graph {

struct Buffer;
void validate_op(const Op& op, const std::vector<Buffer>& buffers, const BatchShape& shape, const StateLayout& state);

}  // namespace zinc::graph
