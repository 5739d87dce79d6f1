//! What a database failover journals, as its own type: the writer (or a replication group's
//! primary) before the evacuation, which `--failback` moves it back to, and each setting azevac
//! turned off on the way, which any later run turns back on before the record goes.

use serde::{Deserialize, Serialize};

/// One journal action of a database failover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// An RDS database's writer before the evacuation, in the evacuated zone.
    Writer {
        /// The DB instance identifier.
        id: String,
        /// Its AZ ID.
        az_id: String,
    },
    /// An ElastiCache replication group's primary node before the evacuation.
    Primary {
        /// The node (cache cluster) ID.
        node: String,
        /// Its AZ ID.
        az_id: String,
    },
    /// azevac turned this setting of a replication group off (written ahead of turning it off);
    /// kept until a run has turned it back on and the record goes.
    TurnedOff {
        /// Which one.
        setting: Setting,
    },
}

/// A replication group's setting that ElastiCache refuses a chosen promotion under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// `AutomaticFailoverEnabled`.
    AutomaticFailover,
    /// `MultiAZEnabled`.
    MultiAz,
}

impl Setting {
    /// In the operator's words.
    fn words(self) -> &'static str {
        match self {
            Setting::AutomaticFailover => "automatic failover",
            Setting::MultiAz => "Multi-AZ",
        }
    }

    /// Its name in the strings written before journal format 2 (`turned-off:<name>`).
    fn legacy_name(self) -> &'static str {
        match self {
            Setting::AutomaticFailover => "automatic-failover",
            Setting::MultiAz => "multi-az",
        }
    }
}

impl crate::model::action::Action for Action {
    fn describe(&self) -> String {
        match self {
            Action::Writer { id, az_id } => format!("writer: {id} in {az_id}"),
            Action::Primary { node, az_id } => format!("primary: {node} in {az_id}"),
            Action::TurnedOff { setting } => format!("turned off: {}", setting.words()),
        }
    }

    /// Reads the strings azevac wrote before journal format 2 (records in operators' tables):
    /// `writer:<id>@<az-id>`, `primary:<node>@<az-id>`, `turned-off:automatic-failover` and
    /// `turned-off:multi-az`.
    fn legacy(text: &str) -> Option<Self> {
        let placed = |rest: &str| rest.split_once('@').map(|(id, az)| (id.to_owned(), az.to_owned()));
        if let Some(rest) = text.strip_prefix("writer:") {
            return placed(rest).map(|(id, az_id)| Action::Writer { id, az_id });
        }
        if let Some(rest) = text.strip_prefix("primary:") {
            return placed(rest).map(|(node, az_id)| Action::Primary { node, az_id });
        }
        let name = text.strip_prefix("turned-off:")?;
        [Setting::AutomaticFailover, Setting::MultiAz]
            .into_iter()
            .find(|s| s.legacy_name() == name)
            .map(|setting| Action::TurnedOff { setting })
    }
}

/// The writer (or primary node) the actions say was in the zone before the evacuation: `(id,
/// az_id)`, the first one journalled.
pub fn journalled_writer(actions: &[Action]) -> Option<(&str, &str)> {
    actions.iter().find_map(|a| match a {
        Action::Writer { id, az_id } => Some((id.as_str(), az_id.as_str())),
        Action::Primary { node, az_id } => Some((node.as_str(), az_id.as_str())),
        Action::TurnedOff { .. } => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::action::Action as _;

    /// Issue 32: every string azevac wrote before journal format 2 reads as the action it meant,
    /// and nothing else does.
    #[test]
    fn issue_32_old_strings_parse_to_their_actions() {
        let cases = [
            (
                "writer:orders-1@use1-az2",
                Action::Writer {
                    id: "orders-1".into(),
                    az_id: "use1-az2".into(),
                },
            ),
            (
                "primary:sessions-001@use1-az2",
                Action::Primary {
                    node: "sessions-001".into(),
                    az_id: "use1-az2".into(),
                },
            ),
            (
                "turned-off:automatic-failover",
                Action::TurnedOff {
                    setting: Setting::AutomaticFailover,
                },
            ),
            (
                "turned-off:multi-az",
                Action::TurnedOff {
                    setting: Setting::MultiAz,
                },
            ),
        ];
        for (old, action) in cases {
            assert_eq!(Action::legacy(old), Some(action.clone()), "{old}");
            assert_eq!(crate::model::action::decode::<Action>(old), Ok(action), "{old}");
        }
        for other in [
            "writer:orders-1",
            "turned-off:backups",
            "cordon",
            "fail back writer to orders-1 (use1-az2)",
        ] {
            assert_eq!(Action::legacy(other), None, "{other}");
        }
    }

    #[test]
    fn actions_are_journalled_as_json_and_shown_in_words() {
        let actions = [
            Action::Primary {
                node: "s-001".into(),
                az_id: "use1-az2".into(),
            },
            Action::TurnedOff {
                setting: Setting::MultiAz,
            },
        ];
        assert_eq!(
            crate::model::action::encode(&actions),
            [
                r#"{"primary":{"node":"s-001","az_id":"use1-az2"}}"#,
                r#"{"turned_off":{"setting":"multi_az"}}"#
            ]
        );
        assert_eq!(
            crate::model::action::describe(&actions),
            ["primary: s-001 in use1-az2", "turned off: Multi-AZ"]
        );
        assert_eq!(journalled_writer(&actions), Some(("s-001", "use1-az2")));
        assert_eq!(journalled_writer(&actions[1..]), None);
    }
}
