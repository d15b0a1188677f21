"""What the official MCP conformance suite (`@modelcontextprotocol/conformance`, server mode) calls
by name, for `host mcp --http` to serve, written in Python against tool contract 0.2
(`wit/tool.wit`, world `toolbox-with-resources-and-prompts`) and built with componentize-py:
the same tools, resources, prompts and completions as the Rust guest
(tests/guests/mcp-conformance), with the same answers, and the prompt that asks for input
first. `asking.py` has the tools that ask."""

import json
import struct
import sys
import time

import asking
from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import prompts, resources
from wit_world.exports.tools import (
    Annotations,
    CallContext,
    Content_Audio,
    Content_EmbeddedResource,
    Content_Image,
    Content_Text,
    EmbeddedResource,
    Media,
    Outcome_Complete,
    ResourceContents_Text,
    ToolError_Failed,
    ToolResult,
    ToolSpec,
)
from wit_world.imports import report

EMPTY = asking.EMPTY

# The input schema the `json-schema-2020-12` scenario checks, key for key.
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

# A red pixel, as a PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c49444154789c63f8"
    "cfc0000003010100c9fe92ef0000000049454e44ae426082"
)


def wav():
    """A tenth of a second of silence, as a WAV file (8 kHz, 8 bits, mono)."""
    samples = 800
    header = b"RIFF" + struct.pack("<I", 36 + samples) + b"WAVEfmt "
    # PCM, mono, 8000 samples/s, 8000 bytes/s, 1 byte per frame, 8 bits per sample.
    header += struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8)
    return header + b"data" + struct.pack("<I", samples) + bytes([128]) * samples


def image():
    return Content_Image(Media(PNG, "image/png"))


def resource():
    contents = ResourceContents_Text("This is an embedded resource content.")
    return Content_EmbeddedResource(
        EmbeddedResource("test://embedded-resource", "text/plain", contents)
    )


def parts(*content):
    return ToolResult(list(content), None)


def text(value):
    return parts(Content_Text(value))


def logging_to_stderr(_arguments):
    for line in ["Tool execution started", "Tool processing data", "Tool execution completed"]:
        print(line, file=sys.stderr, flush=True)
    return text("Tool with logging executed successfully")


def logging_by_report(_arguments):
    for line in ["Logging started", "Logging more", "Logging done"]:
        report.log(report.Level.INFO, line)
    return text("Logging tool completed")


def progress(_arguments):
    for done in [0, 50, 100]:
        report.progress(float(done), 100.0, f"{done}% done")
        # The progress scenario wants the reports spread over time.
        time.sleep(0.05)
    return text("Progress test completed")


def failing(_arguments):
    raise Err(ToolError_Failed("This tool intentionally returns an error for testing"))


# name -> (description, input schema, what it does with the arguments' JSON text)
TOOLS = {
    "test_simple_text": (
        "Returns a fixed text, for the MCP conformance suite.",
        EMPTY,
        lambda _: text("This is a simple text response for testing."),
    ),
    "test_error_handling": ("Always fails, for the MCP conformance suite.", EMPTY, failing),
    "test_tool_with_logging": (
        "Writes three log lines to stderr, then returns.",
        EMPTY,
        logging_to_stderr,
    ),
    # The arguments, as the host passed them (checked against the schema).
    "json_schema_2020_12_tool": ("Tool with JSON Schema 2020-12 features", SCHEMA_2020_12, text),
    "test_reconnection": (
        "Returns a fixed text (SSE resumability check).",
        EMPTY,
        lambda _: text("Reconnection test completed"),
    ),
    "test_image_content": ("Returns a PNG image.", EMPTY, lambda _: parts(image())),
    "test_audio_content": (
        "Returns a WAV sound.",
        EMPTY,
        lambda _: parts(Content_Audio(Media(wav(), "audio/wav"))),
    ),
    "test_embedded_resource": (
        "Returns an embedded text resource.",
        EMPTY,
        lambda _: parts(resource()),
    ),
    "test_multiple_content_types": (
        "Returns text, an image and a resource.",
        EMPTY,
        lambda _: parts(Content_Text("Multiple content types test:"), image(), resource()),
    ),
    "test_tool_with_progress": ("Reports progress three times, then returns.", EMPTY, progress),
    "test_logging_tool": (
        "Writes three log lines (tool contract 0.2's report), then returns.",
        EMPTY,
        logging_by_report,
    ),
}


class Tools(exports.Tools):
    def describe(self):
        described = [(name, d, schema) for name, (d, schema, _) in TOOLS.items()]
        described += [(name, d, schema) for name, (d, schema) in asking.TOOLS.items()]
        return [
            ToolSpec(
                name=name,
                title=None,
                description=description,
                input_schema=json.dumps(schema, separators=(",", ":")),
                output_schema=None,
                annotations=Annotations(
                    read_only=True, destructive=None, idempotent=None, open_world=False
                ),
                capabilities=[],
            )
            for name, description, schema in described
        ]

    def call(self, name: str, arguments: str, context: CallContext):
        outcome = asking.call(name, arguments, context)
        if outcome is not None:
            return outcome
        if name not in TOOLS:
            raise Err(ToolError_Failed(f"no tool `{name}`"))
        _, _, run = TOOLS[name]
        return Outcome_Complete(run(arguments))


