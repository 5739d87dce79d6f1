//! Carrying a node's line out against its cluster: taint and cordon (one merge patch, journalled
//! ahead), drain through the Eviction API, and undoing exactly what a record says azevac did.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder, Retryable};
use k8s_openapi::api::core::v1::{Pod, Taint};
use kube::api::{Api, EvictParams, ListParams};
use serde_json::json;

use super::decide::{effect, evictable, our_taint};
use super::{Action, Mode, Options, TAINT_KEY};
use crate::journal::Guard;
use crate::model::action::encode;
use crate::model::Record;
use crate::plugins::kube::node::is_schedulable;
use crate::plugins::kube::{kube_err, Cluster};
use crate::{Error, Result};

/// The first wait before trying an eviction a PodDisruptionBudget refused again.
const EVICTION_FIRST_DELAY: Duration = Duration::from_millis(200);
/// The longest wait between two tries of one eviction.
const EVICTION_MAX_DELAY: Duration = Duration::from_secs(5);

/// Carry out an evacuation line on the node `record` names; returns the actions actually taken
/// (for the journal) and notes.
pub async fn evacuate(
    cluster: &Cluster,
    node: &str,
    record: &Record,
    options: &Options,
    held: &Guard<'_>,
) -> Result<(Vec<Action>, Vec<String>)> {
    let az_id = record.az_id.as_str();
    let effect = effect(options.mode);
    let want_taint = options.mode != Mode::Drain;
    let want_cordon = options.mode != Mode::Noexecute;
    // Set by the attempt that wrote: whether that write is what tainted and cordoned the node
    // (what was there before is an earlier run's, in its record, or not azevac's at all).
    let tainting = AtomicBool::new(false);
    let cordoning = AtomicBool::new(false);
    let updated = cluster
        .update_node(node, record.identity.as_ref(), held, |n| {
            let mut taints = n.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
            let add_taint = want_taint && !taints.iter().any(|t| t.key == TAINT_KEY);
            let cordon = want_cordon && is_schedulable(n);
            tainting.store(add_taint, Ordering::Relaxed);
            cordoning.store(cordon, Ordering::Relaxed);
            if !add_taint && !cordon {
                return None;
            }
            let mut actions = Vec::new();
            if add_taint {
                taints.push(Taint {
                    key: TAINT_KEY.to_owned(),
                    value: Some(az_id.to_owned()),
                    effect: effect.to_owned(),
                    time_added: None,
                });
                actions.push(Action::taint(az_id, effect));
            }
            let mut spec = json!({ "taints": taints });
            if cordon {
                spec["unschedulable"] = json!(true);
                actions.push(Action::Cordon);
            }
            Some((json!({ "spec": spec }), actions))
        })
        .await?;
    // Read back: the node must now carry what we meant it to.
    let node_now = updated.ok_or_else(|| Error::BadInput(format!("node {node} disappeared")))?;
    if want_taint && our_taint(&node_now).is_none() {
        return Err(Error::Kube {
            operation: "read back node",
            source: "the azevac taint is missing".into(),
        });
    }
    let mut actions = Vec::new();
    if tainting.load(Ordering::Relaxed) {
        actions.push(Action::taint(az_id, effect));
    }
    if cordoning.load(Ordering::Relaxed) && !is_schedulable(&node_now) {
        actions.push(Action::Cordon);
    }
    if options.mode == Mode::Drain && actions.is_empty() {
        actions.push(Action::Drain);
    }
    let mut notes = Vec::new();
    if options.mode == Mode::Drain {
        // The drain is a change of its own: journalled before the first eviction.
        held.cover(&[], &encode(&actions)).await?;
        let stuck = drain(cluster, node, options.drain_timeout).await?;
        if !stuck.is_empty() {
            notes.push(format!("pods not evicted: {}", stuck.join(", ")));
        }
    }
    Ok((actions, notes))
}

/// Evict every evictable pod of the node, trying again while a PodDisruptionBudget refuses (429),
/// until `timeout` (for the whole node). Returns the pods that could not be evicted, with why.
async fn drain(cluster: &Cluster, node: &str, timeout: Duration) -> Result<Vec<String>> {
    let all: Api<Pod> = Api::all(cluster.client());
    let pods = all
        .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
        .await
        .map_err(|e| kube_err("list pods", e))?
        .items;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut stuck = Vec::new();
    for pod in pods.iter().filter(|p| evictable(p)) {
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(cluster.client(), &namespace);
        // Doubling waits, each one only if it ends before the node's deadline.
        let waits = ExponentialBuilder::default()
            .with_min_delay(EVICTION_FIRST_DELAY)
            .with_max_delay(EVICTION_MAX_DELAY)
            .without_max_times()
            .build()
            .take_while(move |delay| tokio::time::Instant::now() + *delay <= deadline);
        let params = EvictParams::default();
        let evicted = (|| api.evict(&name, &params))
            .retry(waits)
            .sleep(tokio::time::sleep)
            .when(|e| matches!(e, kube::Error::Api(status) if status.code == 429))
            .notify(|_, _| {
                crate::say!(
                    "azevac: waiting to evict {}: a PodDisruptionBudget refuses it for now",
                    crate::model::text::clean(&format!("{namespace}/{name}"))
                )
            })
            .await;
        match evicted {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(kube::Error::Api(status)) if status.code == 429 => {
                stuck.push(format!(
                    "{namespace}/{name} (PodDisruptionBudget; --drain-timeout reached)"
                ));
            }
            Err(e) => stuck.push(format!("{namespace}/{name} ({e})")),
        }
    }
    Ok(stuck)
}

/// Undo exactly the recorded actions still in place: remove the taints azevac added (leaving every
/// other one), uncordon only if azevac cordoned. Actions that do not parse change nothing.
pub async fn recover(cluster: &Cluster, node: &str, record: &Record, held: &Guard<'_>) -> Result<()> {
    let done = record.actions_as::<Action>()?;
    let uncordon = done.contains(&Action::Cordon);
    let untaint: Vec<&str> = done
        .iter()
        .filter_map(|action| match action {
            Action::Taint { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    cluster
        .update_node(node, record.identity.as_ref(), held, |n| {
            let taints = n.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
            let kept: Vec<&Taint> = taints.iter().filter(|t| !untaint.contains(&t.key.as_str())).collect();
            let remove_taint = kept.len() != taints.len();
            let remove_cordon = uncordon && !is_schedulable(n);
            if !remove_taint && !remove_cordon {
                return None;
            }
            let mut spec = json!({ "taints": kept });
            if remove_cordon {
                spec["unschedulable"] = json!(false);
            }
            Some((json!({ "spec": spec }), Vec::<Action>::new()))
        })
        .await?;
    Ok(())
}
