//! `--notify`: tell the incident channel when a real run starts and when it ends, through SNS
//! topics (where AWS Chatbot / Amazon Q Developer, PagerDuty and e-mail subscribe). A notification
//! is a courtesy to the people watching, never a step of the evacuation: a publish that fails is
//! one warning line, and the run goes on with the same exit code.
//!
//! Each publish uses SNS's `MessageStructure=json`: e-mail subscribers get a plain-text message,
//! every other protocol (Chatbot's HTTPS endpoint, SQS, Lambda, HTTPS webhooks) gets an AWS Chatbot
//! custom notification (`{"version":"1.0","source":"custom","content":{...},"metadata":{...}}`),
//! whose `content.description` is the same text with everything azevac did not write itself escaped
//! for Markdown (Chatbot's `client-markdown`: a resource named like a link must not be one), and
//! whose `metadata.threadId` is the run ID, so that a run's two messages form one thread in the
//! chat channel.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use aws_config::{Region, SdkConfig};
use aws_smithy_types::timeout::TimeoutConfig;

use crate::model::{Audit, Command, Expiry, Plan, Status};

/// The call, as the IAM policy and the warnings name it.
const PUBLISH: &str = "sns:Publish";
/// SNS's limit on a subject: 100 printable ASCII characters.
const SUBJECT_MAX: usize = 100;
/// At most this many failed lines are listed in a message (the count is always complete).
const FAILURES_LISTED: usize = 50;
/// The longest a publish may take in all: the people can wait, the evacuation should not.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(20);
/// The longest one attempt of a publish may take.
const PUBLISH_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(8);

/// `--notify`: an SNS topic ARN, `arn:PARTITION:sns:REGION:ACCOUNT:NAME` (a FIFO topic's name ends
/// in `.fifo`). Checked at parse time, so a typo fails before anything changes.
pub fn parse_topic_arn(text: &str) -> Result<String, String> {
    let hint = "expected an SNS topic ARN, e.g. arn:aws:sns:us-east-1:123456789012:azevac-incidents (the operator policy publishes to topics named azevac*)";
    let parts: Vec<&str> = text.split(':').collect();
    let [arn, partition, service, region, account, name] = parts.as_slice() else {
        return Err(format!("{hint}, got {text:?}"));
    };
    let partition_ok = partition.starts_with("aws")
        && partition[3..].chars().all(|c| c.is_ascii_lowercase() || c == '-')
        && !partition.ends_with('-');
    let region_ok = !region.is_empty()
        && region.len() <= 32
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && region.starts_with(|c: char| c.is_ascii_lowercase())
        && region.ends_with(|c: char| c.is_ascii_digit());
    let account_ok = account.len() == 12 && account.chars().all(|c| c.is_ascii_digit());
    let base = name.strip_suffix(".fifo").unwrap_or(name);
    let name_ok = !base.is_empty()
        && name.len() <= 256
        && base.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if *arn != "arn" || !partition_ok || *service != "sns" || !region_ok || !account_ok || !name_ok {
        return Err(format!("{hint}, got {text:?}"));
    }
    Ok(text.to_owned())
}

/// One message, as each kind of subscriber gets it.
#[derive(Debug, Clone)]
pub struct Message {
    /// The subject line (e-mail subject; SQS and HTTPS envelopes): short, printable ASCII.
    pub subject: String,
    /// The readable text, as it is: the e-mail body (plain text). The Chatbot notification's
    /// description is the same text with the untrusted parts escaped for Markdown.
    pub text: String,
    /// The AWS Chatbot custom notification, for every other protocol.
    pub chatbot: serde_json::Value,
    /// The run ID: the message group on a FIFO topic.
    pub group: String,
}

