#!/usr/bin/env python3
"""Prints the public surface of uniffi-generated Swift or Kotlin: the declarations a user
calls or names (types, cases, fields, functions), without bodies and without uniffi's own
plumbing. `make test` compares it with handoff-ffi/api/<language>.txt, so that a change to the
foreign API is always a deliberate, reviewed one.

    surface.py swift target/ffi/swift/handoff_ffi.swift target/ffi/swift/handoff_ffi_core.swift
    surface.py kotlin target/ffi/kotlin/uniffi/handoff_ffi/handoff_ffi.kt \
        target/ffi/kotlin/uniffi/handoff_ffi_core/handoff_ffi_core.kt

Each file's surface in turn: the binding's own, then handoff-core's records and enums (uniffi
generates a crate's types into a file of its own).
"""

import re
import sys

# uniffi's plumbing: converters, handles, buffers and lifecycle helpers every binding has.
PLUMBING = re.compile(
    r"FfiConverter|[Uu]niffi|RustBuffer|ForeignBytes|RustCallStatus|NoHandle|noHandle"
    r"|\blift\(|\blower\(|\bread\(|\bwrite\(|allocationSize|\bdestroy\(|\bclose\(|\bclean\("
    r"|Cleaner|Cleanable|Disposable|handleMap|\bhandle\b|callback|InternalException"
    r"|errorDescription|ErrorHandler|NativeLibrary|ByValue|ByReference|Structure"
)


def swift(lines):
    out = []
    depth = 0
    enum_depth = None  # depth inside a public enum, where `case` lines are API
    skip_depth = None  # depth inside a plumbing type, whose members are not API
    for raw in lines:
        line = raw.strip()
        before, depth = depth, depth + raw.count("{") - raw.count("}")
        if skip_depth is not None:
            if depth <= skip_depth:
                skip_depth = None
            continue
        if enum_depth is not None and before <= enum_depth:
            enum_depth = None
        decl = signature(line)
        if re.match(r"(public|open)\s", decl):
            if PLUMBING.search(decl):
                if depth > before:
                    skip_depth = before
                continue
            if re.match(r"(public|open)\s+(indirect\s+)?enum\s", decl):
                enum_depth = before
            out.append(decl)
        elif enum_depth is not None and before == enum_depth + 1 and decl.startswith("case "):
            out.append(decl)
    return out


KOTLIN_DECL = re.compile(
    r"((public|open|override|data|sealed|enum|abstract)\s+)*"
    r"(fun|val|var|class|interface|object|constructor)\b"
)


def kotlin(lines):
    out = []
    in_enum = False
    for raw in lines:
        line = re.sub(r"^(@\w+(\([^)]*\))?\s*)+", "", raw.strip())  # annotations
        if re.match(r"enum class\s", line):
            in_enum = True
            out.append(signature(line))
            continue
        if in_enum:
            if re.fullmatch(r"[A-Z][A-Z0-9_]*[,;]?", line):
                out.append(line.rstrip(",;"))
                continue
            if line.startswith("}") or line.startswith("companion"):
                in_enum = False
        decl = KOTLIN_DECL.match(line)
        if not decl or "override fun" in line:  # overrides repeat an interface's methods
            continue
        name = re.match(r"\s*`?(\w*)", line[decl.end():]).group(1)
        if PLUMBING.search(name if name else line):
            continue
        # Locals carry no backticked name; the API's members always do, and its types are
        # declared with plain names.
        declares_type = decl.group(3) in ("class", "interface", "object")
        if "`" not in line and not declares_type:
            continue
        out.append(signature(line))
    return out


def logical_lines(text):
    """The source without comments, one declaration per line: a lone `public` joins the next
    line, and an open parenthesis joins lines until it closes."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out, pending = [], ""
    for line in text.splitlines():
        pending = f"{pending} {line.strip()}" if pending else line
        if pending.strip() in ("public", "open"):
            continue
        if pending.count("(") > pending.count(")"):
            continue
        out.append(pending)
        pending = ""
    if pending:
        out.append(pending)
    return out


def signature(line):
    """The declaration without its body or trailing punctuation, whitespace normalised."""
    line = re.sub(r"\s*\{.*$", "", line)
    line = re.sub(r"\s*:$", "", line.strip())
    line = re.sub(r"\s+", " ", line).rstrip(",; ")
    line = re.sub(r"\(\s+", "(", line)
    line = re.sub(r",?\s+\)", ")", line)
    return line


def main():
    language, paths = sys.argv[1], sys.argv[2:]
    extract = {"swift": swift, "kotlin": kotlin}[language]
    for path in paths:
        with open(path, encoding="utf-8") as f:
            lines = logical_lines(f.read())
        for line in extract(lines):
            print(line)


if __name__ == "__main__":
    main()
