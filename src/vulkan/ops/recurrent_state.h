// Recurrent state (conv and delta-net state of the hybrid models) on the device: every slot in
// one buffer with the layout of kv::Cache's state (slot s's layer data at s * slot_floats +
// the layer's conv/ssm offset), so a slot copies to and from the CPU cache as it is.
#pragma once

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

struct StateSlots {
  BufferRange state;         // float32, all slots
  BufferRange seq_ids;       // int32 per token of the batch: its slot
  uint32_t slot_floats = 0;  // floats per slot
};

}  // namespace zinc::vulkan::ops
