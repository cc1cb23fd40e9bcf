// llama.cpp's own endpoints on stories260K: /completion whole and streamed (the same text, the
// last event with the counts, stop type and timings), prompts as text or ids, n_probs,
// return_tokens, stop words, logit_bias pairs and bad fields; /props; /apply-template; and
// vLLM's return_token_ids and ignore_eos on OpenAI's endpoints.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.h"

namespace zinc::server {
namespace {

Json native(int n_predict, Json extra = Json::object()) {
  Json body = {{"prompt", "Once upon a time"}, {"n_predict", n_predict}, {"temperature", 0}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

TEST(LlamaNative, CompletionWholeAndStreamed) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply openai = post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}});
  ASSERT_EQ(openai.status, 200) << openai.text;
  const std::string expected = openai.body["choices"][0]["text"];

  Reply r = post(*s, "/completion", native(12));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["content"], expected);
  EXPECT_EQ(r.body["stop"], true);
  EXPECT_EQ(r.body["stop_type"], "limit");
  EXPECT_EQ(r.body["stopping_word"], "");
  EXPECT_EQ(r.body["tokens_predicted"], 12);
  EXPECT_EQ(r.body["tokens_evaluated"], openai.body["usage"]["prompt_tokens"]);
  EXPECT_EQ(r.body["tokens"], Json::array());  // without return_tokens
  EXPECT_EQ(r.body["prompt"], "Once upon a time");
  EXPECT_EQ(r.body["generation_settings"]["n_predict"], 12);
  EXPECT_EQ(r.body["model"], "stories");
  for (const char* k : {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_second", "predicted_per_token_ms"})
    EXPECT_TRUE(r.body["timings"].contains(k)) << k;
  EXPECT_FALSE(r.body.contains("completion_probabilities"));

  Reply streamed = post(*s, "/completion", native(12, {{"stream", true}}));
  ASSERT_EQ(streamed.status, 200) << streamed.text;
  Sse sse = parse_sse(streamed.text);
  EXPECT_FALSE(sse.done);  // llama.cpp's stream has no [DONE]
  ASSERT_GE(sse.events.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < sse.events.size(); ++i) {
    const Json& e = sse.events[i];
    EXPECT_EQ(e["stop"], false) << e;
    EXPECT_GT(e["tokens_evaluated"].get<int>(), 0) << e;
    text += e["content"].get<std::string>();
  }
  EXPECT_EQ(text, expected);
  const Json& last = sse.events.back();
  EXPECT_EQ(last["stop"], true) << last;
  EXPECT_EQ(last["content"], "");
  EXPECT_EQ(last["stop_type"], "limit");
  EXPECT_EQ(last["tokens_predicted"], 12);
  EXPECT_TRUE(last["timings"].contains("predicted_ms"));
}

TEST(LlamaNative, TokensProbabilitiesStopWordsAndBiases) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/completion", native(10, {{"return_tokens", true}, {"n_probs", 3}}));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& tokens = r.body["tokens"];
  ASSERT_EQ(tokens.size(), 10u);
  const Json& probs = r.body["completion_probabilities"];
  ASSERT_EQ(probs.size(), 10u);
  for (size_t i = 0; i < probs.size(); ++i) {
    EXPECT_EQ(probs[i]["id"], tokens[i]);
    EXPECT_LE(probs[i]["logprob"].get<double>(), 0.0);
    EXPECT_EQ(probs[i]["top_logprobs"].size(), 3u) << probs[i];
    EXPECT_EQ(probs[i]["top_logprobs"][0]["token"], probs[i]["token"]) << probs[i];  // greedy: the likeliest
    EXPECT_EQ(probs[i]["top_logprobs"][0]["id"], tokens[i]) << probs[i];
    std::set<int64_t> alt_ids;  // the alternatives, likeliest first, each its own id
    for (const Json& alt : probs[i]["top_logprobs"]) {
      EXPECT_LE(alt["logprob"].get<double>(), probs[i]["top_logprobs"][0]["logprob"].get<double>());
      EXPECT_TRUE(alt_ids.insert(alt["id"].get<int64_t>()).second) << probs[i];
    }
  }
  Reply detok = post(*s, "/detokenize", Json{{"tokens", tokens}});
  ASSERT_EQ(detok.status, 200);
  EXPECT_NE(detok.body["content"].get<std::string>().find(r.body["content"].get<std::string>().substr(1)), std::string::npos);

  // The same prompt as ids (with its BOS, as the text is encoded) gives the same answer.
  Reply ids = post(*s, "/tokenize", Json{{"content", "Once upon a time"}, {"add_special", true}});
  Reply by_ids = post(*s, "/completion", Json{{"prompt", ids.body["tokens"]}, {"n_predict", 10}, {"temperature", 0}});
  ASSERT_EQ(by_ids.status, 200) << by_ids.text;
  EXPECT_EQ(by_ids.body["content"], r.body["content"]);

  // A stop word ends the answer before it.
  const std::string content = r.body["content"];
  const std::string word = content.substr(content.size() / 2, 3);
  Reply stopped = post(*s, "/completion", native(10, {{"stop", Json::array({word})}}));
  ASSERT_EQ(stopped.status, 200) << stopped.text;
  EXPECT_EQ(stopped.body["stop_type"], "word");
  EXPECT_EQ(stopped.body["stopping_word"], word);
  EXPECT_EQ(stopped.body["content"], content.substr(0, content.find(word)));

  // logit_bias as [[id, false]]: that token never comes.
  Reply banned = post(*s, "/completion", native(10, {{"return_tokens", true}, {"logit_bias", Json::array({Json::array({tokens[0], false})})}}));
  ASSERT_EQ(banned.status, 200) << banned.text;
  for (const Json& t : banned.body["tokens"]) EXPECT_NE(t, tokens[0]);
}

