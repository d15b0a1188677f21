// The JSON tools themselves, in plain JavaScript with no WebAssembly in sight: they run in
// Node too (`node -e 'import("./jsontools.js").then(t => console.log(t.query({a: [1]}, "a[0]")))'`).

/** The arguments cannot work; the message says what to change. */
export class InvalidArguments extends Error {}

/** The tool ran and could not do its job; the message says what happened. */
export class Failed extends Error {}

/** The most bytes `fetchJson` accepts in a response. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** Parses `text`, the JSON document a model passed in the argument `name`. */
export function parseDocument(text, name = "json") {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidArguments(
      `\`${name}\` is not valid JSON (${error.message}): send the document itself (an object or array) or its JSON text, with keys and strings in double quotes`,
    );
  }
}

/**
 * Splits a path such as `items[0].name`, `a["odd key"].b`, `[2]` or `items[*].id` into steps:
 * strings are object keys, numbers array indexes (negative from the end), `"*"` every element.
 */
export function parsePath(path) {
  const steps = [];
  // A JSONPath-style root (`$.items[0]`) is accepted too.
  let i = /^\$(?=[.[]|$)/.test(path) ? 1 : 0;
  const fail = (why) => {
    throw new InvalidArguments(
      `\`path\` ${JSON.stringify(path)} is not valid at offset ${i}: ${why}; write keys joined by dots and indexes in brackets, such as items[0].name`,
    );
  };
  while (i < path.length) {
    if (path[i] === "[") {
      const close = path.indexOf("]", i);
      if (close < 0) fail("`[` is never closed");
      const inside = path.slice(i + 1, close).trim();
      if (inside === "*") {
        steps.push({ all: true });
      } else if (/^-?\d+$/.test(inside)) {
        steps.push({ index: Number(inside) });
      } else if (/^"(?:[^"\\]|\\.)*"$/.test(inside)) {
        steps.push({ key: JSON.parse(inside) });
      } else {
        fail('write [0], [-1], [*] or ["key"] between brackets');
      }
      i = close + 1;
    } else {
      if (path[i] === ".") {
        // A dot follows a step or the `$` root, and a key follows it.
        if (i === 0) fail("a path starts with a key, `[` or `$`");
        i += 1;
        if (i === path.length) fail("a `.` needs a key after it");
      } else if (steps.length > 0) {
        fail("expected `.` or `[`");
      }
      const match = /^[^.[\]]+/.exec(path.slice(i));
      if (!match) fail("expected a key");
      steps.push(match[0] === "*" ? { all: true } : { key: match[0] });
      i += match[0].length;
    }
  }
  return steps;
}

/** The path `done` followed by `step`, written the way `parsePath` reads it. */
function extend(done, step) {
  if (step.all) return `${done}[*]`;
  if (step.index !== undefined) return `${done}[${step.index}]`;
  if (!/^[A-Za-z_$][\w$]*$/.test(step.key)) return `${done}[${JSON.stringify(step.key)}]`;
  return done ? `${done}.${step.key}` : step.key;
}

/** How a JSON value is called in messages: "a string", "an array", ... */
export function kind(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** `object[key]` if `object` has it as its own field: inherited ones ("constructor") are not data. */
function own(object, key) {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** The value at `path` in `document`; a `[*]` step yields an array of the values below it. */
export function query(document, path) {
  const steps = parsePath(path);
  const walk = (value, at, done) => {
    if (at === steps.length) return value;
    const step = steps[at];
    const here = extend(done, step);
    const missing = (why) => {
      throw new InvalidArguments(`\`${here}\` does not exist: ${why}`);
    };
    if (step.all) {
      if (Array.isArray(value)) return value.map((item, n) => walk(item, at + 1, extend(done, { index: n })));
      if (value !== null && typeof value === "object") {
        return Object.entries(value).map(([key, item]) => walk(item, at + 1, extend(done, { key })));
      }
      missing(`\`${done || "the document"}\` is ${kind(value)}, not an array or object`);
    }
    if (step.index !== undefined) {
      if (!Array.isArray(value)) missing(`\`${done || "the document"}\` is ${kind(value)}, not an array`);
      const index = step.index < 0 ? value.length + step.index : step.index;
      if (index < 0 || index >= value.length) {
        const last = value.length - 1;
        missing(
          value.length === 0
            ? "the array is empty"
            : `the array has ${value.length} items: send an index from 0 to ${last}, or -1 for the last`,
        );
      }
      return walk(value[index], at + 1, here);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      missing(`\`${done || "the document"}\` is ${kind(value)}, not an object`);
    }
    if (!Object.hasOwn(value, step.key)) {
      const keys = Object.keys(value).slice(0, 20);
      const paths = keys.map((key) => extend(done, { key })).join(", ");
      missing(keys.length ? `send one of the paths that exist there: ${paths}` : `\`${done || "the document"}\` has no keys`);
    }
    return walk(value[step.key], at + 1, here);
  };
  return walk(document, 0, "");
}

function compare(a, b) {
  if (a === undefined || a === null) return b === undefined || b === null ? 0 : 1;
  if (b === undefined || b === null) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b));
}

