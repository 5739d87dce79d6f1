//! `--notify` (issue 19): a real run tells SNS topics when it starts and when it ends; a dry run
//! tells nobody; a topic that cannot be published to is one warning line, and the run goes on with
//! the same exit code. The messages are read back from an SQS queue subscribed to the topic in moto
//! (SQS through boto3 in the emulator's own venv: no SQS SDK to build for one test).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use azevac::app::notify::parse_topic_arn;
use azevac::model::text::markdown;
use common::estate::{self, Spec};
use common::proxy::{FailRule, Fault, Faults, Proxy};
use common::{azevac, azevac_at, live_groups, Moto, ZONE};
use proptest::prelude::*;

fn estate() -> Spec {
    estate::groups_in_two_zones("10.71.0.0/16", &["web", "api"])
}

/// SQS in moto, through boto3 from `.venv-moto`: `create NAME` prints the queue's ARN, `drain NAME`
/// prints every message body as a JSON list (and deletes them).
fn sqs(moto: &Moto, command: &str, queue: &str) -> String {
    const SCRIPT: &str = r#"
import json, sys, boto3
endpoint, command, name = sys.argv[1:4]
sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="testing", aws_secret_access_key="testing")
if command == "create":
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    print(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
else:
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    bodies = []
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            break
        bodies += [m["Body"] for m in got]
        sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
    print(json.dumps(bodies))
"#;
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-moto/bin/python");
    let out = Command::new(python)
        .args(["-c", SCRIPT, &moto.endpoint, command, queue])
        .output()
        .expect("run the venv's python (scripts/test installs it)");
    assert!(
        out.status.success(),
        "sqs {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A topic with a queue subscribed to it; returns the topic ARN.
pub(crate) async fn topic_with_queue(moto: &Moto, sdk: &aws_config::SdkConfig, name: &str) -> String {
    let sns = aws_sdk_sns::Client::new(sdk);
    let topic = sns
        .create_topic()
        .name(name)
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("topic ARN")
        .to_owned();
    let queue = sqs(moto, "create", name);
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(queue)
        .send()
        .await
        .expect("Subscribe");
    topic
}

/// The notifications in the queue, oldest first: (subject, the Chatbot custom notification).
pub(crate) fn received(moto: &Moto, queue: &str) -> Vec<(String, serde_json::Value)> {
    let bodies: Vec<String> = serde_json::from_str(&sqs(moto, "drain", queue)).expect("bodies");
    bodies
        .iter()
        .map(|body| {
            let envelope: serde_json::Value = serde_json::from_str(body).expect("SNS envelope");
            assert_eq!(envelope["Type"], "Notification", "{envelope}");
            let message = envelope["Message"].as_str().expect("Message");
            let chatbot: serde_json::Value = serde_json::from_str(message).expect("Chatbot JSON");
            (envelope["Subject"].as_str().unwrap_or_default().to_owned(), chatbot)
        })
        .collect()
}

/// The run ID azevac prints on stderr (`azevac: run ID as CALLER`).
fn run_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("azevac: run "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run ID in {stderr}"))
        .to_owned()
}

/// Check a start and an end message of one run.
fn check_pair(messages: &[(String, serde_json::Value)], command: &str, run: &str, changed: usize) {
    assert_eq!(messages.len(), 2, "{messages:#?}");
    let (start_subject, start) = &messages[0];
    let (end_subject, end) = &messages[1];
    let short = run.split('-').next().expect("run");
    assert_eq!(
        start_subject,
        &format!("azevac {command} {ZONE} started: {changed} to change (run {short})")
    );
    assert_eq!(
        end_subject,
        &format!("azevac {command} {ZONE} ended: {changed} done, 0 failed (run {short})")
    );
    for (message, event) in [(start, "started"), (end, "ended")] {
        assert_eq!(message["version"], "1.0");
        assert_eq!(message["source"], "custom");
        assert_eq!(message["metadata"]["threadId"], run);
        assert_eq!(message["metadata"]["eventType"], format!("azevac.{event}"));
        assert_eq!(message["metadata"]["additionalContext"]["run_id"], run);
        assert_eq!(message["metadata"]["additionalContext"]["command"], command);
        let text = message["content"]["description"].as_str().expect("description");
        assert!(text.contains(&format!("run: {run}\n")), "{text}");
        assert!(text.contains("caller: arn:aws:sts::"), "{text}");
        // The zone and region come from AWS: escaped for the Markdown the chat renders.
        assert!(
            text.contains(&format!(
                "azevac {command} {} ({}) in {}:",
                markdown(ZONE),
                markdown("us-east-1c"),
                markdown("us-east-1")
            )),
            "{text}"
        );
    }
    let start_text = start["content"]["description"].as_str().expect("description");
    assert!(
        start_text.contains(&format!("planned: {changed} to change, 0 skipped\n")),
        "{start_text}"
    );
    assert!(
        start_text.contains(&format!("  asg: {changed} to change, 0 skipped\n")),
        "{start_text}"
    );
    let end_text = end["content"]["description"].as_str().expect("description");
    assert!(
        end_text.contains(&format!("result: {changed} done, 0 skipped, 0 failed in ")),
        "{end_text}"
    );
    assert!(
        end_text.contains(&format!("  asg: {changed} done, 0 skipped, 0 failed\n")),
        "{end_text}"
    );
    assert_eq!(end["metadata"]["additionalContext"]["done"], changed.to_string());
}

#[tokio::test]
async fn evacuate_and_recover_tell_the_topic_when_they_start_and_end() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate()).await;
    let original = live_groups(&sdk).await;
    let topic = topic_with_queue(&moto, &sdk, "incidents").await;

    // A dry run tells nobody.
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--dry-run", "--notify", &topic]).expect_code(0);
    assert!(received(&moto, "incidents").is_empty(), "a dry run published");

    let evacuated = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--yes",
            "--reason",
            "INC-19 zone down",
            "--notify",
            &topic,
        ],
    )
    .expect_code(0);
    assert!(!evacuated.stderr.contains("could not notify"), "{}", evacuated.stderr);
    let messages = received(&moto, "incidents");
    let run = run_id(&evacuated.stderr);
    check_pair(&messages, "evacuate", &run, 2);
    for (_, message) in &messages {
        let text = message["content"]["description"].as_str().expect("description");
        assert!(text.contains("reason: INC\\-19 zone down\n"), "{text}");
        assert_eq!(message["metadata"]["additionalContext"]["reason"], "INC-19 zone down");
    }

    // recover, with the topic from AZEVAC_NOTIFY this time.
    let recovered = azevac_at(
        &moto.endpoint,
        &["recover", "--az-id", ZONE, "--yes"],
        &[("AZEVAC_NOTIFY", Some(&topic))],
    )
    .expect_code(0);
    check_pair(&received(&moto, "incidents"), "recover", &run_id(&recovered.stderr), 2);
    assert_eq!(common::sorted(&live_groups(&sdk).await), common::sorted(&original));
}

