//! `--log-format json` (issue 19): every line azevac writes to stderr is one JSON object with an
//! RFC 3339 timestamp, and a real run's timeline reads run started → each line planned → each line
//! changed → run ended, all under the run's ID.

use crate::common;

use common::estate::{self, Spec};
use common::{azevac, azevac_at, Moto, ZONE};

fn estate() -> Spec {
    estate::groups_in_two_zones("10.72.0.0/16", &["web", "api"])
}

/// Every stderr line parsed; panics on one that is not a JSON object with an RFC 3339 timestamp.
fn events(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .map(|line| {
            let event: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\n{stderr}"));
            let timestamp = event["timestamp"]
                .as_str()
                .unwrap_or_else(|| panic!("no timestamp: {line}"));
            humantime::parse_rfc3339(timestamp).unwrap_or_else(|e| panic!("not RFC 3339 ({e}): {line}"));
            event
        })
        .collect()
}

/// The timeline's events (not the log lines around them), by name.
fn timeline(events: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    events
        .iter()
        .filter(|e| {
            e["event"]
                .as_str()
                .is_some_and(|n| n.starts_with("run_") || n.starts_with("line_"))
        })
        .collect()
}

fn check_run(run: &common::Run, command: &str, line_event: &str, lines: usize) {
    let all = events(&run.stderr);
    let timeline = timeline(&all);
    let names: Vec<&str> = timeline
        .iter()
        .map(|e| e["event"].as_str().unwrap_or_default())
        .collect();
    let mut expected = vec!["run_started"];
    expected.extend(std::iter::repeat_n("line_planned", lines));
    expected.extend(std::iter::repeat_n(line_event, lines));
    expected.push("run_ended");
    assert_eq!(names, expected, "{}", run.stderr);
    let run_id = timeline[0]["run_id"].as_str().expect("run_id");
    assert!(timeline.iter().all(|e| e["run_id"] == run_id), "{}", run.stderr);
    assert_eq!(timeline[0]["command"], command);
    assert_eq!(timeline[0]["az_id"], ZONE);
    assert_eq!(timeline[0]["planned"], lines);
    assert!(timeline[0]["caller"]
        .as_str()
        .is_some_and(|c| c.starts_with("arn:aws:sts::")));
    // The run-ID line for people is a `message` event with the same ID.
    assert!(
        all.iter().any(|e| e["event"] == "message"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(&format!("azevac: run {run_id} as ")))),
        "{}",
        run.stderr
    );
    let mut names: Vec<&str> = Vec::new();
    for (event, status) in [(&timeline[1], "planned"), (&timeline[1 + lines], "done")] {
        assert_eq!(event["type"], "asg");
        assert_eq!(event["az_id"], ZONE);
        assert_eq!(event["status"], status);
        assert!(event["resource"]
            .as_str()
            .is_some_and(|r| r.starts_with("arn:aws:autoscaling:")));
        names.push(event["name"].as_str().expect("name"));
    }
    let end = timeline.last().expect("run_ended");
    assert_eq!(end["done"], lines);
    assert_eq!(end["failed"], 0);
    assert!(end["wall_ms"].is_u64());
}

#[tokio::test]
async fn a_run_logs_its_timeline_as_json_lines() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate()).await;
    let evacuated = azevac(&moto, &["--log-format", "json", "evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    check_run(&evacuated, "evacuate", "line_changed", 2);
    // The same from the environment, for recover; stdout still carries the result table.
    let recovered = azevac_at(
        &moto.endpoint,
        &["recover", "--az-id", ZONE, "--yes"],
        &[("AZEVAC_LOG_FORMAT", Some("json"))],
    )
    .expect_code(0);
    check_run(&recovered, "recover", "line_changed", 2);
    assert!(
        recovered.stdout.contains("2 done, 0 skipped, 0 failed"),
        "{}",
        recovered.stdout
    );
    // A dry run carries nothing out: no timeline, and what it prints on stderr is still JSON.
    let dry = azevac(
        &moto,
        &["evacuate", "--az-id", ZONE, "--dry-run", "--log-format", "json"],
    )
    .expect_code(0);
    assert!(timeline(&events(&dry.stderr)).is_empty(), "{}", dry.stderr);
}
