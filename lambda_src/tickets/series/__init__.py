"""Series: counters whose every number is accounted for in a journal (docs/reference/series.md).

A plain feature folder: config.py (what cdk.json's `tickets.series` says, period math and the id
format), journal.py (an entry's shape) and store.py (the one place that talks to the series table).
"""
