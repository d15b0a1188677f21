"""The Python code runner (contract toolhost:code, wit/code/runner.wit), built with
componentize-py. It runs a program a model wrote as the body of an async function (or, when it
is one expression, returns that expression's value), with `tools` (every tool of the run, as an
async function taking the tool's arguments as keyword arguments), `ToolError` and `asyncio` in
scope, and returns what the program returns as JSON. `print` goes to the host.

A call of a tool is the host's: `tools.read_file(path="a.txt")` starts the call at once and
returns an awaitable; calls started before the program awaits any of them run at the same time
(`await asyncio.gather(...)`).

The component imports WASI's command interfaces (CPython's runtime is linked against them;
docs/code-mode.md lists them), but the host grants nothing through them: no directory, no
environment variable, no socket. asyncio runs on a loop of this module's (`EventLoop`), since
the standard one opens a socket pair.
"""

import ast
import asyncio
import io
import json
import linecache
import sys
import time
import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.runner import RunError_Syntax, RunError_Thrown
from wit_world.imports import output
from wit_world.imports import tools as host

# Modules a program may import besides these: componentize-py bundles only the standard library
# modules the runner's own source imports, so the ones a short data program wants are imported
# here, to be there.
import collections  # noqa: F401
import csv  # noqa: F401
import datetime  # noqa: F401
import functools  # noqa: F401
import itertools  # noqa: F401
import math  # noqa: F401
import re  # noqa: F401
import statistics  # noqa: F401
import string  # noqa: F401
import textwrap  # noqa: F401

# The error kinds of the contract, as the program reads them (`ToolError.kind`).
KINDS = {
    host.ErrorKind.NOT_OFFERED: "not-offered",
    host.ErrorKind.INVALID_ARGUMENTS: "invalid-arguments",
    host.ErrorKind.DENIED: "denied",
    host.ErrorKind.FAILED: "failed",
}


class ToolError(Exception):
    """A tool call that gave no result; `kind` is the host's error kind (`denied`, `failed`,
    ...), `message` what happened and `tool` the tool called."""

    def __init__(self, tool, kind, message):
        super().__init__(f"{tool}: {kind}: {message}")
        self.tool = tool
        self.kind = kind
        self.message = message


class Call:
    """A call the host has started; awaiting it waits for its result (once)."""

    def __init__(self, name, arguments):
        self.name = name
        self.started = host.start_call(name, json.dumps(arguments))
        self.ended = None

    def result(self):
        if self.ended is None:
            try:
                finished = host.finish_call(self.started)
                value = finished.text if finished.structured is None else json.loads(finished.structured)
                self.ended = (True, value)
            except Err as error:
                failure = error.value
                self.ended = (False, ToolError(self.name, KINDS.get(failure.kind, "failed"), failure.message))
        done, value = self.ended
        if done:
            return value
        raise value

    def __await__(self):
        return self.result()
        yield  # a generator: `await` runs the body above, which never suspends


class Tools:
    """`tools.NAME(**arguments)` for any name: the host says which names the run offers. A
    tool whose argument names are not Python names takes them as one dict:
    `tools.NAME({"from": 1})`."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*positional, **arguments):
            if positional:
                if len(positional) != 1 or not isinstance(positional[0], dict) or arguments:
                    raise TypeError(
                        f"tools.{name} takes keyword arguments, or one dict of them"
                    )
                arguments = positional[0]
            return Call(name, arguments)

        call.__name__ = name
        return call


class HostOutput(io.TextIOBase):
    """sys.stdout and sys.stderr: what the program writes goes to the host."""

    def writable(self):
        return True

    def write(self, text):
        if text:
            output.print(text)
        return len(text)


def printer(*values, sep=" ", end="\n", file=None, flush=False):
    """`print`, in one host call per line (the builtin writes each value apart)."""
    if file is not None and file not in (sys.stdout, sys.stderr):
        return print(*values, sep=sep, end=end, file=file, flush=flush)
    output.print(io_text(values, sep, end))


def io_text(values, sep, end):
    buffer = io.StringIO()
    print(*values, sep=sep, end=end, file=buffer)
    return buffer.getvalue()


def described(error):
    """What an error says, with the lines of the program it was raised through (the runner's
    own frames and asyncio's say nothing to the program's author)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == SOURCE]
    where = "".join(traceback.format_list(frames))
    said = "".join(traceback.format_exception_only(type(error), error))
    return (("Traceback (most recent call last):\n" + where) if where else "") + said.strip()


class NoSelector:
    """What the event loop waits on between its steps. A program's tool calls finish in the
    host (awaiting one waits there), so the loop has no file or socket to watch: it waits only
    for a timer (`asyncio.sleep`), and not at all when nothing could wake it."""

    def select(self, timeout):
        if timeout is None:
            raise RuntimeError(
                "the program waits for something that nothing will finish (a future no one sets)"
            )
        if timeout > 0:
            time.sleep(timeout)
        return []

    def close(self):
        pass


class EventLoop(asyncio.BaseEventLoop):
    """asyncio's loop without a selector: the selector loop's constructor opens a socket pair
    to wake itself, and a runner may open no socket."""

    def __init__(self):
        super().__init__()
        self._selector = NoSelector()

    def _process_events(self, event_list):
        pass

    def _write_to_self(self):
        pass


# The function the program becomes, and the file name its lines are reported under.
PROGRAM = "__program__"
SOURCE = "<program>"


def compiled(code):
    """The program, as the body of an async function; one expression returns its value."""
    # Tracebacks show the program's lines.
    linecache.cache[SOURCE] = (len(code), None, code.splitlines(True), SOURCE)
    try:
        tree = ast.parse(code, filename=SOURCE, mode="exec")
    except SyntaxError as error:
        raise Err(RunError_Syntax(described(error)))
    body = tree.body
    if len(body) == 1 and isinstance(body[0], ast.Expr):
        body = [ast.Return(value=body[0].value)]
    if not body:
        body = [ast.Pass()]
    function = ast.AsyncFunctionDef(
        name=PROGRAM,
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body,
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    module = ast.Module(body=[function], type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        return compile(module, SOURCE, "exec")
    except SyntaxError as error:
        raise Err(RunError_Syntax(described(error)))


class Runner(exports.Runner):
    def run(self, code):
        program = compiled(code)
        scope = {
            "__name__": "__program__",
            "tools": Tools(),
            "ToolError": ToolError,
            "asyncio": asyncio,
            "json": json,
            "print": printer,
        }
        exec(program, scope)
        sys.stdout = sys.stderr = HostOutput()
        try:
            value = asyncio.run(scope[PROGRAM](), loop_factory=EventLoop)
            # A call returned without `await` (`tools.add(a=1, b=2)` as the whole program):
            # its result, as JavaScript's async function gives a returned promise's.
            if isinstance(value, Call):
                value = value.result()
        except BaseException as error:  # SystemExit too: the program ends, not the runner
            raise Err(RunError_Thrown(described(error)))
        try:
            # NaN and the infinities are not JSON: refused here, with a reason.
            return json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise Err(RunError_Thrown(f"the program returned a value that is not JSON: {error}"))
