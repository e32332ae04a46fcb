"""`python -m bench`: Tickets measured side by side with a bare single-UpdateItem baseline.

See bench/README.md for what is measured and how.
"""
