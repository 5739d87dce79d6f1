//! The one way a Kubernetes kind changes an object: read it, compute the change from what it is now,
//! journal that change ahead ([`Guard::cover`]), then send a merge patch carrying the
//! `resourceVersion` it was computed from, so that other edits are never clobbered (409 → read,
//! compute and journal again).

use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::kube_err;
use crate::journal::Guard;
use crate::model::action::{encode, Action};
use crate::model::Identity;
use crate::{Error, Result};

/// Tries of a read-modify-write that keeps meeting 409 Conflict.
const CONFLICT_TRIES: usize = 5;

/// Read-modify-write one object: `change` computes, from the object as it is now, a merge patch and
/// the journal actions it carries out (or `None`: nothing to do); those actions are written ahead
/// through `held` before the patch is sent, which carries that `resourceVersion`; a 409 means read,
/// compute, write ahead and try again. `operations` name the read and the write in errors. With the
/// `identity` of the object a journal record names, an object of the same name with another uid
/// (the one named was deleted and another created since) is never written:
/// [`Error::ChangedSincePlan`].
pub async fn read_modify_write<K, A, F>(
    api: &Api<K>,
    name: &str,
    identity: Option<&Identity>,
    operations: (&'static str, &'static str),
    held: &Guard<'_>,
    change: F,
) -> Result<Option<K>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    A: Action,
    F: Fn(&K) -> Option<(serde_json::Value, Vec<A>)>,
{
    let (read, write) = operations;
    // Nothing declared yet: an act that fails before its first write did nothing (and the lease is
    // checked before the first read).
    held.cover(&[], &[]).await?;
    for _ in 0..CONFLICT_TRIES {
        let object = api.get(name).await.map_err(|e| kube_err(read, e))?;
        // The resourceVersion in the patch keeps a replacement after this read from being written.
        if let (Some(ours), Some(live)) = (identity, object.meta().uid.as_deref()) {
            if ours.uid != live {
                return Err(Error::ChangedSincePlan {
                    resource: name.to_owned(),
                    source: format!(
                        "replaced since the journal record was written: {name} is now another object (uid {live}), not uid {}; nothing changed",
                        ours.uid
                    )
                    .into(),
                });
            }
        }
        let Some((mut patch, actions)) = change(&object) else {
            return Ok(Some(object));
        };
        // The change computed from this read, journalled before it is sent (after a 409 it may
        // differ from the one planned: the object changed in between).
        let actions = encode(&actions);
        held.cover(&[], &actions).await?;
        patch["metadata"]["resourceVersion"] = json!(object.meta().resource_version);
        match api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(object) => return Ok(Some(object)),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                held.refused(&[], &actions);
                tracing::info!(
                    object = name,
                    "{name} changed while we wrote it (409); reading it again"
                );
            }
            Err(e) => return Err(kube_err(write, e)),
        }
    }
    Err(Error::Kube {
        operation: write,
        source: format!("{name} kept changing under us ({CONFLICT_TRIES} conflicts)").into(),
    })
}
