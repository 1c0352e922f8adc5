"""A model of how Azure evaluates a role-assignment condition (Azure ABAC, conditionVersion 2.0).

Written from MicrosoftDocs/azure-docs, articles/role-based-access-control/:
- conditions-format.md (commit 01b2a4c4): the syntax (`!`, `AND`, `OR`, parentheses; `ActionMatches`;
  `ForAnyOfAnyValues:<function>` true when any left value matches any right value); "if you have three or more
  expressions ... you must add parentheses" (so `a AND b OR c` is refused here);
- conditions-authorization-actions-attributes.md (commit 1f87455f): the actions a condition on role-assignment
  management targets (`.../roleAssignments/write` with Request attributes, `.../roleAssignments/delete` with
  Resource attributes), the attributes (RoleDefinitionId and PrincipalId: GUID, GuidEquals operators;
  PrincipalType: string, StringEqualsIgnoreCase operators, values User, ServicePrincipal, Group);
- delegate-role-assignments-examples.md (commit 0b8729ea): "Constrain roles and principal types".

Only that subset is modelled; anything else in a condition is an error, never silently true.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

ATTRIBUTE_PREFIX = "Microsoft.Authorization/roleAssignments:"
GUID_ATTRIBUTES = {"RoleDefinitionId", "PrincipalId"}
STRING_ATTRIBUTES = {"PrincipalType": {"user", "serviceprincipal", "group"}}
# Which attribute source each action offers.
SOURCES = {
    "Microsoft.Authorization/roleAssignments/write": "Request",
    "Microsoft.Authorization/roleAssignments/delete": "Resource",
}
OPERATORS = {"ForAnyOfAnyValues:GuidEquals", "ForAnyOfAnyValues:StringEqualsIgnoreCase"}

_TOKEN = re.compile(
    r"\s*(?:(?P<paren>[()])|(?P<not>!)|(?P<bool>AND(?!\w)|OR(?!\w)|&&|\|\|)|(?P<action>ActionMatches)\{'(?P<pattern>[^']*)'\}"
    r"|@(?P<source>Request|Resource)\[(?P<attribute>[^\]]+)\]\s+(?P<operator>[\w:]+)\s*\{(?P<values>[^}]*)\})"
)


class ConditionError(ValueError):
    """Azure would refuse the condition when the role assignment is created."""


@dataclass(frozen=True)
class Access:
    """One attempt: the action, and the attributes Azure hands the condition."""

    action: str
    attributes: Mapping[str, Sequence[str]] = field(default_factory=dict)


def role_assignment_write(role_definition_id: str, principal_type: str, principal_id: str = "") -> Access:
    """Creating an assignment: Azure reads the role's GUID from the full role definition ID in the request."""
    return Access(
        "Microsoft.Authorization/roleAssignments/write",
        {"RoleDefinitionId": [role_definition_id.rsplit("/", 1)[-1]], "PrincipalType": [principal_type]}
        | ({"PrincipalId": [principal_id]} if principal_id else {}),
    )


def role_assignment_delete(role_definition_id: str, principal_type: str) -> Access:
    """Deleting one: the same attributes, read from the existing assignment (the Resource source)."""
    written = role_assignment_write(role_definition_id, principal_type)
    return Access("Microsoft.Authorization/roleAssignments/delete", written.attributes)


def _tokens(text: str) -> list[re.Match[str]]:
    tokens: list[re.Match[str]] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise ConditionError(f"cannot read the condition at: {text[position : position + 60]!r}")
        tokens.append(match)
        position = match.end()
    return tokens


def _values(raw: str) -> list[str]:
    return [v.strip().strip("'") for v in raw.split(",") if v.strip()]


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> re.Match[str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> re.Match[str]:
        token = self.peek()
        if token is None:
            raise ConditionError("the condition ends too early")
        self.at += 1
        return token

    def expression(self) -> object:
        terms = [self.term()]
        operators: set[str] = set()
        while (token := self.peek()) is not None and token["bool"]:
            self.take()
            operators.add({"&&": "AND", "||": "OR"}.get(token["bool"], token["bool"]))
            terms.append(self.term())
        if len(operators) > 1:
            raise ConditionError("AND and OR mixed without parentheses: Azure requires them to set the order")
        return (operators.pop(), terms) if operators else terms[0]

    def term(self) -> object:
        token = self.take()
        if token["not"]:
            return ("NOT", self.term())
        if token["paren"] == "(":
            inner = self.expression()
            closing = self.take()
            if closing["paren"] != ")":
                raise ConditionError("a parenthesis is not closed")
            return inner
        if token["action"]:
            return ("ACTION", token["pattern"])
        if token["source"]:
            return self.attribute(token)
        raise ConditionError(f"unexpected {token.group(0).strip()!r}")

    @staticmethod
    def attribute(token: re.Match[str]) -> object:
        name = token["attribute"]
        if not name.startswith(ATTRIBUTE_PREFIX):
            raise ConditionError(f"{name}: not an attribute of role-assignment conditions")
        short = name.removeprefix(ATTRIBUTE_PREFIX)
        operator, values = token["operator"], _values(token["values"])
        if operator not in OPERATORS:
            raise ConditionError(f"{operator}: not modelled")
        if short in GUID_ATTRIBUTES:
            if not operator.endswith("GuidEquals"):
                raise ConditionError(f"{short} is a GUID: {operator} does not apply")
            for value in values:
                try:
                    uuid.UUID(value)
                except ValueError as err:
                    raise ConditionError(f"{short}: {value!r} is not a GUID") from err
        elif short in STRING_ATTRIBUTES:
            if not operator.endswith("StringEqualsIgnoreCase"):
                raise ConditionError(f"{short}: {operator} does not apply")
            unknown = {v for v in values if v.lower() not in STRING_ATTRIBUTES[short]}
            if unknown:
                raise ConditionError(f"{short}: {sorted(unknown)} are not values Azure sets")
        else:
            raise ConditionError(f"{short}: unknown attribute")
        return ("ATTRIBUTE", token["source"], short, values)


def parse(condition: str) -> object:
    """The condition's tree, or ConditionError where Azure would refuse it."""
    parser = _Parser(condition)
    tree = parser.expression()
    if parser.peek() is not None:
        raise ConditionError(f"text after the end of the condition: {parser.peek().group(0)!r}")  # type: ignore[union-attr]
    return tree


def _matches(pattern: str, action: str) -> bool:
    return re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), action, re.IGNORECASE) is not None


def _evaluate(node: object, access: Access) -> bool:
    kind = node[0] if isinstance(node, tuple) else None
    if kind == "NOT":
        return not _evaluate(node[1], access)  # type: ignore[index]
    if kind == "ACTION":
        return _matches(node[1], access.action)  # type: ignore[index]
    if kind == "ATTRIBUTE":
        _, source, name, values = node  # type: ignore[misc]
        if SOURCES.get(access.action) != source:
            raise ConditionError(f"{access.action} offers no @{source} attributes")
        have = [str(v).lower() for v in access.attributes.get(name, [])]
        return any(v.lower() in have for v in values)
    if kind in ("AND", "OR"):
        results = (_evaluate(term, access) for term in node[1])  # type: ignore[index]
        return all(results) if kind == "AND" else any(results)
    raise ConditionError(f"unexpected node {node!r}")


def allows(condition: str, access: Access) -> bool:
    """Whether the role assignment holding `condition` lets `access` through."""
    return _evaluate(parse(condition), access)