#[tokio::test]
async fn a_topic_that_does_not_exist_is_a_warning_and_the_evacuation_goes_on() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &estate()).await;
    let missing = "arn:aws:sns:us-east-1:123456789012:no-such-topic";
    let run = azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes", "--notify", missing]).expect_code(0);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("azevac: warning: could not notify"))
        .collect();
    // One line for the start message, one for the end message; both name the topic.
    assert_eq!(warnings.len(), 2, "{}", run.stderr);
    assert!(warnings.iter().all(|w| w.contains(missing)), "{}", run.stderr);
    let gone = seeded.subnet("main", ZONE);
    let groups = live_groups(&sdk).await;
    assert!(groups.values().all(|subnets| !subnets.contains(&gone)), "{groups:?}");
}

/// Issue 36: the Chatbot notification is rendered as Markdown in the incident channel. An Auto
/// Scaling group named like a link, a `--reason` with a link, formatting and a mention, and AWS
/// error text with the same, all reach it as text: escaped, never a clickable link, a mention or
/// formatting.
#[tokio::test(flavor = "multi_thread")]
async fn issue_36_names_reasons_and_aws_errors_reach_the_chat_as_text() {
    const CLICKNAME: &str = "[clickname](//example.com/asg)";
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate::groups_in_two_zones("10.72.0.0/16", &["web", CLICKNAME])).await;
    let topic = topic_with_queue(&moto, &sdk, "incidents-36").await;
    // AWS refuses the change of that group with a message that carries Markdown of its own.
    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults {
        rules: vec![FailRule {
            label: "autoscaling:UpdateAutoScalingGroup".into(),
            body_contains: "clickname".into(),
            fault: Fault::Refuse {
                code: "ValidationError",
                message:
                    "**Denied**: see [the docs](https://evil.example/fix) or <https://evil.example|log in> @channel",
            },
        }],
        ..Faults::default()
    });
    let reason = "INC-36 [runbook](https://evil.example/run) **now** @here";
    let run = azevac_at(
        &proxy.endpoint,
        &[
            "evacuate", "--az-id", ZONE, "--yes", "--reason", reason, "--notify", &topic,
        ],
        &[],
    )
    .expect_code(1);
    assert!(!run.stderr.contains("could not notify"), "{}", run.stderr);

    let messages = received(&moto, "incidents-36");
    assert_eq!(messages.len(), 2, "{messages:#?}");
    for (_, message) in &messages {
        assert_eq!(message["content"]["textType"], "client-markdown");
        // Everything Chatbot renders: the title and the description.
        let rendered = serde_json::to_string(&message["content"]).expect("json");
        for raw in [
            "[clickname](",
            "[runbook](",
            "[the docs](",
            "**now**",
            "**Denied**",
            "<https",
            "https://",
            "@here",
            "@channel",
        ] {
            assert!(
                !rendered.contains(raw),
                "{raw:?} reached the chat unescaped: {rendered}"
            );
        }
        let text = message["content"]["description"].as_str().expect("description");
        assert!(
            text.contains("reason: INC\\-36 \\[runbook\\]\\(https:\u{2060}//evil\\.example/run\\) \\*\\*now\\*\\* @\u{2060}here\n"),
            "{text}"
        );
        // Custom actions get the reason as given.
        assert_eq!(message["metadata"]["additionalContext"]["reason"], reason);
    }
    let end = messages[1].1["content"]["description"].as_str().expect("description");
    let failed = end
        .lines()
        .find(|l| l.starts_with("failed: asg "))
        .unwrap_or_else(|| panic!("no failed line: {end}"));
    assert!(
        failed.starts_with(r"failed: asg \[clickname\]\(//example\.com/asg\): "),
        "{failed}"
    );
    assert!(
        failed.contains(r"\*\*Denied\*\*"),
        "the AWS error text is escaped too: {failed}"
    );
    assert!(
        failed.contains("&lt;https:\u{2060}//evil\\.example\\|log in&gt; @\u{2060}channel"),
        "{failed}"
    );
}

