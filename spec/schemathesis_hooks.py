"""Schemathesis hooks for fuzzing the sandbox with `spec/openapi.yaml` (spec/README.md,
"Fuzzed against the sandbox"); loaded through `spec/schemathesis.toml`.

One rule of the reference cannot be written in OpenAPI 3.0: an audit report's `date_end`
"must be after `date_start`" (reference 4.7), a rule between two fields. Generated from
the schema alone, about half of the positive audit bodies break it, and the server's 400
for them is right. This hook makes the *positive* bodies (those generated to fit the
schema) keep the rule too, so they are what the reference calls valid; bodies generated
to break the schema (negative data) are sent as generated, so the refusals stay tested.

The rule as the sandbox reads it, after the platform's clients: a plain-date `date_end`
is the last day covered (it ends at the end of that day), a timestamp ends at that
instant; the range is valid when `date_end` ends after `date_start` begins. Reports that
ignore the time portion accept a little more; the hook keeps to the stricter reading.

A positive body that breaks the rule gets its two dates swapped; if they are equal
instants, `date_end` moves to the next day (or, on 9999-12-31, `date_start` to the day
before). Nothing else of the case changes.
"""

import re

import schemathesis
from schemathesis.core.parameters import ParameterLocation

DAY_MS = 86_400_000
DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2}):([0-9]{2}):([0-9]{2})Z)?$")


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, 0000 included)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """The date `z` days after 1970-01-01 (the inverse of `days_from_civil`)."""
    z += 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def parse(text):
    """`(day, milliseconds into the day or None for a plain date)`, or None."""
    match = DATE.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    y, m, d = (int(g) for g in match.group(1, 2, 3))
    day = days_from_civil(y, m, d)
    if match.group(4) is None:
        return day, None
    h, mi, s = (int(g) for g in match.group(4, 5, 6))
    return day, ((h * 60 + mi) * 60 + s) * 1000


def begins(date) -> int:
    day, time = date
    return day * DAY_MS + (time or 0)


def ends(date) -> int:
    day, time = date
    return day * DAY_MS + (DAY_MS - 1 if time is None else time)


def plain(day: int) -> str:
    return "%04d-%02d-%02d" % civil_from_days(day)


LAST_DAY = days_from_civil(9999, 12, 31)


def keep_range_rule(body: dict) -> None:
    start, end = parse(body["date_start"]), parse(body["date_end"])
    if start is None or end is None or ends(end) > begins(start):
        return
    body["date_start"], body["date_end"] = body["date_end"], body["date_start"]
    start, end = end, start
    if ends(end) > begins(start):
        return
    if start[0] < LAST_DAY:
        body["date_end"] = plain(start[0] + 1)
    else:
        body["date_start"] = plain(start[0] - 1)


def body_is_positive(case) -> bool:
    if case.meta is None:  # explicit examples of the spec
        return True
    component = case.meta.components.get(ParameterLocation.BODY)
    return component is not None and component.mode.is_positive


@schemathesis.hook
def map_case(context, case):
    operation = context.operation
    if (
        operation is not None
        and operation.method.upper() == "POST"
        and operation.path.startswith("/v1/audit/")
        and isinstance(case.body, dict)
        and "date_start" in case.body
        and "date_end" in case.body
        and body_is_positive(case)
    ):
        keep_range_rule(case.body)
    return case


if __name__ == "__main__":
    # Self-check: `python3 spec/schemathesis_hooks.py`.
    for y, m, d in [(0, 1, 1), (0, 2, 29), (1970, 1, 1), (2000, 2, 29), (2026, 12, 31), (9999, 12, 31)]:
        assert civil_from_days(days_from_civil(y, m, d)) == (y, m, d)
    assert days_from_civil(1970, 1, 1) == 0
    cases = [
        ({"date_start": "2026-02-01", "date_end": "2026-01-01"}, ("2026-01-01", "2026-02-01")),
        ({"date_start": "2026-01-01", "date_end": "2026-01-01"}, ("2026-01-01", "2026-01-01")),
        (
            {"date_start": "2026-01-01T10:00:00Z", "date_end": "2026-01-01T10:00:00Z"},
            ("2026-01-01T10:00:00Z", "2026-01-02"),
        ),
        (
            {"date_start": "9999-12-31T10:00:00Z", "date_end": "9999-12-31T10:00:00Z"},
            ("9999-12-30", "9999-12-31T10:00:00Z"),
        ),
        ({"date_start": "2026-01-01T23:00:00Z", "date_end": "2026-01-01"}, ("2026-01-01T23:00:00Z", "2026-01-01")),
        ({"date_start": "2026-01-02", "date_end": "2026-01-01T23:00:00Z"}, ("2026-01-01T23:00:00Z", "2026-01-02")),
    ]
    for body, expected in cases:
        keep_range_rule(body)
        assert (body["date_start"], body["date_end"]) == expected, (body, expected)
    print("ok")
