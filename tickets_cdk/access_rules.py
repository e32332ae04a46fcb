"""A TicketService's access rules in SSM String parameters, written at synthesis once every grant is known (a granted
role's ARN resolves only at deploy): docs/how-to/access-rules.md#where-the-function-keeps-the-rules."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

import jsii
from aws_cdk import IResolveContext, IStringProducer, Lazy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tickets import access
from tickets_deploy.access import check_patterns, parse_rules

# The longest an ARN resolved at deploy can be (IAM: a path of 512 characters, a name of 64), so a parameter never
# overflows whatever it turns out to be; a role or user made in the app counts its own path and name (_longest_arn).
ARN_PREFIX_BYTES = len("arn:aws-us-gov:iam::111122223333:role/")
MAX_PATH_BYTES, MAX_NAME_BYTES = 512, 64
TOKEN_PRINCIPAL_BYTES = ARN_PREFIX_BYTES + MAX_PATH_BYTES + MAX_NAME_BYTES
READ_RULES_ACTION = "ssm:GetParameters"  # StoredRules' one call (tickets/access/store.py)


class AccessRulesStore(Construct):
    """The rules, grown by `add`, stored in as many parameters as they need (at most access.MAX_RULES_PARAMETERS)."""

    def __init__(self, scope: Construct, construct_id: str, function: lambda_.Function, rules: access.Rules):
        super().__init__(scope, construct_id)
        self._function = function
        self._rules: dict[str, dict[str, list[str]]] = {}
        self._longest: dict[str, int] = {}  # a deploy-time principal's longest ARN, in bytes
        self._parameters: list[ssm.StringParameter] = []
        for grant in rules.grants:
            for operation, patterns in grant.operations.items():
                self.add(grant.principal, operation, patterns)
        if not self._parameters:
            self._add_parameter()  # no rules yet: the function still reads them, and refuses everything
        names = lazy_string(lambda: ",".join(parameter.parameter_name for parameter in self._parameters))
        function.add_environment(access.ACCESS_PARAMETERS_ENV, names)
        function.add_environment(access.ACCESS_DIGEST_ENV, lazy_string(self._digest))

    def add(self, principal: str, operation: str, keys: Iterable[str], longest: int = TOKEN_PRINCIPAL_BYTES) -> None:
        """Let `principal` (as `access` writes it, or an ARN token of at most `longest` bytes) do `operation`."""
        if operation not in access.OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}; the operations are {', '.join(access.OPERATIONS)}")
        keys = check_patterns(list(keys), f"access[{principal!r}].{operation}")
        if Token.is_unresolved(principal):
            self._longest[principal] = longest
        else:
            parse_rules({principal: {operation: list(keys)}}, "access")  # the principal's own rule
        known = self._rules.setdefault(principal, {}).setdefault(operation, [])
        known.extend(key for key in keys if key not in known)
        while len(self._chunks()) > len(self._parameters):
            self._add_parameter()

    def _add_parameter(self) -> None:
        index = len(self._parameters)
        if index == access.MAX_RULES_PARAMETERS:
            raise ValueError(
                f"access: the rules need more than {access.MAX_RULES_PARAMETERS} parameters of "
                f"{access.RULES_PARAMETER_BYTES} bytes; give a principal fewer patterns (a prefix `orders-*` for many "
                "keys), or one account or organization id for many roles"
            )
        parameter = ssm.StringParameter(
            self,
            f"Rules{index}",
            description="Tickets access rules (docs/how-to/access-rules.md); part of the rules, written by the stack",
            string_value=lazy_string(lambda: self._value(index)),
            tier=ssm.ParameterTier.STANDARD,
        )
        # Not grant_read: its ssm:DescribeParameters has no resource-level permission, so on an ARN it never applies.
        self._function.add_to_role_policy(
            iam.PolicyStatement(actions=[READ_RULES_ACTION], resources=[parameter.parameter_arn])
        )
        self._parameters.append(parameter)

    def _chunks(self) -> list[list[str]]:
        """Each parameter's `"principal":{...}` entries: whole principals, greedily, each parameter within its limit."""
        chunks: list[list[str]] = [[]]
        size = 2  # the braces
        for principal, operations in self._rules.items():
            entry = json.dumps(principal) + ":" + json.dumps(operations, separators=(",", ":"), sort_keys=True)
            length = len(entry.encode()) + 1
            if principal in self._longest:
                length += self._longest[principal] - len(principal)
            if chunks[-1] and size + length > access.RULES_PARAMETER_BYTES:
                chunks.append([])
                size = 2
            chunks[-1].append(entry)
            size += length
        return chunks if chunks[-1] else []

    def _value(self, index: int) -> str:
        chunks = self._chunks()
        return "{" + ",".join(chunks[index] if index < len(chunks) else []) + "}"

    def _digest(self) -> str:
        """Of the rules as resolved at deploy: a new rule, a new digest, new execution environments."""
        resolved = Stack.of(self).resolve([self._value(index) for index in range(len(self._parameters))])
        return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest()[:16]


@jsii.implements(IStringProducer)
class _Produced:
    def __init__(self, produce: Callable[[], str]):
        self._produce = produce

    def produce(self, context: IResolveContext) -> Any:
        return self._produce()


def lazy_string(produce: Callable[[], str]) -> str:
    return Lazy.uncached_string(_Produced(produce))  # the cached Lazy.string calls a Python producer without a context


def grantee_principal(grantee: iam.IGrantable, label: str) -> tuple[str, int]:
    """The role's or user's ARN (perhaps a token) access rules name `grantee` by, and its longest once resolved."""
    principal = grantee.grant_principal
    arn = getattr(principal, "role_arn", None) or getattr(principal, "user_arn", None)
    if arn is None and isinstance(principal, iam.ArnPrincipal) and access.IAM_ARN_PATTERN.fullmatch(principal.arn):
        arn = principal.arn
    if not isinstance(arn, str):
        raise ValueError(
            f"{label}: the grantee {principal} has no role or user ARN for the access rules to name; grant to an "
            "IAM role or user, or write the principal (an account or organization id) in `access` itself"
        )
    return arn, _longest_arn(principal)


def _longest_arn(principal: iam.IPrincipal) -> int:
    """A role or user made in this app counts its path and name where the app fixes them."""
    resource = principal.node.default_child if isinstance(principal, (iam.Role, iam.User)) else None
    if not isinstance(resource, (iam.CfnRole, iam.CfnUser)):
        return TOKEN_PRINCIPAL_BYTES
    path = resource.path
    name = resource.role_name if isinstance(resource, iam.CfnRole) else resource.user_name

    def fixed(text: object, otherwise: int) -> int:  # its length where the app fixes it
        return len(text) if isinstance(text, str) and not Token.is_unresolved(text) else otherwise

    return ARN_PREFIX_BYTES + fixed(path, 1 if path is None else MAX_PATH_BYTES) + fixed(name, MAX_NAME_BYTES)
