// zinc serve through the official openai client: chat and completions, streaming and not, usage
// (with stream_options.include_usage), stop sequences, seed reproducibility, JSON mode, tools,
// errors, models.list, the Responses API, and --api-key. Exit 0: all passed, 1: a check failed.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { runChecks, startServer } from "./server.mjs";

const kModel = "zinc-test";
const server = await startServer(["--alias", kModel, "-c", "1024"]);
const client = new OpenAI({ baseURL: server.base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 30000 });
const messages = [{ role: "user", content: "Tell me a story about Lily." }];
const greedy = { model: kModel, temperature: 0, max_tokens: 32 };

async function collectChat(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta.content ?? "";
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, finish, usage, chunks };
}
async function collectCompletion(params) {
  const stream = await client.completions.create({ ...params, stream: true });
  let text = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.text ?? "";
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, finish, usage };
}
function checkUsage(usage, maxCompletion) {
  assert.ok(usage, "usage is present");
  assert.ok(usage.prompt_tokens > 0, "prompt_tokens > 0");
  assert.ok(usage.completion_tokens > 0 && usage.completion_tokens <= maxCompletion, "completion_tokens in range");
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}
// The token counts (prompt_tokens_details.cached_tokens varies with the server's prefix cache).
const counts = (u) => ({ prompt: u.prompt_tokens, completion: u.completion_tokens, total: u.total_tokens });
// The first occurrence of a short piece from the middle of `text`, for a stop sequence.
function stopPiece(text) {
  const at = text.indexOf(" ", Math.floor(text.length / 3));
  assert.ok(at > 0, "the text is long enough for a stop sequence: " + JSON.stringify(text));
  const piece = text.slice(at, at + 4);
  return { piece, before: text.slice(0, text.indexOf(piece)) };
}

