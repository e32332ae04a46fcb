"""Argument types several commands share, and lines printed as they happen."""

from __future__ import annotations

import argparse

from tickets.keys import KEY_RULE, is_valid_key


def counter_key(text: str) -> str:
    if not is_valid_key(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid key ({KEY_RULE})")
    return text


def whole_number(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (0 or more, digits only)")
    return int(text)


def say(line: str) -> None:
    """Print at once: an error that follows (on stderr) comes after it."""
    print(line, flush=True)
