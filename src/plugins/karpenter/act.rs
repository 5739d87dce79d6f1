//! Carrying a NodePool's or a node's line out: the zone's exclusion computed again from the live
//! NodePool and written through the shared read-modify-write (journalled ahead), the node
//! annotation, and taking back exactly what a record says azevac did.

use std::sync::Mutex;

use serde_json::json;

use super::client::{is_not_found, pools_api, requirements_patch};
use super::decide::{annotation, Detail};
use super::requirements::{apply, exclusion, placeable, raw_requirements, requirements, revert, Exclusion};
use super::{Action, DO_NOT_DISRUPT};
use crate::journal::Guard;
use crate::model::action::{encode, Action as _};
use crate::model::{Item, Record};
use crate::plugins::kube::{read_modify_write, Cluster};
use crate::plugins::Acted;
use crate::{Error, Result};

/// The reads and writes of a NodePool, as errors name them.
const POOL_OPERATIONS: (&str, &str) = ("get nodepool", "patch nodepool");

/// Annotate the node `name` `karpenter.sh/do-not-disrupt`; the actions this run took.
pub async fn annotate(cluster: &Cluster, name: &str, record: &Record, held: &Guard<'_>) -> Result<Acted> {
    // Set by the attempt that wrote: whether this run is what annotated the node.
    let annotating = Mutex::new(false);
    let node = cluster
        .update_node(name, record.identity.as_ref(), held, |n| {
            let add = annotation(n).is_none();
            *annotating.lock().unwrap_or_else(|e| e.into_inner()) = add;
            add.then(|| {
                (
                    json!({ "metadata": { "annotations": { DO_NOT_DISRUPT: "true" } } }),
                    vec![Action::Annotated],
                )
            })
        })
        .await?
        .ok_or_else(|| Error::BadInput(format!("node {name} disappeared")))?;
    if annotation(&node) != Some("true") {
        return Err(read_back(format!("{DO_NOT_DISRUPT} is not \"true\" on {name}")));
    }
    let ours = *annotating.lock().unwrap_or_else(|e| e.into_inner());
    let done: &[Action] = if ours { &[Action::Annotated] } else { &[] };
    Ok(Acted {
        actions: Some(encode(done)),
        ..Acted::default()
    })
}

/// Exclude the line's zone from the NodePool `name`, the change computed again from the NodePool
/// as it is now; the actions this run took.
pub async fn exclude(cluster: &Cluster, name: &str, line: &Item, record: &Record, held: &Guard<'_>) -> Result<Acted> {
    let detail: Detail = line
        .target
        .as_ref()
        .ok_or_else(|| Error::Internal(format!("no planned state for {}", line.resource)))?
        .detail_as()?;
    // Set by the attempt that wrote: the change computed from that read.
    let made: Mutex<Option<Action>> = Mutex::new(None);
    let refused: Mutex<Option<String>> = Mutex::new(None);
    let api = pools_api(cluster);
    let pool = read_modify_write(&api, name, record.identity.as_ref(), POOL_OPERATIONS, held, |pool| {
        let data = serde_json::to_value(pool).unwrap_or_default();
        let (mut raw, parsed) = match requirements(&data) {
            Ok(found) => found,
            Err(e) => {
                *refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(crate::error::describe(&e));
                return None;
            }
        };
        let (change, why) = match exclusion(&parsed, &detail.zone, &detail.zones) {
            Exclusion::Change(change) if apply(&change, &mut raw) => (Some(change), None),
            Exclusion::Change(change) => (None, Some(format!("internal: {} did not apply", change.describe()))),
            Exclusion::Excluded => (None, None),
            Exclusion::Refused(why) => (None, Some(why)),
        };
        *refused.lock().unwrap_or_else(|e| e.into_inner()) = why;
        let patch = change
            .as_ref()
            .map(|change| (requirements_patch(raw), vec![change.clone()]));
        *made.lock().unwrap_or_else(|e| e.into_inner()) = change;
        patch
    })
    .await?
    .ok_or_else(|| Error::BadInput(format!("NodePool {name} disappeared")))?;
    if let Some(why) = refused.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(Error::BadInput(format!("{why}; nothing changed")));
    }
    // Read back: the NodePool must now exclude the zone.
    let (_, parsed) = requirements(&serde_json::to_value(&pool).unwrap_or_default())?;
    if placeable(&parsed, &detail.zones).iter().any(|z| z.id == detail.zone.id) {
        return Err(read_back(format!(
            "NodePool {name} still places nodes in {}",
            detail.zone.id
        )));
    }
    let made = made.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(Acted {
        actions: Some(encode(made.as_slice())),
        ..Acted::default()
    })
}

/// Take the record's changes back out of the NodePool or node `name`, where they are still in
/// place. Actions that do not parse change nothing and fail the line.
pub async fn recover(cluster: &Cluster, is_pool: bool, name: &str, record: &Record, held: &Guard<'_>) -> Result<()> {
    let identity = record.identity.as_ref();
    let changes = record.actions_as::<Action>()?;
    if !is_pool {
        if changes.contains(&Action::Annotated) {
            cluster
                .update_node(name, identity, held, |n| {
                    (annotation(n) == Some("true")).then(|| {
                        (
                            json!({ "metadata": { "annotations": { DO_NOT_DISRUPT: null } } }),
                            Vec::<Action>::new(),
                        )
                    })
                })
                .await?;
        }
        return Ok(());
    }
    let outcome = read_modify_write(&pools_api(cluster), name, identity, POOL_OPERATIONS, held, |pool| {
        let data = serde_json::to_value(pool).unwrap_or_default();
        let mut raw = raw_requirements(&data);
        let mut changed = false;
        for change in &changes {
            changed |= revert(change, &mut raw);
        }
        changed.then(|| (requirements_patch(raw), Vec::<Action>::new()))
    })
    .await;
    match outcome {
        Ok(_) => Ok(()),
        // Deleted since the plan: nothing left to put back.
        Err(Error::Kube { source, .. }) if is_not_found(&*source) => Ok(()),
        Err(e) => Err(e),
    }
}

fn read_back(why: String) -> Error {
    Error::Kube {
        operation: "read back",
        source: why.into(),
    }
}