TEST(LlamaNative, BadFieldsAreOpenAiErrors) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  expect_error(post(*s, "/completion", native(0)), 400, "", "n_predict");
  expect_error(post(*s, "/completion", Json{{"prompt", Json::object()}}), 400, "", "prompt");
  expect_error(post(*s, "/completion", Json{{"n_predict", 4}}), 400, "", "prompt");
  expect_error(post(*s, "/completion", Json{{"prompt", Json::array({1, 99999})}}), 400, "", "prompt");
  expect_error(post(*s, "/completion", native(4, {{"n_probs", 50}})), 400, "", "n_probs");
  expect_error(post(*s, "/completion", native(4, {{"logit_bias", "x"}})), 400, "", "logit_bias");
  expect_error(post(*s, "/completion", native(4, {{"logit_bias", Json::array({Json::array({1})})}})), 400, "", "logit_bias");
  expect_error(post(*s, "/completion", native(4, {{"json_schema", 3}})), 400, "", "json_schema");
  expect_error(post(*s, "/completion", native(4, {{"return_tokens", "yes"}})), 400, "", "return_tokens");
  expect_error(post(*s, "/completion", std::string("{nope")), 400);
}

TEST(LlamaNative, PropsAndApplyTemplate) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply props = get(*s, "/props");
  ASSERT_EQ(props.status, 200) << props.text;
  EXPECT_EQ(props.body["default_generation_settings"]["n_ctx"], 256);
  EXPECT_EQ(props.body["total_slots"], 4);
  EXPECT_EQ(props.body["model_alias"], "stories");
  EXPECT_NE(props.body["chat_template"].get<std::string>().find("<|im_start|>"), std::string::npos);  // ChatML, the fallback
  EXPECT_FLOAT_EQ(props.body["default_generation_settings"]["params"]["temperature"].get<float>(), 0.8f);

  Reply t = post(*s, "/apply-template", Json{{"messages", Json::array({{{"role", "user"}, {"content", "Hello"}}})}});
  ASSERT_EQ(t.status, 200) << t.text;
  EXPECT_EQ(t.body["prompt"], "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  expect_error(post(*s, "/apply-template", Json{{"messages", Json::array()}}), 400, "", "messages");
  expect_error(post(*s, "/apply-template", Json{{"messages", Json::array({{{"content", "no role"}}})}}), 400, "", "messages");
}

