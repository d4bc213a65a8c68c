"""Tools a reply may call: the registry, the limits, the loop (see kuuki.respond.tools.loop).

What a plugin needs is here: implement `Tool` (name, description, a JSON schema for its
arguments, ``async run(args, ctx)``), raise `ToolError` for what the model should hear, and
expose a ``kuuki.tools`` entry point whose callable receives `register`.
"""

from kuuki.respond.tools.base import Tool, ToolContext, ToolError
from kuuki.respond.tools.registry import ToolHost, register

__all__ = ["Tool", "ToolContext", "ToolError", "ToolHost", "register"]
