"""The text tools themselves, in plain Python: no WebAssembly in sight, so they can be tried with
any Python (`python3 -c 'import textkit; print(textkit.text_stats("a b a"))'`)."""

import builtins
import functools
import json
import os
import re
import sys
import types
from collections import Counter

# The most matches `regex_find_all` returns, and the most bytes `file_text_stats` reads.
MAX_MATCHES = 1000
MAX_FILE_BYTES = 1024 * 1024

WORD = re.compile(r"\w+(?:['’]\w+)*")
SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")


class InvalidArguments(Exception):
    """The arguments cannot work: the message says what to change."""


class Failed(Exception):
    """The tool ran and could not do its job: the message says what happened."""


def compile_pattern(pattern, ignore_case):
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as error:
        raise InvalidArguments(
            f"`pattern` is not a valid regular expression ({error}): send a Python `re` pattern, "
            "with a backslash before any of ( ) [ ] { } . * + ? | ^ $ \\ that must match itself"
        ) from None


# Common patterns by name, for a `pattern` that names what to find instead of spelling it out
# ("email", "email_addresses", "dates").
PRESETS = {
    "email": r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    "url": r"https?://[^\s<>\"']+",
    "date": r"\d{4}-\d{2}-\d{2}",
    "number": r"-?\d+(?:\.\d+)?",
    "digit": r"\d",
    "word": WORD.pattern,
    "ip": r"\b(?:\d{1,3}\.){3}\d{1,3}\b",
    "hashtag": r"#\w+",
}
PRESET_ALIASES = {"mail": "email", "link": "url", "integer": "number", "ipv4": "ip"}
PRESET_NAMES = ", ".join(PRESETS)


def preset(pattern):
    """The preset `pattern` names ("email", "Email addresses", "digits"), if it is only a name."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z _-]*", pattern):
        return None
    key = re.sub(r"[^a-z]", "", pattern.lower())
    for ending in ("addresses", "address", "es", "s", ""):
        name = key.removesuffix(ending) if ending else key
        name = PRESET_ALIASES.get(name, name)
        if name in PRESETS:
            return name
    return None


def pattern_for(pattern, text, ignore_case):
    """The compiled pattern, and the preset it was read as: a name such as "emails" that
    matches nothing as written is read as that preset."""
    regex = compile_pattern(pattern, ignore_case)
    name = preset(pattern)
    if name is None or regex.search(text):
        return regex, None
    return compile_pattern(PRESETS[name], ignore_case), name


def read_as(pattern, name):
    """What the result says about a pattern read as preset `name`."""
    return {
        "pattern_used": PRESETS[name],
        "note": f"`{pattern}` matched nothing as written and was read as the {name} preset",
    }


def regex_find_all(pattern, text, ignore_case=False, max_matches=100):
    """Every non-overlapping match of `pattern` in `text`, with positions and groups."""
    regex, name = pattern_for(pattern, text, ignore_case)
    matches = []
    truncated = False
    for found in regex.finditer(text):
        if len(matches) == max_matches:
            truncated = True
            break
        match = {"match": found.group(0), "start": found.start(), "end": found.end()}
        if regex.groups:
            match["groups"] = list(found.groups())
        if regex.groupindex:
            match["named_groups"] = found.groupdict()
        matches.append(match)
    result = {"count": len(matches), "truncated": truncated, "matches": matches}
    if name is not None:
        result.update(read_as(pattern, name))
    return result


def regex_replace(pattern, replacement, text, ignore_case=False):
    """`text` with every match of `pattern` replaced."""
    regex, name = pattern_for(pattern, text, ignore_case)
    try:
        result, replacements = regex.subn(replacement, text)
    except (re.error, IndexError) as error:
        raise InvalidArguments(
            f"`replacement` is not a valid replacement ({error}): refer only to groups the pattern "
            "has (\\1 is the first) and write a backslash that must stay as \\\\"
        ) from None
    answer = {"text": result, "replacements": replacements}
    if name is not None:
        answer.update(read_as(pattern, name))
    return answer


class Quiet:
    """Where the tools report how far they have come when nothing watches them (natively).
    `app.py` passes its own, which hands the reports to the host."""

    def progress(self, done, total, message):
        pass

    def log(self, message):
        pass


QUIET = Quiet()

# About this many characters are counted between two progress reports.
STEP = 64 * 1024


def chunks(text):
    """`text` in pieces of about STEP characters that end at line ends, so that no word,
    sentence end or line break is cut in two."""
    piece, size = [], 0
    for line in text.splitlines(keepends=True):
        piece.append(line)
        size += len(line)
        if size >= STEP:
            yield "".join(piece)
            piece, size = [], 0
    if piece:
        yield "".join(piece)


def text_stats(text, top=10, report=QUIET):
    """Counts of characters, words, lines and sentences, and the most frequent words; reports
    progress (characters counted of all) as it works through a large text."""
    counts = Counter()
    words = letters = lines = sentences = done = 0
    for piece in chunks(text):
        found = [word.lower() for word in WORD.findall(piece)]
        counts.update(found)
        words += len(found)
        letters += sum(map(len, found))
        lines += len(piece.splitlines())
        sentences += len(SENTENCE_END.findall(piece))
        done += len(piece)
        report.progress(done, len(text), f"{words} words counted")
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "characters": len(text),
        "words": words,
        "unique_words": len(counts),
        "lines": lines,
        "sentences": sentences,
        "average_word_length": round(letters / words, 2) if words else 0,
        "top_words": [{"word": word, "count": count} for word, count in ranked[:top]],
    }


def file_text_stats(path, top=10, report=QUIET):
    """`text_stats` of a UTF-8 text file."""
    if os.path.isdir(path):
        raise Failed(f"`{path}` is a directory, not a file")
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        reason = error.strerror or str(error)
        raise Failed(
            f"cannot read `{path}`: {reason} (only directories granted to this tool exist for it)"
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise Failed(f"`{path}` is larger than {MAX_FILE_BYTES} bytes; this tool reads small files")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Failed(f"`{path}` is not UTF-8 text") from None
    report.log(f"read {len(data)} bytes from {path}")
    return {"path": path, "bytes": len(data), **text_stats(text, top, report)}


# Markers of earlier `isolation_check` calls in this interpreter, if it served any.
_EARLIER_MARKERS = []


@functools.lru_cache(maxsize=None)
def _cached_marker(marker):
    return marker


def isolation_check(marker):
    """Leaves `marker` where state survives from one call to the next in a long-lived interpreter
    (a module global, the builtins, the module table, a class attribute, a function cache) and
    reports what earlier calls left there. On a host that runs every call in a fresh instance the
    list is always empty; called twice in one interpreter, the second call finds the first."""
    left = [f"module global: {m}" for m in _EARLIER_MARKERS]
    if hasattr(builtins, "isolation_marker"):
        left.append(f"builtins: {builtins.isolation_marker}")
    if "isolation_module" in sys.modules:
        left.append(f"sys.modules: {sys.modules['isolation_module'].marker}")
    if hasattr(json.JSONEncoder, "isolation_marker"):
        left.append(f"class attribute: {json.JSONEncoder.isolation_marker}")
    cached = _cached_marker.cache_info().currsize
    if cached:
        left.append(f"function cache: {cached} entries")

    _EARLIER_MARKERS.append(marker)
    builtins.isolation_marker = marker
    module = types.ModuleType("isolation_module")
    module.marker = marker
    sys.modules["isolation_module"] = module
    json.JSONEncoder.isolation_marker = marker
    _cached_marker(marker)
    return {"left_by_earlier_calls": left}
