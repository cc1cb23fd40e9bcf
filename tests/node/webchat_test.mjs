// The web chat at / in headless Chromium (playwright-core, Debian's chromium): the page loads with
// no outside requests, shows the model, streams an answer, and Stop ends a long generation.
// Exit 0: all passed, 1: a check failed.
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { runChecks, startServer } from "./server.mjs";

const kModel = "zinc-test";
const server = await startServer(["--alias", kModel, "-c", "4096"]);
const browser = await chromium.launch({
  executablePath: process.env.ZINC_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu"],
});
const page = await browser.newPage();
const problems = [], outside = [];
page.on("pageerror", (e) => problems.push("page error: " + e.message));
page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
page.on("request", (r) => { if (!r.url().startsWith(server.base)) outside.push(r.url()); });

const state = () => page.evaluate(() => [...document.querySelectorAll(".msg.assistant")].pop()?.dataset.state ?? null);
const statsText = () =>
  page.evaluate(() => [...document.querySelectorAll(".msg.assistant")].pop()?.querySelector(".stats")?.textContent ?? "");
const contentLength = () => page.evaluate(() => {
  const all = document.querySelectorAll(".msg.assistant .content");
  return all.length ? all[all.length - 1].textContent.length : 0;
});
async function setSetting(id, value) {
  if (await page.isHidden("#settings")) await page.click("#toggle-settings");
  await page.fill("#" + id, String(value));
  await page.dispatchEvent("#" + id, "change");
}
async function send(text) {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
}

const failed = await runChecks([
  ["the page loads and names the model", async () => {
    await page.goto(server.base + "/");
    await page.waitForFunction((m) => document.getElementById("model").textContent === m, kModel, { timeout: 5000 });
    assert.equal(await page.title(), "zinc chat");
  }],
  ["markdown is rendered and HTML is escaped", async () => {
    const html = await page.evaluate(() => renderMarkdown("**b** `c` <img src=x onerror=alert(1)> [l](javascript:x)"));
    assert.ok(html.includes("<strong>b</strong>") && html.includes("<code>c</code>"), html);
    assert.ok(html.includes("&lt;img") && !html.includes("<img") && !html.includes("href"), html);
  }],
  ["a message gets a streamed answer with its speed", async () => {
    await setSetting("temperature", 0);
    await setSetting("max_tokens", 24);
    await send("Tell me a story about Lily.");
    await page.waitForSelector(".msg.user");
    await page.waitForFunction(() => {
      const d = [...document.querySelectorAll(".msg.assistant")].pop();
      return d && d.dataset.state && d.dataset.state !== "streaming";
    }, null, { timeout: 15000 });
    assert.ok(["stop", "length"].includes(await state()), "finished: " + (await state()));
    assert.ok((await contentLength()) > 0, "the answer has text");
    assert.match(await statsText(), /\d+ tokens · [\d.]+ tok\/s/);
    assert.equal(await page.isVisible("#send"), true);
  }],
  ["Stop ends a long generation", async () => {
    await page.click("#new");
    await setSetting("max_tokens", 3500);
    await send("Once upon a time");
    // The answer grows on screen while it streams...
    await page.waitForFunction(() => {
      const d = [...document.querySelectorAll(".msg.assistant")].pop();
      return d && d.dataset.state === "streaming" && d.querySelector(".content").textContent.length > 0;
    }, null, { timeout: 15000, polling: 5 });
    const seen = new Set();
    for (let i = 0; i < 10 && (await state()) === "streaming"; i++) {
      seen.add(await contentLength());
      await page.waitForTimeout(20);
    }
    assert.equal(await page.isVisible("#stop"), true, "Stop is shown while streaming");
    await page.click("#stop");
    await page.waitForFunction(() => [...document.querySelectorAll(".msg.assistant")].pop().dataset.state !== "streaming",
                               null, { timeout: 5000 });
    assert.equal(await state(), "stopped");
    assert.ok(seen.size > 1, "the text grew while streaming: " + [...seen].join(","));
    const n = await contentLength();
    await page.waitForTimeout(300);
    assert.equal(await contentLength(), n, "no text after Stop");
    assert.equal(await page.isVisible("#send"), true);
    assert.match(await statsText(), /stopped/);
  }],
  ["the server answers again after a stop; conversations survive a reload", async () => {
    await setSetting("max_tokens", 8);
    await send("Hello");
    await page.waitForFunction(() => {
      const all = document.querySelectorAll(".msg.assistant");
      return all.length === 2 && all[1].dataset.state !== "streaming";
    }, null, { timeout: 15000 });
    assert.ok(["stop", "length"].includes(await state()), String(await state()));
    await page.reload();
    await page.waitForSelector("#conversations li");
    assert.equal(await page.locator("#conversations li").count(), 2);
    assert.equal(await page.locator(".msg").count(), 4, "the current conversation is shown again");
  }],
  ["no outside requests and no page errors", async () => {
    assert.deepEqual(outside, []);
    assert.deepEqual(problems, []);
  }],
]);
await browser.close();
await server.stop();
if (failed) console.log("--- server log ---\n" + server.log().slice(-4000));
process.exit(failed ? 1 : 0);
