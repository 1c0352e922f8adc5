"""Which workflow jobs GitHub lets into an environment without a reviewer, and the OIDC subject they then hold.

Written from GitHub's documentation (github/docs at fbc7cca92b06bd9ec0dc5a565d4a631098dd91c2,
content/actions/reference/workflows-and-actions/deployments-and-environments.md, "Deployment protection rules":
required reviewers approve each job that references the environment before it is sent to a runner, "prevent
self-reviews" keeps the person who started the run from approving it; "Deployment branches and tags" restrict the
branches whose runs may reference it) and from its OpenID Connect reference ("Example subject claims": a job that
references an environment gets the subject `repo:<owner>/<repo>:environment:<name>`, whatever its event; a
`pull_request` job that references none gets `repo:<owner>/<repo>:pull_request`).

The branch a run is checked against: the pushed branch (push), the default branch (schedule), the chosen ref
(workflow_dispatch) and, for a pull request, its head branch, never the base (a run's `head_branch`, as a
pull_request_target run refused "Branch ... is not allowed to deploy" shows: github.com/thejcannon/ticket-3517845).
A job's `if:` and the workflow file are no protection here: whoever pushes a branch can edit both, and name any
environment from any event.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Environment:
    """An environment's protection as set in the repository's settings."""

    name: str
    branches: frozenset[str] | None  # the deployment branches; None: every branch
    required_reviewers: bool


def subject(repository: str, environment: str | None, event: str = "push", ref: str = "refs/heads/main") -> str:
    """The `sub` claim of a job's OIDC token."""
    if environment is not None:
        return f"repo:{repository}:environment:{environment}"
    if event == "pull_request":
        return f"repo:{repository}:pull_request"
    return f"repo:{repository}:ref:{ref}"


def runs_unreviewed(environment: Environment, branch: str) -> bool:
    """A job from a run of `branch` that references `environment` reaches a runner, and its OIDC token, with nobody's
    approval."""
    admitted = environment.branches is None or branch in environment.branches
    return admitted and not environment.required_reviewers