/** An array of objects with fields picked, renamed and sorted, and cut to `limit` items. */
export function transform(document, { pick, rename, sortBy, descending = false, limit }) {
  if (!Array.isArray(document)) {
    throw new InvalidArguments(
      `\`json\` must be an array of objects, not ${kind(document)}: send the rows as an array such as [{"name": "pen", "price": 2}] (json_query reads a single value)`,
    );
  }
  document.forEach((item, n) => {
    if (item === null || typeof item !== "object" || Array.isArray(item)) {
      throw new InvalidArguments(`item ${n} of \`json\` is ${kind(item)}, not an object: send an array whose items are all objects`);
    }
  });
  let rows = document;
  if (sortBy !== undefined) {
    // Missing values sort last in either direction.
    const sign = descending ? -1 : 1;
    rows = [...rows].sort((a, b) => {
      const x = own(a, sortBy);
      const y = own(b, sortBy);
      if (x === undefined || x === null || y === undefined || y === null) return compare(x, y);
      return sign * compare(x, y);
    });
  }
  if (limit !== undefined) rows = rows.slice(0, limit);
  return rows.map((item) => {
    // No prototype: a field named "__proto__" stays a field.
    const out = Object.create(null);
    for (const key of pick ?? Object.keys(item)) {
      if (Object.hasOwn(item, key)) out[(rename && own(rename, key)) ?? key] = item[key];
    }
    return out;
  });
}

/** Fetches `url`, parses the answer as JSON and returns it, or the value at `path` in it. */
export async function fetchJson(url, path) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArguments(`\`url\` ${JSON.stringify(url)} is not an absolute URL: send one such as https://api.example.com/v1/items`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new InvalidArguments(`\`url\` must start with https:// or http://, not ${parsed.protocol}: send an http(s) URL`);
  }
  if (path !== undefined) parsePath(path); // a bad path fails before any request is made
  let response;
  try {
    response = await fetch(parsed.href, { headers: { accept: "application/json" } });
  } catch (error) {
    throw new Failed(`cannot fetch ${parsed.href}: ${error.message}`);
  }
  const body = await response.text();
  if (!response.ok) {
    const excerpt = body.slice(0, 200).replace(/\s+/g, " ").trim();
    throw new Failed(`${parsed.href} answered ${response.status} ${response.statusText}: ${excerpt}`);
  }
  if (body.length > MAX_RESPONSE_BYTES) {
    throw new Failed(`${parsed.href} sent more than ${MAX_RESPONSE_BYTES} bytes; this tool reads small answers`);
  }
  let document;
  try {
    document = JSON.parse(body);
  } catch (error) {
    throw new Failed(`${parsed.href} did not answer with JSON: ${error.message}`);
  }
  if (path === undefined) return document;
  try {
    return query(document, path);
  } catch (error) {
    // The path was well-formed; the document just lacks it.
    throw new Failed(`the answer from ${parsed.href} has no such value: ${error.message}`);
  }
}

/** Markers of earlier `isolationCheck` calls in this engine, if it served any. */
const earlierMarkers = [];
const cache = new Map();

/**
 * Leaves `marker` where state survives from one call to the next in a long-lived engine (a
 * module variable, a global, a built-in prototype, a cache) and reports what earlier calls left
 * there. On a host that runs every call in a fresh instance the list is always empty; called
 * twice in one engine, the second call finds the first.
 */
export function isolationCheck(marker) {
  const left = earlierMarkers.map((m) => `module variable: ${m}`);
  if ("isolationMarker" in globalThis) left.push(`global: ${globalThis.isolationMarker}`);
  if (Object.hasOwn(Array.prototype, "isolationMarker")) {
    left.push(`prototype: ${Array.prototype.isolationMarker}`);
  }
  if (cache.size > 0) left.push(`cache: ${[...cache.keys()].join(", ")}`);

  earlierMarkers.push(marker);
  globalThis.isolationMarker = marker;
  Object.defineProperty(Array.prototype, "isolationMarker", { value: marker, configurable: true });
  cache.set(marker, true);
  return { left_by_earlier_calls: left };
}
