//! Lists of kinds come from the registry (issue 32): every list of types in README, in the manual
//! (docs/src, issue 37) and in the `--help` text names exactly the registered types, and the IAM
//! policy and the member-account role grant exactly the actions the registered types and the core
//! need, no more. A new kind brings its name and its IAM actions in its registry line; these tests
//! name no kind.

use std::collections::BTreeSet;
use std::path::Path;

use azevac::plugins::{kubernetes_types, types, ADMIN_IAM_ACTIONS, CORE_IAM_ACTIONS, OPERATOR_IAM_ACTIONS, REGISTRY};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Words joined by `,` / `and` / `or` (backticks and line breaks aside), as prose and flags write
/// a list, each with the line it starts on. Words at either end that are not types are dropped
/// ("…, nat and db, six resources"), so what is left starts and ends with a type.
fn word_lists(text: &str) -> Vec<(usize, Vec<String>)> {
    let known = types();
    let text = text.replace('`', "");
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut words = Vec::new(); // (word, start, end)
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (start, is_word(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                if !matches!(&text[s..i], "and" | "or") {
                    words.push((&text[s..i], s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    let mut lists: Vec<Vec<(&str, usize, usize)>> = Vec::new();
    for (n, word) in words.iter().enumerate() {
        let joined = n > 0 && {
            let gap = text[words[n - 1].2..word.1]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            matches!(gap.as_str(), "," | "and" | ", and" | "or" | ", or")
        };
        match lists.last_mut() {
            Some(list) if joined => list.push(*word),
            _ => lists.push(vec![*word]),
        }
    }
    lists
        .into_iter()
        .filter_map(|list| {
            let first = list.iter().position(|w| known.contains(&w.0))?;
            let last = list.iter().rposition(|w| known.contains(&w.0))?;
            let line = text[..list[first].1].lines().count().max(1);
            Some((line, list[first..=last].iter().map(|w| w.0.to_owned()).collect()))
        })
        .collect()
}

/// What is wrong with each list of types in `text`: a list of three or more types must name every
/// registered type, each once, and nothing else; a list of Kubernetes types only ("the eks and
/// karpenter types") must name every Kubernetes type.
fn stale_lists(text: &str) -> Vec<String> {
    let all = BTreeSet::from_iter(types().into_iter().map(str::to_owned));
    let kubernetes = BTreeSet::from_iter(kubernetes_types().into_iter().map(str::to_owned));
    let mut stale = Vec::new();
    for (line, list) in word_lists(text) {
        let named: BTreeSet<String> = list.iter().cloned().collect();
        let typed = list.iter().filter(|w| all.contains(*w)).count();
        let wanted = if typed >= 2 && named.is_subset(&kubernetes) {
            &kubernetes
        } else if typed >= 3 {
            &all
        } else {
            continue;
        };
        if &named != wanted || named.len() != list.len() {
            stale.push(format!(
                "line {line}: {} (lacks {:?}, has {:?} besides)",
                list.join(", "),
                wanted.difference(&named).collect::<Vec<_>>(),
                named.difference(wanted).collect::<Vec<_>>()
            ));
        }
    }
    stale
}

#[test]
fn issue_32_readmes_lists_of_types_are_the_registry() {
    let readme = read("README.md");
    assert!(
        word_lists(&readme).iter().any(|(_, list)| list.len() == types().len()),
        "the scan found no list of every type in README.md: {:?}",
        word_lists(&readme)
    );
    let stale = stale_lists(&readme);
    assert!(
        stale.is_empty(),
        "README.md, lists of types that are not the registry's:\n{}",
        stale.join("\n")
    );
}

/// Issue 37: the manual's pages (docs/src) hold no stale list of types either; a list of every type
/// is rarely needed there, as the table of kinds is generated from the registry.
#[test]
fn issue_37_the_manuals_lists_of_types_are_the_registry() {
    let pages = crate::docs::manual::manual_pages();
    assert!(pages.len() >= 20, "the scan found too few pages: {pages:?}");
    let mut stale = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        stale.extend(
            stale_lists(&text)
                .into_iter()
                .map(|s| format!("{}: {s}", page.display())),
        );
    }
    assert!(
        stale.is_empty(),
        "lists of types in the manual that are not the registry's:\n{}",
        stale.join("\n")
    );
}

#[test]
fn issue_32_the_help_texts_lists_of_types_are_the_registry() {
    let mut commands = vec![(String::from("azevac"), azevac::cli::command())];
    let mut checked = 0;
    while let Some((name, mut command)) = commands.pop() {
        let help = command.render_long_help().to_string();
        checked += word_lists(&help).len();
        let stale = stale_lists(&help);
        assert!(stale.is_empty(), "{name} --help:\n{}", stale.join("\n"));
        commands.extend(
            command
                .get_subcommands()
                .map(|sub| (format!("{name} {}", sub.get_name()), sub.clone())),
        );
    }
    assert!(checked >= 2, "the scan found no list of types in any --help");
}

/// The check itself finds what it is for: a list that lacks a type, one with a word too many, and
/// one that names a type twice; a list of every type, in flags or in prose, passes.
#[test]
fn issue_32_a_stale_list_of_types_is_found() {
    let all = types();
    let (last, rest) = all.split_last().expect("types");
    for fine in [
        format!("`--type {}` (comma-separated)", all.join(",")),
        format!("for each of {} and {last}, six resources", rest.join(", ")),
    ] {
        assert!(stale_lists(&fine).is_empty(), "{fine}: {:?}", stale_lists(&fine));
    }
    for stale in [
        format!("| `resource_type` | S | `{}`; hash key |", rest.join("`, `")),
        format!("types: {}, ec2, {last}", rest.join(", ")),
        format!("--type {},{last}", all.join(",")),
    ] {
        assert_eq!(stale_lists(&stale).len(), 1, "{stale}");
    }
}

/// `service:Action`, as IAM writes it.
fn is_action(text: &str) -> bool {
    text.split_once(':').is_some_and(|(service, action)| {
        service.starts_with(|c: char| c.is_ascii_lowercase())
            && service
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && action.starts_with(|c: char| c.is_ascii_uppercase())
            && action.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// What every registered type needs where it acts, with the core and the reads of `azevac
/// exposure` (which `--accounts` runs there too): what a member account's role grants.
fn needed_where_types_act() -> BTreeSet<&'static str> {
    CORE_IAM_ACTIONS
        .iter()
        .chain(REGISTRY.iter().flat_map(|r| r.iam_actions))
        .chain(azevac::app::exposure::KINDS.iter().flat_map(|k| k.iam_actions))
        .copied()
        .collect()
}

/// What the operator's own account needs besides: the journal, identity, organization and SNS.
fn needed_by_the_operator() -> BTreeSet<&'static str> {
    let mut all = needed_where_types_act();
    all.extend(OPERATOR_IAM_ACTIONS);
    all
}

/// What `init` needs, and only it: the journal's administration, with the reads that go with it
/// (whether the table exists and is a journal; its protection).
fn needed_by_init() -> BTreeSet<&'static str> {
    ADMIN_IAM_ACTIONS
        .iter()
        .chain(&[
            "dynamodb:DescribeTable",
            "dynamodb:DescribeContinuousBackups",
            // `init --autoshift-observer` reads the notification's status before it turns it on.
            "arc-zonal-shift:GetAutoshiftObserverNotificationStatus",
        ])
        .copied()
        .collect()
}

fn granted_by_the_policy(path: &str) -> BTreeSet<String> {
    let policy: serde_json::Value = serde_json::from_str(&read(path)).expect("json");
    let mut granted = BTreeSet::new();
    for statement in policy["Statement"].as_array().expect("statements") {
        assert_eq!(statement["Effect"], "Allow", "{statement}");
        for action in statement["Action"].as_array().expect("actions") {
            granted.insert(action.as_str().expect("string").to_owned());
        }
    }
    granted
}

/// The actions of the member role's own policy (`- service:Action` lines; the trust policy's
/// `Action: sts:AssumeRole` is not one).
fn granted_by_the_member_role() -> BTreeSet<String> {
    read("fixtures/member-role.cfn.yaml")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|a| is_action(a))
        .map(str::to_owned)
        .collect()
}

/// `granted` is exactly `needed`: what lacks, and what is granted though nothing needs it.
fn compare(what: &str, granted: &BTreeSet<String>, needed: &BTreeSet<&str>) -> Vec<String> {
    let mut wrong: Vec<String> = needed
        .iter()
        .filter(|a| !granted.contains(**a))
        .map(|a| format!("{what} lacks {a}"))
        .collect();
    wrong.extend(
        granted
            .iter()
            .filter(|a| !needed.contains(a.as_str()))
            .map(|a| format!("{what} grants {a}, which no type and not the core needs")),
    );
    wrong
}

#[test]
fn issue_32_the_iam_policy_grants_exactly_what_the_types_and_the_core_need() {
    let needed = needed_by_the_operator();
    assert!(needed.iter().all(|a| is_action(a)), "{needed:?}");
    let wrong = compare(
        "fixtures/iam-policy.json",
        &granted_by_the_policy("fixtures/iam-policy.json"),
        &needed,
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Issue 36: the operator cannot administer the journal (turn its deletion protection or
/// point-in-time recovery off); `init` can, under a policy of its own that grants nothing else.
#[test]
fn issue_36_the_journals_administration_is_inits_alone() {
    let operator = granted_by_the_policy("fixtures/iam-policy.json");
    let admin = granted_by_the_policy("fixtures/iam-admin-policy.json");
    for action in ADMIN_IAM_ACTIONS {
        assert!(!operator.contains(*action), "the operator's policy grants {action}");
        assert!(
            !needed_where_types_act().contains(action),
            "{action} is needed where the types act"
        );
    }
    let wrong = compare("fixtures/iam-admin-policy.json", &admin, &needed_by_init());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Issue 16: the member-account role grants what the types, the core and `exposure --accounts`
/// (issue 35) need where they act (not the journal, the organization or SNS, which stay in the
/// operator's account), and trusts only the principal it is given.
#[test]
fn issue_32_the_member_role_grants_exactly_what_the_types_need_where_they_act() {
    let wrong = compare(
        "fixtures/member-role.cfn.yaml",
        &granted_by_the_member_role(),
        &needed_where_types_act(),
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let squeeze = read("fixtures/member-role.cfn.yaml")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(squeeze.contains("Principal: AWS: !Ref OperatorPrincipalArn Action: sts:AssumeRole"));
    assert!(squeeze.contains("Condition: StringEquals: sts:ExternalId: !Ref ExternalId"));
    // Issue 36: the external ID is required; an empty default meant no condition at all.
    let template = read("fixtures/member-role.cfn.yaml");
    let parameter = template
        .split("\n  ExternalId:\n")
        .nth(1)
        .and_then(|rest| rest.split("\nResources:").next())
        .expect("the ExternalId parameter, last before Resources");
    assert!(parameter.contains("MinLength: 2"), "{parameter}");
    assert!(
        !parameter.contains("Default:"),
        "the external ID has a default: {parameter}"
    );
}

/// The comparison finds what it is for: a granted action no one needs, and a needed one not granted.
#[test]
fn issue_32_an_iam_grant_too_many_or_too_few_is_found() {
    let needed = needed_where_types_act();
    let mut granted: BTreeSet<String> = needed.iter().map(|a| a.to_string()).collect();
    assert!(compare("role", &granted, &needed).is_empty());
    granted.insert("ec2:TerminateInstances".into());
    let first = needed.first().expect("an action").to_string();
    granted.remove(&first);
    let wrong = compare("role", &granted, &needed);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong.iter().any(|w| w.contains(&first)) && wrong.iter().any(|w| w.contains("TerminateInstances")));
}

/// A registration's `services` are the IAM prefixes of the actions it calls (pacing and `--max-rate`
/// go by them; a permission for what a call passes is not one, [`PASSED`]), and the core's are those
/// of the core actions.
#[test]
fn issue_32_each_types_services_are_those_of_its_iam_actions() {
    let prefixes = |actions: &[&str]| -> BTreeSet<String> {
        actions
            .iter()
            .filter_map(|a| a.split_once(':'))
            .map(|(s, _)| s.to_owned())
            .collect()
    };
    for registration in REGISTRY {
        assert!(
            registration.iam_actions.iter().all(|a| is_action(a)),
            "{}",
            registration.name
        );
        let services: BTreeSet<String> = registration.services.iter().map(|s| s.to_string()).collect();
        let calls: Vec<&str> = registration
            .iam_actions
            .iter()
            .filter(|a| !PASSED.contains(a))
            .copied()
            .collect();
        assert_eq!(services, prefixes(&calls), "{}", registration.name);
    }
    let core: Vec<&str> = CORE_IAM_ACTIONS
        .iter()
        .chain(OPERATOR_IAM_ACTIONS)
        .chain(ADMIN_IAM_ACTIONS)
        .copied()
        .collect();
    let services: BTreeSet<String> = azevac::plugins::CORE_SERVICES.iter().map(|s| s.to_string()).collect();
    assert_eq!(services, prefixes(&core));
}

/// Calls IAM authorizes through other actions: a DynamoDB transaction is allowed by the actions of
/// the writes in it (there is no `dynamodb:TransactWriteItems` IAM action).
const AUTHORIZED_BY: [(&str, &[&str]); 1] = [(
    "dynamodb:TransactWriteItems",
    &[
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:ConditionCheckItem",
    ],
)];
/// Actions AWS checks on the caller on azevac's behalf, which no call of ours names: Lambda's VPC
/// update reads the VPC's groups (and subnets) with the caller's permissions.
const IMPLIED: [&str; 2] = ["ec2:DescribeSecurityGroups", "ec2:DescribeVpcs"];
/// Permissions for what a call passes, not calls: sending a rule target's or a schedule's role back
/// (`events:PutTargets`, `scheduler:UpdateSchedule`) needs `iam:PassRole`. azevac calls no IAM API,
/// so IAM is no service of a kind's (no pacing, no `--max-rate iam`).
const PASSED: [&str; 1] = ["iam:PassRole"];

/// `text` without the lists that declare IAM actions (a kind's `iam_actions`, the core's and the
/// operator's), so that what is left names only the calls the code makes: a declaration is not a call.
fn without_declarations(text: &str) -> String {
    let mut left = String::with_capacity(text.len());
    let mut rest = text;
    let opening = |t: &str| {
        [
            "iam_actions: &[",
            "CORE_IAM_ACTIONS: &[&str] = &[",
            "OPERATOR_IAM_ACTIONS: &[&str] = &[",
            "ADMIN_IAM_ACTIONS: &[&str] = &[",
        ]
        .iter()
        .filter_map(|o| t.find(o).map(|at| at + o.len()))
        .min()
    };
    while let Some(start) = opening(rest) {
        left.push_str(&rest[..start]);
        rest = rest[start..].find(']').map_or("", |end| &rest[start + end..]);
    }
    left.push_str(rest);
    left
}

/// Every `"service:Operation` string in the `.rs` files under `dir`: each SDK call names its
/// operation that way when it maps its error, so this is the set of calls that code can make.
fn actions_named_under(dir: &Path) -> BTreeSet<String> {
    let services = azevac::plugins::services();
    let mut found = BTreeSet::new();
    let mut paths = vec![dir.to_path_buf()];
    while let Some(path) = paths.pop() {
        // A kind is a file or a folder: the other of the two need not exist.
        if !path.exists() {
            continue;
        }
        if path.is_dir() {
            paths.extend(
                std::fs::read_dir(&path)
                    .expect("read dir")
                    .map(|e| e.expect("entry").path()),
            );
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = without_declarations(&std::fs::read_to_string(&path).expect("read"));
        for piece in text.split('"').skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == ':' || *c == '-')
                .collect();
            // Journal actions (`suspend:AZRebalance`) look alike; only AWS services' names count.
            if is_action(&name) && services.iter().any(|s| name.starts_with(&format!("{s}:"))) {
                found.insert(name);
            }
        }
    }
    let mut actions = BTreeSet::new();
    for name in found {
        match AUTHORIZED_BY.iter().find(|(call, _)| *call == name) {
            Some((_, by)) => actions.extend(by.iter().map(|a| a.to_string())),
            None => {
                actions.insert(name);
            }
        }
    }
    actions
}

/// The declared lists are the code's: every call the code names is declared (by its type when it
/// is in the type's own file or folder), and every declared action is one the code names, or one
/// AWS checks on our behalf.
#[test]
fn issue_32_the_declared_iam_actions_are_the_calls_the_code_makes() {
    let named = actions_named_under(&root().join("src"));
    assert!(named.len() >= 20, "the scan found too little: {named:?}");
    let mut declared = needed_by_the_operator();
    declared.extend(ADMIN_IAM_ACTIONS);
    let undeclared: Vec<&String> = named.iter().filter(|a| !declared.contains(a.as_str())).collect();
    assert!(
        undeclared.is_empty(),
        "called by the code but declared nowhere: {undeclared:?}"
    );
    let unnamed: Vec<&&str> = declared
        .iter()
        .filter(|a| !named.contains(**a) && !IMPLIED.contains(a) && !PASSED.contains(a))
        .collect();
    assert!(unnamed.is_empty(), "declared but never called: {unnamed:?}");
    for registration in REGISTRY {
        let module = registration.name.replace('-', "_");
        let plugins = root().join("src/plugins");
        let mut own = actions_named_under(&plugins.join(format!("{module}.rs")));
        own.extend(actions_named_under(&plugins.join(&module)));
        let missing: Vec<&String> = own
            .iter()
            .filter(|a| !registration.iam_actions.contains(&a.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{}: its own code calls {missing:?}, which its iam_actions lack",
            registration.name
        );
    }
}
