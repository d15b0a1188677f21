#!/usr/bin/env python3
"""Names a code runner's language in the runner component:   language.py RUNNER.wasm LANGUAGE

Appends a custom section `toolhost:code/language` holding LANGUAGE (`javascript`, `python`)
to the component's top level, where the host reads it at load to tell the model which
language to write (docs/code-mode.md, "Languages"). A custom section changes nothing the
component does. Run by each runner's build.sh after componentize; a runner that has the
section already is left as it is.

Hand-written: the section is a tag, a length and a name before the bytes (the WebAssembly
binary format's custom section), a few lines here, where `wasm-tools metadata add` would need
another toolchain installed only for this.
"""

import sys
from pathlib import Path

SECTION = b"toolhost:code/language"
KNOWN = {"javascript", "python"}


def leb128(value: int) -> bytes:
    """An unsigned LEB128 number, as the binary format writes sizes."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[2] not in KNOWN:
        print(f"usage: language.py RUNNER.wasm {{{'|'.join(sorted(KNOWN))}}}", file=sys.stderr)
        return 2
    path, language = Path(sys.argv[1]), sys.argv[2].encode()
    try:
        component = path.read_bytes()
    except OSError as error:
        print(f"error: cannot read the runner {path}: {error.strerror}", file=sys.stderr)
        return 1
    # A component's preamble: the magic number, then version 0x0d and layer 1.
    if component[:8] != b"\0asm\x0d\0\x01\0":
        print(f"error: {path} is not a WebAssembly component", file=sys.stderr)
        return 1
    payload = leb128(len(SECTION)) + SECTION + language
    section = b"\0" + leb128(len(payload)) + payload
    if component.endswith(section):
        return 0
    path.write_bytes(component + section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
