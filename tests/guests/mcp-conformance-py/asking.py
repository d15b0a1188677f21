"""The conformance suite's tools that ask for input before they finish (tool contract 0.2's
`input-required`), as the Rust guest's `asking.rs` has them: over 2026-07-28 the host answers
with an `InputRequiredResult` and the client calls again with its answers; over 2025-11-25 the
host asks the client itself. Also what the prompts' `get` needs to ask the same way."""

import json

from wit_world.exports.tools import (
    CallContext,
    Content_Text,
    InputRequest,
    InputRequired,
    Outcome_Complete,
    Outcome_InputRequired,
    ToolResult,
)

EMPTY = {"type": "object", "properties": {}, "additionalProperties": False}

# name -> (description, input schema)
TOOLS = {
    "test_input_required_result_elicitation": ("Asks the user's name.", EMPTY),
    "test_input_required_result_sampling": ("Asks the client's model a question.", EMPTY),
    "test_input_required_result_list_roots": ("Asks the client's roots.", EMPTY),
    "test_input_required_result_request_state": ("Asks to confirm, with a state.", EMPTY),
    "test_input_required_result_multiple_inputs": ("Asks three things at once.", EMPTY),
    "test_input_required_result_multi_round": ("Asks twice, one after the other.", EMPTY),
    "test_input_required_result_tampered_state": ("Asks to confirm, with a state.", EMPTY),
    "test_input_required_result_capabilities": ("Asks the user and the model.", EMPTY),
    "test_missing_capability": ("Asks the client's model.", EMPTY),
    "test_streaming_elicitation": ("Asks the user.", EMPTY),
    "test_sampling": (
        "Asks the client's model the prompt.",
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    ),
    "test_elicitation": (
        "Asks the user for a name and an email.",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    ),
    "test_elicitation_sep1034_defaults": ("Asks with defaults for every type.", EMPTY),
    "test_elicitation_sep1330_enums": ("Asks with every kind of enum.", EMPTY),
}


def compact(value):
    """JSON text as serde_json writes it: no spaces, keys sorted, UTF-8 kept."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def request(method, params):
    """An input request as (MCP method, params as JSON text): the tools' and the prompts'
    `input-request` records are made of it."""
    return (method, compact(params))


def question(message, field, kind="string"):
    """An elicitation of one required field."""
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return request("elicitation/create", {"message": message, "requestedSchema": schema})


def sampling(prompt, max_tokens):
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    return request("sampling/createMessage", {"messages": [message], "maxTokens": max_tokens})


def roots():
    return request("roots/list", {})


def ask(requests, state=None):
    """Ends a tool call asking for `requests` ((key, request) pairs), with `state`."""
    asked = [(key, InputRequest(method, params)) for key, (method, params) in requests]
    return Outcome_InputRequired(InputRequired(asked, state))


def done(text):
    return Outcome_Complete(ToolResult([Content_Text(text)], None))


def answer(responses, key):
    """The answer under `key` of (key, JSON text) pairs, as a value; None when there is none or
    it is not JSON."""
    for k, text in responses:
        if k == key:
            try:
                return json.loads(text)
            except ValueError:
                return None
    return None


def field(value, *path):
    """The string at `path` in `value`, or "?" when it is not there (as the Rust guest says)."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else "?"


def elicited(value):
    """An elicitation's answer as the suite's texts show it."""
    content = value.get("content") if isinstance(value, dict) else None
    return f"action={field(value, 'action')}, content={compact(content)}"


def call(name, arguments, context: CallContext):
    """Runs tool `name` if it is one of these; None if it is not."""
    run = CALLS.get(name)
    if run is None:
        return None
    try:
        arguments = json.loads(arguments)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        arguments = {}
    return run(arguments, context.input_responses, context.request_state)


def user_name(_arguments, responses, _state):
    a = answer(responses, "user_name")
    if a is not None:
        return done(f"Hello, {field(a, 'content', 'name')}!")
    return ask([("user_name", question("What is your name?", "name"))])


def capital(_arguments, responses, _state):
    a = answer(responses, "capital_question")
    if a is not None:
        return done(f"The model said: {field(a, 'content', 'text')}")
    return ask([("capital_question", sampling("What is the capital of France?", 100))])


