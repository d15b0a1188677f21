// A tool for language models, as a WebAssembly component that toolhost runs sandboxed.
//
// componentize-js builds this module into a component (./build.sh) that exports the `tools`
// interface of wit/tool.wit (toolhost's tool contract 0.2): `describe` says what the tools are
// (name, description, JSON schemas of the arguments and of the result), `call` runs one. Add a
// tool: describe it in TOOLS, run it in `call`, rebuild and check (`host check dist/NAME.wasm`).

import { countWords } from "./words.js";

/** What a call of count_words should send, for the messages of invalid arguments. */
const SEND = 'send {"text": "the text to count"}';

const TOOLS = {
  count_words: {
    title: "Count words",
    description:
      "Counts the words of a text (runs of characters between spaces). Use it instead of counting by eye.",
    input: {
      type: "object",
      properties: { text: { type: "string", description: "The text to count the words of." } },
      required: ["text"],
      additionalProperties: false,
    },
    output: {
      type: "object",
      properties: { words: { type: "integer", description: "How many words." } },
      required: ["words"],
    },
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
  },
};

/** A WIT `tool-error`: componentize-js turns a thrown object with a `payload` into `err(payload)`. */
class ToolError extends Error {
  constructor(tag, message) {
    super(message);
    this.payload = { tag, val: message };
  }
}

function invalid(problem) {
  return new ToolError("invalid-arguments", `${problem}; ${SEND}`);
}

/** The `text` argument, or an invalid-arguments error that says what to send. */
function textArgument(argumentsText) {
  let args;
  try {
    args = JSON.parse(argumentsText);
  } catch (error) {
    throw invalid(`the arguments are not JSON (${error.message})`);
  }
  if (args === null || typeof args !== "object" || !("text" in args)) throw invalid("`text` is missing");
  if (typeof args.text !== "string") throw invalid(`\`text\` must be a string, not ${JSON.stringify(args.text)}`);
  return args.text;
}

export const tools = {
  describe() {
    return Object.entries(TOOLS).map(([name, tool]) => ({
      name,
      title: tool.title,
      description: tool.description,
      inputSchema: JSON.stringify(tool.input),
      outputSchema: JSON.stringify(tool.output),
      annotations: tool.annotations,
      // What the tool needs from outside (a directory, a host on the network); nothing here.
      capabilities: [],
    }));
  },

  call(name, argumentsText, _context) {
    if (name !== "count_words") throw new ToolError("failed", `there is no tool \`${name}\``);
    const words = countWords(textArgument(argumentsText));
    // WIT `outcome::complete(tool-result)`: variants are { tag, val }.
    return {
      tag: "complete",
      val: { content: [{ tag: "text", val: `${words} words` }], structured: JSON.stringify({ words }) },
    };
  },
};
