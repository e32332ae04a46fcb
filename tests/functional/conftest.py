"""The functional tier's fixtures: the real handler on moto's DynamoDB (moto_deployment.py)."""

from moto_deployment import api, aws, deploy, dynamodb_calls  # noqa: F401  (fixtures: pytest finds them here)
