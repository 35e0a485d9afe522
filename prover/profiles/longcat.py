"""LongCat-Flash-Prover: thinking + tool-integrated reasoning with `lean4_compiler(lean4_code)`.

The tool declaration block is sent as text (the Prover's own parser is not published; see
docs/prover.md), calls are parsed from the raw output in the key/value format::

    <longcat_tool_call>lean4_compiler
    <longcat_arg_key>lean4_code</longcat_arg_key>
    <longcat_arg_value>...</longcat_arg_value>
    </longcat_tool_call>

(a JSON object inside the tags is accepted too). Results are kimina-shaped JSON
``{"info": {"pass", "errors": [{"severity", "pos", "endPos", "data"}]}}``.
"""

from __future__ import annotations

import json
import re

from prover.profiles.base import StepByStepPromptProfile, ToolCall

TOOL_NAME = "lean4_compiler"
_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "lean4_code": {
            "type": "string",
            "description": "A complete Lean 4 file, imports included, without fences.",
        }
    },
    "required": ["lean4_code"],
}
TOOL_DECLARATION = (
    "# Tools\n\n## Tool namespace: function\n\n"
    f"### Tool name: {TOOL_NAME}\n"
    "Description: Compile a complete Lean 4 file and return the compiler's diagnostics as JSON "
    '{"info": {"pass": bool, "errors": [{"severity", "pos", "endPos", "data"}]}}.\n'
    f"InputSchema: {json.dumps(_INPUT_SCHEMA)}\n\n"
    "To call a tool, emit exactly:\n"
    "<longcat_tool_call>{function-name}\n"
    "<longcat_arg_key>{arg-key-1}</longcat_arg_key>\n"
    "<longcat_arg_value>{arg-value-1}</longcat_arg_value>\n"
    "...\n"
    "</longcat_tool_call>"
)
_CALL = re.compile(r"<longcat_tool_call>\s*(.*?)</longcat_tool_call>", re.DOTALL)
_ARG = re.compile(
    r"<longcat_arg_key>(.*?)</longcat_arg_key>\s*<longcat_arg_value>(.*?)</longcat_arg_value>", re.DOTALL
)
_FINAL_BLOCK = re.compile(r"```lean4?\s*\n")


def _strip_fence(code: str) -> str:
    code = code.strip()
    if code.startswith("```"):
        code = code.split("\n", 1)[1] if "\n" in code else ""
        if code.rstrip().endswith("```"):
            code = code.rstrip()[:-3]
    return code.strip("\n")


class LongCatProfile(StepByStepPromptProfile):
    name = "longcat"
    family = "longcat-flash-prover"
    max_tool_calls = 8
    system_prompt = TOOL_DECLARATION

    def parse_tool_call(self, text: str) -> ToolCall | None:
        """The last tool call, unless a final lean4 answer follows it."""
        text = text.replace("\r\n", "\n")
        calls = list(_CALL.finditer(text))
        if not calls:
            return None
        last = calls[-1]
        if _FINAL_BLOCK.search(text, last.end()):
            return None
        inner = last.group(1).strip()
        if inner.startswith("{"):
            try:
                obj = json.loads(inner)
            except json.JSONDecodeError:
                return None
            args = obj.get("arguments") or {}
            if isinstance(args, str):
                args = json.loads(args)
            return ToolCall(
                name=str(obj.get("name", "")),
                arguments={k: str(v) for k, v in args.items()},
                text_before=text[: last.end()],
            )
        name, _, rest = inner.partition("\n")
        args = {k.strip(): _strip_fence(v) for k, v in _ARG.findall(rest)}
        return ToolCall(name=name.strip(), arguments=args, text_before=text[: last.end()])
