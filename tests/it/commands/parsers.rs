//! Every parser of user input, fed anything (issue 13): never a panic, always either a value within
//! its documented bounds or an error that says what is wrong (issue 32: each property here can be
//! false). Property tests (proptest) over the flag parsers, the AZ ID resolution, the request
//! validation and plan documents (which round-trip when they parse); and a corpus of malformed
//! command lines run through the real binary, none of which may end in a panic (exit 101).

use crate::common;

use azevac::app::health::{Health, State};
use azevac::cli::{Cli, Command, Shift};
use azevac::model::topology::{Zone, Zones};
use azevac::model::{Fleet, Plan, Request};
use azevac::plugins::zonal_shift::parse_expires_in;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

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
        "health",
        "--health-file",
        "--stall-after",
        "90s",
        "2d",
    ];
    prop_oneof![
        3 => proptest::sample::select(words.to_vec()).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// A command line that mostly parses: a command that exists, then flags it takes, each with a
/// value at or just past its bounds (a soup of words rarely gets past the first flag, so the
/// bounds of what parses would go unchecked).
/// A flag and values to try with it.
type Flag = (&'static str, &'static [&'static str]);

fn command_line() -> impl Strategy<Value = Vec<String>> {
    let global: &[Flag] = &[
        ("--concurrency", &["0", "1", "256", "257"]),
        ("--account-concurrency", &["0", "1", "256", "257"]),
        ("--lease", &["1s", "2s", "1h", "61m"]),
        ("--attempt-timeout", &["0s", "1s", "1h", "61m"]),
        ("--operation-timeout", &["0s", "1s", "1h", "61m"]),
        (
            "--max-rate",
            &["ec2=0", "ecs=unlimited", "lambda=10000", "autoscaling=10001"],
        ),
    ];
    let evacuate: &[Flag] = &[
        ("--wait-timeout", &["15m", "7d", "169h"]),
        ("--drain-timeout", &["15m", "7d", "169h"]),
        ("--expires-in", &["1m", "72h", "73h", "4320m", "4321m", "0h"]),
        ("--pace", &["0", "1"]),
        ("--tag", &["team=a", "=x"]),
        ("--type", &["asg", "nat,db", "nope"]),
    ];
    let commands: Vec<(&[&str], Vec<Flag>)> = vec![
        (&["init"], global.to_vec()),
        (&["status"], global.to_vec()),
        (&["recover"], [global, &evacuate[..1], &evacuate[5..]].concat()),
        (&["evacuate", "--az-id", "use1-az2"], [global, evacuate].concat()),
        (
            &["shift", "start", "--az-id", "use1-az2"],
            [global, &evacuate[2..3]].concat(),
        ),
    ];
    proptest::sample::select(commands).prop_flat_map(|(command, flags)| {
        let flag = proptest::sample::select(flags).prop_flat_map(|(flag, values)| {
            proptest::sample::select(values).prop_map(move |value| [flag.to_owned(), value.to_owned()])
        });
        proptest::collection::vec(flag, 0..4).prop_map(move |flags| {
            command
                .iter()
                .map(|w| (*w).to_owned())
                .chain(flags.into_iter().flatten())
                .collect()
        })
    })
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
            match azevac::aws::pacing::parse_max_rate(&text, &known) {
                Ok((name, Some(r))) => prop_assert!(
                    known.contains(&name.as_str()) && r.per_second >= 0.1 && r.per_second <= 10_000.0 && r.burst >= 1,
                    "{text:?} gave {name} {r:?}"
                ),
                Ok((name, None)) => prop_assert!(known.contains(&name.as_str())),
                Err(e) => prop_assert!(!e.to_string().contains('\n') && e.to_string().contains("SERVICE=N"), "{e}"),
            }
        }
    }

    /// A command line either parses into values within the flags' documented bounds (and a request
    /// the engine accepts as it is, unless it fans out across accounts), or is refused with an error
    /// that starts `error:`, names the argument at fault, and carries our parser's one-line reason.
    #[test]
    fn command_lines_parse_or_say_why(words in prop_oneof![proptest::collection::vec(word(), 0..8), command_line()]) {
        let args = std::iter::once("azevac".to_owned()).chain(words);
        match azevac::cli::parse_from(args) {
            Ok(cli) => within_bounds(&cli)?,
            Err(e) => says_why(&e)?,
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

    /// A request (as a saved plan carries it) validates exactly when each of its fields is allowed,
    /// and otherwise is refused in one line that names a field at fault or quotes its value.
    #[test]
    fn requests_validate_or_say_why(
        types in proptest::collection::vec(
            prop_oneof![proptest::sample::select(azevac::plugins::types()).prop_map(str::to_owned), word()],
            0..3,
        ),
        tags in proptest::collection::vec(prop_oneof!["[a-z]{1,4}=[a-z]{0,4}", any::<String>()], 0..3),
        pace in proptest::option::of(prop_oneof![Just(0u32), 1..9u32, any::<u32>()]),
        seconds in proptest::option::of(prop_oneof![Just(LONGEST_WAIT), Just(LONGEST_WAIT + 1), 0..999u64, any::<u64>()]),
        which in 0..3usize,
        expires_in in proptest::option::of(word()),
        reason in proptest::option::of(prop_oneof![0..9usize, 995..1005usize]),
    ) {
        let mut fields = serde_json::Map::new();
        let mut bad: Vec<(Vec<String>, String)> = Vec::new(); // (what may name it, why it is bad)
        let known = azevac::plugins::types();
        for t in types.iter().filter(|t| !known.contains(&t.as_str())) {
            // An unknown type is quoted, with the types there are.
            bad.push((vec![format!("{t:?}")], format!("unknown type {t:?}")));
        }
        for t in tags.iter().filter(|t| !t.contains('=') || t.starts_with('=')) {
            bad.push((vec![format!("{t:?}")], format!("tag {t:?}")));
        }
        if pace == Some(0) {
            bad.push((vec!["pace".into()], "pace 0".into()));
        }
        let (key, flag) = [
            ("drain_timeout_seconds", "--drain-timeout"),
            ("pace_timeout_seconds", "--wait-timeout"),
            ("wait_timeout_seconds", "--wait-timeout"),
        ][which];
        if seconds.is_some_and(|s| s > LONGEST_WAIT) {
            bad.push((vec![key.into(), flag.into()], format!("{key} {seconds:?}")));
        }
        if let Some(e) = expires_in.as_ref().filter(|e| parse_expires_in(e).is_err()) {
            bad.push((vec![format!("{e:?}")], format!("expires_in {e:?}")));
        }
        if reason.is_some_and(|n| n > azevac::engine::LONGEST_TEXT) {
            bad.push((vec!["--reason".into()], "reason too long".into()));
        }
        fields.insert("types".into(), json!(types));
        fields.insert("tags".into(), json!(tags));
        for (name, value) in [
            ("pace", pace.map(Value::from)),
            (key, seconds.map(Value::from)),
            ("expires_in", expires_in.map(Value::from)),
            ("reason", reason.map(|n| Value::from("x".repeat(n)))),
        ] {
            if let Some(value) = value {
                fields.insert(name.into(), value);
            }
        }
        let request: Request = serde_json::from_value(Value::Object(fields)).expect("a request");
        round_trips(&request)?;
        match azevac::app::validate(&request) {
            Ok(()) => prop_assert!(bad.is_empty(), "accepted, though {bad:?}"),
            Err(e) => {
                let text = e.to_string();
                prop_assert!(!bad.is_empty(), "refused a good request: {text}");
                prop_assert!(!text.is_empty() && !text.contains('\n'), "{text:?}");
                prop_assert!(
                    bad.iter().any(|(names, _)| names.iter().any(|n| text.contains(n.as_str()))),
                    "{text:?} names none of {bad:?}"
                );
                if text.starts_with("unknown type") {
                    prop_assert!(known.iter().all(|t| text.contains(t)), "{text:?} lists the types");
                }
            }
        }
    }

    #[test]
    fn issue_16_account_flags_parse_or_say_why_in_one_line(
        list in prop_oneof!["[0-9]{10,13}(,[0-9 ]{0,13}){0,3}", Just("org".to_owned()), any::<String>()],
        ou in prop_oneof!["(ou|r)-[a-z0-9]{0,34}(-[a-z0-9]{0,34})?", any::<String>()],
        template in prop_oneof![Just("arn:aws:iam::{account}:role/x".to_owned()), any::<String>()],
    ) {
        match azevac::app::accounts::parse_accounts(&list) {
            Ok(accounts) => prop_assert!(
                accounts == ["org"] || accounts.iter().all(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit())),
                "{list:?} gave {accounts:?}"
            ),
            Err(e) => prop_assert!(!e.contains('\n') && e.contains("twelve"), "{e}"),
        }
        if let Err(e) = azevac::app::accounts::parse_ou(&ou) {
            prop_assert!(!e.contains('\n') && e.contains("ou-"), "{e}");
        }
        let fleet = azevac::model::Fleet {
            accounts: vec!["111111111111".into()],
            role_arn_template: Some(template.clone()),
            ..Default::default()
        };
        match azevac::app::accounts::validate(&fleet, &[]) {
            Ok(()) => {
                let arn = azevac::app::accounts::role_arn(&fleet, "111111111111", "us-east-1");
                prop_assert!(arn.starts_with("arn:") && !arn.contains("{account}"), "{arn}");
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }

    /// A plan document, whole, cut, spliced or foreign: it parses into a plan that round-trips, or
    /// is refused in one line with the line and column where it went wrong. The line is the parser's
    /// message as `apply` shows it (escaped: the parser quotes what it could not read, line breaks
    /// and all).
    #[test]
    fn plan_documents_parse_or_say_why(
        cut in any::<proptest::sample::Index>(),
        length in 0..12usize,
        splice in prop_oneof![Just(String::new()), "[\\[\\]{}\",:0-9a-z-]{1,6}", any::<String>()],
        whole in any::<bool>(),
        foreign in any::<String>(),
    ) {
        let sample = sample_plan().to_string();
        let chars: Vec<char> = sample.chars().collect();
        let at = cut.index(chars.len());
        let end = (at + length).min(chars.len());
        let spliced: String = chars[..at].iter().chain(splice.chars().collect::<Vec<_>>().iter()).chain(&chars[end..]).collect();
        for text in [if whole { sample.clone() } else { spliced }, foreign] {
            match serde_json::from_str::<Plan>(&text) {
                Ok(plan) => round_trips_plan(&plan)?,
                Err(e) => {
                    let message = azevac::model::text::clean(&e.to_string());
                    prop_assert!(!message.contains('\n'), "{message:?}");
                    let lines: Vec<&str> = text.split('\n').collect();
                    prop_assert!(
                        (1..=lines.len()).contains(&e.line()) && e.column() <= lines[e.line() - 1].len() + 1,
                        "{message:?} is not a place in {text:?}"
                    );
                    prop_assert!(message.ends_with(&format!(" at line {} column {}", e.line(), e.column())), "{message:?}");
                }
            }
        }
    }
}

/// The longest wait a request may ask for (7 days), as documented for the flags.
const LONGEST_WAIT: u64 = 7 * 24 * 3600;

/// A request serialises to a document that parses back to the same request.
fn round_trips(request: &Request) -> Result<(), TestCaseError> {
    let text = serde_json::to_string(request).expect("serialise");
    let back: Request = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
    prop_assert_eq!(&back, request);
    Ok(())
}

/// A parsed plan serialises to a document that parses back to the same document.
fn round_trips_plan(plan: &Plan) -> Result<(), TestCaseError> {
    let once = serde_json::to_value(plan).expect("serialise");
    let again: Plan = serde_json::from_value(once.clone()).map_err(|e| TestCaseError::fail(format!("{e}: {once}")))?;
    prop_assert_eq!(serde_json::to_value(&again).expect("serialise"), once);
    Ok(())
}

/// A health file as `azevac watch` writes it, with any text in it.
fn health_file() -> impl Strategy<Value = Health> {
    let state = proptest::sample::select(State::ALL.to_vec());
    // RFC 3339 reaches the year 9999.
    let at = (0u64..253_402_300_799).prop_map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
    (
        state,
        at.clone(),
        at,
        any::<String>(),
        any::<String>(),
        any::<u32>(),
        any::<String>(),
        any::<u64>(),
    )
        .prop_map(
            |(state, since, beat_at, detail, run_id, pid, region, stall_after_seconds)| Health {
                state,
                since,
                beat_at,
                detail,
                run_id,
                pid,
                region,
                stall_after_seconds,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Whatever a watcher writes reads back the same.
    #[test]
    fn health_files_round_trip(health in health_file()) {
        prop_assert_eq!(Health::parse(&health.to_text()), Ok(health));
    }

    /// Any text is a health file or one line that says it is not one; and a verdict on what parsed
    /// is one line with nothing in it that could rewrite the screen.
    #[test]
    fn health_files_parse_or_say_why_and_the_verdict_is_one_clean_line(
        text in prop_oneof![
            any::<String>(),
            health_file().prop_map(|h| h.to_text()),
            // A real file, cut or with one byte changed: what a torn write or a stray edit leaves.
            (health_file(), any::<usize>(), any::<char>()).prop_map(|(h, at, c)| {
                let mut text: Vec<char> = h.to_text().chars().collect();
                let at = at % text.len();
                text[at] = c;
                text.into_iter().collect()
            }),
            (health_file(), any::<usize>()).prop_map(|(h, at)| h.to_text().chars().take(at % 200).collect()),
        ],
        after in 0u64..100_000,
        stall in 1u64..86_400,
    ) {
        match Health::parse(&text) {
            Ok(health) => {
                let now = health.beat_at + std::time::Duration::from_secs(after);
                let (passes, line) = health.judge(now, std::time::Duration::from_secs(stall));
                prop_assert!(!line.chars().any(char::is_control), "{line:?}");
                prop_assert!(line.starts_with("azevac: health: "), "{line}");
                prop_assert_eq!(passes, health.state.passes() && after <= stall, "{}", line);
                prop_assert!(passes || line.contains(": ") && !line.ends_with(": "), "what to do: {}", line);
            }
            Err(e) => prop_assert!(
                !e.contains('\n') && e.starts_with("not a health file of azevac watch"),
                "{e}"
            ),
        }
    }
}

/// The bounds each flag documents, on a command line clap accepted; and its request round-trips
/// and, within this account, passes the engine's own check as it is.
fn within_bounds(cli: &Cli) -> Result<(), TestCaseError> {
    let g = &cli.global;
    prop_assert!((1..=256).contains(&g.concurrency) && (1..=256).contains(&g.account_concurrency));
    let seconds = |from: u64, to: u64| std::time::Duration::from_secs(from)..=std::time::Duration::from_secs(to);
    prop_assert!(seconds(2, 3600).contains(&g.lease), "--lease {:?}", g.lease);
    prop_assert!(seconds(1, 3600).contains(&g.attempt_timeout) && seconds(1, 3600).contains(&g.operation_timeout));
    if let Command::Health(args) = &cli.command {
        prop_assert!(
            args.stall_after.is_none_or(|s| seconds(1, 86_400).contains(&s)),
            "{args:?}"
        );
    }
    let request = match &cli.command {
        Command::Evacuate(args) => args.request(),
        Command::Recover(args) => args.request(),
        Command::Shift(Shift::Start(args)) => args.request(),
        _ => return Ok(()),
    };
    round_trips(&request)?;
    // Checked through the document, whose keys stay what they are wherever a kind's options live.
    let document = serde_json::to_value(&request).expect("serialise");
    prop_assert!(
        document.get("pace").is_none_or(|p| p.as_u64().is_some_and(|p| p >= 1)),
        "{document}"
    );
    for key in ["drain_timeout_seconds", "pace_timeout_seconds", "wait_timeout_seconds"] {
        prop_assert!(
            document
                .get(key)
                .is_none_or(|s| s.as_u64().is_some_and(|s| s <= LONGEST_WAIT)),
            "{document}"
        );
    }
    if let Some(expires_in) = document.get("expires_in") {
        prop_assert!(
            parse_expires_in(expires_in.as_str().unwrap_or_default()).is_ok(),
            "{document}"
        );
    }
    // Across accounts the rules span flags (`--ou` needs `--accounts org`); within one, none do.
    if request.fleet == Fleet::default() {
        prop_assert!(
            azevac::app::validate(&request).is_ok(),
            "{:?}",
            azevac::app::validate(&request)
        );
    }
    Ok(())
}

/// A refused command line: `error:` first, the argument at fault named on that line, and the reason
/// our own parser gave (when one did) in one line, shown whole.
fn says_why(e: &clap::Error) -> Result<(), TestCaseError> {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        prop_assert_eq!(e.exit_code(), 0);
        return Ok(());
    }
    prop_assert_eq!(e.exit_code(), 2);
    let text = e.render().to_string();
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        prop_assert!(text.contains("Usage:"), "{text}");
        return Ok(());
    }
    let first = text.lines().next().unwrap_or_default();
    prop_assert!(first.starts_with("error: "), "{text}");
    for kind in [ContextKind::InvalidArg, ContextKind::InvalidSubcommand] {
        match e.get(kind) {
            // A name typed with a line break in it is shown up to the break.
            Some(ContextValue::String(name)) => {
                let shown = name.lines().next().unwrap_or_default();
                prop_assert!(first.contains(shown), "{first:?} does not name {name:?}");
            }
            Some(ContextValue::Strings(names)) => {
                for name in names {
                    prop_assert!(text.contains(name.as_str()), "{text:?} does not name {name:?}");
                }
            }
            _ => {}
        }
    }
    if let Some(reason) = std::error::Error::source(e) {
        let reason = reason.to_string();
        prop_assert!(!reason.is_empty() && !reason.contains('\n'), "{reason:?}");
        prop_assert!(text.contains(&reason), "{text:?} does not show {reason:?}");
    }
    Ok(())
}

/// A plan document as `--dry-run --output json` writes it.
fn sample_plan() -> Value {
    json!({
        "command": "evacuate", "region": "us-east-1", "az_id": "use1-az2",
        "request": { "types": ["asg"], "pace": 2, "pace_timeout_seconds": 900, "expires_in": "3h" },
        "items": [{ "type": "asg", "resource": "arn:web", "name": "web", "az_id": "use1-az2",
                    "current_subnets": ["a", "b"], "removed_subnets": ["b"], "resulting_subnets": ["a"],
                    "status": "planned" }],
    })
}

/// A real plan document with one field replaced by a value of another shape, as `apply` reads it:
/// either it parses (and round-trips), and its request validates or is refused in one line naming
/// that field or quoting its value; or the document is refused in one line whose position points
/// at the value replaced.
#[test]
fn mutated_plans_parse_and_validate_or_say_where() {
    let plan = sample_plan();
    let values = [
        json!(null),
        json!(0),
        json!(u64::MAX),
        json!(-1),
        json!("3é"),
        json!([]),
        json!({}),
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
    let (mut parsed, mut refused, mut invalid) = (0, 0, 0);
    for path in paths {
        for value in &values {
            let with = |value: &Value| {
                let mut doc = plan.clone();
                let (last, parents) = path.split_last().expect("path");
                let mut at = &mut doc;
                for key in parents {
                    at = &mut at[*key];
                }
                at[*last] = value.clone();
                doc.to_string()
            };
            let text = with(value);
            // Where the value sits in the one-line document (the prefix is the same whatever it is); serde_json's
            // column counts the bytes read on the line, so it lies between the value's first byte and its end.
            let start = with(&json!("\u{1}")).find("\"\\u0001\"").expect("marker");
            let end = start + value.to_string().len();
            let case = format!("{path:?} = {value}");
            match serde_json::from_str::<Plan>(&text) {
                Ok(plan) => {
                    parsed += 1;
                    round_trips_plan(&plan).unwrap_or_else(|e| panic!("{case}: {e}"));
                    if let Err(e) = azevac::app::validate(&plan.request) {
                        invalid += 1;
                        let message = e.to_string();
                        let last = path.last().expect("path");
                        let quoted = value
                            .as_str()
                            .map(|s| format!("{s:?}"))
                            .unwrap_or_else(|| value.to_string());
                        assert!(!message.contains('\n'), "{case}: {message:?}");
                        assert!(
                            message.contains(last) || message.contains(&quoted),
                            "{case}: {message:?} names neither {last} nor {quoted}"
                        );
                    }
                }
                Err(e) => {
                    refused += 1;
                    let message = e.to_string();
                    assert!(!message.contains('\n'), "{case}: {message:?}");
                    assert!(
                        e.line() == 1 && (start..=end).contains(&e.column()),
                        "{case}: {message:?} does not point at {start}..{end} of {text}"
                    );
                }
            }
        }
    }
    // The mutations reach each outcome (a change of the sample that loses one fails here).
    assert!(
        parsed > 0 && refused > 0 && invalid > 0,
        "{parsed} parsed, {refused} refused, {invalid} invalid"
    );
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
