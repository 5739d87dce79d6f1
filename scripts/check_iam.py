"""The IAM half of scripts/check-iam: parliament on every policy azevac ships, and the checks
parliament does not make.

- parliament (its own auditors, severity above INFO) on fixtures/iam-policy.json (the operator's),
  fixtures/iam-admin-policy.json (`azevac init`'s) and the member role's policy in
  fixtures/member-role.cfn.yaml.
- Every condition key is one the service authorization reference defines for each action of its
  statement (or a global `aws:` key). parliament skips the keys of `Null` conditions, and a misspelt
  key there is silently true: the statement would allow what it means to refuse.
- The member role's statements are the operator policy's, less those that act in the operator's
  account only, so the two cannot drift apart.
- Each policy fits IAM's size quota (whitespace not counted).
"""

import json
import re
import sys
from pathlib import Path

import parliament
import parliament.cli
import parliament.statement
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parent.parent
OPERATOR = ROOT / "fixtures/iam-policy.json"
ADMIN = ROOT / "fixtures/iam-admin-policy.json"
MEMBER = ROOT / "fixtures/member-role.cfn.yaml"

# Statements of the operator policy that the member role does not have: they act in the operator's
# account only (the journal, identity, other accounts' roles, the organization, SNS, `exposure`, the
# alarms `recover --waves` is gated on, `azevac watch`'s queue and the autoshifts it lists).
OPERATOR_ONLY = {
    "AzevacOperatorReads",
    "AzevacJournal",
    "AzevacNotify",
    "AzevacWaveAlarms",
    "AzevacAcrossAccounts",
    "AzevacOrganization",
    "AzevacWatchQueue",
    "AzevacWatchAutoshifts",
}

# Findings accepted, by (policy, issue, a piece of the detail), each with the reason; an entry needs a
# reason a security reviewer would sign.
_LIST_TASKS = (
    "ListTasks by cluster and service, as azevac calls it, is authorized on Resource * (the reference's "
    "container-instance resource applies only to a call naming a container instance)"
)
_ZONAL_SHIFTS = (
    "ARC authorizes shifts of Auto Scaling groups and EKS clusters, and CancelZonalShift and "
    "UpdateZonalShift by shift ID, on resources parliament 1.6.4's reference lacks; AWS documents "
    "Resource * for them"
)
ACCEPTED: dict[tuple[str, str, str], str] = {
    (policy, "RESOURCE_STAR", piece): reason
    for policy in ("iam-policy.json", "member-role.cfn.yaml")
    for piece, reason in (('["ecs:ListTasks"]', _LIST_TASKS), ("arc-zonal-shift:StartZonalShift", _ZONAL_SHIFTS))
}

# IAM's quotas on policy size, whitespace not counted: a customer managed policy, and the inline
# policies of one role together.
MANAGED_LIMIT = 6144
ROLE_INLINE_LIMIT = 10240


def _reads_array_types(translate):
    """parliament 1.6.4 stops on the reference's `ArrayOfARN` type (events:TargetArn's): an array of
    a type takes values of that type, so it is read as the type."""

    def translate_array(name):
        return translate(name[len("ArrayOf") :] if name.startswith("ArrayOf") else name)

    return translate_array


parliament.statement.translate_documentation_types = _reads_array_types(
    parliament.statement.translate_documentation_types
)


def member_policy():
    template, matches = decode(str(MEMBER))
    if matches:
        sys.exit(f"{MEMBER}: {matches}")
    role = template["Resources"]["AzevacRole"]["Properties"]
    (policy,) = role["Policies"]
    return json.loads(json.dumps(policy["PolicyDocument"]))


def findings(name, policy):
    analyzed = parliament.analyze_policy_string(json.dumps(policy), name, include_community_auditors=False)
    problems = []
    for finding in analyzed.findings:
        finding = parliament.enhance_finding(finding)
        if finding.severity == "INFO":
            continue
        detail = json.dumps(finding.detail, default=str)
        reason = next((r for (p, i, d), r in ACCEPTED.items() if p == name and i == finding.issue and d in detail), None)
        if reason is None:
            problems.append(f"{name}: {finding.severity} {finding.issue}: {finding.title}: {detail}")
        else:
            print(f"scripts/check-iam: accepted in {name}: {finding.issue} ({reason})")
    return problems


def privileges():
    """Each `service:Action` with the condition keys the reference defines for it."""
    keys = {}
    for service in parliament.iam_definition:
        for privilege in service["privileges"]:
            defined = {k for r in privilege["resource_types"] for k in r["condition_keys"]}
            keys[f"{service['prefix']}:{privilege['privilege']}".lower()] = defined
    return keys


def key_matches(defined, key):
    pattern = re.escape(defined).replace(r"\$\{TagKey\}", ".+").replace(r"\$\{", "").replace(r"\}", "")
    return re.fullmatch(pattern, key, re.IGNORECASE) is not None


def unknown_condition_keys(name, policy):
    keys = privileges()
    problems = []
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for operator, block in statement.get("Condition", {}).items():
            for key in block:
                if key.lower().startswith("aws:"):
                    continue
                for action in actions:
                    if not any(key_matches(d, key) for d in keys.get(action.lower(), ())):
                        problems.append(
                            f"{name}: {statement.get('Sid')}: {operator} on {key}, which the reference "
                            f"does not define for {action}"
                        )
    return problems


def size(policy):
    return len(re.sub(r"\s", "", json.dumps(policy)))


def main():
    operator = json.loads(OPERATOR.read_text())
    admin = json.loads(ADMIN.read_text())
    member = member_policy()
    policies = {OPERATOR.name: operator, ADMIN.name: admin, MEMBER.name: member}
    problems = []
    for name, policy in policies.items():
        problems += findings(name, policy)
        problems += unknown_condition_keys(name, policy)
    for name, policy, limit in [
        (OPERATOR.name, operator, MANAGED_LIMIT),
        (ADMIN.name, admin, MANAGED_LIMIT),
        (MEMBER.name, member, ROLE_INLINE_LIMIT),
    ]:
        if size(policy) > limit:
            problems.append(f"{name}: {size(policy)} characters, over IAM's quota of {limit}")
    expected = [s for s in operator["Statement"] if s.get("Sid") not in OPERATOR_ONLY]
    if member["Statement"] != expected:
        theirs = {s.get("Sid"): s for s in member["Statement"]}
        ours = {s.get("Sid"): s for s in expected}
        differ = sorted(sid for sid in set(theirs) | set(ours) if theirs.get(sid) != ours.get(sid))
        problems.append(
            f"{MEMBER.name}: its statements are not {OPERATOR.name}'s less {sorted(OPERATOR_ONLY)}; "
            f"they differ in {differ or 'their order'}"
        )
    for problem in problems:
        print(f"scripts/check-iam: {problem}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
