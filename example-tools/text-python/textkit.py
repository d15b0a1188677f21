"""The text tools themselves, in plain Python: no WebAssembly in sight, so they can be tried with
any Python (`python3 -c 'import textkit; print(textkit.text_stats("a b a"))'`)."""

import os
import re
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


def regex_find_all(pattern, text, ignore_case=False, max_matches=100):
    """Every non-overlapping match of `pattern` in `text`, with positions and groups."""
    regex = compile_pattern(pattern, ignore_case)
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
    return {"count": len(matches), "truncated": truncated, "matches": matches}


def regex_replace(pattern, replacement, text, ignore_case=False):
    """`text` with every match of `pattern` replaced."""
    regex = compile_pattern(pattern, ignore_case)
    try:
        result, replacements = regex.subn(replacement, text)
    except (re.error, IndexError) as error:
        raise InvalidArguments(
            f"`replacement` is not a valid replacement ({error}): refer only to groups the pattern "
            "has (\\1 is the first) and write a backslash that must stay as \\\\"
        ) from None
    return {"text": result, "replacements": replacements}


def text_stats(text, top=10):
    """Counts of characters, words, lines and sentences, and the most frequent words."""
    words = [word.lower() for word in WORD.findall(text)]
    counts = Counter(words)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "characters": len(text),
        "words": len(words),
        "unique_words": len(counts),
        "lines": len(text.splitlines()),
        "sentences": len(SENTENCE_END.findall(text)),
        "average_word_length": round(sum(map(len, words)) / len(words), 2) if words else 0,
        "top_words": [{"word": word, "count": count} for word, count in ranked[:top]],
    }


def file_text_stats(path, top=10):
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
    return {"path": path, "bytes": len(data), **text_stats(text, top)}
