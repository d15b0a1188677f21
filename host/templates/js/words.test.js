// Unit tests of words.js:   node --test
import assert from "node:assert/strict";
import { test } from "node:test";

import { countWords } from "./words.js";

test("counts words", () => {
  assert.equal(countWords("one two  three\nfour"), 4);
});

test("blank text has none", () => {
  assert.equal(countWords("   "), 0);
});
