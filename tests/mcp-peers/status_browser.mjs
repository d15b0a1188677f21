// Headless Chromium (Debian's `chromium`) driven over the DevTools protocol as a person uses
// the status page of a server that requires a token: it opens the page, waits for the token
// field, types a wrong token and presses Enter, waits for the page to ask again, types the
// token, waits until every chart has data, keeps a screenshot, and prints one JSON line of
// what it saw: `before` (the page before any token), `refused` (after the wrong one) with
// `refusedProblems` (what the browser logged then), `after` (each chart's data points, the
// summary, the error texts, the page's URL, what sessionStorage holds), and `problems` (every
// console error, exception and error logged from the right token on).
//
//   node status_browser.mjs CHROMIUM URL TOKEN WRONG_TOKEN SCREENSHOT
//
// Needs Node 22 or newer (its WebSocket): the peers' Node 24.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [chromium, url, token, wrongToken, screenshot] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "status-browser-"));
const browser = spawn(
  chromium,
  [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--remote-debugging-port=0", `--user-data-dir=${profile}`, "--window-size=1280,1000",
    "about:blank",
  ],
  { stdio: ["ignore", "ignore", "pipe"] },
);
let log = "";
browser.stderr.on("data", (data) => { log += data; });

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// `check()`'s first true value, looked for every 100 ms for up to a minute.
async function until(what, check) {
  for (let i = 0; i < 600; i++) {
    const value = await check();
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`no ${what} within a minute; chromium said:\n${log}`);
}

async function pageTarget() {
  const active = join(profile, "DevToolsActivePort");
  const port = await until("DevTools port", () =>
    existsSync(active) && readFileSync(active, "utf8").split("\n")[0]);
  return until("page to drive", async () => {
    try {
      const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      return targets.find((target) => target.type === "page");
    } catch {
      return null;
    }
  });
}

let problems = [];
let next = 0;
const waiting = new Map();

function listen(socket) {
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.id !== undefined) {
      const { resolve, reject } = waiting.get(message.id);
      waiting.delete(message.id);
      if (message.error) reject(new Error(JSON.stringify(message.error)));
      else resolve(message.result);
      return;
    }
    const params = message.params;
    if (message.method === "Runtime.consoleAPICalled" && ["error", "warning", "assert"].includes(params.type)) {
      problems.push(`console.${params.type}: ${params.args.map((a) => a.value ?? a.description).join(" ")}`);
    } else if (message.method === "Runtime.exceptionThrown") {
      problems.push(`exception: ${params.exceptionDetails.exception?.description ?? params.exceptionDetails.text}`);
    } else if (message.method === "Log.entryAdded" && params.entry.level === "error") {
      problems.push(`${params.entry.source}: ${params.entry.text} ${params.entry.url ?? ""}`);
    }
  };
}

const State = `(() => {
  const charts = {};
  for (const canvas of document.querySelectorAll("canvas")) {
    charts[canvas.id] = Number(canvas.dataset.points || 0);
  }
  return {
    charts,
    summary: document.getElementById("summary").textContent,
    error: document.getElementById("error").textContent,
    loginShown: !document.getElementById("login").hidden,
    loginError: document.getElementById("login-error").textContent,
    url: location.href,
    stored: sessionStorage.getItem("toolhost-status-token"),
  };
})()`;

try {
  const target = await pageTarget();
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => { socket.onopen = resolve; socket.onerror = reject; });
  listen(socket);
  const send = (method, params = {}) => new Promise((resolve, reject) => {
    const id = ++next;
    waiting.set(id, { resolve, reject });
    socket.send(JSON.stringify({ id, method, params }));
  });
  const state = async () =>
    (await send("Runtime.evaluate", { expression: State, returnByValue: true })).result.value;
  await send("Runtime.enable");
  await send("Log.enable");
  await send("Page.enable");
  await send("Page.navigate", { url });
  const before = await until("token field", async () => {
    const now = await state().catch(() => null);
    return now?.loginShown && now;
  });
  // Types `text` into the token field and presses Enter.
  const typeToken = async (text) => {
    await send("Runtime.evaluate", { expression: `document.getElementById("token").focus()` });
    await send("Input.insertText", { text });
    const enter = { key: "Enter", code: "Enter", windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 };
    await send("Input.dispatchKeyEvent", { type: "keyDown", text: "\r", ...enter });
    await send("Input.dispatchKeyEvent", { type: "keyUp", ...enter });
  };
  await typeToken(wrongToken);
  const refused = await until("token asked for again", async () => {
    const now = await state();
    return now.loginShown && now.loginError && now;
  });
  // The refused request, as the browser logs it.
  await until("refusal logged", () => problems.some((problem) => problem.includes("401")));
  const refusedProblems = problems;
  problems = [];
  await typeToken(token);
  const after = await until("data in every chart", async () => {
    const now = await state();
    return Object.values(now.charts).every((points) => points > 0) && now;
  });
  const shot = await send("Page.captureScreenshot", { format: "png" });
  writeFileSync(screenshot, Buffer.from(shot.data, "base64"));
  console.log(JSON.stringify({ before, refused, refusedProblems, after, problems }));
  socket.close();
} finally {
  browser.kill();
  await sleep(200);
  rmSync(profile, { recursive: true, force: true });
}
process.exit(0);
