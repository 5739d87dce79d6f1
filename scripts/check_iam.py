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
- The watcher's task role (fixtures/watcher-service.cfn.yaml, and the Terraform module's map in
  fixtures/watcher-service.tf) holds exactly the operator policy's statements that the types it is given
  need (those holding one of the type's IAM actions, from the registry's table of kinds,
  docs/src/reference/kinds.md) and the watch's own: evaluated for every type alone and for all of them,
  with and without Notify and Alarm. parliament checks the policy with every statement in.
- Every `var.`, `local.`, `data.` and resource a Terraform file in fixtures/ refers to is declared there
  (python-hcl2 parses each file: there is no terraform here to run `terraform validate`).
"""

import json
import re
import sys
from pathlib import Path

import hcl2
import parliament
import parliament.cli
import parliament.statement
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parent.parent
OPERATOR = ROOT / "fixtures/iam-policy.json"
ADMIN = ROOT / "fixtures/iam-admin-policy.json"
MEMBER = ROOT / "fixtures/member-role.cfn.yaml"
WATCHER = ROOT / "fixtures/watcher-service.cfn.yaml"
WATCHER_TF = ROOT / "fixtures/watcher-service.tf"
KINDS = ROOT / "docs/src/reference/kinds.md"

# The statements of the operator policy every watcher needs, whatever its types: the zones and subnets
# (in AzevacReadOnly), the caller's identity, the journal, the queue and ARC's autoshifts. SNS comes with
# Notify, the alarms with Alarm; across accounts and the organization are not the templates' (no --accounts).
WATCH_STATEMENTS = {
    "AzevacReadOnly",
    "AzevacOperatorReads",
    "AzevacJournal",
    "AzevacWatchQueue",
    "AzevacWatchAutoshifts",
}

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
    for policy in ("iam-policy.json", "member-role.cfn.yaml", "watcher-service.cfn.yaml")
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


def kinds_and_actions():
    """Each kind of the registry's table (docs/src/reference/kinds.md, generated and checked by
    tests/it/docs/manual.rs) with its IAM actions; kinds without any (Kubernetes) are left out."""
    text = KINDS.read_text()
    names = re.findall(r"^\| \[([a-z-]+)\]\(#", text, re.MULTILINE)
    kinds = {}
    for name in names:
        section = text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        actions = set(re.findall(r"^- `([a-z0-9-]+:[A-Za-z0-9]+)`$", section, re.MULTILINE))
        if actions:
            kinds[name] = actions
    return kinds


def actions_of(statement):
    return set(statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])


def needed_by_types(operator, kinds):
    """Each kind's statements of the operator policy besides the watch's own: those with its actions."""
    return {
        kind: {s["Sid"] for s in operator["Statement"] if actions_of(s) & actions} - WATCH_STATEMENTS
        for kind, actions in kinds.items()
    }


class Evaluate:
    """Just enough of CloudFormation's intrinsic functions to resolve the task role's policy for given
    parameters: Ref, Fn::Sub (of parameters), Fn::Join, Fn::Split, and the condition functions."""

    NO_VALUE = object()

    def __init__(self, template, parameters):
        self.template, self.parameters = template, parameters
        self.conditions = {}

    def condition(self, name):
        if name not in self.conditions:
            self.conditions[name] = self(self.template["Conditions"][name])
        return self.conditions[name]

    def __call__(self, node):
        if isinstance(node, list):
            return [v for v in (self(n) for n in node) if v is not self.NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref":
                return self.NO_VALUE if arg == "AWS::NoValue" else self.parameters[arg]
            if key == "Condition":
                return self.condition(arg)
            if key == "Fn::Sub":
                return re.sub(r"\$\{([A-Za-z0-9:]+)\}", lambda m: self.parameters[m.group(1)], arg)
            if key == "Fn::Join":
                return arg[0].join(self(arg[1]))
            if key == "Fn::Split":
                return self(arg[1]).split(arg[0])
            if key == "Fn::Equals":
                return self(arg[0]) == self(arg[1])
            if key == "Fn::Not":
                return not self(arg[0])
            if key == "Fn::Or":
                return any(self(a) for a in arg)
            if key == "Fn::And":
                return all(self(a) for a in arg)
            if key == "Fn::If":
                return self(arg[1]) if self.condition(arg[0]) else self(arg[2])
        return {k: self(v) for k, v in node.items()}


def watcher_policy(template, **parameters):
    defaults = {name: str(p.get("Default", "")) for name, p in template["Parameters"].items()}
    role = template["Resources"]["TaskRole"]["Properties"]
    (policy,) = role["Policies"]
    return Evaluate(template, {**defaults, **parameters})(policy["PolicyDocument"])


def watcher_checks(operator):
    """The task role of the CloudFormation template and the Terraform module's map, against the policy."""
    template, matches = decode(str(WATCHER))
    if matches:
        sys.exit(f"{WATCHER}: {matches}")
    template = json.loads(json.dumps(template))
    by_sid = {s["Sid"]: s for s in operator["Statement"]}
    kinds = kinds_and_actions()
    needed = needed_by_types(operator, kinds)
    problems = []
    extras = {"Notify": "arn:aws:sns:us-east-1:123456789012:azevac-oncall", "Alarm": "api-5xx", "Waves": "1,50%"}
    cases = [([kind], extra) for kind in kinds for extra in (True, False)] + [(list(kinds), True)]
    for types, extra in cases:
        parameters = {"Types": ",".join(types), **(extras if extra else {})}
        policy = watcher_policy(template, **parameters)
        want = set(WATCH_STATEMENTS).union(*(needed[k] for k in types))
        if extra:
            want |= {"AzevacNotify", "AzevacWaveAlarms"}
        got = [s.get("Sid") for s in policy["Statement"]]
        if sorted(got) != sorted(want):
            problems.append(
                f"{WATCHER.name}: with Types={parameters['Types']}{' and Notify, Alarm' if extra else ''} the task "
                f"role holds {sorted(got)}, not {sorted(want)}"
            )
        for statement in policy["Statement"]:
            if statement != by_sid.get(statement.get("Sid")):
                problems.append(f"{WATCHER.name}: {statement.get('Sid')} is not the operator policy's statement")
    everything = watcher_policy(template, Types=",".join(kinds), **extras)
    problems += findings(WATCHER.name, everything)
    if size(everything) > ROLE_INLINE_LIMIT:
        problems.append(f"{WATCHER.name}: {size(everything)} characters, over IAM's quota of {ROLE_INLINE_LIMIT}")

    module = hcl2.load(WATCHER_TF.open())
    (local,) = [block for block in module["locals"] if "type_statements" in block]
    unquote = lambda s: s.strip('"')
    mapped = {unquote(k): {unquote(s) for s in v} for k, v in local["type_statements"].items()}
    if mapped != needed:
        problems.append(f"{WATCHER_TF.name}: type_statements is {mapped}, not {needed}")
    if {unquote(s) for s in local["watch_statements"]} != WATCH_STATEMENTS:
        problems.append(f"{WATCHER_TF.name}: watch_statements are not {sorted(WATCH_STATEMENTS)}")
    for sid, variable in (("AzevacNotify", "var.notify"), ("AzevacWaveAlarms", "var.alarm")):
        if f'{variable} == "" ? [] : ["{sid}"]' not in local["task_sids"]:
            problems.append(f"{WATCHER_TF.name}: task_sids does not add {sid} with {variable}")
    return problems


