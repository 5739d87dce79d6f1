//! One message from the watcher's queue, read as the EventBridge event ARC zonal shift publishes
//! (or that event inside an SNS notification, for a queue fed through a topic). Pure: text in,
//! a checked [`Event`] or the reason it is not one out. Everything in a message is untrusted: each
//! field is bounded and checked here, and an AZ ID that drives an evacuation must be of the
//! watcher's own region.

use serde::Deserialize;

/// The EventBridge source of ARC zonal shift's events.
pub const SOURCE: &str = "aws.arc-zonal-shift";

/// The longest event ID kept (EventBridge's are UUIDs; a longer one is not EventBridge's).
const LONGEST_ID: usize = 128;
/// The longest detail type kept in a report.
const LONGEST_DETAIL_TYPE: usize = 128;

/// Who moved traffic away from a zone, as the event's detail type says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// AWS's zonal autoshift: a zone AWS finds impaired.
    Autoshift,
    /// A weekly autoshift practice run.
    PracticeRun,
    /// An AWS FIS experiment that starts an autoshift.
    FisExperiment,
}

impl Origin {
    /// How a person calls it.
    pub fn phrase(self) -> &'static str {
        match self {
            Origin::Autoshift => "autoshift",
            Origin::PracticeRun => "practice run",
            Origin::FisExperiment => "FIS experiment",
        }
    }

    /// Which is followed first when traffic is away from two zones: an autoshift (a zone AWS found
    /// impaired) before a FIS experiment before a practice run (0 first).
    pub fn rank(self) -> u8 {
        match self {
            Origin::Autoshift => 0,
            Origin::FisExperiment => 1,
            Origin::PracticeRun => 2,
        }
    }
}

/// What the event says happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Traffic is being moved away from `zone`.
    Started { origin: Origin, zone: String },
    /// The move away from `zone` has ended (completed, cancelled, or a practice run's outcome).
    Ended { origin: Origin, zone: String },
    /// A zonal shift event the watcher does not follow (a manual shift's, or a detail type it
    /// does not know): judged and deleted, nothing done.
    Other { detail_type: String },
}

/// One checked event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// EventBridge's event ID: the same for a redelivery or a duplicate.
    pub id: String,
    /// What happened.
    pub change: Change,
}

/// Why a message is not an event the watcher can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// Not JSON, or not shaped as an EventBridge event.
    Malformed(String),
    /// An event of another source or region: the queue is fed by a rule that matches too much.
    Foreign(String),
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Malformed(why) => write!(f, "not an EventBridge event: {}", crate::model::text::clean(why)),
            Rejected::Foreign(why) => write!(f, "not for this watcher: {}", crate::model::text::clean(why)),
        }
    }
}

/// The EventBridge envelope, as far as the watcher reads it.
#[derive(Deserialize)]
struct Envelope {
    id: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
    source: String,
    region: String,
    #[serde(default)]
    detail: Option<Detail>,
}

#[derive(Deserialize)]
struct Detail {
    #[serde(default)]
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(rename = "awayFrom")]
    away_from: Option<String>,
}

/// An SNS notification, for a queue subscribed to a topic without raw message delivery.
#[derive(Deserialize)]
struct Notification {
    #[serde(rename = "Type")]
    kind: String,
    #[serde(rename = "Message")]
    message: String,
}

/// Read one message body as an event for a watcher of `region`.
pub fn parse(body: &str, region: &str) -> Result<Event, Rejected> {
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| Rejected::Malformed(format!("not JSON ({e})")))?;
    if value.get("Type").is_some() && value.get("Message").is_some() {
        let notification: Notification = serde_json::from_value(value)
            .map_err(|e| Rejected::Malformed(format!("an SNS notification that cannot be read ({e})")))?;
        if notification.kind != "Notification" {
            return Err(Rejected::Foreign(format!(
                "an SNS message of type {}",
                bounded(&notification.kind, LONGEST_DETAIL_TYPE)
            )));
        }
        // One level only: a notification inside a notification is nobody's rule.
        let inner: serde_json::Value = serde_json::from_str(&notification.message)
            .map_err(|e| Rejected::Malformed(format!("an SNS notification whose message is not JSON ({e})")))?;
        return envelope(inner, region);
    }
    envelope(value, region)
}

