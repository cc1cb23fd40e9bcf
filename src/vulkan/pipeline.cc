#include "vulkan/pipeline.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "vulkan/shaders.h"

namespace zinc::vulkan {

Result<std::unique_ptr<Pipeline>> Pipeline::create(const Device& device, const PipelineDesc& desc,
                                                   VkPipelineCache cache) {
  const auto spirv = find_shader(desc.shader);
  if (spirv.empty()) return error("no embedded shader named '%s'", desc.shader.c_str());
  const Api& api = device.api();
  VkDevice dev = device.handle();
  std::unique_ptr<Pipeline> p(new Pipeline(device));
  p->desc_ = desc;

  std::vector<VkDescriptorSetLayoutBinding> bindings(desc.n_buffers);
  for (uint32_t i = 0; i < desc.n_buffers; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dci.bindingCount = desc.n_buffers;
  dci.pBindings = bindings.data();
  ZINC_RETURN_IF_ERROR(vk_check(api.vkCreateDescriptorSetLayout(dev, &dci, nullptr, &p->set_layout_),
                                "vkCreateDescriptorSetLayout"));

  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, desc.push_constant_bytes};
  VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  lci.setLayoutCount = 1;
  lci.pSetLayouts = &p->set_layout_;
  lci.pushConstantRangeCount = desc.push_constant_bytes ? 1 : 0;
  lci.pPushConstantRanges = &pcr;
  ZINC_RETURN_IF_ERROR(vk_check(api.vkCreatePipelineLayout(dev, &lci, nullptr, &p->layout_), "vkCreatePipelineLayout"));

  VkShaderModuleCreateInfo sci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sci.codeSize = spirv.size_bytes();
  sci.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  ZINC_RETURN_IF_ERROR(vk_check(api.vkCreateShaderModule(dev, &sci, nullptr, &module), "vkCreateShaderModule"));

  std::vector<VkSpecializationMapEntry> entries(desc.spec_constants.size());
  for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(), desc.spec_constants.size() * 4,
                            desc.spec_constants.data()};
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  subgroup.requiredSubgroupSize = desc.required_subgroup_size;
  VkComputePipelineCreateInfo cci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cci.stage.pNext = desc.required_subgroup_size ? &subgroup : nullptr;
  cci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cci.stage.module = module;
  cci.stage.pName = "main";
  cci.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  cci.layout = p->layout_;
  VkPipelineRobustnessCreateInfoEXT robustness{VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT};
  if (device.caps().unchecked_buffers) {
    robustness.storageBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT;
    robustness.uniformBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT;
    robustness.vertexInputs = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT;
    robustness.images = VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DEVICE_DEFAULT_EXT;
    cci.pNext = &robustness;
  }
  const bool stats = device.caps().pipeline_stats && api.vkGetPipelineExecutableStatisticsKHR;
  if (stats) cci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  // With stats and ZINC_PIPELINE_DUMP=DIR, the pipeline goes through a cache of its own whose
  // data (the driver's compiled code) is written to DIR/<shader>_<spec constants>.bin.
  const char* dump_dir = stats ? std::getenv("ZINC_PIPELINE_DUMP") : nullptr;
  VkPipelineCache own = VK_NULL_HANDLE;
  if (dump_dir && *dump_dir) {
    VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    if (api.vkCreatePipelineCache(dev, &pci, nullptr, &own) != VK_SUCCESS) own = VK_NULL_HANDLE;
  }
  VkResult r = api.vkCreateComputePipelines(dev, stats ? own : cache, 1, &cci, nullptr, &p->pipeline_);
  api.vkDestroyShaderModule(dev, module, nullptr);
  if (own) {
    if (r == VK_SUCCESS) dump_cache(device, own, std::string(dump_dir) + "/" + desc.shader + "_" + spec_suffix(desc, '-') + ".bin");
    api.vkDestroyPipelineCache(dev, own, nullptr);
  }
  if (r != VK_SUCCESS) return error("cannot create the pipeline for shader '%s': %s", desc.shader.c_str(), result_name(r));
  if (stats) print_statistics(device, *p);
  return p;
}

