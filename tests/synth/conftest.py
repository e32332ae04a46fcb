"""The synth tier's fixtures: the synthesised stacks are session fixtures of tests/synth/test_stack.py; the
tests that run the handler with the settings a stack gives it use the handler on moto (moto_deployment.py)."""

from moto_deployment import aws, backend, deploy  # noqa: F401  (fixtures: pytest finds them here)
