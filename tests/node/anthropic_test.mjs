// zinc serve through Anthropic's official client (@anthropic-ai/sdk): messages.create, the same
// answer through messages.stream (which checks the event sequence as it accumulates it), stop
// sequences, countTokens, a system prompt, x-api-key, and errors as the client's error classes.
// Exit 0: all passed, 1: a check failed.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { runChecks, startServer } from "./server.mjs";

const kModel = "zinc-test";
const server = await startServer(["--alias", kModel, "-c", "1024", "--api-key", "sekrit"]);
const client = new Anthropic({ baseURL: server.base, apiKey: "sekrit", maxRetries: 0, timeout: 30000 });
const request = {
  model: kModel,
  max_tokens: 32,
  temperature: 0,
  system: "You tell stories.",
  messages: [{ role: "user", content: "Tell me a story about Lily." }],
};

let text = "", usage = null;
const failed = await runChecks([
  ["messages.create", async () => {
    const m = await client.messages.create(request);
    assert.equal(m.type, "message");
    assert.equal(m.role, "assistant");
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, "text");
    text = m.content[0].text;
    assert.ok(text.length > 0);
    assert.equal(m.stop_reason, "max_tokens");
    assert.equal(m.usage.output_tokens, 32);
    usage = m.usage;
  }],
  ["messages.stream accumulates the same message", async () => {
    const stream = client.messages.stream(request);
    let deltas = "";
    stream.on("text", (t) => { deltas += t; });
    const m = await stream.finalMessage();
    assert.equal(deltas, text);
    assert.equal(m.content[0].text, text);
    assert.equal(m.stop_reason, "max_tokens");
    assert.equal(m.usage.output_tokens, 32);
  }],
  ["stop sequences", async () => {
    const at = text.indexOf(" ", Math.floor(text.length / 3));
    const piece = text.slice(at, at + 4);
    const m = await client.messages.create({ ...request, stop_sequences: [piece] });
    assert.equal(m.stop_reason, "stop_sequence");
    assert.equal(m.stop_sequence, piece);
    assert.equal(m.content[0].text, text.slice(0, text.indexOf(piece)));
  }],
  ["countTokens", async () => {
    const { system, messages } = request;
    const c = await client.messages.countTokens({ model: kModel, system, messages });
    assert.equal(c.input_tokens, usage.input_tokens + usage.cache_read_input_tokens);
  }],
  ["errors come as the client's classes", async () => {
    await assert.rejects(client.messages.create({ ...request, max_tokens: 0 }), (e) => e instanceof Anthropic.BadRequestError);
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };
    await assert.rejects(client.messages.create({ ...request, messages: [{ role: "user", content: [image] }] }),
                         (e) => e instanceof Anthropic.BadRequestError && /not supported/.test(e.message));
    const stranger = new Anthropic({ baseURL: server.base, apiKey: "wrong", maxRetries: 0 });
    await assert.rejects(stranger.messages.create(request), (e) => e instanceof Anthropic.AuthenticationError);
  }],
]);
await server.stop();
if (failed) console.log("--- server log ---\n" + server.log().slice(-4000));
process.exit(failed ? 1 : 0);