def client_roots(_arguments, responses, _state):
    a = answer(responses, "client_roots")
    if a is None:
        return ask([("client_roots", roots())])
    listed = a.get("roots") if isinstance(a, dict) else None
    uris = [r["uri"] for r in listed or [] if isinstance(r, dict) and isinstance(r.get("uri"), str)]
    return done(f"Roots: {', '.join(uris)}")


def confirmed(_arguments, responses, state):
    if answer(responses, "confirm") is not None and state == "confirm-pending":
        return done("state-ok: confirmed")
    return ask([("confirm", question("Please confirm", "ok", "boolean"))], "confirm-pending")


def all_three(_arguments, responses, state):
    keys = ["user_name", "greeting", "client_roots"]
    if state == "all-three" and all(answer(responses, k) is not None for k in keys):
        return done("Got a name, a greeting and the roots")
    requests = [
        ("user_name", question("What is your name?", "name")),
        ("greeting", sampling("Generate a greeting", 50)),
        ("client_roots", roots()),
    ]
    return ask(requests, "all-three")


def two_rounds(_arguments, responses, state):
    first, second = answer(responses, "step1"), answer(responses, "step2")
    if state == "round-1" and first is not None:
        color = question("Step 2: What is your favorite color?", "color")
        return ask([("step2", color)], f"round-2:{field(first, 'content', 'name')}")
    if state is not None and state.startswith("round-2:") and second is not None:
        return done(f"{state[len('round-2:'):]} likes {field(second, 'content', 'color')}")
    return ask([("step1", question("Step 1: What is your name?", "name"))], "round-1")


def what_it_can(_arguments, responses, state):
    if answer(responses, "user_name") is None and answer(responses, "greeting") is None:
        if state is None:
            requests = [
                ("user_name", question("What is your name?", "name")),
                ("greeting", sampling("Generate a greeting", 50)),
            ]
            return ask(requests, "asked")
    return done("Answered what the client could")


def missing_capability(_arguments, responses, _state):
    if answer(responses, "question") is not None:
        return done("answered")
    return ask([("question", sampling("Say hello", 20))])


def llm(arguments, responses, _state):
    a = answer(responses, "llm")
    if a is not None:
        return done(f"LLM response: {field(a, 'content', 'text')}")
    prompt = arguments.get("prompt")
    return ask([("llm", sampling(prompt if isinstance(prompt, str) else "", 100))])


def username_and_email(arguments, responses, _state):
    a = answer(responses, "user")
    if a is not None:
        return done(f"User response: {elicited(a)}")
    message = arguments.get("message")
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    params = {"message": message if isinstance(message, str) else "", "requestedSchema": schema}
    return ask([("user", request("elicitation/create", params))])


DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}


def titled(*titles):
    return [{"const": f"value{i}", "title": title} for i, title in enumerate(titles, 1)]


ENUMS = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": titled("First Option", "Second Option", "Third Option"),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {"anyOf": titled("First Choice", "Second Choice", "Third Choice")},
        },
    },
}


def form(key, message, schema):
    """A tool that asks the user to fill in `schema` and says what came back."""

    def run(_arguments, responses, _state):
        a = answer(responses, key)
        if a is not None:
            return done(f"Elicitation completed: {elicited(a)}")
        params = {"message": message, "requestedSchema": schema}
        return ask([(key, request("elicitation/create", params))])

    return run


CALLS = {
    "test_input_required_result_elicitation": user_name,
    "test_streaming_elicitation": user_name,
    "test_input_required_result_sampling": capital,
    "test_input_required_result_list_roots": client_roots,
    "test_input_required_result_request_state": confirmed,
    "test_input_required_result_tampered_state": confirmed,
    "test_input_required_result_multiple_inputs": all_three,
    "test_input_required_result_multi_round": two_rounds,
    "test_input_required_result_capabilities": what_it_can,
    "test_missing_capability": missing_capability,
    "test_sampling": llm,
    "test_elicitation": username_and_email,
    "test_elicitation_sep1034_defaults": form(
        "defaults", "Please review the defaults", DEFAULTS
    ),
    "test_elicitation_sep1330_enums": form("enums", "Please choose", ENUMS),
}
assert CALLS.keys() == TOOLS.keys()
