// JSON tools for a language model, as a WebAssembly component built with componentize-js
// (tool contract 0.2, wit/tool.wit). The tools are in jsontools.js; this module exports the WIT
// interface `toolhost:tool/tools`: it describes the tools, checks their arguments, maps errors
// onto `tool-error`, and gives each result its parts: the text the model reads, structured
// content for the tools that declare an output schema, a link to what fetch_json read.

import {
  Failed,
  InvalidArguments,
  fetchJson,
  isolationCheck,
  kind,
  parseDocument,
  query,
  transform,
} from "./jsontools.js";

/** The host `fetch_json` asks for; the host's grants decide which hosts it really reaches. */
const API_HOST = "api.example.com";

// The document as a JSON value or as its text: a model writes {"json": {"a": 1}} far more
// reliably than {"json": "{\\"a\\": 1}"} (JSON escaped inside a JSON string). A string is
// always read as JSON text.
const JSON_DOCUMENT = {
  type: ["object", "array", "string"],
  description: 'The JSON document, such as {"items": [{"name": "a"}]}: the object or array itself, or its text.',
};
const PATH = {
  type: "string",
  description:
    'Where the value is: keys joined by dots, array indexes in brackets, such as items[0].name, ' +
    'items[-1] (the last item), items[*].name (that field of every item) or ["odd key"].x. ' +
    "An empty path is the whole document.",
};

function schema(required, properties) {
  return { type: "object", properties, required, additionalProperties: false };
}

/** What the tools that only compute from their arguments say about themselves (MCP's hints). */
const PURE = { readOnly: true, destructive: false, idempotent: true, openWorld: false };

const TOOLS = {
  json_query: {
    title: "Query JSON",
    annotations: PURE,
    description:
      "Gets one value from a JSON document by its path: a field of an object, an item of an " +
      "array (items[0].name, items[*].price). Use it to read a value exactly instead of by eye.",
    input: schema(["json", "path"], { json: JSON_DOCUMENT, path: PATH }),
    run: ({ json, path }) => query(document(json), path),
    // A client gets the value with the path it was found at; the model reads the value alone.
    output: schema(["path", "value"], {
      path: { type: "string", description: "The path asked for." },
      value: { description: "The value at that path: any JSON value (an array for items[*])." },
    }),
    structure: ({ path }, value) => ({ path, value }),
  },
  json_transform: {
    title: "Reshape JSON rows",
    annotations: PURE,
    description:
      "Reshapes a JSON array of objects (the rows of a table): keeps only some fields, renames " +
      "fields, sorts by a field and keeps the first rows. Returns the new array.",
    input: schema(["json"], {
      json: {
        type: ["array", "string"],
        description: 'A JSON array of objects, such as [{"a": 1}]: the array itself, or its text.',
      },
      pick: {
        type: "array",
        items: { type: "string" },
        description: "The fields to keep, in this order. Default: all fields.",
      },
      rename: {
        type: "object",
        additionalProperties: { type: "string" },
        description: 'New names for fields, old name to new name, such as {"n": "count"}.',
      },
      sort_by: {
        type: "string",
        description: "Sort the rows by this field: numbers by value, other values as text. Rows without it go last.",
      },
      descending: { type: "boolean", description: "Sort from largest to smallest. Default false." },
      limit: { type: "integer", minimum: 0, description: "Keep at most this many rows (after sorting)." },
    }),
    run: ({ json, pick, rename, sort_by: sortBy, descending, limit }) =>
      transform(document(json), { pick, rename, sortBy, descending, limit }),
    output: schema(["rows", "count"], {
      rows: { type: "array", items: { type: "object" }, description: "The rows, reshaped." },
      count: { type: "integer", description: "How many rows there are." },
    }),
    structure: (_, rows) => ({ rows, count: rows.length }),
  },
  fetch_json: {
    title: "Fetch JSON",
    annotations: { readOnly: true, destructive: false, openWorld: true },
    description:
      "Fetches a JSON document from a URL over HTTP(S) and returns it, or only the value at a " +
      "path in it. Only hosts the user granted to this tool can be reached.",
    input: schema(["url"], {
      url: { type: "string", description: `The URL, such as https://${API_HOST}/v1/items.` },
      path: { ...PATH, description: `${PATH.description} Default: the whole answer.` },
    }),
    capabilities: [{ capability: { tag: "http", val: API_HOST }, reason: "the JSON API to read from" }],
    run: ({ url, path }) => fetchJson(url, path),
    // Where the value came from, as a link a client can open or fetch again itself.
    links: ({ url }) => [
      {
        tag: "resource-link",
        val: {
          uri: new URL(url).href,
          name: new URL(url).pathname.split("/").pop() || new URL(url).host,
          description: "The JSON document the value was read from.",
          mimeType: "application/json",
        },
      },
    ],
  },
  isolation_check: {
    title: "Isolation check",
    annotations: {},
    description:
      "A check for the host, not a JSON tool: leaves a marker in this component's memory " +
      "(globals, prototypes, caches) and lists the markers earlier calls left there. Always an " +
      "empty list when every call runs in a fresh instance.",
    input: schema(["marker"], { marker: { type: "string", description: "Any text, such as call-1." } }),
    run: ({ marker }) => isolationCheck(marker),
  },
};

