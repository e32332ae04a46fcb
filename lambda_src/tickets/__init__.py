"""Tickets: unique, increasing integers for named counters.

Everything in this package except `handler`, `store` and `idempotency` is plain
Python with no AWS imports, so the domain can be tested (and reasoned about)
without a cloud.
"""