// post_sampling_probs: each token's probability after the sampling chain and the chain's
// likeliest candidates, in llama.cpp's shape, on /completion and chat; refused where the answer's
// logprobs are OpenAI's lists.
TEST(LlamaNative, PostSamplingProbs) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply greedy = post(*s, "/completion", native(6, {{"n_probs", 3}, {"post_sampling_probs", true}}));
  ASSERT_EQ(greedy.status, 200) << greedy.text;
  const Json& gp = greedy.body["completion_probabilities"];
  ASSERT_EQ(gp.size(), 6u) << greedy.text;
  for (const Json& e : gp) {
    EXPECT_FLOAT_EQ(e["prob"].get<float>(), 1.0f) << e;  // greedy: the chain keeps one candidate
    ASSERT_EQ(e["top_probs"].size(), 1u) << e;
    EXPECT_EQ(e["top_probs"][0]["id"], e["id"]) << e;
    EXPECT_FALSE(e.contains("logprob")) << e;
  }

  Reply sampled = post(*s, "/completion", native(8, {{"n_probs", 5}, {"post_sampling_probs", true}, {"temperature", 1.0}, {"top_k", 3},
                                                      {"top_p", 1.0}, {"min_p", 0.0}, {"seed", 5}}));
  ASSERT_EQ(sampled.status, 200) << sampled.text;
  for (const Json& e : sampled.body["completion_probabilities"]) {
    const Json& top = e["top_probs"];
    ASSERT_EQ(top.size(), 3u) << e;  // top_k 3: three candidates, however many were asked for
    float sum = 0, chosen = -1;
    for (size_t i = 0; i < top.size(); ++i) {
      sum += top[i]["prob"].get<float>();
      if (i > 0) {
        EXPECT_GE(top[i - 1]["prob"].get<float>(), top[i]["prob"].get<float>()) << e;
      }
      if (top[i]["id"] == e["id"]) chosen = top[i]["prob"].get<float>();
    }
    EXPECT_NEAR(sum, 1.0f, 1e-4) << e;
    EXPECT_FLOAT_EQ(chosen, e["prob"].get<float>()) << e;
    EXPECT_GT(chosen, 0.0f) << e;
  }

  Reply chat = post(*s, "/v1/chat/completions", Json{{"messages", Json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 3},
                                                      {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 2}, {"post_sampling_probs", true}});
  ASSERT_EQ(chat.status, 200) << chat.text;
  const Json& first = chat.body["choices"][0]["logprobs"]["content"][0];
  EXPECT_FLOAT_EQ(first["prob"].get<float>(), 1.0f) << first;
  EXPECT_TRUE(first.contains("top_probs") && first.contains("id")) << first;

  expect_error(post(*s, "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 2}, {"logprobs", 2}, {"post_sampling_probs", true}}), 400, "",
               "post_sampling_probs");
  expect_error(post(*s, "/completion", native(2, {{"post_sampling_probs", "yes"}})), 400, "", "post_sampling_probs");
}