#[test]
fn a_malformed_topic_arn_is_refused_before_anything_runs() {
    // No emulator: a bad ARN must fail at parse time, before any connection.
    let run = azevac_at(
        "http://127.0.0.1:9",
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--yes",
            "--notify",
            "arn:aws:sqs:us-east-1:123456789012:q",
        ],
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(errors[0].contains("expected an SNS topic ARN"), "{}", run.stderr);
    let from_env = azevac_at(
        "http://127.0.0.1:9",
        &["recover", "--yes"],
        &[("AZEVAC_NOTIFY", Some("arn:aws:sns:us-east-1:123456789012:ok,nope"))],
    );
    assert_eq!(from_env.code, 2, "{}", from_env.stderr);
}

proptest! {
    /// Anything at all: a value or an error, never a panic; what is accepted is an SNS topic ARN.
    #[test]
    fn topic_arn_parser_never_panics(text in "\\PC{0,80}") {
        if let Ok(arn) = parse_topic_arn(&text) {
            prop_assert!(arn.starts_with("arn:aws"));
            prop_assert_eq!(arn.split(':').nth(2), Some("sns"));
        }
    }

    /// Every well-formed topic ARN is accepted as given.
    #[test]
    fn well_formed_topic_arns_are_accepted(
        partition in "aws(-cn|-us-gov)?",
        region in "[a-z]{2}-[a-z]{4,9}-[1-9]",
        account in "[0-9]{12}",
        name in "[A-Za-z0-9_-]{1,80}(\\.fifo)?",
    ) {
        let arn = format!("arn:{partition}:sns:{region}:{account}:{name}");
        prop_assert_eq!(parse_topic_arn(&arn), Ok(arn.clone()));
    }
}
