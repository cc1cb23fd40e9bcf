// Every Vulkan entry point zinc uses, listed once. Loader resolves them at run time:
// global ones from vkGetInstanceProcAddr(nullptr), the rest from the instance.
#pragma once

#define ZINC_VK_GLOBAL_SYMBOLS(X)          \
  X(vkCreateInstance)                      \
  X(vkEnumerateInstanceVersion)            \
  X(vkEnumerateInstanceExtensionProperties)

#define ZINC_VK_INSTANCE_SYMBOLS(X)          \
  X(vkDestroyInstance)                       \
  X(vkEnumeratePhysicalDevices)              \
  X(vkGetPhysicalDeviceProperties)           \
  X(vkGetPhysicalDeviceProperties2)          \
  X(vkGetPhysicalDeviceFeatures2)            \
  X(vkGetPhysicalDeviceMemoryProperties)     \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)    \
  X(vkCreateDevice)                          \
  X(vkGetDeviceProcAddr)                     \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)

#define ZINC_VK_DEVICE_SYMBOLS(X)        \
  X(vkDestroyDevice)                     \
  X(vkGetDeviceQueue)                    \
  X(vkDeviceWaitIdle)                    \
  X(vkQueueSubmit)                       \
  X(vkQueueWaitIdle)                     \
  X(vkAllocateMemory)                    \
  X(vkFreeMemory)                        \
  X(vkMapMemory)                         \
  X(vkUnmapMemory)                       \
  X(vkCreateBuffer)                      \
  X(vkDestroyBuffer)                     \
  X(vkGetBufferMemoryRequirements)       \
  X(vkBindBufferMemory)                  \
  X(vkCreateShaderModule)                \
  X(vkDestroyShaderModule)               \
  X(vkCreateDescriptorSetLayout)         \
  X(vkDestroyDescriptorSetLayout)        \
  X(vkCreatePipelineLayout)              \
  X(vkDestroyPipelineLayout)             \
  X(vkCreatePipelineCache)               \
  X(vkDestroyPipelineCache)              \
  X(vkGetPipelineCacheData)              \
  X(vkCreateComputePipelines)            \
  X(vkDestroyPipeline)                   \
  X(vkCreateDescriptorPool)              \
  X(vkDestroyDescriptorPool)             \
  X(vkResetDescriptorPool)               \
  X(vkAllocateDescriptorSets)            \
  X(vkUpdateDescriptorSets)              \
  X(vkCreateCommandPool)                 \
  X(vkDestroyCommandPool)                \
  X(vkAllocateCommandBuffers)            \
  X(vkFreeCommandBuffers)                \
  X(vkBeginCommandBuffer)                \
  X(vkEndCommandBuffer)                  \
  X(vkResetCommandBuffer)                \
  X(vkCmdBindPipeline)                   \
  X(vkCmdBindDescriptorSets)             \
  X(vkCmdPushConstants)                  \
  X(vkCmdDispatch)                       \
  X(vkCmdPipelineBarrier)                \
  X(vkCmdCopyBuffer)                     \
  X(vkCmdFillBuffer)                     \
  X(vkCmdWriteTimestamp)                 \
  X(vkCreateQueryPool)                   \
  X(vkDestroyQueryPool)                  \
  X(vkGetQueryPoolResults)               \
  X(vkCmdResetQueryPool)                 \
  X(vkCreateFence)                       \
  X(vkDestroyFence)                      \
  X(vkWaitForFences)                     \
  X(vkResetFences)                       \
  X(vkGetPipelineExecutablePropertiesKHR) \
  X(vkGetPipelineExecutableStatisticsKHR)
