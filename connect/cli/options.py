"""What every `connect` command line shares: the parser class and the way a command
group takes its options before or after its subcommand.

- `Parser` is the class of every parser of the CLI (argparse's subcommands inherit
  the class of their parent): its help shows each option's default, and a usage
  mistake is one line (`connect log consume: error: …`) and exit status 2, not
  argparse's usage block.
- `add_everywhere(group, subcommands, add)` gives a group's options (`connect log --log-dir`,
  `connect offsets --url`) to the group and to each of its subcommands, so
  `connect log --log-dir D topics` and `connect log topics --log-dir D` mean the
  same. Why the subcommands' copies default to SUPPRESS: argparse parses a
  subcommand into a fresh namespace and copies every attribute back, so a real
  default there would overwrite the value given before the subcommand.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["EXIT_INTERRUPTED", "HelpFormatter", "Interrupted", "Parser", "add_everywhere"]

#: 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 130


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C that a command caught, cleaned up after, and explains in one line
    (e.g. that a dump's output file was not written); `connect` prints the message
    instead of plain "interrupted" and exits 130."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends `(default: X)` to an option's help unless the help already says it.

    Flags (on/off switches) and options without a default get nothing appended: their
    help says what absence means. Why not `%(default)s` everywhere: defaults taken
    from the environment (a password) must never be printed by `--help`.
    """

    def __init__(self, prog: str, **kwargs: Any) -> None:
        # Room for the longest subcommand (`distributed`) beside its help.
        kwargs.setdefault("max_help_position", 32)
        super().__init__(prog, **kwargs)

    def add_argument(self, action: argparse.Action) -> None:
        """Count subcommand names at the indent they are printed with: argparse measures
        them one indent short, so `connect --help` wrapped `distributed` onto a line of
        its own."""
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and isinstance(action, argparse._SubParsersAction):
            indent = self._current_indent + self._indent_increment
            for choice in action._get_subactions():
                width = len(self._format_action_invocation(choice)) + indent
                self._action_max_length = max(self._action_max_length, width)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default:" in text or "%(default)" in text or not action.option_strings:
            return text
        if action.nargs == 0 or action.default in (None, [], argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser with `HelpFormatter` and one-line usage errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """One line: what is wrong, in which command, and where the help is."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_everywhere(
    group: argparse.ArgumentParser, subcommands: Any, add: Callable[..., None]
) -> None:
    """Call `add(parser, inherited=…)` for `group` (inherited=False: real defaults) and
    for each parser of `subcommands` (what `group.add_subparsers()` returned), once
    they are all registered (inherited=True: `add` passes `default=argparse.SUPPRESS`
    and spells the default out in the help)."""
    add(group, inherited=False)
    seen: set[int] = set()
    for leaf in subcommands.choices.values():
        if id(leaf) not in seen:  # an alias maps to the same parser
            seen.add(id(leaf))
            add(leaf, inherited=True)
