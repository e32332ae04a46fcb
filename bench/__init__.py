"""`python -m bench`: Tickets measured side by side with the seed-design baseline (SPEC §7).

See bench/README.md for what is measured and how.
"""
