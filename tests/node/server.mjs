// Starts `zinc serve` on a free loopback port for one test script, and a tiny check runner.
import { spawn } from "node:child_process";
import net from "node:net";

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Resolves when GET /health answers 200; rejects when the server exits or after timeoutMs.
async function waitHealthy(base, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`zinc serve exited with ${child.exitCode}`);
    try {
      const r = await fetch(base + "/health");
      if (r.ok) return;
    } catch {}
    await sleep(50);
  }
  throw new Error("zinc serve did not become healthy in " + timeoutMs + " ms");
}

// `extra`: more flags for zinc serve. Returns {base, stop(), log()}.
export async function startServer(extra = []) {
  const bin = process.env.ZINC_BIN, model = process.env.ZINC_TEST_MODEL;
  if (!bin || !model) throw new Error("set ZINC_BIN and ZINC_TEST_MODEL");
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const args = ["serve", "-m", model, "--host", "127.0.0.1", "--port", String(port), "-t", "2", ...extra];
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => { output += d; });
    child.stderr.on("data", (d) => { output += d; });
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitHealthy(base, child, 15000);
      return {
        base,
        log: () => output,
        stop: async () => {
          if (child.exitCode !== null) return;
          const exited = new Promise((r) => child.once("exit", r));
          child.kill("SIGTERM");
          const t = setTimeout(() => child.kill("SIGKILL"), 3000);
          await exited;
          clearTimeout(t);
        },
      };
    } catch (e) {
      child.kill("SIGKILL");
      lastError = new Error(e.message + "\n" + output);
    }
  }
  throw lastError;
}

// Runs named async checks in order; prints each result; returns the number of failures.
export async function runChecks(checks) {
  let failed = 0;
  for (const [name, fn] of checks) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
    }
  }
  return failed;
}