/// A FIFO topic's deduplication ID (at most 128 characters): a hash of the message body.
fn dedup_id(body: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

impl Message {
    /// The `MessageStructure=json` document SNS takes: per-protocol bodies, `default` for the rest.
    pub fn structured(&self) -> String {
        let chatbot = serde_json::to_string(&self.chatbot).unwrap_or_default();
        serde_json::json!({ "default": chatbot, "email": self.text }).to_string()
    }
}

/// What the command is called in messages.
fn verb(plan: &Plan) -> &'static str {
    match plan.command {
        Command::Evacuate => "evacuate",
        Command::Recover => "recover",
    }
}

/// How a message writes the text it did not make itself (names, reasons, AWS error text, the
/// caller, zones, problems): as it is for e-mail, which is plain text, or escaped for the Chatbot
/// notification, which Slack and Teams render as Markdown (where a resource named like a link
/// would be a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Plain,
    Markdown,
}

impl Form {
    /// `text`, written for this form.
    fn put(self, text: &str) -> String {
        match self {
            Form::Plain => text.to_owned(),
            Form::Markdown => crate::model::text::markdown(text),
        }
    }
}

/// The zone the run is about, as people read it.
fn zone(plan: &Plan, form: Form) -> String {
    match (&plan.az_id, &plan.az_name) {
        (Some(id), Some(name)) => format!("{} ({})", form.put(id), form.put(name)),
        (Some(id), None) => form.put(id),
        _ => "every evacuated AZ".to_owned(),
    }
}

/// The zone in a title: its ID only.
fn zone_id(plan: &Plan, form: Form) -> String {
    plan.az_id
        .as_deref()
        .map_or_else(|| "all zones".to_owned(), |id| form.put(id))
}

