"""The deploy side of Tickets, in plain Python (no aws_cdk): cdk.json's `tickets` config and the
regions the stack can be deployed to. The CDK app, the local server and tickets_admin read the config
through it; the Lambda asset (lambda_src/) never ships it."""
