// What the tool computes, in plain JavaScript (tested by words.test.js without a component).

/** The number of words of `text`: runs of characters between spaces. */
export function countWords(text) {
  return text.split(/\s+/).filter((word) => word.length > 0).length;
}
