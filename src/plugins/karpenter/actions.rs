//! What azevac does to a NodePool or to a node, as the journal keeps it: the kind's typed actions.
//! `recover` takes out exactly these, wherever they are still in place.

use serde::{Deserialize, Serialize};

use super::DO_NOT_DISRUPT;

/// One change azevac makes to a NodePool or to a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A requirement `KEY NotIn [VALUE]` of azevac's own, appended to the NodePool's.
    Appended {
        /// The label key.
        key: String,
        /// The zone's ID or name.
        value: String,
    },
    /// VALUE added to the NodePool's own `KEY NotIn` requirement.
    AddedToNotIn {
        /// The label key.
        key: String,
        /// The zone's ID or name.
        value: String,
    },
    /// VALUE taken out of the NodePool's own `KEY In` requirement, where it stood at `at`.
    TakenFromIn {
        /// The label key.
        key: String,
        /// The zone's ID or name.
        value: String,
        /// Its place in the values (recover puts it back there).
        at: usize,
    },
    /// The node annotation `karpenter.sh/do-not-disrupt: "true"`.
    Annotated,
}

impl crate::model::action::Action for Action {
    /// As the plan has always shown them: `requirement:KEY NotIn VALUE`, `notin-value:KEY=VALUE`,
    /// `in-value-removed:KEY=VALUE@AT`, `annotate:karpenter.sh/do-not-disrupt=true`.
    fn describe(&self) -> String {
        match self {
            Action::Appended { key, value } => format!("requirement:{key} NotIn {value}"),
            Action::AddedToNotIn { key, value } => format!("notin-value:{key}={value}"),
            Action::TakenFromIn { key, value, at } => format!("in-value-removed:{key}={value}@{at}"),
            Action::Annotated => format!("annotate:{DO_NOT_DISRUPT}=true"),
        }
    }

    /// Reads the strings azevac wrote into records before journal format 2 (the forms
    /// [`Action::describe`] shows).
    fn legacy(text: &str) -> Option<Action> {
        let pair = |rest: &str, sep: &str| {
            rest.split_once(sep)
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        };
        if let Some(rest) = text.strip_prefix("requirement:") {
            pair(rest, " NotIn ").map(|(key, value)| Action::Appended { key, value })
        } else if let Some(rest) = text.strip_prefix("notin-value:") {
            pair(rest, "=").map(|(key, value)| Action::AddedToNotIn { key, value })
        } else if let Some(rest) = text.strip_prefix("in-value-removed:") {
            rest.rsplit_once('@')
                .and_then(|(rest, at)| Some((pair(rest, "=")?, at.parse().ok()?)))
                .map(|((key, value), at)| Action::TakenFromIn { key, value, at })
        } else if text == format!("annotate:{DO_NOT_DISRUPT}=true") {
            Some(Action::Annotated)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::action::{encode, Action as _};

    #[test]
    fn the_strings_written_before_format_2_read_as_their_actions() {
        let read = [
            (
                "requirement:topology.k8s.aws/zone-id NotIn use1-az2",
                Action::Appended {
                    key: "topology.k8s.aws/zone-id".into(),
                    value: "use1-az2".into(),
                },
            ),
            (
                "notin-value:topology.kubernetes.io/zone=us-east-1c",
                Action::AddedToNotIn {
                    key: "topology.kubernetes.io/zone".into(),
                    value: "us-east-1c".into(),
                },
            ),
            (
                "in-value-removed:topology.kubernetes.io/zone=us-east-1c@1",
                Action::TakenFromIn {
                    key: "topology.kubernetes.io/zone".into(),
                    value: "us-east-1c".into(),
                    at: 1,
                },
            ),
            ("annotate:karpenter.sh/do-not-disrupt=true", Action::Annotated),
        ];
        for (text, action) in read {
            assert_eq!(Action::legacy(text), Some(action.clone()), "{text}");
            assert_eq!(action.describe(), text, "the plan shows what it always showed");
        }
        for other in [
            "taint:x",
            "cordon",
            "requirement:topology.k8s.aws/zone-id",
            "notin-value:=use1-az2",
            "in-value-removed:topology.k8s.aws/zone-id=use1-az2@first",
            "annotate:karpenter.sh/do-not-disrupt=false",
        ] {
            assert_eq!(
                Action::legacy(other),
                None,
                "another type's action fails the line: {other}"
            );
        }
    }

    #[test]
    fn the_journal_holds_json() {
        let actions = [
            Action::TakenFromIn {
                key: "k".into(),
                value: "v".into(),
                at: 2,
            },
            Action::Annotated,
        ];
        assert_eq!(
            encode(&actions),
            [r#"{"taken_from_in":{"key":"k","value":"v","at":2}}"#, r#""annotated""#]
        );
    }
}
