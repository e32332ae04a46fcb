"""The deploy side of Tickets in plain Python (no aws_cdk): the config, the ledger, the pre-deploy check."""
