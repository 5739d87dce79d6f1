//! What azevac does to a node, as the journal keeps it: the kind's typed actions. `recover` undoes
//! exactly these and nothing else.

use serde::{Deserialize, Serialize};

/// One change azevac made to a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A taint azevac added (recover removes the taint of that key).
    Taint {
        /// The taint's key ([`super::TAINT_KEY`]).
        key: String,
        /// Its value: the AZ ID.
        value: String,
        /// `NoExecute` or `NoSchedule`.
        effect: String,
    },
    /// A cordon azevac made (recover uncordons).
    Cordon,
    /// A drain of a node azevac did not cordon: its pods were evicted, nothing to undo.
    Drain,
}

impl Action {
    /// azevac's taint on a node of `az_id`, with `effect`.
    pub fn taint(az_id: &str, effect: &str) -> Action {
        Action::Taint {
            key: super::TAINT_KEY.to_owned(),
            value: az_id.to_owned(),
            effect: effect.to_owned(),
        }
    }
}

impl crate::model::action::Action for Action {
    /// As the plan has always shown them: `taint:KEY=VALUE:EFFECT`, `cordon`, `drain`.
    fn describe(&self) -> String {
        match self {
            Action::Taint { key, value, effect } => format!("taint:{key}={value}:{effect}"),
            Action::Cordon => "cordon".to_owned(),
            Action::Drain => "drain".to_owned(),
        }
    }

    /// Reads the strings azevac wrote into records before journal format 2: `taint:KEY=VALUE:EFFECT`,
    /// `cordon`, `drain`.
    fn legacy(text: &str) -> Option<Action> {
        match text {
            "cordon" => Some(Action::Cordon),
            "drain" => Some(Action::Drain),
            _ => {
                let (taint, effect) = text.strip_prefix("taint:")?.rsplit_once(':')?;
                let (key, value) = taint.split_once('=')?;
                (!key.is_empty() && !effect.is_empty()).then(|| Action::Taint {
                    key: key.to_owned(),
                    value: value.to_owned(),
                    effect: effect.to_owned(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::action::{encode, Action as _};

    #[test]
    fn the_strings_written_before_format_2_read_as_their_actions() {
        assert_eq!(
            Action::legacy("taint:azevac.io/evacuated=use1-az2:NoExecute"),
            Some(Action::taint("use1-az2", "NoExecute"))
        );
        assert_eq!(
            Action::legacy("taint:azevac.io/evacuated=use1-az2:NoSchedule"),
            Some(Action::taint("use1-az2", "NoSchedule"))
        );
        assert_eq!(Action::legacy("cordon"), Some(Action::Cordon));
        assert_eq!(Action::legacy("drain"), Some(Action::Drain));
        for other in ["uncordon", "taint:", "taint:azevac.io/evacuated", "annotate:x=true", ""] {
            assert_eq!(Action::legacy(other), None, "{other}");
        }
    }

    #[test]
    fn the_plan_shows_what_it_always_showed_and_the_journal_holds_json() {
        let actions = [Action::taint("use1-az2", "NoSchedule"), Action::Cordon];
        assert_eq!(
            crate::model::action::describe(&actions),
            ["taint:azevac.io/evacuated=use1-az2:NoSchedule", "cordon"]
        );
        assert_eq!(
            encode(&actions),
            [
                r#"{"taint":{"key":"azevac.io/evacuated","value":"use1-az2","effect":"NoSchedule"}}"#,
                r#""cordon""#
            ]
        );
        for action in actions {
            assert_eq!(Action::legacy(&action.describe()), Some(action));
        }
    }
}
