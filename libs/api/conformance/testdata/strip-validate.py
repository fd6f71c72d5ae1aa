#!/usr/bin/env python3
"""Drops protoc-gen-validate from upstream .proto files in place (the import and every
[(validate.rules)...] option list), so that they compile without validate.proto. Validation
rules are not part of the wire; names, numbers and types are left exactly as they were."""
import pathlib
import re
import sys


def strip(text):
    text = re.sub(r'^import "validate/validate\.proto";\n', "", text, flags=re.M)
    out, i = [], 0
    while True:
        j = text.find("[(validate.rules)", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j].rstrip(" "))
        depth = 0
        for k in range(j, len(text)):  # the option list ends at its matching ]
            depth += {"[": 1, "]": -1}.get(text[k], 0)
            if depth == 0:
                break
        i = k + 1


for path in pathlib.Path(sys.argv[1]).rglob("*.proto"):
    path.write_text(strip(path.read_text()))