// /slots: every slot idle, then one busy with a running request (its task, settings and counts),
// fail_on_no_slot while none is free, and the slot actions refused.
TEST(LlamaNative, SlotsShowWhatEachSequenceDoes) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "", /*parallel=*/1, /*n_ctx=*/2048);
  Reply idle = get(*s, "/slots");
  ASSERT_EQ(idle.status, 200) << idle.text;
  ASSERT_EQ(idle.body.size(), 1u);
  EXPECT_EQ(idle.body[0]["id"], 0);
  EXPECT_EQ(idle.body[0]["is_processing"], false);
  EXPECT_EQ(idle.body[0]["id_task"], -1);
  EXPECT_EQ(idle.body[0]["n_ctx"], 2048);
  EXPECT_EQ(get(*s, "/slots?fail_on_no_slot=1").status, 200);

  std::thread long_request([&] {
    Reply r = post(*s, "/completion", native(2000, {{"ignore_eos", true}, {"top_k", 7}, {"temperature", 0.5}, {"seed", 11}}));
    EXPECT_EQ(r.status, 200) << r.text;
  });
  Json busy;
  for (int i = 0; i < 10000; ++i) {
    Reply r = get(*s, "/slots");
    if (r.status == 200 && r.body[0]["is_processing"] == true && r.body[0]["next_token"]["n_decoded"].get<int>() > 0) {
      busy = r.body[0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(busy.is_null()) << "never saw the slot busy";
  EXPECT_GE(busy["id_task"].get<int>(), 0);
  EXPECT_EQ(busy["params"]["n_predict"], 2000);
  EXPECT_EQ(busy["params"]["top_k"], 7);
  EXPECT_EQ(busy["params"]["seed"], 11);
  EXPECT_FLOAT_EQ(busy["params"]["temperature"].get<float>(), 0.5f);
  EXPECT_GT(busy["n_prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(busy["next_token"]["n_remain"].get<int>() + busy["next_token"]["n_decoded"].get<int>(), 2000) << busy;
  expect_error(get(*s, "/slots?fail_on_no_slot=1"), 503, "unavailable");
  long_request.join();
  EXPECT_EQ(get(*s, "/slots").body[0]["is_processing"], false);

  expect_error(post(*s, "/slots/0?action=erase", Json::object()), 501, "not_supported", "action");
  expect_error(post(*s, "/slots/0?action=defrag", Json::object()), 400, "invalid_value", "action");
}

// vLLM's return_token_ids: the answer's ids (whole and per chunk) and the prompt's; ignore_eos.
TEST(LlamaNative, ReturnTokenIdsAndIgnoreEosOnOpenAiEndpoints) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"return_token_ids", true}});
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& choice = r.body["choices"][0];
  EXPECT_EQ(choice["token_ids"].size(), 8u);
  EXPECT_EQ(int64_t(choice["prompt_token_ids"].size()), r.body["usage"]["prompt_tokens"].get<int64_t>());
  Sse sse = parse_sse(post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0},
                                                      {"return_token_ids", true}, {"stream", true}}).text);
  Json streamed = Json::array();
  for (const Json& e : sse.events)
    for (const Json& id : e["choices"][0]["token_ids"]) streamed.push_back(id);
  EXPECT_EQ(streamed, choice["token_ids"]);
  EXPECT_EQ(sse.events.front()["choices"][0]["prompt_token_ids"], choice["prompt_token_ids"]);

  const Json chat = {{"messages", Json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 6}, {"temperature", 0},
                     {"return_token_ids", true}};
  Reply c = post(*s, "/v1/chat/completions", chat);
  ASSERT_EQ(c.status, 200) << c.text;
  EXPECT_EQ(int64_t(c.body["prompt_token_ids"].size()), c.body["usage"]["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(int64_t(c.body["choices"][0]["token_ids"].size()), c.body["usage"]["completion_tokens"].get<int64_t>());

  // </s> made the likeliest token: the answer ends at once, unless ignore_eos.
  const Json eos_first = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"logit_bias", {{"2", 100}}}, {"return_token_ids", true}};
  Reply ended = post(*s, "/v1/completions", eos_first);
  ASSERT_EQ(ended.status, 200) << ended.text;
  EXPECT_EQ(ended.body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(ended.body["usage"]["completion_tokens"], 0);
  Json go_on = eos_first;
  go_on["ignore_eos"] = true;
  Reply g = post(*s, "/v1/completions", go_on);
  ASSERT_EQ(g.status, 200) << g.text;
  EXPECT_EQ(g.body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(g.body["choices"][0]["token_ids"].size(), 8u);
  for (const Json& id : g.body["choices"][0]["token_ids"]) EXPECT_NE(id, 2);
}

// llama.cpp's other samplers, by their effect: DRY (a strong multiplier) leaves no token that
// extends a repeat of allowed_length tokens; mirostat 2 with a tiny tau keeps only the likeliest
// token (the greedy answer); bad values are 400s.
TEST(LlamaNative, DryAndMirostat) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const int kAllowed = 2;
  const std::string prompt = "Lily and Lily and Lily and Lily and";
  auto answer = [&](Json extra) {
    Json body = {{"prompt", prompt}, {"n_predict", 40}, {"temperature", 0}, {"return_tokens", true}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    Reply r = post(*s, "/completion", body);
    EXPECT_EQ(r.status, 200) << r.text;
    return r.body;
  };
  // How many answer tokens extend a repeat: the kAllowed tokens before them occurred earlier,
  // followed by the same token.
  std::vector<int> prompt_ids = post(*s, "/tokenize", Json{{"content", prompt}, {"add_special", true}}).body["tokens"];
  auto repeats = [&](const Json& answer_ids) {
    std::vector<int> seq = prompt_ids;
    for (const Json& t : answer_ids) seq.push_back(t.get<int>());
    int n = 0;
    for (size_t i = prompt_ids.size(); i < seq.size(); ++i)
      for (size_t j = kAllowed; j < i; ++j) {
        bool repeat = seq[j] == seq[i];
        for (int k = 1; k <= kAllowed && repeat; ++k) repeat = seq[j - size_t(k)] == seq[i - size_t(k)];
        if (repeat) {
          ++n;
          break;
        }
      }
    return n;
  };
  const Json plain = answer(Json::object());
  ASSERT_GT(repeats(plain["tokens"]), 0) << plain["content"];  // greedy repeats itself here
  const Json dry = answer({{"dry_multiplier", 100}, {"dry_allowed_length", kAllowed}, {"dry_sequence_breakers", Json::array({"\u0001"})}});
  EXPECT_EQ(repeats(dry["tokens"]), 0) << dry["content"];

  Reply greedy = post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 0}});
  Reply miro = post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 1}, {"seed", 5},
                                                {"mirostat", 2}, {"mirostat_tau", 0.01}, {"mirostat_eta", 0.1}});
  ASSERT_EQ(miro.status, 200) << miro.text;
  EXPECT_EQ(miro.body["choices"][0]["text"], greedy.body["choices"][0]["text"]);
  Reply warm = post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 1}, {"seed", 5},
                                                {"typical_p", 0.9}, {"xtc_probability", 0.5}, {"top_n_sigma", 2}, {"dynatemp_range", 0.3}});
  ASSERT_EQ(warm.status, 200) << warm.text;
  EXPECT_EQ(warm.body["choices"][0]["text"],
            post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 1}, {"seed", 5},
                                             {"typical_p", 0.9}, {"xtc_probability", 0.5}, {"top_n_sigma", 2}, {"dynatemp_range", 0.3}})
                .body["choices"][0]["text"]);  // seeded: the same draws
  expect_error(post(*s, "/completion", native(4, {{"mirostat", 3}})), 400, "", "mirostat");
  expect_error(post(*s, "/completion", native(4, {{"dry_sequence_breakers", Json::array()}})), 400, "", "dry_sequence_breakers");
  expect_error(post(*s, "/completion", native(4, {{"dry_sequence_breakers", Json::array({""})}})), 400, "", "dry_sequence_breakers");
  expect_error(post(*s, "/v1/completions", Json{{"prompt", "a"}, {"typical_p", 2}}), 400, "", "typical_p");
  expect_error(post(*s, "/v1/chat/completions", Json{{"messages", {{{"role", "user"}, {"content", "a"}}}}, {"repeat_last_n", -2}}), 400, "",
               "repeat_last_n");
  const Json props = get(*s, "/props").body["default_generation_settings"]["params"];
  EXPECT_EQ(props["mirostat"], 0);
  EXPECT_EQ(props["dry_sequence_breakers"].size(), 4u);
}

}  // namespace
}  // namespace zinc::server
