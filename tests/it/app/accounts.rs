//! Issue 16: one command evacuates a zone in every account, and one recovers it, with one journal
//! in the caller's account. moto serves many accounts on one server: credentials from AssumeRole
//! act in the account the role's ARN names, and Organizations is implemented. An account whose role
//! cannot be assumed is answered AccessDenied by the proxy (moto lets any role be assumed).

use crate::common;

use std::collections::BTreeSet;

use aws_config::SdkConfig;
use common::estate::{self, Spec};
use common::proxy::{self, FailRule, Fault, Faults, KillWhen};
use common::*;

/// The member accounts seeded with an estate.
const MEMBERS: [&str; 3] = ["111111111111", "222222222222", "333333333333"];
/// An account whose azevac role cannot be assumed.
const NO_ROLE: &str = "444444444444";

/// An estate of every subnet-placed type with subnets in the zone, as each member account has it.
fn member_estate() -> Spec {
    serde_json::from_value(serde_json::json!({
        "vpcs": [{"name": "prod", "cidr": "10.10.0.0/16", "zones": ["use1-az1", "use1-az2", "use1-az4"]}],
        "auto_scaling_groups": [
            {"name": "web", "vpc": "prod", "zones": ["use1-az1", "use1-az2", "use1-az4"]},
            {"name": "api", "vpc": "prod", "zones": ["use1-az2", "use1-az4"]}
        ],
        "ecs_services": [{"cluster": "shop", "name": "cart", "vpc": "prod", "zones": ["use1-az1", "use1-az2"]}],
        "lambda_functions": [{"name": "thumbs", "vpc": "prod", "zones": ["use1-az2", "use1-az4"]}]
    }))
    .expect("spec")
}

/// Seed each account's estate; returns each account's SDK configuration and live estate.
async fn seed_members(operator: &SdkConfig, accounts: &[&str]) -> Vec<(String, SdkConfig, Snapshot)> {
    let mut seeded = Vec::new();
    for account in accounts {
        let sdk = in_account(operator, account).await;
        estate::seed(&sdk, &member_estate()).await;
        let before = snapshot(&sdk).await;
        seeded.push((account.to_string(), sdk, before));
    }
    seeded
}

/// Every account's estate lost exactly its use1-az2 subnets (the zone subnet of its own VPC).
async fn assert_evacuated(seeded: &[(String, SdkConfig, Snapshot)]) {
    for (account, sdk, before) in seeded {
        let ec2 = aws_sdk_ec2::Client::new(sdk);
        let zonal: BTreeSet<String> = ec2
            .describe_subnets()
            .send()
            .await
            .expect("DescribeSubnets")
            .subnets()
            .iter()
            .filter(|s| s.availability_zone_id() == Some(ZONE))
            .filter_map(|s| s.subnet_id().map(str::to_owned))
            .collect();
        assert!(!zonal.is_empty(), "{account} has a subnet in the zone");
        let drop = |subnets: &Vec<String>| -> Vec<String> {
            subnets.iter().filter(|s| !zonal.contains(*s)).cloned().collect()
        };
        let (groups, services, functions) = snapshot(sdk).await;
        for (name, subnets) in &before.0 {
            assert_eq!(&groups[name], &drop(subnets), "{account}: group {name}");
        }
        for (name, (subnets, ..)) in &before.1 {
            assert_eq!(&services[name].0, &drop(subnets), "{account}: service {name}");
        }
        for (name, (subnets, _)) in &before.2 {
            assert_eq!(&functions[name].0, &drop(subnets), "{account}: function {name}");
        }
    }
}

/// Every account's estate is exactly as seeded.
async fn assert_as_seeded(seeded: &[(String, SdkConfig, Snapshot)]) {
    for (account, sdk, before) in seeded {
        assert_eq!(&snapshot(sdk).await, before, "{account} is back exactly");
    }
}

