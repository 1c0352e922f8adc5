"""Post a report on a pull request as one comment that later runs update instead of repeating.

    python -m aks_gpu_platform.plan.pr_comment --pr 42 --marker plan --title "Offline plan" --body-file plan.md

The comment starts with a hidden marker (`<!-- aks-gpu-platform:<marker> -->`); a later run with
the same marker edits that comment, and only one the workflow's own token wrote (`--author`,
default `github-actions[bot]`): anyone can paste the marker into a comment of their own. GitHub
refuses comment bodies over 65,536 characters, so a longer report is cut at a line boundary with a
pointer to the run's job summary, which holds it whole.
Reads GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL (default https://api.github.com) and, for the
pointer, GITHUB_SERVER_URL and GITHUB_RUN_ID, all set by GitHub Actions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

# GitHub's limit on an issue comment body (characters); kept under with room for the notice.
MAX_BODY_CHARS = 65_536
# The login GitHub shows for comments written with a workflow's GITHUB_TOKEN.
ACTIONS_BOT = "github-actions[bot]"


def marker_line(marker: str) -> str:
    return f"<!-- aks-gpu-platform:{marker} -->"


def compose(marker: str, title: str, report: str, run_url: str, limit: int = MAX_BODY_CHARS) -> str:
    """The comment body: marker, title, the report (cut to fit GitHub's limit with a pointer to the run)."""
    head = f"{marker_line(marker)}\n## {title}\n\n"
    notice = f"\n\n_Cut to fit a comment: the whole report is in the [run's job summary]({run_url})._\n"
    if len(head) + len(report) <= limit:
        return head + report
    room = limit - len(head) - len(notice) - len("\n```\n")
    cut = report[:room].rsplit("\n", 1)[0]
    # A cut inside a fenced block would swallow the notice; close the fence.
    closing = "\n```" if cut.count("```") % 2 else ""
    return head + cut + closing + notice


def run_url() -> str:
    """This workflow run's page (GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_RUN_ID, set by GitHub Actions)."""
    env = os.environ
    server = env.get("GITHUB_SERVER_URL", "https://github.com")
    return f"{server}/{env.get('GITHUB_REPOSITORY', '')}/actions/runs/{env.get('GITHUB_RUN_ID', '')}"


def github_request(method: str, url: str, token: str, payload: dict[str, Any] | None = None) -> Any:
    """One GitHub REST call with the workflow token; the decoded JSON answer."""
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/vnd.github+json")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("X-GitHub-Api-Version", "2022-11-28")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def upsert(api: str, repo: str, pr: int, token: str, marker: str, body: str, author: str = ACTIONS_BOT) -> str:
    """Edit the pull request's comment by `author` that carries `marker`, or create it; returns what was done."""
    first_line = marker_line(marker)
    page = 1
    while True:
        comments = github_request("GET", f"{api}/repos/{repo}/issues/{pr}/comments?per_page=100&page={page}", token)
        for comment in comments:
            written_by = str((comment.get("user") or {}).get("login", ""))
            if written_by == author and str(comment.get("body", "")).startswith(first_line):
                github_request("PATCH", f"{api}/repos/{repo}/issues/comments/{comment['id']}", token, {"body": body})
                return "updated"
        if len(comments) < 100:
            break
        page += 1
    github_request("POST", f"{api}/repos/{repo}/issues/{pr}/comments", token, {"body": body})
    return "created"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pr", type=int, required=True, help="pull request number")
    parser.add_argument("--marker", required=True, help="identifies the comment a later run updates")
    parser.add_argument("--title", required=True)
    parser.add_argument("--body-file", type=Path, required=True)
    parser.add_argument("--author", default=ACTIONS_BOT, help="login of the token's comments (a GitHub App's bot)")
    options = parser.parse_args(argv)
    env = os.environ
    missing = [k for k in ("GITHUB_TOKEN", "GITHUB_REPOSITORY") if not env.get(k)]
    if missing:
        print(f"error: {', '.join(missing)} not set", file=sys.stderr)
        return 2
    body = compose(options.marker, options.title, options.body_file.read_text(), run_url())
    api = env.get("GITHUB_API_URL", "https://api.github.com")
    print(upsert(api, env["GITHUB_REPOSITORY"], options.pr, env["GITHUB_TOKEN"], options.marker, body, options.author))
    return 0


if __name__ == "__main__":
    sys.exit(main())
