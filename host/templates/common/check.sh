# The component as toolhost runs it: `host check` (every check of a tool fit to share), then
# one call whose answer is known. TOOLHOST_BIN names another `host` binary than the one on PATH.
host=${TOOLHOST_BIN:-host}
"$host" check dist/{{name}}.wasm
answer=$("$host" call dist/{{name}}.wasm count_words '{"text": "one two three"}')
if [[ $answer != *"3 words"* ]]; then
  echo "count_words of \"one two three\" answered $answer, not 3 words" >&2
  exit 1
fi
echo "ok: count_words answered $answer"