/// `evacuate --az-id use1-az2 --accounts ACCOUNTS`, then `extra`.
fn evacuate_across<'a>(accounts: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["evacuate", "--az-id", ZONE, "--accounts", accounts][..], extra].concat()
}

fn accounts_arg(accounts: &[&str]) -> String {
    accounts.join(",")
}

fn refuse_role_of(account: &str) -> Faults {
    Faults {
        rules: vec![FailRule {
            label: "sts:AssumeRole".into(),
            body_contains: account.into(),
            fault: Fault::AccessDenied,
        }],
        ..Faults::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_16_three_accounts_evacuate_and_recover_exactly_with_one_command_each() {
    let moto = Moto::start();
    let proxy = proxy::Proxy::start(&moto.endpoint);
    let operator = sdk(&moto).await;
    let seeded = seed_members(&operator, &MEMBERS).await;
    proxy.set(refuse_role_of(NO_ROLE));
    let mut all = MEMBERS.to_vec();
    all.push(NO_ROLE);
    let everywhere = accounts_arg(&all);
    let members = accounts_arg(&MEMBERS);

    // The dry run: one plan, grouped by account, with a summary per account; nothing changes.
    let dry = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--accounts", &everywhere, "--dry-run"],
        &[],
    );
    assert_eq!(dry.code, 1, "an unreachable account fails the run: {}", dry.stderr);
    for account in MEMBERS {
        assert!(
            dry.stdout
                .contains(&format!("account {account}: 4 to change, 0 skipped")),
            "{}",
            dry.stdout
        );
    }
    assert!(
        dry.stdout.contains(&format!("problem: account {NO_ROLE}: not reached")),
        "{}",
        dry.stdout
    );
    assert_as_seeded(&seeded).await;

    let run = azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--accounts",
            &everywhere,
            "--yes",
            "--output",
            "json",
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let result = run.json();
    let lines = result["items"].as_array().expect("items");
    assert_eq!(lines.len(), 12, "4 resources in each of 3 accounts: {result:#}");
    for account in MEMBERS {
        let theirs: Vec<_> = lines.iter().filter(|l| l["account"] == account).collect();
        assert_eq!(theirs.len(), 4, "{account}: {result:#}");
        assert!(theirs.iter().all(|l| l["status"] == "done"), "{result:#}");
        assert!(
            theirs
                .iter()
                .all(|l| l["resource"].as_str().expect("arn").contains(account)),
            "each line acts on its own account's resource: {result:#}"
        );
    }
    let problems = result["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 1, "{result:#}");
    assert!(
        problems[0]
            .as_str()
            .expect("text")
            .starts_with(&format!("account {NO_ROLE}: not reached")),
        "{result:#}"
    );
    assert_evacuated(&seeded).await;

    // One journal, in the caller's account, each record naming its account.
    let records = journal_items(&operator).await;
    assert_eq!(records.len(), 12);
    for account in MEMBERS {
        let theirs: Vec<_> = records.iter().filter(|r| attr_s(r, "account_id") == account).collect();
        assert_eq!(theirs.len(), 4, "{account}");
        assert!(theirs.iter().all(|r| attr_s(r, "az_id") == ZONE));
    }
    let status = azevac_at(&proxy.endpoint, &["status"], &[]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("ACCOUNT") && status.stdout.contains("222222222222"),
        "{}",
        status.stdout
    );
    let only = azevac_at(
        &proxy.endpoint,
        &["status", "--accounts", "333333333333", "--output", "json"],
        &[],
    );
    assert_eq!(only.json()["records"].as_array().expect("records").len(), 4);

    // Again: nothing to do in any account.
    let again = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--accounts", &members, "--yes"],
        &[],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);

    // Recover names no account: it goes to every account the journal's records name.
    let recover = azevac_at(&proxy.endpoint, &["recover", "--yes", "--output", "json"], &[]);
    assert_eq!(recover.code, 0, "{}", recover.stderr);
    let recovered = recover.json();
    assert_eq!(recovered["summary"]["done"], 12, "{recovered:#}");
    assert_as_seeded(&seeded).await;
    assert!(journal_items(&operator).await.is_empty());
    assert!(lock_items(&operator).await.is_empty());

    let twice = azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]);
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    assert!(twice.stdout.contains("nothing to do"), "{}", twice.stdout);
    assert_as_seeded(&seeded).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_16_recover_keeps_the_records_of_an_account_it_cannot_reach() {
    let moto = Moto::start();
    let proxy = proxy::Proxy::start(&moto.endpoint);
    let operator = sdk(&moto).await;
    let seeded = seed_members(&operator, &MEMBERS[..2]).await;
    let members = accounts_arg(&MEMBERS[..2]);
    // A saved plan across accounts: apply plans every account it named again, then carries it out.
    let plan = azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--accounts",
            &members,
            "--dry-run",
            "--output",
            "json",
        ],
        &[],
    );
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let saved = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(saved.path(), &plan.stdout).expect("save the plan");
    let path = saved.path().to_str().expect("path");
    let run = azevac_at(&proxy.endpoint, &["apply", path, "--yes"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_evacuated(&seeded).await;

    // The second account's role is gone when recover runs: the first is recovered, the second's
    // records stay for the next recover, and the run fails.
    proxy.set(refuse_role_of(MEMBERS[1]));
    let recover = azevac_at(&proxy.endpoint, &["recover", "--yes", "--output", "json"], &[]);
    assert_eq!(recover.code, 1, "{}", recover.stderr);
    let problems = recover.json()["problems"].to_string();
    assert!(problems.contains("records are kept"), "{problems}");
    assert_as_seeded(&seeded[..1]).await;
    assert_evacuated(&seeded[1..]).await;
    let left = journal_items(&operator).await;
    assert_eq!(left.len(), 4);
    assert!(left.iter().all(|r| attr_s(r, "account_id") == MEMBERS[1]));

    // The role is back: the next recover finishes.
    proxy.set(Faults::default());
    let again = azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_as_seeded(&seeded).await;
    assert!(journal_items(&operator).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_16_org_names_the_active_accounts_under_the_ou() {
    let moto = Moto::start();
    let operator = sdk(&moto).await;
    let org = aws_sdk_organizations::Client::new(&operator);
    org.create_organization()
        .feature_set(aws_sdk_organizations::types::OrganizationFeatureSet::All)
        .send()
        .await
        .expect("CreateOrganization");
    let root = org.list_roots().send().await.expect("ListRoots").roots()[0]
        .id()
        .expect("root id")
        .to_owned();
    let ou = org
        .create_organizational_unit()
        .parent_id(&root)
        .name("workloads")
        .send()
        .await
        .expect("CreateOrganizationalUnit")
        .organizational_unit()
        .and_then(|u| u.id())
        .expect("ou id")
        .to_owned();
    let mut members = Vec::new();
    for name in ["shop", "search", "ledger"] {
        let status = org
            .create_account()
            .account_name(name)
            .email(format!("{name}@example.com"))
            .send()
            .await
            .expect("CreateAccount");
        let id = status
            .create_account_status()
            .and_then(|s| s.account_id())
            .expect("account id")
            .to_owned();
        members.push(id);
    }
    // Two accounts under the OU, one left at the root.
    for id in &members[..2] {
        org.move_account()
            .account_id(id)
            .source_parent_id(&root)
            .destination_parent_id(&ou)
            .send()
            .await
            .expect("MoveAccount");
    }
    let ids: Vec<&str> = members.iter().map(String::as_str).collect();
    seed_members(&operator, &ids).await;

    let planned_accounts = |args: &[&str]| -> BTreeSet<String> {
        let run = azevac(&moto, args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|l| l["account"].as_str().expect("account").to_owned())
            .collect()
    };
    let dry = evacuate_across("org", &["--dry-run", "--output", "json"]);
    // The whole organization: the three members (the management account holds no estate).
    assert_eq!(planned_accounts(&dry), members.iter().cloned().collect());
    let under_ou = [&dry[..], &["--ou", &ou]].concat();
    assert_eq!(planned_accounts(&under_ou), members[..2].iter().cloned().collect());
    let excluded = [&under_ou[..], &["--exclude-account", &members[0]]].concat();
    assert_eq!(planned_accounts(&excluded), BTreeSet::from([members[1].clone()]));
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_16_a_kill_mid_fan_out_then_recover_restores_every_account() {
    let moto = Moto::start();
    let proxy = proxy::Proxy::start(&moto.endpoint);
    let operator = sdk(&moto).await;
    let seeded = seed_members(&operator, &MEMBERS).await;
    let members = accounts_arg(&MEMBERS);
    // One account and one resource at a time: the calls of every run come in the same order.
    let evacuate = evacuate_across(&members, &["--yes", "--account-concurrency", "1", "--concurrency", "1"]);
    let recover = ["recover", "--yes"];
    // The second account's first subnet change: the first account is done, the others are not.
    let first = call_number(&proxy, &evacuate, "autoscaling:UpdateAutoScalingGroup");
    let calls = proxy.calls();
    let updates: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| *c == "autoscaling:UpdateAutoScalingGroup")
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(updates.len(), 6, "two groups in each of three accounts");
    assert_eq!(updates[0], first);
    let mid = updates[2];
    assert_eq!(azevac_at(&proxy.endpoint, &recover, &[]).code, 0);
    assert_as_seeded(&seeded).await;

    for when in [KillWhen::BeforeForward, KillWhen::AfterForward] {
        proxy.set(Faults {
            kill_at: Some((mid, when)),
            ..Faults::default()
        });
        assert_eq!(run_watched(&proxy, &evacuate), None, "killed at call {mid} ({when:?})");
        assert!(proxy.killed());
        proxy.set(Faults::default());
        let back = azevac_at(&proxy.endpoint, &recover, &[]);
        assert_eq!(back.code, 0, "{when:?}: {}\n{}", back.stdout, back.stderr);
        assert_as_seeded(&seeded).await;
        assert!(journal_items(&operator).await.is_empty(), "{when:?}");
        assert!(lock_items(&operator).await.is_empty(), "{when:?}");
    }
}

/// Every subnet an account's resources lack now, against the estate as seeded, is in the
/// `removed_subnets` of a journal record of that resource in that account: nothing is forgotten.
async fn assert_nothing_forgotten(operator: &SdkConfig, seeded: &[(String, SdkConfig, Snapshot)], when: &str) {
    let records = journal_items(operator).await;
    for (account, sdk, before) in seeded {
        let (groups, services, functions) = snapshot(sdk).await;
        let lost = before
            .0
            .iter()
            .map(|(name, subnets)| (name.clone(), subnets.clone(), groups[name].clone()))
            .chain(
                before
                    .1
                    .iter()
                    .map(|(name, s)| (name.clone(), s.0.clone(), services[name].0.clone())),
            )
            .chain(
                before
                    .2
                    .iter()
                    .map(|(name, s)| (name.clone(), s.0.clone(), functions[name].0.clone())),
            );
        for (name, was, now) in lost {
            for subnet in was.iter().filter(|s| !now.contains(s)) {
                let kept = records.iter().any(|r| {
                    attr_s(r, "resource").contains(account)
                        && attr_s(r, "resource_name") == name
                        && attr_list(r, "removed_subnets").contains(subnet)
                });
                assert!(kept, "{when}: {account} {name} lost {subnet} and no record has it");
            }
        }
    }
}

/// Two operators at once across accounts: the first `evacuate --accounts` is parked at each of its
/// journal transactions and subnet changes in turn, a second command runs to completion (a
/// `recover` of every account, or the same evacuation), then the first goes on. Whatever the
/// exit codes, nothing is forgotten at the pause or after, and one or two recovers put every
/// account back exactly with an empty table.
#[tokio::test(flavor = "multi_thread")]
async fn issue_16_two_operators_across_accounts_forget_nothing() {
    let moto = Moto::start();
    let proxy = proxy::Proxy::start(&moto.endpoint);
    let operator = sdk(&moto).await;
    let members = accounts_arg(&MEMBERS[..2]);
    // One account and one resource at a time, so that the parked call stops the whole run: with the
    // types side by side, the other types' lines would go on during the pause and the checks would
    // race them.
    let first = evacuate_across(&members, &["--yes", "--account-concurrency", "1", "--concurrency", "1"]);
    let seconds: [&[&str]; 2] = [&["recover", "--yes"], &first];
    let wait = std::time::Duration::from_secs(30);
    let mut held = 0;
    for second in seconds {
        for (label, nth) in [
            ("dynamodb:TransactWriteItems", 1),
            ("autoscaling:UpdateAutoScalingGroup", 1),
            ("dynamodb:TransactWriteItems", 2),
            ("autoscaling:UpdateAutoScalingGroup", 3),
            ("dynamodb:TransactWriteItems", 3),
        ] {
            let when = format!("{label} #{nth} parked, then {second:?}");
            moto.reset();
            let seeded = seed_members(&operator, &MEMBERS[..2]).await;
            proxy.set(Faults::default());
            proxy.hold(proxy::Hold {
                label: Some(label.into()),
                body_contains: String::new(),
                nth,
            });
            let mut child = command(&proxy.endpoint, &first, &[])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawn");
            assert!(
                proxy.wait_held(Some(&mut child), wait).is_some(),
                "{when}: never parked"
            );
            assert!(proxy.wait_quiet(wait), "{when}: never quiet");
            assert_nothing_forgotten(&operator, &seeded, &format!("{when}, at the pause")).await;
            // The second operator goes straight to moto, past the parked call.
            let other = azevac(&moto, second);
            assert!(other.code == 0 || other.code == 1, "{when}: {}", other.stderr);
            assert_nothing_forgotten(&operator, &seeded, &format!("{when}, after the second")).await;
            proxy.release();
            let status = child.wait().expect("wait");
            assert!(matches!(status.code(), Some(0 | 1)), "{when}: first exited {status:?}");
            assert_nothing_forgotten(&operator, &seeded, &format!("{when}, after both")).await;
            let mut back = azevac(&moto, &["recover", "--yes"]);
            if back.code == 1 {
                back = azevac(&moto, &["recover", "--yes"]);
            }
            assert_eq!(back.code, 0, "{when}: {}\n{}", back.stdout, back.stderr);
            assert_as_seeded(&seeded).await;
            assert!(table_items(&operator).await.is_empty(), "{when}: the table is empty");
            held += 1;
        }
    }
    println!("issue 16: {held} interleavings across accounts tried, {held} held");
}

/// The caller's own account is one account however its records were written: with the caller's
/// own credentials (no stamp) or through its role (`--accounts` naming it). Recover, with or
/// without `--accounts`, acts on both in one part; a recover of other accounts says it keeps them.
#[tokio::test(flavor = "multi_thread")]
async fn issue_16_the_callers_own_account_is_one_account_however_its_records_were_written() {
    let moto = Moto::start();
    let operator = sdk(&moto).await;
    const OWN: &str = "123456789012";
    estate::seed(&operator, &member_estate()).await;
    let before = snapshot(&operator).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    azevac(&moto, &["evacuate", "--az-id", "use1-az4", "--accounts", OWN, "--yes"]).expect_code(0);
    let records = journal_items(&operator).await;
    assert!(
        records.iter().any(|r| !r.contains_key("account_id")),
        "written with own credentials"
    );
    assert!(
        records.iter().any(|r| attr_s(r, "account_id") == OWN),
        "written through the role"
    );
    let status = azevac(&moto, &["status", "--accounts", OWN, "--output", "json"]).expect_code(0);
    assert_eq!(
        status.json()["records"].as_array().expect("records").len(),
        records.len(),
        "status of the own account shows both kinds"
    );
    let elsewhere = azevac(&moto, &["recover", "--accounts", MEMBERS[0], "--dry-run"]);
    assert!(
        elsewhere.stderr.contains(&format!(
            "of accounts not in --accounts are kept: {OWN} ({})",
            records.len()
        )),
        "{}",
        elsewhere.stderr
    );
    let back = azevac(&moto, &["recover", "--accounts", OWN, "--yes", "--output", "json"]).expect_code(0);
    assert_eq!(back.json()["summary"]["failed"], 0);
    // Membership only: a record knows the order of the subnets it saw, and web was journalled in two zones.
    assert_eq!(
        unordered(&snapshot(&operator).await),
        unordered(&before),
        "both zones' subnets are back"
    );
    assert!(table_items(&operator).await.is_empty());
}

/// Issue 31 case 5: a record whose `account_id` is not twelve digits (written by hand, or by a
/// faulty version) never becomes a role ARN: recover reports it once with what is wrong, assumes
/// no role, keeps it, puts the caller's own estate back, and exits 1. (Before: it assumed
/// `arn:aws:iam::12345678901x:role/azevac`.)
#[tokio::test(flavor = "multi_thread")]
async fn issue_31_a_record_with_a_malformed_account_id_assumes_no_role() {
    const BAD: &str = "12345678901x";
    let moto = Moto::start();
    let operator = sdk(&moto).await;
    estate::seed(&operator, &member_estate()).await;
    let before = snapshot(&operator).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let mut odd = journal_items(&operator)
        .await
        .into_iter()
        .find(|r| attr_s(r, "resource_name") == "web")
        .expect("web's record");
    let resource = format!("arn:aws:autoscaling:us-east-1:{BAD}:autoScalingGroup:x:autoScalingGroupName/web");
    odd.insert("resource".into(), V::S(resource.clone()));
    odd.insert("account_id".into(), V::S(BAD.into()));
    aws_sdk_dynamodb::Client::new(&operator)
        .put_item()
        .table_name(TABLE)
        .set_item(Some(odd))
        .send()
        .await
        .expect("PutItem");

    let proxy = proxy::Proxy::start(&moto.endpoint);
    let run = azevac_at(&proxy.endpoint, &["recover", "--yes", "--output", "json"], &[]).expect_code(1);
    assert!(
        !proxy.calls().iter().any(|c| c == "sts:AssumeRole"),
        "{:?}",
        proxy.calls()
    );
    let problems: Vec<String> = run.json()["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p.as_str().unwrap_or_default().to_owned())
        .collect();
    let named: Vec<&String> = problems.iter().filter(|p| p.contains(BAD)).collect();
    assert_eq!(named.len(), 1, "{problems:?}");
    assert!(named[0].contains("account_id"), "{}", named[0]);
    assert_eq!(snapshot(&operator).await, before, "the own estate is back");
    let left = journal_items(&operator).await;
    assert_eq!(left.len(), 1, "the odd record is kept");
    assert_eq!(attr_s(&left[0], "resource"), resource);
}

/// Issue 35: the whole organization, seen. `exposure`, `doctor` and `status` take `--accounts` as
/// the runs do: each account read through its role, one line per account first, and an account
/// whose role cannot be assumed one problem (exit 1) while the others are still reported.
#[tokio::test(flavor = "multi_thread")]
async fn issue_35_exposure_doctor_and_status_see_every_account() {
    let moto = Moto::start();
    let proxy = proxy::Proxy::start(&moto.endpoint);
    let operator = sdk(&moto).await;
    let members = &MEMBERS[..2];
    let seeded = seed_members(&operator, members).await;
    proxy.set(refuse_role_of(NO_ROLE));
    let mut all = members.to_vec();
    all.push(NO_ROLE);
    let everywhere = accounts_arg(&all);
    let everywhere = |args: &[&str]| azevac_at(&proxy.endpoint, &[args, &["--accounts", &everywhere]].concat(), &[]);

    // exposure: every member's findings, each with its account; the unreachable one a problem.
    let exposure = everywhere(&["exposure", "--az-id", ZONE, "--output", "json"]);
    assert_eq!(exposure.code, 1, "{}", exposure.stderr);
    let document = exposure.json();
    let findings = document["findings"].as_array().expect("findings");
    for account in members {
        let movable: BTreeSet<&str> = findings
            .iter()
            .filter(|f| f["account"] == *account && f["moved_by"].is_string())
            .filter_map(|f| f["name"].as_str())
            .collect();
        assert_eq!(
            movable,
            BTreeSet::from(["web", "api", "shop/cart", "thumbs"]),
            "{account}: {document:#}"
        );
    }
    let problems = document["problems"].to_string();
    assert!(
        problems.contains(&format!("account {NO_ROLE}: not read: cannot assume")),
        "{problems}"
    );
    let table = everywhere(&["exposure", "--az-id", ZONE]);
    for account in members {
        let summary = table.stdout.lines().find(|l| {
            l.starts_with(&format!("account {account}: ")) && l.ends_with(" findings, 4 movable still in the zone")
        });
        assert!(summary.is_some(), "{account}:\n{}", table.stdout);
    }
    // A zone that exists in no account is one line, exit 2.
    let members_only = accounts_arg(members);
    let nowhere = azevac_at(
        &proxy.endpoint,
        &["exposure", "--az-id", "use1-az99", "--accounts", &members_only],
        &[],
    )
    .expect_code(2);
    assert_eq!(nowhere.stderr.trim().lines().count(), 1, "{}", nowhere.stderr);
    // Findings in an account no one can reach: `--fail-if-exposed` still answers for the others.
    everywhere(&["exposure", "--az-id", ZONE, "--fail-if-exposed"]).expect_code(3);

    // doctor: each member's role and reads, named by account; the unreachable one a FAIL.
    let doctor = everywhere(&["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    let checks = ["", ": zones", ": subnets", ": asg", ": ecs", ": lambda"];
    says(
        &doctor.stdout,
        members
            .iter()
            .flat_map(|a| checks.map(|c| format!("\nOK    account {a}{c} ")))
            .chain([format!("\nFAIL  account {NO_ROLE} ")]),
    );

    // -o wide names each account's subnets, read through its role (the caller's account has none).
    let wide = azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--accounts",
            &members_only,
            "--dry-run",
            "-o",
            "wide",
        ],
        &[],
    )
    .expect_code(0);
    assert!(wide.stdout.contains(&format!("(prod-{ZONE})")), "{}", wide.stdout);

    // status: after an evacuation of the members, one line per account first, the asked-about
    // account with nothing evacuated too.
    azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--accounts",
            &accounts_arg(members),
            "--yes",
        ],
        &[],
    )
    .expect_code(0);
    assert_evacuated(&seeded).await;
    // The caller's own account among them (123456789012, moto's): named by its ID, never "(own)".
    let third = accounts_arg(&[members[0], members[1], MEMBERS[2], "123456789012"]);
    let status = azevac_at(&proxy.endpoint, &["status", "--accounts", &third], &[]).expect_code(0);
    says(
        &status.stdout,
        members
            .iter()
            .map(|a| format!("account {a}: 4 records (asg 2, ecs 1, lambda 1)"))
            .chain([format!("account {}: nothing evacuated", MEMBERS[2])]),
    );
    assert!(!status.stdout.contains("(own)"), "{}", status.stdout);
    assert!(
        status.stdout.starts_with(&format!("account {}: 4 records", members[0])),
        "the summary comes first: {}",
        status.stdout
    );
}

/// Every one of `expected` is in `text`.
fn says(text: &str, expected: impl IntoIterator<Item = String>) {
    for line in expected {
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }
}