/** A `json` argument: the document itself, or its text. */
function document(value) {
  return typeof value === "string" ? parseDocument(value) : value;
}

/** A call of each tool, as the messages about bad arguments show it. */
const EXAMPLES = {
  json_query: '{"json": {"items": [{"name": "pen"}]}, "path": "items[0].name"}',
  json_transform: '{"json": [{"name": "pen", "price": 2}], "sort_by": "price", "descending": true}',
  fetch_json: `{"url": "https://${API_HOST}/v1/items", "path": "items[0]"}`,
};

const PLACEHOLDERS = { string: '"..."', integer: "5", boolean: "true", array: '["..."]', object: "{...}" };

const JSON_TYPES = {
  string: (v) => typeof v === "string",
  boolean: (v) => typeof v === "boolean",
  integer: (v) => Number.isInteger(v),
  array: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
};

/**
 * The arguments, checked against the tool's schema (the host checks them too; never trust that).
 * Every message ends with what to send instead.
 */
function parseArguments(name, text, input) {
  const send = `; send arguments such as ${EXAMPLES[name]}`;
  let args;
  try {
    args = JSON.parse(text);
  } catch (error) {
    throw new InvalidArguments(`the arguments are not valid JSON (${error.message})${send}`);
  }
  if (!JSON_TYPES.object(args)) {
    throw new InvalidArguments(`the arguments must be a JSON object, not ${kind(args)}${send}`);
  }
  for (const field of input.required) {
    if (!Object.hasOwn(args, field)) {
      throw new InvalidArguments(`\`${field}\` is missing; ${name} needs ${input.required.join(", ")}${send}`);
    }
  }
  for (const [field, value] of Object.entries(args)) {
    const property = input.properties[field];
    if (!property) {
      const known = Object.keys(input.properties).join(", ");
      throw new InvalidArguments(`${name} has no argument \`${field}\`: leave it out; it takes ${known}${send}`);
    }
    const shown = typeof value === "number" ? String(value) : kind(value);
    const types = [property.type].flat();
    const mistyped = (what) =>
      new InvalidArguments(`\`${field}\` must be ${what}, not ${shown}: send it as "${field}": ${PLACEHOLDERS[types[0]]}`);
    if (!types.some((type) => JSON_TYPES[type](value))) {
      throw mistyped(types.map((type) => `${type === "integer" || type === "array" || type === "object" ? "an" : "a"} ${type}`).join(" or "));
    }
    if (property.minimum !== undefined && value < property.minimum) throw mistyped(`at least ${property.minimum}`);
    const inner = property.items ?? property.additionalProperties;
    const bad = inner && Object.values(value).find((item) => !JSON_TYPES[inner.type](item));
    if (bad !== undefined) {
      const container = property.type === "array" ? "an array" : "an object";
      throw new InvalidArguments(
        `\`${field}\` must be ${container} of ${inner.type}s; it holds ${kind(bad)}: send it as "${field}": ${PLACEHOLDERS[property.type]}`,
      );
    }
  }
  return args;
}

/** A WIT `tool-error`: componentize-js turns a thrown object with a `payload` into `err(payload)`. */
class ToolError extends Error {
  constructor(tag, message) {
    super(message);
    this.payload = { tag, val: message };
  }
}

export const tools = {
  describe() {
    return Object.entries(TOOLS).map(([name, tool]) => ({
      name,
      title: tool.title,
      description: tool.description,
      inputSchema: JSON.stringify(tool.input),
      outputSchema: tool.output && JSON.stringify(tool.output),
      annotations: tool.annotations,
      capabilities: tool.capabilities ?? [],
    }));
  },

  async call(name, argumentsText, _context) {
    const tool = Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
    try {
      if (!tool) {
        throw new InvalidArguments(`there is no tool \`${name}\`; this component offers ${Object.keys(TOOLS).join(", ")}`);
      }
      const args = parseArguments(name, argumentsText, tool.input);
      const value = (await tool.run(args)) ?? null;
      // WIT `outcome::complete(tool-result)`: variants are { tag, val }, options undefined.
      const content = [{ tag: "text", val: JSON.stringify(value) }, ...(tool.links?.(args) ?? [])];
      const structured = tool.structure && JSON.stringify(tool.structure(args, value));
      return { tag: "complete", val: { content, structured } };
    } catch (error) {
      if (error instanceof InvalidArguments) {
        // The checks above say what to send; the tools' own messages get an example call.
        const says = /\bsend\b/i.test(error.message);
        const example = tool && !says ? `; send arguments such as ${EXAMPLES[name]}` : "";
        throw new ToolError("invalid-arguments", `${error.message}${example}`);
      }
      if (error instanceof Failed) throw new ToolError("failed", error.message);
      throw new ToolError("failed", `${name} failed unexpectedly: ${error}`);
    }
  },
};
