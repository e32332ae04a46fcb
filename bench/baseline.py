"""THE BASELINE, not Tickets: the bare ticket handler Tickets is measured against (bench/README.md). Never deploy this:
it validates nothing and logs nothing."""

import json
import os

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TICKETS_TABLE"])


def lambda_handler(event, context):
    key = event["rawPath"].strip("/") or "default"
    response = table.update_item(
        Key={"counter": key},
        UpdateExpression="SET #last = if_not_exists(#last, :start) + :inc",
        ExpressionAttributeNames={"#last": "last"},
        ExpressionAttributeValues={":start": 0, ":inc": 1},
        ReturnValues="UPDATED_NEW",
    )
    ticket = int(response["Attributes"]["last"])  # the resource layer hands back a Decimal
    return {"statusCode": 200, "body": json.dumps({"key": key, "ticket": ticket})}
