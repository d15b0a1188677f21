"""Text tools for a language model: regular expressions and text statistics, as a WebAssembly
component built with componentize-py (tool contract 0.2, `wit/tool.wit`). The tools are in
`textkit.py`; this module describes them to the host, checks their arguments, maps errors onto
the WIT `tool-error` and hands the tools' progress reports and log lines to the host."""

import functools
import json

import textkit
from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.tools import (
    Annotations,
    CallContext,
    Capability_ReadDir,
    CapabilityRequest,
    Content_Text,
    Outcome,
    Outcome_Complete,
    ToolError_Failed,
    ToolError_InvalidArguments,
    ToolResult,
    ToolSpec,
)
from wit_world.imports import report


class HostReport:
    """textkit's reports, to the host: progress to a client's progress bar, log lines to
    whoever watches the call. The host passes them on at a bounded rate."""

    def progress(self, done, total, message):
        report.progress(float(done), float(total), message)

    def log(self, message):
        report.log(report.Level.INFO, message)


HOST = HostReport()
# Every tool here only reads what it is given: it changes nothing and reaches no one.
READ_ONLY = Annotations(read_only=True, destructive=False, idempotent=True, open_world=False)

IGNORE_CASE = {
    "type": "boolean",
    "description": "Match letters regardless of case. Default false.",
}
TOP = {
    "type": "integer",
    "minimum": 0,
    "maximum": 100,
    "description": "How many of the most frequent words to list. Default 10.",
}
STATS = {
    "type": "object",
    "properties": {
        "characters": {"type": "integer", "description": "Unicode characters, newlines included."},
        "words": {"type": "integer", "description": "Words (runs of letters, digits, _ and ')."},
        "unique_words": {"type": "integer", "description": "Distinct words, ignoring case."},
        "lines": {"type": "integer", "description": "Lines."},
        "sentences": {"type": "integer", "description": "Sentence ends (., ! or ?)."},
        "average_word_length": {"type": "number", "description": "Mean characters per word."},
        "top_words": {
            "type": "array",
            "description": "The most frequent words, lowercased, most frequent first.",
            "items": {
                "type": "object",
                "properties": {
                    "word": {"type": "string", "description": "The word, lowercased."},
                    "count": {"type": "integer", "description": "How often it occurs."},
                },
            },
        },
    },
}
FILE_STATS = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file measured."},
        "bytes": {"type": "integer", "description": "Its size."},
        **STATS["properties"],
    },
}


def schema(required, **properties):
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


# name -> (title, description, input schema, output schema, capability requests, function)
# (EXAMPLES below holds a call of each, for the messages about bad arguments.)
TOOLS = {
    "regex_find_all": (
        "Find all regex matches",
        "Finds every match of a Python regular expression in a text and returns each match with "
        "its start and end offsets and its capture groups. Use it to extract things such as "
        "dates, e-mail addresses, numbers or identifiers from text exactly.",
        schema(
            ["pattern", "text"],
            pattern={
                "type": "string",
                "description": "A Python `re` regular expression, such as \\d{4}-\\d{2}-\\d{2}, "
                f"or the name of a common one: {textkit.PRESET_NAMES}.",
            },
            text={"type": "string", "description": "The text to search."},
            ignore_case=IGNORE_CASE,
            max_matches={
                "type": "integer",
                "minimum": 1,
                "maximum": textkit.MAX_MATCHES,
                "description": "Stop after this many matches. Default 100.",
            },
        ),
        None,
        [],
        textkit.regex_find_all,
    ),
    "regex_replace": (
        "Regex replace",
        "Replaces every match of a Python regular expression in a text and returns the new text "
        "and the number of replacements. The replacement may refer to groups as \\1 or \\g<name>.",
        schema(
            ["pattern", "replacement", "text"],
            pattern={
                "type": "string",
                "description": "A Python `re` regular expression, or the name of a common one: "
                f"{textkit.PRESET_NAMES}.",
            },
            replacement={
                "type": "string",
                "description": "What each match becomes; \\1 or \\g<name> insert a group.",
            },
            text={"type": "string", "description": "The text to change."},
            ignore_case=IGNORE_CASE,
        ),
        None,
        [],
        textkit.regex_replace,
    ),
    "text_stats": (
        "Text statistics",
        "Counts the characters, words, distinct words, lines and sentences of a text and lists "
        "its most frequent words. Use it instead of counting by eye.",
        schema(
            ["text"],
            text={"type": "string", "description": "The text to measure."},
            top=TOP,
        ),
        STATS,
        [],
        functools.partial(textkit.text_stats, report=HOST),
    ),
    "file_text_stats": (
        "Text file statistics",
        "Counts the characters, words, distinct words, lines and sentences of a UTF-8 text file "
        "under /data (at most 1 MiB), such as /data/notes.txt, and lists its most frequent words.",
        schema(
            ["path"],
            path={
                "type": "string",
                "description": "The file's path as the tool sees it, such as /data/notes.txt.",
            },
            top=TOP,
        ),
        FILE_STATS,
        [CapabilityRequest(Capability_ReadDir("/data"), "the text files to measure")],
        functools.partial(textkit.file_text_stats, report=HOST),
    ),
    "isolation_check": (
        "Isolation check",
        "A check for the host, not a text tool: leaves a marker in this component's memory "
        "(globals, modules, caches) and lists the markers earlier calls left there. Always an "
        "empty list when every call runs in a fresh instance.",
        schema(
            ["marker"],
            marker={"type": "string", "description": "Any text, such as call-1."},
        ),
        None,
        [],
        textkit.isolation_check,
    ),
}