let chatText = "", chatUsage = null, completionText = "";
const failed = await runChecks([
  ["models.list names the alias", async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes(kModel), "models: " + ids.join(", "));
    const m = await client.models.retrieve(kModel);
    assert.equal(m.id, kModel);
    await assert.rejects(client.models.retrieve("gpt-4o"), (e) => e instanceof OpenAI.NotFoundError);
  }],
  ["chat completion", async () => {
    const r = await client.chat.completions.create({ ...greedy, messages });
    assert.equal(r.object, "chat.completion");
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, "assistant");
    chatText = r.choices[0].message.content;
    assert.ok(typeof chatText === "string" && chatText.length > 0, "content: " + JSON.stringify(chatText));
    assert.ok(["stop", "length"].includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
    checkUsage(r.usage, greedy.max_tokens);
    chatUsage = r.usage;
  }],
  ["streamed chat completion gives the same text", async () => {
    const s = await collectChat({ ...greedy, messages });
    assert.equal(s.text, chatText);
    assert.ok(s.chunks > 2, "several chunks: " + s.chunks);
    assert.ok(["stop", "length"].includes(s.finish), s.finish);
    assert.equal(s.usage, null, "no usage chunk unless asked");
  }],
  ["stream_options.include_usage", async () => {
    const s = await collectChat({ ...greedy, messages, stream_options: { include_usage: true } });
    assert.equal(s.text, chatText);
    checkUsage(s.usage, greedy.max_tokens);
    assert.deepEqual(counts(s.usage), counts(chatUsage));
  }],
  ["completion, streamed and not", async () => {
    const r = await client.completions.create({ ...greedy, prompt: "Once upon a time" });
    assert.equal(r.object, "text_completion");
    completionText = r.choices[0].text;
    assert.ok(completionText.length > 0);
    checkUsage(r.usage, greedy.max_tokens);
    const s = await collectCompletion({ ...greedy, prompt: "Once upon a time", stream_options: { include_usage: true } });
    assert.equal(s.text, completionText);
    assert.deepEqual(counts(s.usage), counts(r.usage));
  }],
  ["stop sequences end the text before them (chat)", async () => {
    const { piece, before } = stopPiece(chatText);
    const r = await client.chat.completions.create({ ...greedy, messages, stop: [piece] });
    assert.equal(r.choices[0].message.content, before);
    assert.equal(r.choices[0].finish_reason, "stop");
    const s = await collectChat({ ...greedy, messages, stop: piece });
    assert.equal(s.text, before, "the stream never shows the stop sequence");
    assert.equal(s.finish, "stop");
  }],
  ["stop sequences end the text before them (completions)", async () => {
    const { piece, before } = stopPiece(completionText);
    const r = await client.completions.create({ ...greedy, prompt: "Once upon a time", stop: ["@@never@@", piece] });
    assert.equal(r.choices[0].text, before);
    assert.equal(r.choices[0].finish_reason, "stop");
    const s = await collectCompletion({ ...greedy, prompt: "Once upon a time", stop: [piece] });
    assert.equal(s.text, before);
  }],
  ["the same seed gives the same text", async () => {
    const params = { model: kModel, messages, temperature: 1.0, top_p: 1, max_tokens: 32, seed: 1234 };
    const a = (await client.chat.completions.create(params)).choices[0].message.content;
    const b = (await client.chat.completions.create(params)).choices[0].message.content;
    assert.equal(a, b);
    const c = await collectChat(params);
    assert.equal(c.text, a, "streamed or not");
    const others = [];
    for (const seed of [1, 2, 3]) others.push((await client.chat.completions.create({ ...params, seed })).choices[0].message.content);
    assert.ok(others.some((t) => t !== a), "other seeds give other texts");
  }],
  ["JSON mode: the answer is a JSON object, or the start of one", async () => {
    const params = { ...greedy, messages, max_tokens: 24, response_format: { type: "json_object" } };
    const r = await client.chat.completions.create(params);
    const text = r.choices[0].message.content;
    assert.ok(text.startsWith("{"), "content: " + JSON.stringify(text));
    if (r.choices[0].finish_reason === "stop") assert.equal(typeof JSON.parse(text), "object");
    assert.equal((await collectChat(params)).text, text);
  }],
  ["tools: an answer without calls comes through whole; a forced call comes back as one", async () => {
    const tools = [{ type: "function", function: { name: "get_weather", description: "Weather of a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
    // A template whose model writes <tool_call> blocks, so that the answers are read for calls.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zinc-tools-"));
    const file = path.join(dir, "hermes.jinja");
    fs.writeFileSync(file, "{% if false %}<tool_call>{% endif %}{% for m in messages %}{{ m.content }}\n{% endfor %}");
    const hermes = await startServer(["--alias", kModel, "--chat-template-file", file]);
    try {
      const c = new OpenAI({ baseURL: hermes.base + "/v1", apiKey: "unused", maxRetries: 0 });
      const r = await c.chat.completions.create({ ...greedy, messages, tools, tool_choice: "auto" });
      const msg = r.choices[0].message;
      assert.ok(typeof msg.content === "string" && msg.content.length > 0, JSON.stringify(msg));
      assert.ok(!msg.tool_calls || msg.tool_calls.length === 0, JSON.stringify(msg));
      const stream = await c.chat.completions.create({ ...greedy, messages, tools, stream: true });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
      assert.equal(text, msg.content);
      // A forced call comes back as a call, whatever the model would have said (its parameter is an
      // enum, so the call ends within max_tokens).
      const setUnit = { type: "function", function: { name: "set_unit",
        parameters: { type: "object", properties: { unit: { enum: ["c", "f"] } }, required: ["unit"] } } };
      const forced = await c.chat.completions.create({ ...greedy, messages, tools: [...tools, setUnit], max_tokens: 200,
        tool_choice: { type: "function", function: { name: "set_unit" } } });
      assert.equal(forced.choices[0].finish_reason, "tool_calls", JSON.stringify(forced));
      const call = forced.choices[0].message.tool_calls[0];
      assert.equal(call.function.name, "set_unit");
      assert.ok(["c", "f"].includes(JSON.parse(call.function.arguments).unit), call.function.arguments);
    } finally {
      await hermes.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }],
  ["embeddings: one unit vector an input (the client asks for base64 and decodes it)", async () => {
    const r = await client.embeddings.create({ model: kModel, input: ["Once upon a time", "The cat sat"] });
    assert.equal(r.data.length, 2);
    for (const d of r.data) {
      assert.ok(d.embedding.length > 0);
      const n2 = d.embedding.reduce((a, x) => a + x * x, 0);
      assert.ok(Math.abs(n2 - 1) < 1e-4, "length " + n2);
    }
    const f = await client.embeddings.create({ model: kModel, input: "Once upon a time", encoding_format: "float" });
    assert.deepEqual(f.data[0].embedding.map((x) => Math.fround(x)), r.data[0].embedding.map((x) => Math.fround(x)));
  }],
  ["n choices come back indexed", async () => {
    const r = await client.chat.completions.create({ ...greedy, messages, n: 2 });
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
    assert.equal(r.choices[0].message.content, r.choices[1].message.content);  // greedy
  }],
  ["a bad request is an APIError with status and message", async () => {
    await assert.rejects(client.chat.completions.create({ ...greedy, messages, n: 0 }), (e) => {
      assert.ok(e instanceof OpenAI.APIError, "APIError: " + e);
      assert.equal(e.status, 400);
      assert.ok(e.error && typeof e.error.message === "string" && e.error.message.length > 0, JSON.stringify(e.error));
      assert.ok(e.message.includes(e.error.message));
      return true;
    });
  }],
  ["a prompt longer than the context is context_length_exceeded", async () => {
    const long = "Once upon a time there was a little girl. ".repeat(200);
    await assert.rejects(client.chat.completions.create({ ...greedy, messages: [{ role: "user", content: long }] }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.code, "context_length_exceeded");
      return true;
    });
  }],
  ["raw HTTP: malformed JSON is a 400 with OpenAI's error object", async () => {
    const r = await fetch(server.base + "/v1/chat/completions", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: "{not json" });
    assert.equal(r.status, 400);
    const j = await r.json();
    assert.ok(j.error && typeof j.error.message === "string" && "type" in j.error, JSON.stringify(j));
  }],
  ["responses.create and responses.stream give the same text", async () => {
    const params = { model: kModel, instructions: "You tell stories.", input: "Tell me a story about Lily.", temperature: 0,
                     max_output_tokens: 24 };
    const r = await client.responses.create(params);
    assert.equal(r.object, "response");
    assert.equal(r.status, "incomplete");
    assert.ok(r.output_text.length > 0, "output_text: " + JSON.stringify(r.output_text));
    assert.equal(r.usage.output_tokens, 24);
    const stream = client.responses.stream(params);
    let deltas = "";
    stream.on("response.output_text.delta", (e) => { deltas += e.delta; });
    const final = await stream.finalResponse();
    assert.equal(deltas, r.output_text);
    assert.equal(final.output_text, r.output_text);
    await assert.rejects(client.responses.create({ ...params, previous_response_id: "resp_x" }),
                         (e) => e instanceof OpenAI.BadRequestError);
  }],
  ["responses: previous_response_id continues a stored response; retrieve, inputItems.list, delete", async () => {
    const first = await client.responses.create({ model: kModel, input: "Once upon a time", temperature: 0, max_output_tokens: 8 });
    assert.equal(first.store, true);
    const second = await client.responses.create({ model: kModel, input: "The end", temperature: 0, max_output_tokens: 8,
                                                   previous_response_id: first.id });
    assert.equal(second.previous_response_id, first.id);
    assert.ok(second.usage.input_tokens > first.usage.input_tokens + 8, JSON.stringify(second.usage));
    const kept = await client.responses.retrieve(second.id);
    assert.equal(kept.output_text, second.output_text);
    const items = [];
    for await (const item of client.responses.inputItems.list(second.id)) items.push(item);
    assert.equal(items.length, 1);
    assert.equal(items[0].content[0].text, "The end");
    await client.responses.delete(first.id);
    await assert.rejects(client.responses.retrieve(first.id), (e) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(client.responses.create({ model: kModel, input: "Again", previous_response_id: first.id }),
                         (e) => e instanceof OpenAI.BadRequestError && e.code === "previous_response_not_found");
  }],
  ["--api-key: a wrong key is 401, the right one works", async () => {
    const keyed = await startServer(["--alias", kModel, "--api-key", "s3cret"]);
    try {
      const bad = new OpenAI({ baseURL: keyed.base + "/v1", apiKey: "wrong", maxRetries: 0 });
      await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
      const good = new OpenAI({ baseURL: keyed.base + "/v1", apiKey: "s3cret", maxRetries: 0 });
      const r = await good.chat.completions.create({ ...greedy, messages, max_tokens: 4 });
      assert.ok(r.choices[0].message.content.length > 0);
    } finally {
      await keyed.stop();
    }
  }],
]);
await server.stop();
if (failed) console.log("--- server log ---\n" + server.log().slice(-4000));
process.exit(failed ? 1 : 0);
