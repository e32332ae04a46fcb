"""`python -m bench`: Tickets measured side by side with a bare baseline (bench/README.md)."""

RESULTS = "TICKETS_BENCH_RESULTS"  # names the file a measurement's child process writes its figures to (bench.child)
