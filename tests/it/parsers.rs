//! Every parser of user input, fed anything (issue 13): never a panic, always either a value or an
//! error line. Property tests (proptest) over the flag parsers, the AZ ID resolution, the request
//! validation and plan documents; and a corpus of malformed command lines run through the real
//! binary, none of which may end in a panic (exit 101).

use crate::common;

use azevac::model::{Plan, Request};
use azevac::plugins::zonal_shift::parse_expires_in;
use azevac::topology::{Zone, Zones};
use proptest::prelude::*;

/// Words a command line is made of: subcommands, flags, and values that are nearly right.
fn word() -> impl Strategy<Value = String> {
    let words = [
        "evacuate",
        "recover",
        "apply",
        "status",
        "init",
        "shift",
        "start",
        "list",
        "cancel",
        "--az-id",
        "use1-az2",
        "us-east-1c",
        "--type",
        "asg",
        "eks",
        "--tag",
        "team=a",
        "=x",
        "--expires-in",
        "3h",
        "73h",
        "0m",
        "3é",
        "--wait-timeout",
        "500000000000y",
        "15m",
        "--drain-timeout",
        "--pace",
        "0",
        "1",
        "--lease",
        "1s",
        "2m",
        "--concurrency",
        "0",
        "257",
        "--k8s-mode",
        "drain",
        "--dry-run",
        "--yes",
        "--output",
        "json",
        "--zonal-shift",
        "--name-prefix",
        "",
        "-",
        "--",
        "--cluster",
        "--kube-context",
        "--reason",
        "--max-rate",
        "ecs=10",
        "lambda=unlimited",
        "ec2=0",
        "s3=5",
        "doctor",
        "--accounts",
        "org",
        "111111111111,222222222222",
        "11111111111",
        "--ou",
        "ou-ab12-cdef3456",
        "--exclude-account",
        "--role-name",
        "--role-arn-template",
        "arn:aws:iam::{account}:role/x",
        "--external-id",
        "--account-concurrency",
    ];
    prop_oneof![
        3 => proptest::sample::select(words.to_vec()).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn expires_in_never_panics(text in any::<String>()) {
        if parse_expires_in(&text).is_ok() {
            prop_assert!(text.ends_with('m') || text.ends_with('h'), "{text:?}");
        }
    }

    #[test]
    fn max_rates_parse_or_say_why_in_one_line(
        service in prop_oneof![proptest::sample::select(azevac::plugins::services()).prop_map(str::to_owned), "[a-zA-Z0-9-]{0,20}"],
        rate in prop_oneof!["-?[0-9]{0,6}(\\.[0-9]{0,4})?", Just("unlimited".to_owned()), any::<String>()],
        raw in any::<String>(),
    ) {
        let known = azevac::plugins::services();
        for text in [format!("{service}={rate}"), raw] {
            match azevac::pacing::parse_max_rate(&text, &known) {
                Ok((name, Some(r))) => prop_assert!(
                    known.contains(&name.as_str()) && r.per_second >= 0.1 && r.per_second <= 10_000.0 && r.burst >= 1,
                    "{text:?} gave {name} {r:?}"
                ),
                Ok((name, None)) => prop_assert!(known.contains(&name.as_str())),
                Err(e) => prop_assert!(!e.to_string().contains('\n') && e.to_string().contains("SERVICE=N"), "{e}"),
            }
        }
    }

    #[test]
    fn command_lines_parse_or_say_why(words in proptest::collection::vec(word(), 0..8)) {
        let args = std::iter::once("azevac".to_owned()).chain(words);
        if let Err(e) = azevac::cli::parse_from(args) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn az_ids_resolve_or_list_the_valid_ones(text in any::<String>()) {
        let zones = Zones::new(
            "us-east-1",
            vec![Zone { id: "use1-az2".into(), name: "us-east-1c".into() }],
        );
        if let Err(e) = zones.resolve(&text) {
            prop_assert!(e.to_string().contains("use1-az2"), "{e}");
        }
    }

    #[test]
    fn requests_validate_or_say_why(
        types in proptest::collection::vec(word(), 0..3),
        tags in proptest::collection::vec(any::<String>(), 0..3),
        pace in proptest::option::of(any::<u32>()),
        seconds in proptest::option::of(any::<u64>()),
        expires_in in proptest::option::of(word()),
    ) {
        let request: Request = serde_json::from_value(serde_json::json!({
            "types": types,
            "tags": tags,
            "pace": pace,
            "drain_timeout_seconds": seconds,
            "pace_timeout_seconds": seconds,
            "expires_in": expires_in,
        }))
        .expect("a request document");
        if let Err(e) = azevac::engine::validate(&request) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn issue_16_account_flags_parse_or_say_why_in_one_line(
        list in prop_oneof!["[0-9]{10,13}(,[0-9 ]{0,13}){0,3}", Just("org".to_owned()), any::<String>()],
        ou in prop_oneof!["(ou|r)-[a-z0-9]{0,34}(-[a-z0-9]{0,34})?", any::<String>()],
        template in prop_oneof![Just("arn:aws:iam::{account}:role/x".to_owned()), any::<String>()],
    ) {
        match azevac::accounts::parse_accounts(&list) {
            Ok(accounts) => prop_assert!(
                accounts == ["org"] || accounts.iter().all(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit())),
                "{list:?} gave {accounts:?}"
            ),
            Err(e) => prop_assert!(!e.contains('\n') && e.contains("twelve"), "{e}"),
        }
        if let Err(e) = azevac::accounts::parse_ou(&ou) {
            prop_assert!(!e.contains('\n') && e.contains("ou-"), "{e}");
        }
        let fleet = azevac::model::Fleet {
            accounts: vec!["111111111111".into()],
            role_arn_template: Some(template.clone()),
            ..Default::default()
        };
        match azevac::accounts::validate(&fleet, &[]) {
            Ok(()) => {
                let arn = azevac::accounts::role_arn(&fleet, "111111111111", "us-east-1");
                prop_assert!(arn.starts_with("arn:") && !arn.contains("{account}"), "{arn}");
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }

    #[test]
    fn plan_documents_parse_or_say_why(text in any::<String>()) {
        let _ = serde_json::from_str::<Plan>(&text);
    }
}

/// A real plan document with one field replaced by a value of another shape: parse, then validate
/// its request, and neither may panic.
#[test]
fn mutated_plans_never_panic() {
    let plan = serde_json::json!({
        "command": "evacuate", "region": "us-east-1", "az_id": "use1-az2",
        "request": { "types": ["asg"], "pace": 2, "pace_timeout_seconds": 900, "expires_in": "3h" },
        "items": [{ "type": "asg", "resource": "arn:web", "name": "web", "az_id": "use1-az2",
                    "current_subnets": ["a", "b"], "removed_subnets": ["b"], "resulting_subnets": ["a"],
                    "status": "planned" }],
    });
    let values = [
        serde_json::json!(null),
        serde_json::json!(0),
        serde_json::json!(u64::MAX),
        serde_json::json!(-1),
        serde_json::json!("3é"),
        serde_json::json!([]),
        serde_json::json!({}),
    ];
    let paths: [&[&str]; 8] = [
        &["command"],
        &["az_id"],
        &["request", "types"],
        &["request", "pace"],
        &["request", "pace_timeout_seconds"],
        &["request", "expires_in"],
        &["items"],
        &["request"],
    ];
    for path in paths {
        for value in &values {
            let mut doc = plan.clone();
            let (last, parents) = path.split_last().expect("path");
            let mut at = &mut doc;
            for key in parents {
                at = &mut at[*key];
            }
            at[*last] = value.clone();
            if let Ok(plan) = serde_json::from_value::<Plan>(doc) {
                let _ = azevac::engine::validate(&plan.request);
            }
        }
    }
}

/// Malformed command lines through the real binary: a clear error and exit 2 (or a usage error),
/// never a panic. Nothing listens at the endpoint, so a line that parses fails fast at the network.
#[test]
fn no_command_line_ends_in_a_panic() {
    let corpus: &[&[&str]] = &[
        &[
            "evacuate",
            "--az-id",
            "use1-az2",
            "--zonal-shift",
            "--expires-in",
            "3é",
            "--dry-run",
        ],
        &[
            "evacuate",
            "--az-id",
            "use1-az2",
            "--wait-timeout",
            "500000000000y",
            "--dry-run",
        ],
        &[
            "evacuate",
            "--az-id",
            "use1-az2",
            "--drain-timeout",
            "99999999999999999999s",
            "--dry-run",
        ],
        &["evacuate", "--az-id", "use1-az2", "--pace", "0", "--dry-run"],
        &["evacuate", "--az-id", "use1-az2", "--lease", "0s", "--dry-run"],
        &["evacuate", "--az-id", "use1-az2", "--tag", "=", "--dry-run"],
        &["evacuate", "--az-id", "", "--dry-run"],
        &["evacuate", "--az-id", "é\u{1b}[2J", "--dry-run"],
        &["recover", "--type", "nope"],
        &["apply", "/nonexistent/plan.json", "--yes"],
        &["apply", "-"],
        &["shift", "start", "--az-id", "use1-az2", "--expires-in", "h"],
        &["status", "--az-id", "\u{7f}\u{8}"],
        &["--concurrency", "0", "status"],
        &["evacuate"],
        &[],
    ];
    for args in corpus {
        let run = common::azevac_at("http://127.0.0.1:9", args, &[("AWS_MAX_ATTEMPTS", Some("1"))]);
        assert_ne!(run.code, 101, "{args:?} panicked:\n{}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}:\n{}", run.stderr);
        assert!(
            run.code == 2 || run.code == 1,
            "{args:?} exited {}:\n{}",
            run.code,
            run.stderr
        );
    }
}