# A call of each tool, as the messages about bad arguments show it.
EXAMPLES = {
    "regex_find_all": '{"pattern": "\\\\d+", "text": "3 apples and 12 pears"}',
    "regex_replace": '{"pattern": "colou?r", "replacement": "hue", "text": "a red colour"}',
    "text_stats": '{"text": "One fish. Two fish."}',
    "file_text_stats": '{"path": "/data/notes.txt"}',
    "isolation_check": '{"marker": "call-1"}',
}

PLACEHOLDERS = {"string": '"..."', "integer": "5", "number": "1.5", "boolean": "true"}

JSON_TYPES = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def json_kind(value):
    """How a JSON value is called in messages: "a string", "an array", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "an array", dict: "an object"}[type(value)]


def invalid(message):
    return Err(ToolError_InvalidArguments(message))


def parse_arguments(name, text, input_schema):
    """The arguments as a dict, checked against the tool's schema (the host checks them too, but
    a tool must not trust that). Every message ends with what to send instead."""
    send = f"; send arguments such as {EXAMPLES[name]}"
    try:
        arguments = json.loads(text)
    except ValueError as error:
        raise invalid(f"the arguments are not valid JSON ({error}){send}") from None
    if not isinstance(arguments, dict):
        raise invalid(f"the arguments must be a JSON object, not {json_kind(arguments)}{send}")
    properties = input_schema["properties"]
    for field in input_schema["required"]:
        if field not in arguments:
            needs = ", ".join(input_schema["required"])
            raise invalid(f"`{field}` is missing; {name} needs {needs}{send}")
    for field, value in arguments.items():
        if field not in properties:
            raise invalid(
                f"{name} has no argument `{field}`: leave it out; it takes {', '.join(properties)}"
                f"{send}"
            )
        expected = properties[field]["type"]
        # bool is a subclass of int in Python: true is no integer here.
        if not isinstance(value, JSON_TYPES[expected]) or (
            isinstance(value, bool) and expected != "boolean"
        ):
            article = "an" if expected == "integer" else "a"
            raise invalid(
                f"`{field}` must be {article} {expected}, not {json_kind(value)}: send it as "
                f'"{field}": {PLACEHOLDERS[expected]}'
            )
        low = properties[field].get("minimum")
        high = properties[field].get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise invalid(
                f"`{field}` must be between {low} and {high}, not {value}: send a value in that "
                f"range, or leave `{field}` out"
            )
    return arguments


class Tools(exports.Tools):
    def describe(self):
        return [
            ToolSpec(
                name=name,
                title=title,
                description=description,
                input_schema=json.dumps(input_schema),
                output_schema=json.dumps(output_schema) if output_schema else None,
                annotations=READ_ONLY,
                capabilities=capabilities,
            )
            for name, (title, description, input_schema, output_schema, capabilities, _) in (
                TOOLS.items()
            )
        ]

    def call(self, name: str, arguments: str, context: CallContext) -> Outcome:
        if name not in TOOLS:
            raise invalid(f"there is no tool `{name}`; this component offers {', '.join(TOOLS)}")
        _, _, input_schema, output_schema, _, function = TOOLS[name]
        kwargs = parse_arguments(name, arguments, input_schema)
        try:
            result = function(**kwargs)
        except textkit.InvalidArguments as error:
            raise invalid(f"{error}; send arguments such as {EXAMPLES[name]}") from None
        except textkit.Failed as error:
            raise Err(ToolError_Failed(str(error))) from None
        except Exception as error:  # a bug: say so rather than trap
            raise Err(ToolError_Failed(f"{name} failed unexpectedly: {error!r}")) from None
        text = json.dumps(result, ensure_ascii=False)
        # The model reads the text; a tool with an output schema gives the same JSON as
        # structured content, which the host checks against the schema.
        structured = text if output_schema else None
        return Outcome_Complete(ToolResult(content=[Content_Text(text)], structured=structured))