std::string Pipeline::spec_suffix(const PipelineDesc& desc, char separator) {
  std::string spec;
  for (uint32_t v : desc.spec_constants) spec += (spec.empty() ? "" : std::string(1, separator)) + std::to_string(v);
  return spec;
}

void Pipeline::dump_cache(const Device& device, VkPipelineCache cache, const std::string& path) {
  const Api& api = device.api();
  size_t n = 0;
  if (api.vkGetPipelineCacheData(device.handle(), cache, &n, nullptr) != VK_SUCCESS) return;
  std::vector<char> data(n);
  if (api.vkGetPipelineCacheData(device.handle(), cache, &n, data.data()) != VK_SUCCESS) return;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data.data(), 1, n, f);
    std::fclose(f);
  }
}

void Pipeline::print_statistics(const Device& device, const Pipeline& p) {
  const Api& api = device.api();
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = p.pipeline_;
  uint32_t n_exec = 0;
  if (api.vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &n_exec, nullptr) != VK_SUCCESS) return;
  const std::string spec = spec_suffix(p.desc_, ',');
  for (uint32_t e = 0; e < n_exec; ++e) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = p.pipeline_;
    ei.executableIndex = e;
    uint32_t n = 0;
    if (api.vkGetPipelineExecutableStatisticsKHR(device.handle(), &ei, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> st(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (api.vkGetPipelineExecutableStatisticsKHR(device.handle(), &ei, &n, st.data()) != VK_SUCCESS) continue;
    std::string line = "pipeline " + p.desc_.shader + " [" + spec + "]:";
    for (const auto& s : st) {
      line += std::string(" ") + s.name + "=";
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += s.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(s.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(s.value.u64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: line += std::to_string(s.value.f64); break;
        default: line += "?";
      }
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

Pipeline::~Pipeline() {
  const Api& api = device_.api();
  if (pipeline_) api.vkDestroyPipeline(device_.handle(), pipeline_, nullptr);
  if (layout_) api.vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
  if (set_layout_) api.vkDestroyDescriptorSetLayout(device_.handle(), set_layout_, nullptr);
}

Result<std::unique_ptr<DescriptorPool>> DescriptorPool::create(const Device& device, uint32_t max_sets,
                                                               uint32_t max_buffers) {
  std::unique_ptr<DescriptorPool> p(new DescriptorPool(device));
  p->max_sets_ = max_sets;
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, max_buffers};
  VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  ci.maxSets = max_sets;
  ci.poolSizeCount = 1;
  ci.pPoolSizes = &size;
  ZINC_RETURN_IF_ERROR(vk_check(device.api().vkCreateDescriptorPool(device.handle(), &ci, nullptr, &p->pool_),
                                "vkCreateDescriptorPool"));
  return p;
}

DescriptorPool::~DescriptorPool() {
  if (pool_) device_.api().vkDestroyDescriptorPool(device_.handle(), pool_, nullptr);
}

void DescriptorPool::reset() {
  device_.api().vkResetDescriptorPool(device_.handle(), pool_, 0);
  allocated_ = 0;
}

Result<VkDescriptorSet> DescriptorPool::allocate(const Pipeline& pipeline, std::span<const BufferRange> buffers) {
  if (buffers.size() != pipeline.desc().n_buffers || buffers.size() > kMaxBuffers)
    return error("shader '%s' takes %u buffers, got %zu", pipeline.desc().shader.c_str(), pipeline.desc().n_buffers,
                 buffers.size());
  if (full()) return error("descriptor pool full (%u sets)", max_sets_);
  VkDescriptorSetLayout layout = pipeline.set_layout();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  ZINC_RETURN_IF_ERROR(vk_check(device_.api().vkAllocateDescriptorSets(device_.handle(), &ai, &set),
                                "vkAllocateDescriptorSets"));
  ++allocated_;
  VkDescriptorBufferInfo infos[kMaxBuffers];
  VkWriteDescriptorSet writes[kMaxBuffers];
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i].buffer->handle(), buffers[i].offset, buffers[i].size};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = uint32_t(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  device_.api().vkUpdateDescriptorSets(device_.handle(), uint32_t(buffers.size()), writes, 0, nullptr);
  return set;
}

}  // namespace zinc::vulkan
