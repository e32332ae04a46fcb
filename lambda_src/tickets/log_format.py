"""The per-issuance audit line: the JSON object Powertools' Logger prints for `logger.info`, at a
fraction of its cost.

Every issuance logs one line (which tickets went to which request), so it is on every warm call.
Through `logger.info` it cost about a third of the baseline's warm call (bench/README.md): the
logging module builds a LogRecord (thread, process and file names, a walk up the stack) and hands
it to every handler on the way to the root, and Powertools' formatter copies the record, scans it
against a tuple of reserved names, tries to parse the message as JSON (raising and catching an
exception), formats the time with strftime, and builds a new JSONEncoder for the line.

`AuditLine` prints the same object the same way, minus that machinery: the logger's current keys
(service, function context, correlation id, appended keys) from Powertools' own formatter, its
templates for level, location and timestamp filled in as Powertools fills them, the caller's
function and line as the location, the fields, the X-Ray trace id, None values dropped, written
to the logger's own handler under its lock. Anything the shortcut does not cover (a level that
is off goes nowhere; thread-local keys, a key template needing other record attributes, fields
named like record attributes, which logging refuses) goes through `logger.info` itself. tests/test_log_format.py
checks that both give the same line, character for character.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import RESERVED_LOG_ATTRS, LambdaPowertoolsFormatter
from aws_lambda_powertools.shared.constants import XRAY_TRACE_ID_ENV

_RESERVED = frozenset(RESERVED_LOG_ATTRS)
# Names an `extra` field may not have: logging refuses them (KeyError), so the shortcut does too.
_RECORD_NAMES = _RESERVED | {"message", "asctime"} | frozenset(logging.makeLogRecord({}).__dict__)
_JSON_STARTS = '{["-0123456789tfnNI'  # what json.loads may accept first: Powertools logs such a message parsed


class _Time:
    """What Powertools' formatTime reads of a LogRecord."""

    __slots__ = ("created", "msecs")

    def __init__(self, nanoseconds: int):  # as logging.LogRecord computes them (Python 3.12+)
        self.created = nanoseconds / 1e9
        self.msecs = (nanoseconds % 1_000_000_000) // 1_000_000 + 0.0


class AuditLine:
    def __init__(self, logger: Logger, message: str):
        if not message or message.lstrip()[:1] in _JSON_STARTS:
            raise ValueError("the message must not look like JSON: Powertools would log it parsed")
        self._logger = logger
        # The standard logger behind it: its level check and handler, without Powertools' attribute proxy.
        self._std = logging.getLogger(logger.name)
        self._message = message
        self._formatter: LambdaPowertoolsFormatter | None = None  # the one the caches below are for
        self._encode: Any = None
        self._second, self._second_text = -1, ("", "")

    def emit(self, **fields: Any) -> None:
        """Log the message with `fields` at INFO, as `logger.info(message, extra=fields)` would."""
        if not self._std.isEnabledFor(logging.INFO):
            return
        logger, handler = self._logger, self._std.handlers[0]  # Powertools' registered handler
        formatter = self._formatter
        if formatter is None or handler.formatter is not formatter:
            formatter = self._adopt(handler.formatter)
        caller = sys._getframe(1)
        line = dict(formatter.log_format)
        for key in _RESERVED.intersection(line):
            template = line[key]
            if not template:
                continue
            if template == "%(levelname)s":
                line[key] = "INFO"
            elif template == "%(funcName)s:%(lineno)d":
                line[key] = f"{caller.f_code.co_name}:{caller.f_lineno}"
            elif template == "%(asctime)s" and self._plain_time:
                line[key] = self._timestamp(time.time_ns())
            else:  # a template the shortcut does not fill: let logging do it all
                line = {}
                break
        if not line or formatter.thread_safe_get_current_keys() or not _RECORD_NAMES.isdisjoint(fields):
            logger.info(self._message, extra=fields, stacklevel=3)  # the caller of emit
            return
        line.update(fields)
        line["message"] = self._message
        if formatter.serialize_stacktrace:
            line.pop("stack_trace", None)  # Powertools sets it to None without an exception, then drops it
        trace = os.environ.get(XRAY_TRACE_ID_ENV) if formatter.log_format.get("xray_trace_id", "") is not None else None
        if trace:
            line["xray_trace_id"] = trace.split(";")[0].replace("Root=", "")
        else:
            line.pop("xray_trace_id", None)
        if None in line.values():
            line = {key: value for key, value in line.items() if value is not None}
        text = self._encode(line) + "\n"
        handler.acquire()
        try:
            handler.stream.write(text)  # type: ignore[attr-defined]
            handler.flush()
        except Exception:  # noqa: BLE001 - as logging does: a failed log line must not fail the request
            handler.handleError(logging.makeLogRecord({"msg": self._message}))
        finally:
            handler.release()

    def _adopt(self, formatter: logging.Formatter | None) -> LambdaPowertoolsFormatter:
        """Take over the formatter's settings: its serializer (json.dumps with these options, which
        builds a JSONEncoder per line: here one encoder, made once) and its time format."""
        if type(formatter) is not LambdaPowertoolsFormatter:
            raise TypeError(f"AuditLine prints what LambdaPowertoolsFormatter prints, not {type(formatter)}")
        self._encode = json.JSONEncoder(
            default=formatter.json_default, separators=(",", ":"), indent=formatter.json_indent, ensure_ascii=False
        ).encode
        self._plain_time = formatter.datefmt is None and not formatter.use_rfc3339_iso8601
        self._converter = formatter.converter
        self._second = -1
        self._formatter = formatter
        return formatter

    def _timestamp(self, nanoseconds: int) -> str:
        """Powertools' default timestamp, `2024-05-03 10:20:19,650+0000`, with strftime once a second."""
        second = nanoseconds // 1_000_000_000
        if second != self._second:
            stamp = self._converter(second)
            self._second_text = (time.strftime("%Y-%m-%d %H:%M:%S,", stamp), time.strftime("%z", stamp))
            self._second = second
        date_and_time, zone = self._second_text
        return f"{date_and_time}{nanoseconds // 1_000_000 % 1000:03d}{zone}"