fn envelope(value: serde_json::Value, region: &str) -> Result<Event, Rejected> {
    let envelope: Envelope = serde_json::from_value(value)
        .map_err(|e| Rejected::Malformed(format!("a field is missing or of the wrong type ({e})")))?;
    if envelope.id.is_empty() || envelope.id.chars().count() > LONGEST_ID || envelope.id.chars().any(char::is_control) {
        return Err(Rejected::Malformed("its id is empty, too long or not printable".into()));
    }
    if envelope.source != SOURCE {
        return Err(Rejected::Foreign(format!(
            "an event from {}, not {SOURCE}",
            bounded(&envelope.source, LONGEST_DETAIL_TYPE)
        )));
    }
    if envelope.region != region {
        return Err(Rejected::Foreign(format!(
            "an event of region {}, not {region}",
            bounded(&envelope.region, LONGEST_DETAIL_TYPE)
        )));
    }
    let away_from = envelope.detail.and_then(|d| d.metadata).and_then(|m| m.away_from);
    let (origin, started) = match envelope.detail_type.as_str() {
        "Autoshift In Progress" => (Origin::Autoshift, true),
        "Autoshift Completed" => (Origin::Autoshift, false),
        "FIS Experiment Autoshift In Progress" => (Origin::FisExperiment, true),
        "FIS Experiment Autoshift Completed" | "FIS Experiment Autoshift Canceled" => (Origin::FisExperiment, false),
        "Practice Run Started" => (Origin::PracticeRun, true),
        "Practice Run Succeeded" | "Practice Run Interrupted" | "Practice Run Failed" => (Origin::PracticeRun, false),
        other => {
            return Ok(Event {
                id: envelope.id,
                change: Change::Other {
                    detail_type: bounded(other, LONGEST_DETAIL_TYPE),
                },
            })
        }
    };
    let zone = away_from.ok_or_else(|| Rejected::Malformed("detail.metadata.awayFrom is missing".into()))?;
    let shaped = zone.len() <= 20
        && zone
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !shaped || crate::model::topology::region_of_az_id(&zone).as_deref() != Some(region) {
        return Err(Rejected::Malformed(format!(
            "detail.metadata.awayFrom {} is not an AZ ID of {region}",
            bounded(&zone, 20)
        )));
    }
    let change = if started {
        Change::Started { origin, zone }
    } else {
        Change::Ended { origin, zone }
    };
    Ok(Event {
        id: envelope.id,
        change,
    })
}

