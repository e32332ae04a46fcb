"""`python -m bench`: Tickets measured side by side with a bare baseline (bench/README.md)."""
