"""The results as bench/README.md's table (one row per entry of ROWS), with each goal met or missed."""

from __future__ import annotations

AT_MOST, AT_LEAST = "≤", "≥"
GOALS = {  # figure: (at most or at least, the goal, how the table writes it)
    "cold_start_ratio": (AT_MOST, 1.15, "{:.2f}"),
    "cold_start_rules_ratio": (AT_MOST, 1.10, "{:.2f}"),
    "warm_ratio": (AT_MOST, 1.15, "{:.2f}"),
    "opaque_added_one": (AT_MOST, 0.05, "{:+.0%}"),
    "opaque_added_list": (AT_MOST, 0.05, "{:+.0%}"),
    "lease_tickets_per_s": (AT_LEAST, 1_000_000, "{:,}"),
    "lease_handout_ceiling_per_s": (AT_LEAST, 3_000_000, "{:,}"),
    "keep_alive_ratio": (AT_MOST, 5.0, "{:.0f}"),
    "reset_p50_ms": (AT_MOST, 1.0, "{:.0f} ms"),
    "user_suite_tests_per_s": (AT_LEAST, 500, "{} tests/s"),
}
# The table's rows, formatted with the results and what markdown_table derives (a goal's cell: goal_NAME).
ROWS = [
    "| cold start (import + clients), Tickets / baseline | {cold_start_ratio:.2f} ({cold_start_ms[tickets]:.0f} ms vs "
    "{cold_start_ms[baseline]:.0f} ms, median of {cold_start_ms[samples]} each) | {goal_cold_start_ratio} |",
    "| cold start with access rules ({cold_start_rules_ms[principals]} principals from an SSM stand-in), / without | "
    "{cold_start_rules_ratio:.2f} ({cold_start_rules_ms[with_rules]:.0f} ms vs {cold_start_ms[tickets]:.0f} ms; SSM's "
    "own latency not included) | {goal_cold_start_rules_ratio} |",
    "| warm call (DynamoDB stubbed, logs at INFO), Tickets / baseline | {warm_ratio:.2f} ({warm_us[tickets]:.0f} µs vs "
    "{warm_us[baseline]:.0f} µs, median of {warm_us[calls_each]:,} calls each) | {goal_warm_ratio} |",
    "| opaque counter's warm call, one id (its tables full), / the plain counter's | {opaque_added_one:+.1%} "
    "({opaque_us[opaque_one]:.0f} µs vs {opaque_us[plain_one]:.0f} µs; / baseline: {opaque_ratios[opaque_one]:.2f} vs "
    "{opaque_ratios[plain_one]:.2f}; a young function's, its tables empty: {opaque_added_one_young:+.1%}) | "
    "{goal_opaque_added_one} |",
    "| the same, a list of {opaque_us[list]:,} ids / {opaque_us[list]:,} tickets | {opaque_added_list:+.0%} "
    "({opaque_us[opaque_list]:,.0f} µs vs {opaque_us[plain_list]:,.0f} µs: {opaque_per_id_us:.2f} µs an id; median "
    "of {opaque_us[list_calls_each]:,} calls each; 5% is {opaque_five_percent_us:.0f} µs, and one pass of an add and "
    "a modulo over {opaque_us[list]:,} tickets takes Python {opaque_one_pass_us:.0f} µs: an id takes ten) | "
    "{goal_opaque_added_list} |",
    "| block lease against the local server, sustained over {lease_seconds:.0f} s | {lease_tickets_per_s:,.0f} "
    "tickets/s (the {lease_warm_up_seconds:.0f} s before, while the lease grew its blocks: "
    "{lease_warm_up_tickets_per_s:,.0f}/s) | {goal_lease_tickets_per_s} |",
    "| block sizes the lease took (from {lease_start_block:,}), and left unused at close | {block_sizes}; settled at "
    "{lease_block_size_settled:,}; {lease_unused_at_close:,} unused | reported |",
    "| lease hand-out alone (blocks from memory) | {lease_handout_ceiling_per_s:,.0f} tickets/s | "
    "{goal_lease_handout_ceiling_per_s} |",
    "| one range block of {lease_block_request_count:,} from the local server | {lease_block_request_ms:.0f} ms (one "
    "request per ticket instead: {per_request_tickets_per_s:,.0f} tickets/s) | reported |",
    "| the test kit's server on a keep-alive connection: `next()` with its Idempotency-Key / a bare server's GET, p50 "
    "| {keep_alive_ratio:.1f} ({keep_alive_p50_ms:.2f} ms vs {bare_get_p50_ms:.2f} ms; p99 {keep_alive_p99_ms:.1f} ms; "
    "without an Idempotency-Key: p50 {keep_alive_unkeyed_p50_ms:.2f} ms) | {goal_keep_alive_ratio} |",
    "| the test kit's reset() before a test: reset() and the `next()` after it, over a `next()` alone, p50 | "
    "{reset_p50_ms:.2f} ms (reset() {reset_call_p50_ms:.3f} ms, a mark the server reads; the next() after it "
    "{reset_next_p50_ms:.2f} ms, without a reset {reset_alone_p50_ms:.2f} ms) | {goal_reset_p50_ms} |",
    "| a user's suite: {user_suite_tests} single-ticket tests through the pytest plugin, a reset before each | "
    "{user_suite_tests_per_s:,.0f} tests/s, the median of runs at {suite_runs} (the same tests against the bare "
    "server: {user_suite_bare_tests_per_s:,.0f}/s; on pytest-httpserver, each test declaring its answer: "
    "{user_suite_httpserver_tests_per_s:,.0f}/s; apart, the first test, with the server's start: "
    "{user_suite_start_s:.2f} s, and the last, with its stop: {user_suite_stop_s:.2f} s) | "
    "{goal_user_suite_tests_per_s} |",
    "| zipped Lambda code asset | {package_kb:.1f} KB ({package_files} files; Powertools comes from AWS's layer) | "
    "reported |",
]


def goals_met(results: dict) -> dict[str, bool]:
    return {
        name: results[name] <= goal if sign == AT_MOST else results[name] >= goal
        for name, (sign, goal, _) in GOALS.items()
    }


def markdown_table(results: dict) -> str:
    met = goals_met(results)
    us = results["opaque_us"]
    derived = {
        "opaque_per_id_us": (us["opaque_list"] - us["plain_list"]) / us["list"],
        "opaque_five_percent_us": 0.05 * us["plain_list"],
        "block_sizes": ", ".join(f"{int(size):,} x{n}" for size, n in results["lease_block_sizes"].items()),
        "package_kb": results["package_bytes"] / 1000,
        "suite_runs": ", ".join(f"{rate:,}" for rate in results.get("user_suite_runs", [])) or "one run",
    }
    for name, (sign, goal, written) in GOALS.items():
        derived[f"goal_{name}"] = f"{sign} {written.format(goal)} " + ("✓" if met[name] else "✗ **missed**")
    lines = ["| figure | measured | goal |", "| --- | --- | --- |"]
    lines += [row.format(**results, **derived) for row in ROWS]
    machine = results["machine"]
    lines += [
        "",
        f"One `make bench` run: {results['seconds']:.0f} s on {machine['cpus']} CPUs, Python {machine['python']}, "
        f"load average {machine['load_average_at_start'][0]:.1f} at the start.",
    ]
    return "\n".join(lines) + "\n"
