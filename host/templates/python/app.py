"""A tool for language models, as a WebAssembly component that toolhost runs sandboxed.

componentize-py builds this module into a component (./build.sh) that exports the `tools`
interface of wit/tool.wit (toolhost's tool contract 0.2): `describe` says what the tools are
(name, description, JSON schemas of the arguments and of the result), `call` runs one. Add a
tool: describe it in TOOLS, run it in `call`, rebuild and check (`host check dist/NAME.wasm`).
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.tools import (
    Annotations,
    CallContext,
    Content_Text,
    Outcome,
    Outcome_Complete,
    ToolError_Failed,
    ToolError_InvalidArguments,
    ToolResult,
    ToolSpec,
)

from words import count_words

# What a call of count_words should send, for the messages of invalid arguments.
SEND = 'send {"text": "the text to count"}'

COUNT_WORDS = ToolSpec(
    name="count_words",
    title="Count words",
    description="Counts the words of a text (runs of characters between spaces). "
    "Use it instead of counting by eye.",
    input_schema=json.dumps(
        {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to count the words of."}
            },
            "required": ["text"],
            "additionalProperties": False,
        }
    ),
    output_schema=json.dumps(
        {
            "type": "object",
            "properties": {"words": {"type": "integer", "description": "How many words."}},
            "required": ["words"],
        }
    ),
    annotations=Annotations(read_only=True, destructive=False, idempotent=True, open_world=False),
    # What the tool needs from outside (a directory, a host on the network); nothing here.
    capabilities=[],
)


def invalid(problem):
    return Err(ToolError_InvalidArguments(f"{problem}; {SEND}"))


def text_argument(arguments):
    """The `text` argument, or an invalid-arguments error that says what to send."""
    try:
        value = json.loads(arguments)
    except ValueError as error:
        raise invalid(f"the arguments are not JSON ({error})") from None
    if not isinstance(value, dict) or "text" not in value:
        raise invalid("`text` is missing")
    if not isinstance(value["text"], str):
        raise invalid(f"`text` must be a string, not {json.dumps(value['text'])}")
    return value["text"]


class Tools(exports.Tools):
    def describe(self):
        return [COUNT_WORDS]

    def call(self, name: str, arguments: str, context: CallContext) -> Outcome:
        if name != "count_words":
            raise Err(ToolError_Failed(f"there is no tool `{name}`"))
        words = count_words(text_argument(arguments))
        return Outcome_Complete(
            ToolResult(
                content=[Content_Text(f"{words} words")],
                structured=json.dumps({"words": words}),
            )
        )