class Resources(exports.Resources):
    def listed(self):
        return [
            resources.Resource(
                uri="test://static-text",
                name="static-text",
                title="Static text",
                description="A fixed text resource.",
                mime_type="text/plain",
            ),
            resources.Resource(
                uri="test://static-binary",
                name="static-binary",
                title=None,
                description="A fixed binary resource (a PNG).",
                mime_type="image/png",
            ),
            # The one the subscription scenarios subscribe to.
            resources.Resource(
                uri="test://watched-resource",
                name="watched-resource",
                title=None,
                description="A resource to subscribe to.",
                mime_type="text/plain",
            ),
        ]

    def templates(self):
        return [
            resources.ResourceTemplate(
                uri_template="test://template/{id}/data",
                name="template",
                title=None,
                description="Data for an id.",
                mime_type="application/json",
            )
        ]

    def read(self, uri: str):
        if uri == "test://static-text":
            body = resources.Body_Text("This is the content of the static text resource.")
            return [resources.Contents(uri, "text/plain", body)]
        if uri == "test://watched-resource":
            body = resources.Body_Text("A resource to subscribe to.")
            return [resources.Contents(uri, "text/plain", body)]
        if uri == "test://static-binary":
            return [resources.Contents(uri, "image/png", resources.Body_Blob(PNG))]
        prefix, suffix = "test://template/", "/data"
        if uri.startswith(prefix) and uri.endswith(suffix) and len(uri) >= len(prefix + suffix):
            key = uri[len(prefix) : -len(suffix)]
            data = {"id": key, "templateTest": True, "data": f"Data for ID: {key}"}
            body = resources.Body_Text(json.dumps(data, separators=(",", ":"), ensure_ascii=False))
            return [resources.Contents(uri, "application/json", body)]
        raise Err(resources.ReadError_NotFound(f"no resource {uri}"))


def prompt(name, description, *arguments):
    listed = [prompts.Argument(n, d, True) for n, d in arguments]
    return prompts.Prompt(name=name, title=None, description=description, arguments=listed)


def user(part):
    return prompts.Message(prompts.Role.USER, part)


def said(value):
    return user(prompts.Part_Text(value))


# The question test_input_required_result_prompt asks before it can be filled in.
CONTEXT_QUESTION = asking.question("What context should the prompt use?", "context")


class Prompts(exports.Prompts):
    def listed(self):
        return [
            prompt("test_simple_prompt", "A prompt without arguments."),
            prompt(
                "test_prompt_with_arguments",
                "A prompt with two arguments.",
                ("arg1", "The first argument."),
                ("arg2", "The second argument."),
            ),
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt that embeds a resource.",
                ("resourceUri", "The URI of the resource to embed."),
            ),
            prompt("test_prompt_with_image", "A prompt with an image."),
            prompt("test_input_required_result_prompt", "A prompt that asks for context first."),
        ]

    def get(self, name: str, arguments, context: prompts.Context):
        values = dict(arguments)

        def value(key):
            if key not in values:
                raise Err(prompts.PromptError_InvalidArguments(f"`{name}` needs `{key}`"))
            return values[key]

        if name == "test_simple_prompt":
            messages = [said("This is a simple prompt for testing.")]
        elif name == "test_prompt_with_arguments":
            arg1, arg2 = value("arg1"), value("arg2")
            messages = [said(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]
        elif name == "test_prompt_with_embedded_resource":
            embedded = prompts.TextResource(
                value("resourceUri"), "text/plain", "Embedded resource content for testing."
            )
            messages = [
                user(prompts.Part_Resource(embedded)),
                said("Please process the embedded resource above."),
            ]
        elif name == "test_prompt_with_image":
            messages = [
                user(prompts.Part_Image(prompts.Media(PNG, "image/png"))),
                said("Please analyze the image above."),
            ]
        elif name == "test_input_required_result_prompt":
            answer = asking.answer(context.input_responses, "user_context")
            if answer is None:
                method, params = CONTEXT_QUESTION
                request = prompts.InputRequest(method, params)
                return prompts.Outcome_InputRequired(
                    prompts.InputRequired([("user_context", request)], None)
                )
            context_given = asking.field(answer, "content", "context")
            messages = [said(f"Use this context: {context_given}")]
        else:
            raise Err(prompts.PromptError_InvalidArguments(f"no prompt `{name}`"))
        return prompts.Outcome_Complete(prompts.Filled(None, messages))

    def complete(self, name: str, argument: str, value: str):
        if name != "test_prompt_with_arguments" or not argument:
            return []
        words = ["paris", "park", "test-value", "testing"]
        return [word for word in words if word.startswith(value)]
