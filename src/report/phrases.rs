//! The one table of phrases for a failed line: a [`Failure`] (stage, error, what became of its
//! record) in the operator's words. It is `Failure`'s `Display`, so that the floor can fill a line's
//! `reason` from it without naming this layer; no other module words a stage or a record's fate.

use std::fmt;

use crate::model::{Failure, RecordFate, Stage};

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = &self.error;
        match (self.stage, self.record) {
            (Stage::Internal, _) => write!(f, "internal: {error}")?,
            (Stage::HeldBack, RecordFate::Kept) => write!(
                f,
                "not changed: {error}; journal record kept, run recover again once it has"
            )?,
            (Stage::HeldBack, _) => write!(f, "not changed: {error}")?,
            (Stage::Read, _) => write!(f, "could not read it again under the lock ({error}); nothing changed")?,
            (Stage::Act, RecordFate::Kept) => match &self.carried_by {
                Some(zone) => write!(
                    f,
                    "not put back: the one change of this resource (with its record of {zone}) failed: {error}; \
                     journal record kept"
                )?,
                None => write!(f, "{error}; journal record kept")?,
            },
            (Stage::Act, RecordFate::Intent) => {
                let taken = match self.taken.join(", ") {
                    taken if taken.is_empty() => String::new(),
                    taken => format!(" with {taken}"),
                };
                write!(
                    f,
                    "{error}; journal record kept in state intent{taken} (recover reconciles it)"
                )?
            }
            (Stage::Act, RecordFate::InFlight) => write!(
                f,
                "{error}; the change may still land, so its journal record is kept and its lock left to run out \
                 (recover reconciles it once the lock is free)"
            )?,
            (Stage::JournalAhead | Stage::Act, RecordFate::Untouched) => write!(f, "{error}; nothing changed")?,
            (Stage::JournalDone, RecordFate::Intent) => write!(
                f,
                "{error}; changed, but the journal record stays in state intent (recover reconciles it)"
            )?,
            (Stage::JournalDone, RecordFate::Kept) => write!(f, "{error}; put back, but the journal record was kept")?,
            (Stage::JournalDone, RecordFate::Stale) => write!(
                f,
                "nothing changed, but the journal could not be brought back ({error}); recover reconciles it"
            )?,
            (Stage::Settle, _) => write!(f, "changed and journalled, but {error}")?,
            // The kind's own account (planning, read-back, a problem it found after a change), or a
            // pairing no caller makes: the error as it is.
            _ => write!(f, "{error}")?,
        }
        if let Some(secs) = self.read_back_secs {
            write!(f, " (read back for {secs}s)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAGES: [Stage; 9] = [
        Stage::Plan,
        Stage::HeldBack,
        Stage::JournalAhead,
        Stage::Read,
        Stage::Act,
        Stage::ReadBack,
        Stage::JournalDone,
        Stage::Settle,
        Stage::Internal,
    ];
    const FATES: [RecordFate; 6] = [
        RecordFate::Untouched,
        RecordFate::Kept,
        RecordFate::Intent,
        RecordFate::InFlight,
        RecordFate::Done,
        RecordFate::Stale,
    ];

    fn said(stage: Stage, record: RecordFate, error: &str) -> String {
        Failure::new(stage, record, error).to_string()
    }

    #[test]
    fn every_stage_and_fate_renders_one_line_with_its_error() {
        for stage in STAGES {
            for record in FATES {
                let words = said(stage, record, "Boom (HTTP 500)");
                assert!(words.contains("Boom (HTTP 500)"), "{stage:?} {record:?}: {words}");
                assert!(!words.contains('\n'), "{stage:?} {record:?}: {words}");
            }
        }
    }

    /// The sentences azevac printed before failures were values, word for word.
    #[test]
    fn the_table_says_what_the_lines_said_before() {
        use RecordFate::*;
        use Stage::*;
        let e = "DynamoDB PutItem: HTTP 500";
        let cases: Vec<(Failure, String)> = vec![
            (
                Failure::internal(Untouched, "no plugin for asg"),
                "internal: no plugin for asg".into(),
            ),
            (
                Failure::new(JournalAhead, Untouched, e),
                format!("{e}; nothing changed"),
            ),
            (
                Failure::new(
                    Act,
                    Untouched,
                    "the lock's lease ran out before the change (renewals failed)",
                ),
                "the lock's lease ran out before the change (renewals failed); nothing changed".into(),
            ),
            (
                Failure::new(Read, Untouched, e),
                format!("could not read it again under the lock ({e}); nothing changed"),
            ),
            (Failure::new(Act, Kept, e), format!("{e}; journal record kept")),
            (
                Failure::new(Act, Kept, e).carried_by("use1-az1"),
                format!(
                    "not put back: the one change of this resource (with its record of use1-az1) failed: {e}; \
                     journal record kept"
                ),
            ),
            (
                Failure::new(Act, Intent, e),
                format!("{e}; journal record kept in state intent (recover reconciles it)"),
            ),
            (
                Failure::new(Act, Intent, e).taken(vec!["subnet-1".into(), "subnet-2".into()]),
                format!("{e}; journal record kept in state intent with subnet-1, subnet-2 (recover reconciles it)"),
            ),
            (
                Failure::new(
                    Act,
                    InFlight,
                    "given up in flight: interrupted, and still running 30s later",
                ),
                "given up in flight: interrupted, and still running 30s later; the change may still land, so its \
                 journal record is kept and its lock left to run out (recover reconciles it once the lock is free)"
                    .into(),
            ),
            (
                Failure::new(JournalDone, Intent, e),
                format!("{e}; changed, but the journal record stays in state intent (recover reconciles it)"),
            ),
            (
                Failure::new(JournalDone, Kept, e),
                format!("{e}; put back, but the journal record was kept"),
            ),
            (
                Failure::new(JournalDone, Stale, e),
                format!("nothing changed, but the journal could not be brought back ({e}); recover reconciles it"),
            ),
            (
                Failure::new(Settle, Done, "not healthy after 60s"),
                "changed and journalled, but not healthy after 60s".into(),
            ),
            (
                Failure::new(
                    HeldBack,
                    Untouched,
                    "it waits for lb-1 first, which did not happen (see that line)",
                ),
                "not changed: it waits for lb-1 first, which did not happen (see that line)".into(),
            ),
            (
                Failure::new(
                    HeldBack,
                    Kept,
                    "capacity did not come back into the zone (see the failed lines and problems)",
                ),
                "not changed: capacity did not come back into the zone (see the failed lines and problems); journal \
                 record kept, run recover again once it has"
                    .into(),
            ),
            (
                Failure::plan("cannot list the NodePools (403)"),
                "cannot list the NodePools (403)".into(),
            ),
            (
                Failure {
                    read_back_secs: Some(3),
                    ..Failure::read_back("read back shows subnets [a], expected [b]")
                },
                "read back shows subnets [a], expected [b] (read back for 3s)".into(),
            ),
        ];
        for (failure, before) in cases {
            assert_eq!(failure.to_string(), before, "{failure:?}");
        }
    }

    #[test]
    fn the_json_names_stage_and_record_in_kebab_case() {
        let json = serde_json::to_value(Failure::new(Stage::JournalDone, RecordFate::InFlight, "x")).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"stage": "journal-done", "record": "in-flight", "error": "x"})
        );
    }
}
