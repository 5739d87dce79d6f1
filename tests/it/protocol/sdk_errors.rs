//! Issue 50, errors an operator can read: an answer the SDK cannot parse (a gateway's HTML page in
//! place of AWS's answer, which the emulator never sends) is one line with the operation, the HTTP
//! status and what the body says, in the line's reason, in the run's problems and on stderr;
//! never the SDK's debug structures.

use crate::common;

use common::estate::{self, Spec};
use common::proxy::{FailRule, Fault, Faults, Proxy};
use common::*;

/// What no operator should read: the SDK's structures, or its words for an error it did not parse.
fn assert_readable(text: &str) {
    for structure in [
        "Error {",
        "SdkBody",
        "Response {",
        "ServiceError",
        "unhandled error",
        "<html>",
    ] {
        assert!(!text.contains(structure), "{structure:?} in:\n{text}");
    }
}

fn fail(label: &str) -> Faults {
    Faults {
        rules: vec![FailRule {
            label: label.into(),
            body_contains: String::new(),
            fault: Fault::BadGatewayPage,
        }],
        ..Faults::default()
    }
}

/// The SDK retries a 502 (eight attempts by default, with backoff): two are enough to show it.
const FEW_TRIES: [(&str, Option<&str>); 1] = [("AWS_MAX_ATTEMPTS", Some("2"))];

fn estate() -> Spec {
    serde_json::from_value(serde_json::json!({
        "vpcs": [{"name": "prod", "cidr": "10.61.0.0/16", "zones": ["use1-az1", ZONE]}],
        "ecs_services": [{"cluster": "prod", "name": "web", "vpc": "prod", "zones": ["use1-az1", ZONE]}]
    }))
    .expect("spec")
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_50_a_gateways_html_page_is_one_readable_line() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate()).await;
    let before = live_services(&sdk).await;

    // The service's update is answered by a gateway's page: its line fails, saying so in one line.
    proxy.set(fail("ecs:UpdateService"));
    let run = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--yes", "--output", "json"],
        &FEW_TRIES,
    )
    .expect_code(1);
    let report = run.json();
    let reason = plan_line(&report, "prod/web")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.contains(r#"ecs:UpdateService failed: HTTP 502: no AWS error but an HTML page: "502 Bad Gateway""#),
        "{reason}"
    );
    assert!(!reason.contains("does not serve this API"), "{reason}");
    assert_readable(&reason);
    assert_readable(&run.stderr);
    assert_eq!(live_services(&sdk).await, before);

    // The same page in place of STS's answer to AssumeRole, on a run across accounts: the account
    // is one problem line, and nothing on stderr (the SDK's own warning included) dumps the answer.
    proxy.set(fail("sts:AssumeRole"));
    let account = "111111111111";
    let run = azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--accounts",
            account,
            "--dry-run",
            "--output",
            "json",
        ],
        &FEW_TRIES,
    );
    assert_ne!(run.code, 0, "{}", run.stderr);
    let said = format!("{}\n{}", run.stdout, run.stderr);
    assert!(
        said.contains(&format!("cannot assume arn:aws:iam::{account}:role/")),
        "{said}"
    );
    assert!(
        said.contains(r#"sts:AssumeRole: HTTP 502: no AWS error but an HTML page: \"502 Bad Gateway\""#)
            || said.contains(r#"sts:AssumeRole: HTTP 502: no AWS error but an HTML page: "502 Bad Gateway""#),
        "{said}"
    );
    assert_readable(&said);
    for line in run.stderr.lines() {
        assert!(line.len() < 1000, "one short line each: {line}");
    }
}
