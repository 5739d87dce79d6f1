//! `--log-format json`: what a run does, as one JSON object per line on stderr, for the incident
//! timeline (a log shipper, `jq`, a ticket). Every line azevac itself writes to stderr goes through
//! here ([`say!`](crate::say)), and the run's timeline — run started, each line planned, each line
//! changed / failed / skipped, run ended — is emitted by the engine through one [`Timeline`], never
//! by the plugins. With `--log-format text` (the default) the timeline is silent and the lines are
//! printed as they always were.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use crate::model::{Audit, Command, Item, Plan, Status};

/// How azevac writes to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON object per line: `timestamp` (RFC 3339, UTC), `level`, `event`, and the event's fields.
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Choose the format, once, before anything is written (the binary does this).
pub fn init(format: LogFormat) {
    let _ = FORMAT.set(format);
}

/// Whether stderr carries JSON lines.
pub fn json() -> bool {
    FORMAT.get() == Some(&LogFormat::Json)
}

/// Write one event line: `{"timestamp":..,"level":..,"event":..,...fields}`.
fn emit(level: &str, event: &str, fields: serde_json::Value) {
    let mut object = serde_json::Map::new();
    object.insert(
        "timestamp".into(),
        humantime::format_rfc3339_millis(SystemTime::now()).to_string().into(),
    );
    object.insert("level".into(), level.into());
    object.insert("event".into(), event.into());
    if let serde_json::Value::Object(fields) = fields {
        object.extend(fields);
    }
    let line = serde_json::Value::Object(object).to_string();
    // One write per line, so that lines from concurrent tasks never interleave.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A line for the operator on stderr: as it is with `--log-format text`, as a `message` event
/// (level from its `azevac: warning:` / `azevac: error:` prefix) with `--log-format json`.
pub fn say(text: &str) {
    if !json() {
        eprintln!("{text}");
        return;
    }
    let level = if text.starts_with("azevac: error:") {
        "ERROR"
    } else if text.starts_with("azevac: warning:") {
        "WARN"
    } else {
        "INFO"
    };
    emit(level, "message", serde_json::json!({ "message": text }));
}

/// An event of the run besides its timeline's (a recovery's waves, its alarms), with
/// `--log-format json`; silent with text, where the operator reads the line [`say`] printed.
pub fn note(level: &str, event: &str, fields: serde_json::Value) {
    if json() {
        emit(level, event, fields);
    }
}

/// `eprintln!` for azevac's own lines: through [`say`], so that `--log-format json` keeps stderr JSON.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::process::events::say(&format!($($arg)*))
    };
}

/// A line's fields; a failed line's also its `failure` (stage, record, error), as in `--output json`.
fn line_fields(run_id: &str, item: &Item) -> serde_json::Value {
    let mut fields = serde_json::json!({
        "run_id": run_id,
        "type": item.resource_type,
        "resource": item.resource,
        "name": item.name,
        "az_id": item.az_id,
        "status": item.status.as_str(),
        "reason": item.reason,
    });
    if let (Some(failure), Some(fields)) = (&item.failure, fields.as_object_mut()) {
        fields.insert("failure".into(), serde_json::json!(failure));
    }
    fields
}

/// One run's timeline: emits `run_started` and a `line_planned` per line when made, then a
/// `line_changed`, `line_failed` or `line_skipped` whenever a line reaches that status, and
/// `run_ended` with the totals. Silent with `--log-format text`.
pub struct Timeline {
    run_id: String,
    started: Instant,
    seen: Mutex<Vec<Status>>,
    /// Whether this timeline is the whole run's (else one wave's: its lines only).
    whole: bool,
}

impl Timeline {
    /// Start the timeline of a run about to carry `plan` out; `whole`: the run's own (else one
    /// wave's, whose lines the run's `run_started` already listed).
    pub fn start(plan: &Plan, audit: &Audit, whole: bool) -> Timeline {
        let timeline = Timeline {
            run_id: audit.run_id.clone(),
            started: Instant::now(),
            seen: Mutex::new(plan.items.iter().map(|i| i.status).collect()),
            whole,
        };
        if json() && whole {
            let command = match plan.command {
                Command::Evacuate => "evacuate",
                Command::Recover => "recover",
            };
            emit(
                "INFO",
                "run_started",
                serde_json::json!({
                    "run_id": audit.run_id,
                    "command": command,
                    "region": plan.region,
                    "az_id": plan.az_id,
                    "caller": audit.caller,
                    "reason": audit.reason,
                    "planned": plan.count(Status::Planned),
                    "skipped": plan.count(Status::Skipped),
                }),
            );
            for item in &plan.items {
                emit("INFO", "line_planned", line_fields(&audit.run_id, item));
            }
        }
        timeline
    }

    /// Emit an event for every line whose status changed since the last call.
    pub fn update(&self, plan: &Plan) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        for (i, item) in plan.items.iter().enumerate() {
            if seen.get(i) == Some(&item.status) {
                continue;
            }
            if let Some(slot) = seen.get_mut(i) {
                *slot = item.status;
            }
            let (level, event) = match item.status {
                Status::Done => ("INFO", "line_changed"),
                Status::Failed => ("ERROR", "line_failed"),
                Status::Skipped => ("WARN", "line_skipped"),
                Status::Planned => continue,
            };
            if json() {
                emit(level, event, line_fields(&self.run_id, item));
            }
        }
    }

    /// Take every line's status as emitted already (a wave's own timeline emitted them).
    pub fn seen(&self, plan: &Plan) {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = plan.items.iter().map(|i| i.status).collect();
        }
    }

    /// The last line events, then `run_ended` with the totals and the wall time.
    pub fn end(&self, plan: &Plan) {
        self.update(plan);
        if json() && self.whole {
            emit(
                "INFO",
                "run_ended",
                serde_json::json!({
                    "run_id": self.run_id,
                    "done": plan.count(Status::Done),
                    "skipped": plan.count(Status::Skipped),
                    "failed": plan.count(Status::Failed),
                    "problems": plan.problems,
                    "wall_ms": self.started.elapsed().as_millis() as u64,
                }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Failure, RecordFate, Stage};

    #[test]
    fn a_failed_lines_event_names_its_stage_and_record() {
        let mut item = Item::new("asg", "arn:asg/web", "web", "use1-az2");
        let planned = line_fields("run-1", &item);
        assert!(planned.get("failure").is_none(), "{planned}");
        item.fail(Failure::new(Stage::Act, RecordFate::Intent, "HTTP 500"));
        let failed = line_fields("run-1", &item);
        assert_eq!(failed["failure"]["stage"], "act", "{failed}");
        assert_eq!(failed["failure"]["record"], "intent", "{failed}");
        assert_eq!(failed["reason"], item.reason.as_deref().unwrap_or_default(), "{failed}");
    }
}
