// A compute pipeline for one embedded shader: its descriptor-set layout (n storage buffers at
// bindings 0..n-1), push-constant range, and specialization constants (ids 0..k-1). Borrows the
// Device. Descriptor sets for it come from the Commands recording it (Commands::dispatch with
// buffers) or from a DescriptorPool, allocated once and reused.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vulkan/buffer.h"

namespace zinc::vulkan {

struct PipelineDesc {
  std::string shader;               // name in the embedded registry
  uint32_t n_buffers = 0;           // storage buffers at bindings 0..n_buffers-1
  uint32_t push_constant_bytes = 0;
  std::vector<uint32_t> spec_constants;  // constant_id 0, 1, ...
  uint32_t required_subgroup_size = 0;   // 0: the driver's choice
};

class Pipeline {
 public:
  static Result<std::unique_ptr<Pipeline>> create(const Device& device, const PipelineDesc& desc,
                                                  VkPipelineCache cache = VK_NULL_HANDLE);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  const PipelineDesc& desc() const { return desc_; }

 private:
  explicit Pipeline(const Device& d) : device_(d) {}
  // Compiler statistics of the pipeline's executables to stderr (DeviceCaps::pipeline_stats).
  static void print_statistics(const Device& device, const Pipeline& p);
  // Measurement only (ZINC_PIPELINE_STATS with ZINC_PIPELINE_DUMP=DIR): a cache's data to a file.
  static void dump_cache(const Device& device, VkPipelineCache cache, const std::string& path);
  // The spec constants joined by `separator` (names in dumps and statistics).
  static std::string spec_suffix(const PipelineDesc& desc, char separator);
  const Device& device_;
  PipelineDesc desc_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// A range of a buffer bound to one descriptor.
struct BufferRange {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = VK_WHOLE_SIZE;
};

class DescriptorPool {
 public:
  static Result<std::unique_ptr<DescriptorPool>> create(const Device& device, uint32_t max_sets,
                                                        uint32_t max_buffers);
  ~DescriptorPool();
  DescriptorPool(const DescriptorPool&) = delete;
  DescriptorPool& operator=(const DescriptorPool&) = delete;

  // A set for `pipeline` with buffers[i] at binding i (at most kMaxBuffers).
  Result<VkDescriptorSet> allocate(const Pipeline& pipeline, std::span<const BufferRange> buffers);
  bool full() const { return allocated_ == max_sets_; }
  void reset();  // frees every set allocated
  static constexpr uint32_t kMaxBuffers = 32;

 private:
  explicit DescriptorPool(const Device& d) : device_(d) {}
  const Device& device_;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  uint32_t max_sets_ = 0, allocated_ = 0;
};

}  // namespace zinc::vulkan
