"""What the command-line mains share (the planner's and py/tools').

absl defines a module's flags when the module is imported, so a tool that imports another
tool's module (gguf_export imports gguf_import for its tables) also accepts that tool's
flags, and would ignore them without a word. refuse_flags_of makes such a flag an error.
"""
from typing import Iterable

from absl import app, flags


def refuse_flags_of(modules: Iterable[str], tool: str) -> None:
    """Raises app.UsageError naming the first flag given on the command line that one of
    `modules` (module names as absl records them, e.g. "tools.gguf_import") defines: `tool`
    (its name, for the message) imports those modules but does not use their flags. Call
    it from main(), after absl has parsed the command line."""
    modules = set(modules)
    for name in flags.FLAGS:
        if flags.FLAGS[name].present and flags.FLAGS.find_module_defining_flag(name) in modules:
            owner = flags.FLAGS.find_module_defining_flag(name)
            raise app.UsageError(f"--{name} is a flag of {owner}, not of {tool}: see {tool} "
                                 f"--help for its own flags")
