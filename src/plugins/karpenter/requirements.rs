//! A NodePool's requirements, as far as the zone goes (pure): which zones they let Karpenter place
//! nodes in, what excluding one zone takes (merged with the NodePool's own requirement on that key),
//! and making and taking back that change on the requirements as stored, every other field kept.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::Action;
use crate::model::topology::Zone;
use crate::plugins::kube::{ZONE_ID_LABEL, ZONE_NAME_LABEL};
use crate::{Error, Result};

/// One requirement of `spec.template.spec.requirements`, as far as azevac reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirement {
    /// The node label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`.
    pub operator: String,
    /// The values (`In`/`NotIn`: at least one).
    #[serde(default)]
    pub values: Vec<String>,
    /// At least this many values must stay (`In`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_values: Option<usize>,
}

impl Requirement {
    /// Whether a node whose label `key` has `value` satisfies this requirement.
    fn admits(&self, value: &str) -> bool {
        match self.operator.as_str() {
            "In" => self.values.iter().any(|v| v == value),
            "NotIn" => !self.values.iter().any(|v| v == value),
            "DoesNotExist" => false,
            // Exists; Gt/Lt on a zone label would be meaningless: they do not narrow zones here.
            _ => true,
        }
    }
}

/// The requirements of a NodePool as stored (every field kept) and as read.
pub fn requirements(pool: &Value) -> Result<(Vec<Value>, Vec<Requirement>)> {
    let raw = raw_requirements(pool);
    let parsed = raw
        .iter()
        .map(|r| serde_json::from_value(r.clone()))
        .collect::<std::result::Result<Vec<Requirement>, _>>()
        .map_err(|e| Error::BadInput(format!("a NodePool requirement does not parse ({e}); nothing changed")))?;
    Ok((raw, parsed))
}

/// A NodePool's requirements as the API server holds them. Reverting works on these alone, so that
/// a requirement azevac cannot parse (a newer operator, a typo) never hides what azevac added.
pub fn raw_requirements(pool: &Value) -> Vec<Value> {
    pool["spec"]["template"]["spec"]["requirements"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The zones of the region a NodePool with these requirements can place nodes in.
pub fn placeable<'z>(requirements: &[Requirement], zones: &'z [Zone]) -> Vec<&'z Zone> {
    zones
        .iter()
        .filter(|z| {
            requirements.iter().all(|r| match r.key.as_str() {
                ZONE_ID_LABEL => r.admits(&z.id),
                ZONE_NAME_LABEL => r.admits(&z.name),
                _ => true,
            })
        })
        .collect()
}

/// What excluding the zone from one NodePool takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    /// This change.
    Change(Action),
    /// Nothing: the NodePool cannot place nodes in the zone.
    Excluded,
    /// Nothing may be done, for this reason (the zone is the NodePool's only one...).
    Refused(String),
}

/// What excluding `zone` from a NodePool with these requirements means (pure). The key the
/// NodePool already speaks in is used (zone IDs, else zone names; zone IDs when it names neither),
/// and the NodePool's own requirement on that key is merged with: an `In` loses the zone, a `NotIn`
/// gains it; only a NodePool with neither gets a requirement of azevac's own.
pub fn exclusion(requirements: &[Requirement], zone: &Zone, zones: &[Zone]) -> Exclusion {
    let now = placeable(requirements, zones);
    if !now.iter().any(|z| z.id == zone.id) {
        return Exclusion::Excluded;
    }
    if now.len() == 1 {
        return Exclusion::Refused(format!(
            "the NodePool can place nodes only in {} ({}): excluding it would leave the NodePool no zone",
            zone.id, zone.name
        ));
    }
    let speaks = |key: &str| requirements.iter().any(|r| r.key == key);
    let (key, value) = if speaks(ZONE_ID_LABEL) || !speaks(ZONE_NAME_LABEL) {
        (ZONE_ID_LABEL, zone.id.as_str())
    } else {
        (ZONE_NAME_LABEL, zone.name.as_str())
    };
    let (key, value) = (key.to_owned(), value.to_owned());
    let on_key = |op: &str| requirements.iter().find(|r| r.key == key && r.operator == op);
    if let Some(within) = requirements
        .iter()
        .find(|r| r.key == key && r.operator == "In" && r.values.contains(&value))
    {
        if let Some(min) = within.min_values.filter(|&m| within.values.len() <= m) {
            return Exclusion::Refused(format!(
                "{key} In requires at least {min} values (minValues): taking {value} out would break it"
            ));
        }
        let at = within.values.iter().position(|v| *v == value).unwrap_or_default();
        return Exclusion::Change(Action::TakenFromIn { key, value, at });
    }
    if on_key("NotIn").is_some() {
        return Exclusion::Change(Action::AddedToNotIn { key, value });
    }
    Exclusion::Change(Action::Appended { key, value })
}

/// The `values` of a stored requirement.
fn values_of(requirement: &Value) -> Vec<String> {
    serde_json::from_value(requirement["values"].clone()).unwrap_or_default()
}

fn is(requirement: &Value, key: &str, operator: &str) -> bool {
    requirement["key"] == json!(key) && requirement["operator"] == json!(operator)
}

/// Make `change` to the stored requirements; whether anything changed.
pub fn apply(change: &Action, raw: &mut Vec<Value>) -> bool {
    match change {
        Action::Appended { key, value } => {
            raw.push(json!({ "key": key, "operator": "NotIn", "values": [value] }));
            true
        }
        Action::AddedToNotIn { key, value } => match raw.iter_mut().find(|r| is(r, key, "NotIn")) {
            Some(r) => {
                let mut values = values_of(r);
                values.push(value.clone());
                r["values"] = json!(values);
                true
            }
            None => false,
        },
        Action::TakenFromIn { key, value, .. } => {
            match raw
                .iter_mut()
                .find(|r| is(r, key, "In") && values_of(r).contains(value))
            {
                Some(r) => {
                    let values: Vec<String> = values_of(r).into_iter().filter(|v| v != value).collect();
                    r["values"] = json!(values);
                    true
                }
                None => false,
            }
        }
        Action::Annotated => false,
    }
}

/// Take `change` back out of the stored requirements where it is still in place, leaving whatever
/// else changed since (other values added to azevac's requirement stay); whether anything changed.
pub fn revert(change: &Action, raw: &mut Vec<Value>) -> bool {
    match change {
        Action::Appended { key, value } | Action::AddedToNotIn { key, value } => {
            // An appended requirement is ours whole only while it holds just our value.
            let Some(at) = raw
                .iter()
                .position(|r| is(r, key, "NotIn") && values_of(r).contains(value))
            else {
                return false;
            };
            let values: Vec<String> = values_of(&raw[at]).into_iter().filter(|v| v != value).collect();
            if values.is_empty() {
                // A NotIn without values is invalid: the requirement held nothing but ours.
                raw.remove(at);
            } else {
                raw[at]["values"] = json!(values);
            }
            true
        }
        Action::TakenFromIn { key, value, at } => match raw.iter_mut().find(|r| is(r, key, "In")) {
            Some(r) if !values_of(r).contains(value) => {
                let mut values = values_of(r);
                values.insert((*at).min(values.len()), value.clone());
                r["values"] = json!(values);
                true
            }
            _ => false,
        },
        Action::Annotated => false,
    }
}