/// At most `max` characters of untrusted text, marked when cut, escaped for a terminal.
fn bounded(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        out.push('…');
    }
    crate::model::text::clean(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// ARC's own example of an observer notification (the developer guide's), trimmed.
    const STARTED: &str = r#"{
        "version": "0", "id": "05d4d2d5-9c76-bfea-72d2-d4614802adb4",
        "detail-type": "Autoshift In Progress", "source": "aws.arc-zonal-shift",
        "account": "111122223333", "time": "2023-11-16T23:38:14Z", "region": "us-east-1",
        "resources": [],
        "detail": {"version": "0.0.1", "data": "", "metadata": {"awayFrom": "use1-az2", "notes": "AWS has started an autoshift"}}
    }"#;

    fn with(detail_type: &str, away_from: &str) -> String {
        STARTED
            .replace("Autoshift In Progress", detail_type)
            .replace("use1-az2", away_from)
    }

    #[test]
    fn reads_arcs_events() {
        let event = parse(STARTED, "us-east-1").expect("an event");
        assert_eq!(event.id, "05d4d2d5-9c76-bfea-72d2-d4614802adb4");
        assert_eq!(
            event.change,
            Change::Started {
                origin: Origin::Autoshift,
                zone: "use1-az2".into()
            }
        );
        let cases = [
            ("Autoshift Completed", Origin::Autoshift, false),
            ("FIS Experiment Autoshift In Progress", Origin::FisExperiment, true),
            ("FIS Experiment Autoshift Canceled", Origin::FisExperiment, false),
            ("Practice Run Started", Origin::PracticeRun, true),
            ("Practice Run Interrupted", Origin::PracticeRun, false),
        ];
        for (detail_type, origin, started) in cases {
            let zone = "use1-az2".to_owned();
            let want = if started {
                Change::Started { origin, zone }
            } else {
                Change::Ended { origin, zone }
            };
            assert_eq!(
                parse(&with(detail_type, "use1-az2"), "us-east-1")
                    .expect(detail_type)
                    .change,
                want
            );
        }
        // A practice run's outcome carries an object in `data`, not a string.
        let interrupted = with("Practice Run Failed", "use1-az2")
            .replace(r#""data": """#, r#""data": {"additionalFailureInfo": "blocked"}"#);
        assert!(parse(&interrupted, "us-east-1").is_ok());
    }

    #[test]
    fn manual_shifts_are_read_and_not_followed() {
        let event = parse(&with("Manual Shift Started", "use1-az2"), "us-east-1").expect("an event");
        assert_eq!(
            event.change,
            Change::Other {
                detail_type: "Manual Shift Started".into()
            }
        );
    }

    #[test]
    fn an_event_inside_an_sns_notification_is_read() {
        let body = serde_json::json!({"Type": "Notification", "MessageId": "m-1", "Message": STARTED}).to_string();
        assert_eq!(parse(&body, "us-east-1"), parse(STARTED, "us-east-1"));
        let confirmation = serde_json::json!({"Type": "SubscriptionConfirmation", "Message": "confirm"}).to_string();
        assert!(matches!(parse(&confirmation, "us-east-1"), Err(Rejected::Foreign(_))));
    }

    #[test]
    fn refuses_what_is_not_this_watchers() {
        assert!(matches!(parse("not json", "us-east-1"), Err(Rejected::Malformed(_))));
        assert!(matches!(parse("{}", "us-east-1"), Err(Rejected::Malformed(_))));
        let other_source = STARTED.replace("aws.arc-zonal-shift", "aws.health");
        assert!(matches!(parse(&other_source, "us-east-1"), Err(Rejected::Foreign(_))));
        assert!(matches!(parse(STARTED, "eu-west-1"), Err(Rejected::Foreign(_))));
        // A zone of another region, or no zone, drives nothing.
        let elsewhere = with("Autoshift In Progress", "euw1-az1");
        assert!(matches!(parse(&elsewhere, "us-east-1"), Err(Rejected::Malformed(_))));
        let nowhere = STARTED.replace(r#""awayFrom": "use1-az2", "#, "");
        assert!(matches!(parse(&nowhere, "us-east-1"), Err(Rejected::Malformed(_))));
    }

    proptest! {
        /// Any text at all is judged, never a panic; what is accepted as a start or an end names
        /// an AZ ID of the watcher's region, and every reason is one printable line.
        #[test]
        fn any_body_is_judged(body in any::<String>()) {
            check(&body);
        }

        /// Events with any detail type, zone, id and region: the same.
        #[test]
        fn any_event_is_judged(
            detail_type in prop_oneof![Just("Autoshift In Progress".to_owned()), Just("Autoshift Completed".to_owned()), any::<String>()],
            zone in prop_oneof![Just("use1-az2".to_owned()), "[a-z0-9-]{0,24}", any::<String>()],
            id in any::<String>(),
            region in prop_oneof![Just("us-east-1".to_owned()), any::<String>()],
            wrapped in any::<bool>(),
        ) {
            let event = serde_json::json!({
                "id": id, "detail-type": detail_type, "source": SOURCE, "region": region,
                "detail": {"metadata": {"awayFrom": zone}},
            })
            .to_string();
            let body = if wrapped {
                serde_json::json!({"Type": "Notification", "Message": event}).to_string()
            } else {
                event
            };
            check(&body);
        }
    }

    fn check(body: &str) {
        match parse(body, "us-east-1") {
            Ok(event) => {
                assert!(!event.id.is_empty() && !event.id.chars().any(char::is_control));
                match event.change {
                    Change::Started { zone, .. } | Change::Ended { zone, .. } => {
                        assert_eq!(
                            crate::model::topology::region_of_az_id(&zone).as_deref(),
                            Some("us-east-1")
                        );
                    }
                    Change::Other { detail_type } => assert!(!detail_type.chars().any(char::is_control)),
                }
            }
            Err(rejected) => assert!(!rejected.to_string().chars().any(char::is_control)),
        }
    }
}
