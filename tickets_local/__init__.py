"""Tickets without AWS: the deployed handler behind a local Function URL (`python -m tickets_local`,
`make serve`), on DynamoDB held in memory, moto in-process, or any DynamoDB-compatible endpoint (engines.py)."""
