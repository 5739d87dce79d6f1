//! Typed journal actions: what a kind did to a resource besides its subnets (a taint, a cordon, a
//! route's original target, a zonal shift's ID), stored in the record's `actions` as the kind's own
//! serde type, one JSON document per action, and read back with one accessor,
//! [`Record::actions_as`](crate::model::Record::actions_as). No kind encodes or parses a string format by hand any more.
//!
//! Records written before this format (journal format 1) hold each kind's hand-made strings
//! (`taint:KEY=VALUE:EFFECT`, `cordon`, `original:DEST=TARGET`...). They stay readable for good:
//! operators' tables hold them, and recover must put back what they say. Each kind reads its old
//! strings in [`Action::legacy`], and nowhere else. A record is stamped with the format of the
//! azevac that last wrote it ([`FORMAT`]); a record of a newer format is refused, never misread
//! ([`crate::journal`] checks it where it reads items).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The journal format this version writes, and the newest it reads. 1: actions as hand-made
/// strings (no `format` attribute); 2: actions as JSON documents of each kind's action type.
pub const FORMAT: u64 = 2;

/// One kind's journal action.
pub trait Action: Serialize + DeserializeOwned + PartialEq + Clone {
    /// The action in the operator's words, for plan lines and `status`.
    fn describe(&self) -> String;

    /// The action from a string written by azevac before journal format 2 (`None`: not one of this
    /// kind's old strings).
    fn legacy(text: &str) -> Option<Self>;
}

/// The kinds that journal no actions (subnets are all they take).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum NoAction {}

impl Action for NoAction {
    fn describe(&self) -> String {
        match *self {}
    }

    fn legacy(_: &str) -> Option<Self> {
        None
    }
}

/// The journal's encoding of `actions`: one JSON document each.
pub fn encode<A: Action>(actions: &[A]) -> Vec<String> {
    actions.iter().map(encode_one).collect()
}

/// The journal's encoding of one action.
pub fn encode_one<A: Action>(action: &A) -> String {
    // Serialising a plain enum of strings and numbers cannot fail; an empty string would be
    // refused on reading, never misread.
    serde_json::to_string(action).unwrap_or_default()
}

/// The operator's words for `actions`.
pub fn describe<A: Action>(actions: &[A]) -> Vec<String> {
    actions.iter().map(Action::describe).collect()
}

/// One stored action, read as `A`: a JSON document of `A`, or one of its old strings. A JSON
/// document that is not an `A` (written by a newer azevac, or damaged) is refused: `Err` says why.
pub fn decode<A: Action>(text: &str) -> std::result::Result<A, String> {
    match serde_json::from_str::<A>(text) {
        Ok(action) => Ok(action),
        // Old strings are never JSON (`cordon`, `taint:...`): anything that is, is a newer action.
        Err(e) if serde_json::from_str::<serde_json::Value>(text).is_ok() => Err(format!(
            "action {} is not one this azevac knows ({e})",
            crate::model::text::clean(text)
        )),
        Err(_) => A::legacy(text).ok_or_else(|| {
            format!(
                "action {:?} is not one this azevac knows",
                crate::model::text::clean(text)
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Record;

    #[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Sample {
        Cordon,
        Taint { key: String },
    }

    impl Action for Sample {
        fn describe(&self) -> String {
            match self {
                Sample::Cordon => "cordon".into(),
                Sample::Taint { key } => format!("taint {key}"),
            }
        }

        fn legacy(text: &str) -> Option<Self> {
            match text {
                "cordon" => Some(Sample::Cordon),
                _ => text.strip_prefix("taint:").map(|key| Sample::Taint { key: key.into() }),
            }
        }
    }

    fn record(actions: &[&str]) -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: "c/node-1".into(),
            resource_type: "eks".into(),
            removed_subnets: vec![],
            state: crate::model::State::Done,
            version: 1,
            resource_name: None,
            original_subnets: vec![],
            actions: actions.iter().map(|a| a.to_string()).collect(),
            run_id: None,
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        }
    }

    #[test]
    fn actions_round_trip_and_old_strings_read_the_same() {
        let typed = vec![Sample::Taint { key: "k".into() }, Sample::Cordon];
        let encoded = encode(&typed);
        assert_eq!(encoded, [r#"{"taint":{"key":"k"}}"#, r#""cordon""#]);
        let refs: Vec<&str> = encoded.iter().map(String::as_str).collect();
        assert_eq!(record(&refs).actions_as::<Sample>().expect("new"), typed);
        assert_eq!(
            record(&["taint:k", "cordon"]).actions_as::<Sample>().expect("old"),
            typed
        );
        // A record widened by both versions holds one action twice: read once.
        let mixed = record(&["cordon", r#""cordon""#]);
        assert_eq!(mixed.actions_as::<Sample>().expect("mixed"), [Sample::Cordon]);
    }

    #[test]
    fn an_action_this_version_does_not_know_is_refused() {
        for unknown in [r#"{"evict":{"pod":"p"}}"#, r#""uncordon""#, "garbage", ""] {
            let err = record(&[unknown])
                .actions_as::<Sample>()
                .expect_err(unknown)
                .to_string();
            assert!(
                err.contains("not one this azevac knows") && !err.contains('\n'),
                "{err}"
            );
        }
        assert!(record(&["anything"]).actions_as::<NoAction>().is_err());
    }
}
