// The JavaScript code runner (contract toolhost:code@0.1.0, wit/code/runner.wit), built with
// componentize-js. It runs a program a model wrote as the body of an async function (or, when
// it is one expression, returns that expression's value), with
// `tools` (every tool of the run, as an async function taking its arguments object) and
// `console` (printing to the host) in scope, and returns what the program returns as JSON.
//
// The component has nothing but what the host gives it: no files, no environment, no network.
// A call of a tool is the host's: `tools.read_file({path: "a.txt"})` starts the call and
// returns a promise; calls started before the program awaits any of them run at the same time
// (`await Promise.all([...])`).

import { startCall, finishCall } from "toolhost:code/tools@0.1.0";
import { print } from "toolhost:code/output@0.1.0";

/** A tool call that gave no result; `kind` is the host's error kind (`denied`, `failed`, ...). */
class ToolError extends Error {
  constructor(tool, kind, message) {
    super(message);
    this.name = "ToolError";
    this.tool = tool;
    this.kind = kind;
  }
}

/** A runner error the host maps onto `run-error` (componentize-js reads `payload`). */
class RunError extends Error {
  constructor(tag, message) {
    super(message);
    this.payload = { tag, val: message };
  }
}

/** A tool's result as the program sees it: its structured content, else its text. */
function resultOf(ended) {
  return ended.structured === undefined ? ended.text : JSON.parse(ended.structured);
}

/** Starts a call now; the promise waits for it once the program awaits. */
function call(name, args) {
  const started = startCall(name, JSON.stringify(args ?? {}));
  return Promise.resolve().then(() => {
    try {
      return resultOf(finishCall(started));
    } catch (error) {
      // componentize-js throws a `result`'s error with its value in `payload`.
      const { kind, message } = error.payload ?? { kind: "failed", message: String(error) };
      throw new ToolError(name, kind, message);
    }
  });
}

/** `tools.<name>(args)` for any name: the host says which names the run offers. */
const tools = new Proxy(Object.freeze({}), {
  get: (_, name) => (typeof name === "string" ? (args) => call(name, args) : undefined),
});

/** Text of console arguments, as a browser console prints them. */
function line(args) {
  return args
    .map((arg) => {
      if (typeof arg === "string") return arg;
      try {
        return JSON.stringify(arg) ?? String(arg);
      } catch {
        return String(arg);
      }
    })
    .join(" ");
}

const printer = (...args) => print(`${line(args)}\n`);
const programConsole = Object.freeze({
  log: printer,
  info: printer,
  warn: printer,
  error: printer,
  debug: printer,
});

const AsyncFunction = async function () {}.constructor;

/** What an error says, with where it was thrown when the engine knows. */
function described(error) {
  if (error instanceof Error) {
    const where = error.stack ? `\n${error.stack.trim()}` : "";
    return `${error.name}: ${error.message}${where}`;
  }
  return `uncaught value: ${line([error])}`;
}

const PARAMETERS = ["tools", "console", "ToolError"];

/** The program: `code` as one expression whose value it returns, else as a function body. */
function compiled(code) {
  try {
    return new AsyncFunction(...PARAMETERS, `return (${code}\n);`);
  } catch {
    // Not an expression: statements, as the tool's description asks for.
  }
  try {
    return new AsyncFunction(...PARAMETERS, code);
  } catch (error) {
    throw new RunError("syntax", described(error));
  }
}

export const runner = {
  async run(code) {
    const program = compiled(code);
    let value;
    try {
      value = await program(tools, programConsole, ToolError);
    } catch (error) {
      throw new RunError("thrown", described(error));
    }
    const text = JSON.stringify(value === undefined ? null : value);
    if (text === undefined) {
      throw new RunError("thrown", `the program returned ${typeof value}, which is not JSON`);
    }
    return text;
  },
};