/// Lines per type and status, types in plan order.
fn per_type(plan: &Plan) -> Vec<(String, BTreeMap<&'static str, usize>)> {
    let mut out: Vec<(String, BTreeMap<&'static str, usize>)> = Vec::new();
    for item in &plan.items {
        let at = match out.iter().position(|(t, _)| *t == item.resource_type) {
            Some(at) => at,
            None => {
                out.push((item.resource_type.clone(), BTreeMap::new()));
                out.len() - 1
            }
        };
        *out[at].1.entry(item.status.as_str()).or_default() += 1;
    }
    out
}

/// A subject SNS accepts: printable ASCII only, at most 100 characters.
fn subject(text: &str) -> String {
    let ascii: String = text
        .chars()
        .map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' })
        .collect();
    ascii.chars().take(SUBJECT_MAX).collect()
}

/// The heading lines both messages share: who, why, where.
fn heading(plan: &Plan, audit: &Audit, what: &str, form: Form) -> String {
    let mut text = format!(
        "azevac {} {} in {}: {what}\n",
        verb(plan),
        zone(plan, form),
        form.put(&plan.region)
    );
    // The run ID is this process's own UUID, not someone else's text.
    let _ = writeln!(text, "run: {}", audit.run_id);
    let _ = writeln!(text, "caller: {}", form.put(&audit.caller));
    if let Some(reason) = &audit.reason {
        let _ = writeln!(text, "reason: {}", form.put(reason));
    }
    text
}

/// The plan's problems, capped like the failures: SNS refuses a message over 256 KB, and this one
/// matters most.
fn problems(plan: &Plan, text: &mut String, form: Form) {
    for problem in plan.problems.iter().take(FAILURES_LISTED) {
        let _ = writeln!(text, "problem: {}", form.put(problem));
    }
    if plan.problems.len() > FAILURES_LISTED {
        let _ = writeln!(text, "... and {} more problems", plan.problems.len() - FAILURES_LISTED);
    }
}

/// An AZ ID as a Chatbot keyword (a tag, not text): only the characters an AZ ID has.
fn keyword(az_id: &str) -> String {
    az_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

/// The Chatbot custom notification: `title` and `text` are already written in [`Form::Markdown`].
fn chatbot(
    plan: &Plan,
    audit: &Audit,
    title: &str,
    text: &str,
    event: &str,
    totals: &[(&str, usize)],
) -> serde_json::Value {
    // The context is data for Chatbot's custom actions (their `$variables`), never rendered: it
    // keeps the values as they are, where an escape would change what an action is given.
    let mut context = serde_json::Map::new();
    for (key, value) in [
        ("run_id", audit.run_id.clone()),
        ("command", verb(plan).to_owned()),
        ("zone", zone(plan, Form::Plain)),
        ("region", plan.region.clone()),
        ("caller", audit.caller.clone()),
        ("reason", audit.reason.clone().unwrap_or_default()),
    ] {
        context.insert(key.to_owned(), value.into());
    }
    for (key, value) in totals {
        context.insert((*key).to_owned(), value.to_string().into());
    }
    let zone_keyword = plan.az_id.as_deref().map_or_else(|| "all-zones".to_owned(), keyword);
    serde_json::json!({
        "version": "1.0",
        "source": "custom",
        "id": format!("{}-{event}", audit.run_id),
        "content": {
            "textType": "client-markdown",
            "title": title,
            "description": text,
            "keywords": ["azevac", verb(plan), zone_keyword],
        },
        "metadata": {
            "threadId": audit.run_id,
            "summary": title,
            "eventType": format!("azevac.{event}"),
            "additionalContext": context,
        },
    })
}

/// The start message's title and text, in one form.
fn started_in(plan: &Plan, audit: &Audit, form: Form) -> (String, String) {
    let planned = plan.count(Status::Planned);
    let skipped = plan.count(Status::Skipped);
    let mut text = heading(plan, audit, "started", form);
    let _ = writeln!(text, "planned: {planned} to change, {skipped} skipped");
    for (resource_type, counts) in per_type(plan) {
        let n = |s: Status| counts.get(s.as_str()).copied().unwrap_or_default();
        let _ = writeln!(
            text,
            "  {}: {} to change, {} skipped",
            form.put(&resource_type),
            n(Status::Planned),
            n(Status::Skipped)
        );
    }
    problems(plan, &mut text, form);
    let title = format!(
        "azevac {} {} started: {planned} to change (run {})",
        verb(plan),
        zone_id(plan, form),
        short(&audit.run_id)
    );
    (title, text)
}

/// The message a real run publishes before its first change: the plan's counts per type.
pub fn started(plan: &Plan, audit: &Audit) -> Message {
    let (title, text) = started_in(plan, audit, Form::Plain);
    let (chat_title, chat_text) = started_in(plan, audit, Form::Markdown);
    let totals = [
        ("planned", plan.count(Status::Planned)),
        ("skipped", plan.count(Status::Skipped)),
    ];
    Message {
        chatbot: chatbot(plan, audit, &chat_title, &chat_text, "started", &totals),
        subject: subject(&title),
        text,
        group: audit.run_id.clone(),
    }
}

/// The end message's title and text, in one form.
fn ended_in(plan: &Plan, audit: &Audit, wall: Duration, form: Form) -> (String, String) {
    let done = plan.count(Status::Done);
    let skipped = plan.count(Status::Skipped);
    let failed = plan.count(Status::Failed);
    let outcome = if failed > 0 || !plan.problems.is_empty() {
        "ended with failures"
    } else {
        "ended"
    };
    let mut text = heading(plan, audit, outcome, form);
    let _ = writeln!(
        text,
        "result: {done} done, {skipped} skipped, {failed} failed in {}",
        humantime::format_duration(Duration::from_secs(wall.as_secs()))
    );
    for (resource_type, counts) in per_type(plan) {
        let n = |s: Status| counts.get(s.as_str()).copied().unwrap_or_default();
        let _ = writeln!(
            text,
            "  {}: {} done, {} skipped, {} failed",
            form.put(&resource_type),
            n(Status::Done),
            n(Status::Skipped),
            n(Status::Failed)
        );
    }
    let failures: Vec<_> = plan.items.iter().filter(|i| i.status == Status::Failed).collect();
    for item in failures.iter().take(FAILURES_LISTED) {
        // In the phrase table's words, from the failure itself.
        let why = item
            .failure
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| item.reason.clone())
            .unwrap_or_else(|| "no reason given".to_owned());
        let _ = writeln!(
            text,
            "failed: {} {}: {}",
            form.put(&item.resource_type),
            form.put(&item.name),
            form.put(&why)
        );
    }
    if failures.len() > FAILURES_LISTED {
        let _ = writeln!(text, "... and {} more failed lines", failures.len() - FAILURES_LISTED);
    }
    problems(plan, &mut text, form);
    let title = format!(
        "azevac {} {} {outcome}: {done} done, {failed} failed (run {})",
        verb(plan),
        zone_id(plan, form),
        short(&audit.run_id)
    );
    (title, text)
}

/// The message a run publishes once it has carried its plan out: done, skipped and failed per type,
/// the failures with their reasons, and the wall time.
pub fn ended(plan: &Plan, audit: &Audit, wall: Duration) -> Message {
    let (title, text) = ended_in(plan, audit, wall, Form::Plain);
    let (chat_title, chat_text) = ended_in(plan, audit, wall, Form::Markdown);
    let totals = [
        ("done", plan.count(Status::Done)),
        ("skipped", plan.count(Status::Skipped)),
        ("failed", plan.count(Status::Failed)),
    ];
    Message {
        chatbot: chatbot(plan, audit, &chat_title, &chat_text, "ended", &totals),
        subject: subject(&title),
        text,
        group: audit.run_id.clone(),
    }
}

/// A message of a recovery in waves as it goes (a wave done and baking, the recovery stopped): `what`
/// says it in a few words, `details` are the lines under it. Both are azevac's own words around
/// untrusted names (alarms, their reasons), escaped here. `event` (`wave-2`, `stopped`) ends the
/// Chatbot event type and the notification's ID, which must differ from message to message.
pub fn wave(plan: &Plan, audit: &Audit, event: &str, what: &str, details: &[String]) -> Message {
    let said = |form: Form| {
        let mut text = heading(plan, audit, &form.put(what), form);
        for line in details {
            let _ = writeln!(text, "{}", form.put(line));
        }
        let title = format!(
            "azevac {} {}: {} (run {})",
            verb(plan),
            zone_id(plan, form),
            form.put(what),
            short(&audit.run_id)
        );
        (title, text)
    };
    let (title, text) = said(Form::Plain);
    let (chat_title, chat_text) = said(Form::Markdown);
    Message {
        chatbot: chatbot(plan, audit, &chat_title, &chat_text, event, &[]),
        subject: subject(&title),
        text,
        group: audit.run_id.clone(),
    }
}

/// The first group of a run ID: enough to tell runs apart in a subject line.
fn short(run_id: &str) -> &str {
    run_id.split('-').next().unwrap_or(run_id)
}

/// The message `status --notify` publishes when azevac's changes that end by themselves (zonal
/// shifts; `noun` says what one is called) end within the window it was given (or already ended
/// while their records say evacuated): what a cron job or a monitor running
/// `azevac status --fail-if-expiring 1h --notify TOPIC` tells the channel. `caller` is who ran it.
pub fn ending(region: &str, caller: &str, noun: &str, expiries: &[&Expiry]) -> Message {
    let said = |form: Form| {
        let mut text = format!(
            "azevac status in {}: {} of azevac's {noun}s end soon or have ended\n",
            form.put(region),
            expiries.len()
        );
        let _ = writeln!(text, "caller: {}", form.put(caller));
        for expiry in expiries {
            let words = expiry.warning.clone().unwrap_or_else(|| {
                format!(
                    "{noun} {} of {} away from {} ends at {}",
                    expiry.id.as_deref().unwrap_or("-"),
                    expiry.name,
                    expiry.az_id,
                    expiry.expires_at.as_deref().unwrap_or("-")
                )
            });
            let _ = writeln!(text, "- {}", form.put(&words));
        }
        text
    };
    let zones: std::collections::BTreeSet<String> = expiries.iter().map(|s| keyword(&s.az_id)).collect();
    let title = format!(
        "azevac: {} {noun}(s) away from {} end soon or have ended",
        expiries.len(),
        zones.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    let keywords: Vec<String> = ["azevac", "status"]
        .into_iter()
        .map(str::to_owned)
        .chain(zones.iter().cloned())
        .collect();
    let chatbot = serde_json::json!({
        "version": "1.0",
        "source": "custom",
        "content": {
            "textType": "client-markdown",
            "title": title,
            "description": said(Form::Markdown),
            "keywords": keywords,
        },
        "metadata": {
            "summary": title,
            "eventType": "azevac.shifts_ending",
            "additionalContext": { "region": region, "caller": caller },
        },
    });
    Message {
        subject: subject(&title),
        text: said(Form::Plain),
        chatbot,
        group: "azevac-status".to_owned(),
    }
}

/// A decision of `azevac watch` (an autoshift followed or not, a message refused, a lease taken
/// over): `what` in a few words, `details` under it, all of it escaped here. `event` ends the
/// Chatbot event type (`azevac.watch.<event>`).
pub fn watcher(region: &str, caller: &str, event: &str, what: &str, details: &[String]) -> Message {
    let said = |form: Form| {
        let mut text = format!("azevac watch in {}: {}\n", form.put(region), form.put(what));
        let _ = writeln!(text, "caller: {}", form.put(caller));
        for line in details {
            let _ = writeln!(text, "{}", form.put(line));
        }
        text
    };
    let title = format!("azevac watch {}: {}", keyword(region), crate::model::text::clean(what));
    let chatbot = serde_json::json!({
        "version": "1.0",
        "source": "custom",
        "content": {
            "textType": "client-markdown",
            "title": said(Form::Markdown).lines().next().unwrap_or_default(),
            "description": said(Form::Markdown),
            "keywords": ["azevac", "watch", keyword(region)],
        },
        "metadata": {
            "summary": title,
            "eventType": format!("azevac.watch.{event}"),
            "additionalContext": { "region": region, "caller": caller },
        },
    });
    Message {
        subject: subject(&title),
        text: said(Form::Plain),
        chatbot,
        group: "azevac-watch".to_owned(),
    }
}

/// Publishes to the `--notify` topics with the shared configuration (endpoint, user agent,
/// credentials), each topic through a client of its own region, with short timeouts.
pub struct Notifier {
    sdk: SdkConfig,
    topics: Vec<String>,
}

impl Notifier {
    /// A notifier for these topics (none: it does nothing).
    pub fn new(sdk: &SdkConfig, topics: &[String]) -> Notifier {
        Notifier {
            sdk: sdk.clone(),
            topics: topics.to_vec(),
        }
    }

    /// Publish `message` to every topic at once; a topic that fails is one warning line on stderr.
    pub async fn publish(&self, message: &Message) {
        let body = message.structured();
        let body = &body;
        let sends = self.topics.iter().map(|topic| async move {
            let region = topic.split(':').nth(3).unwrap_or_default().to_owned();
            let client = self.client(region);
            let mut publish = client
                .publish()
                .topic_arn(topic)
                .subject(&message.subject)
                .message_structure("json")
                .message(body.as_str());
            // A FIFO topic refuses a publish without a group: one group per run keeps its two
            // messages in order, and the body deduplicates a retried publish.
            if topic.ends_with(".fifo") {
                publish = publish
                    .message_group_id(message.group.as_str())
                    .message_deduplication_id(dedup_id(body));
            }
            let sent = publish.send().await;
            if let Err(e) = sent {
                let why = crate::error::sdk::detail(&e);
                crate::say!(
                    "azevac: warning: could not notify {} ({PUBLISH}): {}",
                    crate::model::text::clean(topic),
                    crate::model::text::clean(&why)
                );
            }
        });
        futures::future::join_all(sends).await;
    }

    fn client(&self, region: String) -> aws_sdk_sns::Client {
        let shared = self
            .sdk
            .timeout_config()
            .cloned()
            .unwrap_or_else(TimeoutConfig::disabled);
        let shorter = |limit: Duration, configured: Option<Duration>| configured.map_or(limit, |c| c.min(limit));
        let timeouts = shared
            .to_builder()
            .operation_timeout(shorter(PUBLISH_TIMEOUT, shared.operation_timeout()))
            .operation_attempt_timeout(shorter(PUBLISH_ATTEMPT_TIMEOUT, shared.operation_attempt_timeout()))
            .build();
        aws_sdk_sns::Client::from_conf(
            aws_sdk_sns::config::Builder::from(&self.sdk)
                .region(Region::new(region))
                .timeout_config(timeouts)
                .interceptor(crate::aws::stats::counter())
                .build(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Item;

    #[test]
    fn topic_arns() {
        for good in [
            "arn:aws:sns:us-east-1:123456789012:incidents",
            "arn:aws-us-gov:sns:us-gov-west-1:123456789012:a_b-c",
            "arn:aws:sns:eu-west-1:123456789012:orders.fifo",
        ] {
            assert_eq!(parse_topic_arn(good).as_deref(), Ok(good));
        }
        for bad in [
            "",
            "incidents",
            "arn:aws:sqs:us-east-1:123456789012:incidents",
            "arn:aws:sns:us-east-1:12345678901:incidents",
            "arn:aws:sns:us-east-1:123456789012:",
            "arn:aws:sns:us-east-1:123456789012:a:b",
            "arn:aws:sns::123456789012:incidents",
            "arn:aws:sns:us-east-1:123456789012:in cidents",
            "arn:aws:sns:us-east-1:123456789012:.fifo",
            "arn:azure:sns:us-east-1:123456789012:incidents",
        ] {
            assert!(parse_topic_arn(bad).is_err(), "{bad:?} accepted");
        }
    }

    fn plan() -> Plan {
        let mut failed = Item::new("asg", "arn:asg/web", "web", "use1-az2");
        failed.fail(crate::model::Failure::plan("throttled\u{1b}[2J"));
        let mut done = Item::new("lambda", "arn:fn/f", "f", "use1-az2");
        done.done();
        Plan {
            az_id: Some("use1-az2".into()),
            az_name: Some("us-east-1c".into()),
            region: "us-east-1".into(),
            items: vec![failed, done],
            ..Plan::empty(Command::Evacuate)
        }
    }

    fn audit() -> Audit {
        Audit {
            run_id: "1a2b3c4d-0000-4000-8000-000000000000".into(),
            caller: "arn:aws:sts::123456789012:assumed-role/oncall/é".into(),
            reason: Some("INC-1 «zone down»".into()),
            account_id: None,
        }
    }

    #[test]
    fn the_end_message_names_every_failure() {
        let m = ended(&plan(), &audit(), Duration::from_millis(65_400));
        assert!(m.subject.is_ascii() && m.subject.len() <= SUBJECT_MAX, "{}", m.subject);
        assert_eq!(
            m.subject,
            "azevac evacuate use1-az2 ended with failures: 1 done, 1 failed (run 1a2b3c4d)"
        );
        assert!(
            m.text.contains("result: 1 done, 0 skipped, 1 failed in 1m 5s"),
            "{}",
            m.text
        );
        assert!(m.text.contains("  asg: 0 done, 0 skipped, 1 failed"), "{}", m.text);
        assert!(
            m.text.contains("failed: asg web: throttled\u{1b}[2J"),
            "data stays data: {}",
            m.text
        );
        assert_eq!(m.chatbot["version"], "1.0");
        assert_eq!(m.chatbot["source"], "custom");
        // The description is the text, with the untrusted parts escaped for Markdown.
        let description = m.chatbot["content"]["description"].as_str().expect("description");
        assert!(
            description.contains(r"failed: asg web: throttled\\u\{1b\}\[2J"),
            "{description}"
        );
        assert!(description.contains(r"azevac evacuate use1\-az2 (us\-east\-1c) in us\-east\-1: ended with failures"));
        assert_eq!(
            m.chatbot["content"]["title"],
            r"azevac evacuate use1\-az2 ended with failures: 1 done, 1 failed (run 1a2b3c4d)"
        );
        assert_eq!(m.chatbot["metadata"]["threadId"], audit().run_id.as_str());
        let structured: serde_json::Value = serde_json::from_str(&m.structured()).expect("json");
        assert_eq!(structured["email"], m.text.as_str());
        let default: serde_json::Value =
            serde_json::from_str(structured["default"].as_str().expect("default")).expect("chatbot json");
        assert_eq!(default, m.chatbot);
    }

    #[test]
    fn a_run_with_thousands_of_problems_still_fits_in_one_message() {
        let mut plan = plan();
        plan.problems = (0..10_000)
            .map(|i| format!("problem {i}: {}", "x".repeat(100)))
            .collect();
        for message in [started(&plan, &audit()), ended(&plan, &audit(), Duration::from_secs(1))] {
            assert!(
                message.structured().len() < 256 * 1024,
                "{} bytes",
                message.structured().len()
            );
            assert!(message.text.contains("more problems"));
        }
        assert_eq!(dedup_id("a"), dedup_id("a"));
        assert_ne!(dedup_id("a"), dedup_id("b"));
    }

    /// Issue 36: a resource named like a Markdown link, a reason with a link and a mention, and
    /// AWS error text with formatting reach the chat channel as text; e-mail gets them as they are.
    #[test]
    fn issue_36_nothing_untrusted_reaches_the_chat_as_markdown() {
        let mut plan = plan();
        plan.items[0].name = "[clickname](//example.com/asg)".into();
        plan.items[0].fail(crate::model::Failure::plan(
            "ValidationError: see [docs](https://evil.example/x) **now**",
        ));
        plan.problems = vec!["account 111111111111: <https://evil.example|log in>".into()];
        let audit = Audit {
            reason: Some("INC-36 @here [runbook](https://evil.example/run)".into()),
            caller: "arn:aws:sts::123456789012:assumed-role/ops/@channel".into(),
            ..audit()
        };
        for message in [started(&plan, &audit), ended(&plan, &audit, Duration::from_secs(3))] {
            let chat = serde_json::to_string(&message.chatbot["content"]).expect("json");
            for raw in [
                "[clickname](",
                "[docs](",
                "**now**",
                "[runbook](",
                "<https",
                "@here",
                "@channel",
                "https://",
            ] {
                assert!(!chat.contains(raw), "{raw:?} reached the chat: {chat}");
            }
            let description = message.chatbot["content"]["description"].as_str().expect("description");
            assert!(
                description.contains("reason: INC\\-36 @\u{2060}here \\[runbook\\]"),
                "{description}"
            );
            assert!(
                description.contains("&lt;https:\u{2060}//evil\\.example\\|log in&gt;"),
                "{description}"
            );
            assert!(message
                .text
                .contains("reason: INC-36 @here [runbook](https://evil.example/run)"));
        }
        let end = ended(&plan, &audit, Duration::from_secs(3));
        let description = end.chatbot["content"]["description"].as_str().expect("description");
        assert!(
            description.contains(r"failed: asg \[clickname\]\(//example\.com/asg\): ValidationError: see \[docs\]"),
            "{description}"
        );
        assert!(end
            .text
            .contains("failed: asg [clickname](//example.com/asg): ValidationError"));
        // The context is data for custom actions, kept as it is.
        assert_eq!(
            end.chatbot["metadata"]["additionalContext"]["reason"],
            audit.reason.clone().unwrap_or_default().as_str()
        );
    }

    #[test]
    fn subjects_are_short_printable_ascii() {
        let mut plan = plan();
        plan.az_id = Some(format!("é{}", "x".repeat(200)));
        let m = started(&plan, &audit());
        assert_eq!(m.subject.len(), SUBJECT_MAX);
        assert!(m.subject.chars().all(|c| c.is_ascii_graphic() || c == ' '));
        assert!(m.text.contains("reason: INC-1 «zone down»"));
    }
}
