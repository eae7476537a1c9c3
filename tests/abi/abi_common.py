# SPDX-License-Identifier: MIT
"""Helpers shared by the ABI checks: read the names a public header declares.

The parser is deliberately small: our headers are written in one style
(kernel-like C, one declaration per statement), and the checks only need the
names of functions and objects, not their types.  Comments, preprocessor
lines and string literals are removed first so that names mentioned in
doxygen text ("see srsv_ctx_run_pending()") are not taken for declarations.
"""

import re

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
# A function declaration or definition: the name directly followed by "(".
# A function-pointer typedef ("(*srsv_flush_fn)(") has ")" after the name and
# is therefore not matched.
_FUNC = re.compile(r"\b(srsv_[A-Za-z0-9_]*)\s*\(")
# An object declaration: "extern <type> srsv_name;" or "...[...];".
_OBJECT = re.compile(r"\bextern\b[^;(){}]*?\b(srsv_[A-Za-z0-9_]*)\s*"
                     r"(?:\[[^\]]*\]\s*)?;")


def strip_noise(text):
    """Remove comments, string literals and preprocessor lines."""
    text = _COMMENT.sub(" ", text)
    text = _STRING.sub('""', text)
    lines = []
    continued = False
    for line in text.split("\n"):
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            continue
        lines.append(line)
    return "\n".join(lines)


def declared_functions(path):
    """Names of the srsv_ functions a header declares, in order."""
    with open(path, encoding="utf-8") as f:
        body = strip_noise(f.read())
    names = []
    for m in _FUNC.finditer(body):
        if m.group(1) not in names:
            names.append(m.group(1))
    return names


def declared_objects(path):
    """Names of the srsv_ objects (variables) a header declares extern."""
    with open(path, encoding="utf-8") as f:
        body = strip_noise(f.read())
    return sorted({m.group(1) for m in _OBJECT.finditer(body)})