def terraform_references():
    """Every var., local., data. and resource reference in fixtures/*.tf is declared in its file."""
    problems, q = [], '"'
    for path in sorted((ROOT / "fixtures").glob("*.tf")):
        module = hcl2.load(path.open())
        text = path.read_text()
        code = "\n".join(line.split("#", 1)[0] if line.lstrip().startswith("#") else line for line in text.splitlines())
        declared = {
            "var": {k for block in module.get("variable", []) for k in block},
            "local": {k for block in module.get("locals", []) for k in block},
            "data": {f"{t.strip(q)}.{n.strip(q)}" for block in module.get("data", []) for t, named in block.items() for n in named},
            "resource": {
                f"{t.strip(q)}.{n.strip(q)}" for block in module.get("resource", []) for t, named in block.items() for n in named
            },
        }
        declared = {kind: {name.strip(q) for name in names} for kind, names in declared.items()}
        for kind, pattern in (
            ("var", r"\bvar\.([a-z0-9_]+)"),
            ("local", r"\blocal\.([a-z0-9_]+)"),
            ("data", r"\bdata\.([a-z0-9_]+\.[a-z0-9_]+)"),
            ("resource", r"(?<![.\w])(aws_[a-z0-9_]+\.[a-z0-9_]+)\.[a-z_]+"),
        ):
            for name in sorted(set(re.findall(pattern, code)) - declared[kind]):
                problems.append(f"{path.name}: {kind} {name} is referred to but not declared")
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
    problems += watcher_checks(operator)
    problems += terraform_references()
    for problem in problems:
        print(f"scripts/check-iam: {problem}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
