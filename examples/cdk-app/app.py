#!/usr/bin/env python3
"""A user's CDK app (docs/how-to/use-the-construct.md), from the installed library: a shop's order numbers in two
regions and its invoice numbers, and its checkout function granted to call both."""

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_

from tickets_cdk import TicketAlarms, TicketDashboard, TicketService


def order_numbers(stack: cdk.Stack, region_slot: int) -> TicketService:
    """One service deployed in two regions shares its table name and settings; each region has its own slot."""
    return TicketService(
        stack,
        "Orders",
        table_name="shop-order-numbers",
        region_slots=2,
        region_slot=region_slot,
        strict_keys=True,
        counters={"orders": {"start": 5000}},
    )


app = cdk.App()

shop = cdk.Stack(app, "Shop", env=cdk.Environment(region="eu-west-1"))
orders = order_numbers(shop, region_slot=0)
# Invoice numbers: encrypted with the shop's own key, and only what the grants below allow (access rules).
invoice_key = kms.Key(shop, "InvoiceNumbersKey", enable_key_rotation=True)
invoices = TicketService(
    shop,
    "Invoices",
    table_name="shop-invoice-numbers",
    strict_keys=True,
    counters={"invoices-2026": {"start": 1}, "credit-notes": {"start": 1, "max_block": 10}},
    log_retention_days=365,
    encryption_key=invoice_key,
    access={},
)
checkout = lambda_.Function(
    shop,
    "Checkout",
    runtime=lambda_.Runtime.PYTHON_3_13,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
    environment={"ORDER_NUMBERS_URL": orders.url.url, "INVOICE_NUMBERS_URL": invoices.url.url},
)
orders.grant_issue(checkout)
invoices.grant_issue(checkout, keys=["invoices-2026", "credit-notes"])
invoice_alarms = TicketAlarms(shop, "InvoicesAlarms", service=invoices, alarm_email="ops@shop.example")
TicketDashboard(shop, "InvoicesDashboard", service=invoices, alarms=invoice_alarms)

shop_us = cdk.Stack(app, "ShopUs", env=cdk.Environment(region="us-east-1"))
order_numbers(shop_us, region_slot=1)

app.synth()
