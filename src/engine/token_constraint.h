// What a request may sample next (structured output, e.g. OpenAI's response_format): the
// scheduler masks each logits row through the request's constraint before its sampler draws, and
// tells it every token drawn. Used from the scheduler's thread only.
#pragma once

#include <cstdint>
#include <span>

namespace zinc::engine {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logit of every token that may not come next to -infinity; leaves at least one.
  virtual void mask(std::span<float> logits) const = 0;
  // The token drawn (one mask() allowed).
  virtual void accept(int32_t token) = 0;
  // Whatever was asked for is complete: the request ends here (finish reason "stop").
  virtual bool finished() const = 0;
};

}  // namespace zinc::engine
