//! Write builders: every conditional write the journal makes, as a plain value that can be sent
//! alone or as one item of a transaction. Pure, so that each write's expression can be checked
//! against exactly the names and values it carries.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update};

use super::record::{list, lock_item, n, now, s, to_item, Lock, FORMAT_ATTR};
use super::{Audit, Record, State, LOCK_PARTITION, PK, SK};
use crate::model::Resource;
use crate::{Error, Result};

/// A conditional write of one item, sendable alone or in a transaction.
#[derive(Debug, Clone)]
pub(super) struct Write {
    pub(super) az_id: String,
    pub(super) resource: String,
    pub(super) kind: WriteKind,
    pub(super) condition: String,
    pub(super) names: HashMap<String, String>,
    pub(super) values: HashMap<String, AttributeValue>,
}

#[derive(Debug, Clone)]
pub(super) enum WriteKind {
    Put(HashMap<String, AttributeValue>),
    Update(String),
    Delete,
    /// Writes nothing: the transaction only goes through if the condition holds.
    Check,
}

impl Write {
    /// A write conditional on the record still having `version` (nobody wrote it since it was read).
    fn versioned(version: u64) -> Write {
        Write {
            az_id: String::new(),
            resource: String::new(),
            kind: WriteKind::Delete,
            condition: "#version = :expected".into(),
            names: HashMap::from([("#version".to_owned(), "version".to_owned())]),
            values: HashMap::from([(":expected".to_owned(), n(version))]),
        }
    }

    /// With `#state` for the `state` attribute (a reserved word), for the writes that set it.
    fn naming_state(mut self) -> Write {
        self.names.insert("#state".to_owned(), "state".to_owned());
        self
    }

    /// Stamped with this version's journal format (every update that writes actions), so that an
    /// older azevac refuses the record instead of misreading it.
    fn stamping_format(mut self) -> Write {
        if let WriteKind::Update(expression) = &mut self.kind {
            expression.push_str(", #format = :format");
        }
        self.names.insert("#format".to_owned(), FORMAT_ATTR.to_owned());
        self.values
            .insert(":format".to_owned(), n(crate::model::action::FORMAT));
        self
    }

    /// The same write as one item of a transaction.
    pub(super) fn transact(&self, table: &str) -> Result<TransactWriteItem> {
        let names = Some(self.names.clone()).filter(|n| !n.is_empty());
        let values = Some(self.values.clone()).filter(|v| !v.is_empty());
        let key = HashMap::from([(PK.to_owned(), s(&self.az_id)), (SK.to_owned(), s(&self.resource))]);
        let item = match &self.kind {
            WriteKind::Put(item) => TransactWriteItem::builder().put(
                Put::builder()
                    .table_name(table)
                    .set_item(Some(item.clone()))
                    .condition_expression(&self.condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .build()
                    .map_err(build_err)?,
            ),
            WriteKind::Update(expression) => TransactWriteItem::builder().update(
                Update::builder()
                    .table_name(table)
                    .set_key(Some(key))
                    .update_expression(expression)
                    .condition_expression(&self.condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .build()
                    .map_err(build_err)?,
            ),
            WriteKind::Delete => TransactWriteItem::builder().delete(
                Delete::builder()
                    .table_name(table)
                    .set_key(Some(key))
                    .condition_expression(&self.condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .build()
                    .map_err(build_err)?,
            ),
            WriteKind::Check => TransactWriteItem::builder().condition_check(
                ConditionCheck::builder()
                    .table_name(table)
                    .set_key(Some(key))
                    .condition_expression(&self.condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .build()
                    .map_err(build_err)?,
            ),
        };
        Ok(item.build())
    }

    /// The lost race of this write, inside a cancelled transaction (`why`: the cancellation).
    pub(super) fn conflict(&self, why: &str) -> Error {
        Error::JournalConflict {
            az_id: self.az_id.clone(),
            resource: self.resource.clone(),
            source: why.into(),
        }
    }
}

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::Aws {
        operation: "dynamodb:TransactWriteItems (building the request)",
        source: Box::new(e),
    }
}

/// Take (or take over) the lock of `lock.resource`: only if nobody holds it, its lease has run out
/// (its holder died), this run holds it already, or it is held by `dead` — a run seen to have died.
pub(super) fn lock_write(lock: &Lock, now_epoch: u64, dead: Option<&str>) -> Write {
    let mut write = Write {
        az_id: LOCK_PARTITION.to_owned(),
        resource: lock.resource.clone(),
        kind: WriteKind::Put(lock_item(lock)),
        // An expired lock whose holder may still have a call in flight is not free yet: a lock
        // written by an older version (no `quiet_at`) is free once its lease has run out.
        condition: "attribute_not_exists(#sk) OR #run = :run OR #quiet < :now \
                    OR (attribute_not_exists(#quiet) AND #lease < :now)"
            .into(),
        names: HashMap::from([
            ("#sk".to_owned(), SK.to_owned()),
            ("#lease".to_owned(), "lease_expires_at".to_owned()),
            ("#quiet".to_owned(), "quiet_at".to_owned()),
            ("#run".to_owned(), "run_id".to_owned()),
        ]),
        values: HashMap::from([(":now".to_owned(), n(now_epoch)), (":run".to_owned(), s(&lock.run_id))]),
    };
    if let Some(dead) = dead {
        write.condition.push_str(" OR #run = :dead");
        write.values.insert(":dead".to_owned(), s(dead));
    }
    write
}

/// Extend this run's lease on a lock it still holds (and the end of its calls with it).
pub(super) fn renew_write(resource: &str, run_id: &str, until_epoch: u64, quiet_epoch: u64) -> Write {
    Write {
        az_id: LOCK_PARTITION.to_owned(),
        resource: resource.to_owned(),
        kind: WriteKind::Update("SET #lease = :until, #quiet = :quiet".into()),
        condition: "#run = :run".into(),
        names: HashMap::from([
            ("#lease".to_owned(), "lease_expires_at".to_owned()),
            ("#quiet".to_owned(), "quiet_at".to_owned()),
            ("#run".to_owned(), "run_id".to_owned()),
        ]),
        values: HashMap::from([
            (":until".to_owned(), n(until_epoch)),
            (":quiet".to_owned(), n(quiet_epoch)),
            (":run".to_owned(), s(run_id)),
        ]),
    }
}

/// Let go of a lock this run holds (never of one another run has taken over).
pub(super) fn unlock_write(resource: &str, run_id: &str) -> Write {
    Write {
        az_id: LOCK_PARTITION.to_owned(),
        resource: resource.to_owned(),
        kind: WriteKind::Delete,
        condition: "#run = :run".into(),
        names: HashMap::from([("#run".to_owned(), "run_id".to_owned())]),
        values: HashMap::from([(":run".to_owned(), s(run_id))]),
    }
}

/// Delete a lock left behind by a run that died, only if it is still exactly as it was read.
pub(super) fn drop_dead_lock_write(lock: &Lock) -> Write {
    Write {
        az_id: LOCK_PARTITION.to_owned(),
        resource: lock.resource.clone(),
        kind: WriteKind::Delete,
        condition: "#run = :run AND #lease = :lease".into(),
        names: HashMap::from([
            ("#run".to_owned(), "run_id".to_owned()),
            ("#lease".to_owned(), "lease_expires_at".to_owned()),
        ]),
        values: HashMap::from([
            (":run".to_owned(), s(&lock.run_id)),
            (":lease".to_owned(), n(lock.lease_expires_at)),
        ]),
    }
}

/// Recovery's write-ahead: nothing is written to the record, but the lock is only taken if nobody
/// wrote the record since it was planned from.
pub(super) fn check_write(record: &Record) -> Write {
    Write {
        az_id: record.az_id.clone(),
        resource: record.resource.clone(),
        kind: WriteKind::Check,
        ..Write::versioned(record.version)
    }
}

/// One resource's evacuation write-ahead, for [`begin_write`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Begin<'a> {
    /// The AZ ID.
    pub az_id: &'a str,
    /// The resource as discovered.
    pub resource: &'a Resource,
    /// The subnets being taken away.
    pub removed: &'a [String],
    /// What else is being done to it.
    pub actions: &'a [String],
    /// Its record in this zone from an earlier run, if any.
    pub existing: Option<&'a Record>,
}

/// The union of two lists, in the first one's order and then the second's.
pub(super) fn union(old: &[String], new: &[String]) -> Vec<String> {
    let mut all = old.to_vec();
    all.extend(new.iter().filter(|s| !old.contains(s)).cloned());
    all
}

/// The write-ahead of one resource, and the record it leaves (computed here: a transaction returns
/// no attributes, and the write's condition guarantees the record it builds on is the stored one).
/// With an existing record the removed subnets and actions are merged into it: a re-run never
/// shrinks what an earlier run took. An existing record about another object of the same name
/// (a node replaced since) is replaced by this run's.
pub(super) fn begin_write(entry: &Begin<'_>, audit: &Audit, now: &str) -> (Write, Record) {
    let Begin {
        az_id,
        resource,
        removed,
        actions,
        existing,
    } = *entry;
    // A record about another object of the same name (one replaced since) says nothing about this
    // one: this run's intent takes its place whole, over the version it was read at.
    let existing = match existing {
        Some(existing) if existing.is_about(resource.identity.as_ref()) => existing,
        replaced => {
            let record = Record {
                az_id: az_id.to_owned(),
                resource: resource.id.clone(),
                resource_type: resource.resource_type.to_owned(),
                removed_subnets: removed.to_vec(),
                state: State::Intent,
                version: 1,
                resource_name: Some(resource.name.clone()),
                original_subnets: resource.subnets.clone(),
                actions: actions.to_vec(),
                run_id: Some(audit.run_id.clone()),
                evacuated_by: Some(audit.caller.clone()),
                reason: audit.reason.clone(),
                azevac_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                created_at: Some(now.to_owned()),
                updated_at: Some(now.to_owned()),
                account_id: audit.account_id.clone(),
                identity: resource.identity.clone(),
            };
            // A first record only where none is; over a replaced object's, only at the version read.
            return match replaced {
                Some(replaced) => restore_write(&record, replaced.version),
                None => (recreate_write(&record), record),
            };
        }
    };
    let record = Record {
        removed_subnets: union(&existing.removed_subnets, removed),
        actions: union(&existing.actions, actions),
        state: State::Intent,
        version: existing.version + 1,
        run_id: Some(audit.run_id.clone()),
        evacuated_by: Some(audit.caller.clone()),
        // The reason of an earlier run stays unless this run gives one.
        reason: audit.reason.clone().or_else(|| existing.reason.clone()),
        azevac_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        updated_at: Some(now.to_owned()),
        // This run just read the resource through this account's role: that is how to reach it
        // again (a record left without one would be read with the caller's own credentials).
        account_id: audit.account_id.clone().or_else(|| existing.account_id.clone()),
        ..existing.clone()
    };
    let set_reason = if audit.reason.is_some() { ", reason = :why" } else { "" };
    let set_account = if audit.account_id.is_some() {
        ", account_id = :account"
    } else {
        ""
    };
    let mut write = Write {
        az_id: az_id.to_owned(),
        resource: resource.id.clone(),
        kind: WriteKind::Update(format!(
            "SET removed_subnets = :removed, actions = :actions, #state = :state, #version = :next, \
             updated_at = :now, run_id = :run, evacuated_by = :who, azevac_version = :ver{set_reason}{set_account}"
        )),
        ..Write::versioned(existing.version).naming_state()
    }
    .stamping_format();
    write.values.extend([
        (":removed".to_owned(), list(&record.removed_subnets)),
        (":actions".to_owned(), list(&record.actions)),
        (":state".to_owned(), s(State::Intent.as_str())),
        (":next".to_owned(), n(record.version)),
        (":now".to_owned(), s(now)),
        (":run".to_owned(), s(&audit.run_id)),
        (":who".to_owned(), s(&audit.caller)),
        (":ver".to_owned(), s(env!("CARGO_PKG_VERSION"))),
    ]);
    if let Some(reason) = &audit.reason {
        write.values.insert(":why".to_owned(), s(reason));
    }
    if let Some(account) = &audit.account_id {
        write.values.insert(":account".to_owned(), s(account));
    }
    (write, record)
}

/// Widen a record (still at `record.version`) to hold `removed` and `actions` too; returns the
/// write and the record it leaves.
pub(super) fn widen_write(record: &Record, removed: &[String], actions: &[String]) -> (Write, Record) {
    let now = now();
    let widened = Record {
        removed_subnets: union(&record.removed_subnets, removed),
        actions: union(&record.actions, actions),
        version: record.version + 1,
        updated_at: Some(now.clone()),
        ..record.clone()
    };
    let mut write = Write {
        az_id: record.az_id.clone(),
        resource: record.resource.clone(),
        kind: WriteKind::Update(
            "SET removed_subnets = :removed, actions = :actions, #version = :next, updated_at = :now".into(),
        ),
        ..Write::versioned(record.version)
    }
    .stamping_format();
    write.values.extend([
        (":removed".to_owned(), list(&widened.removed_subnets)),
        (":actions".to_owned(), list(&widened.actions)),
        (":next".to_owned(), n(widened.version)),
        (":now".to_owned(), s(&now)),
    ]);
    (write, widened)
}

/// Mark a record done, with the actions it carries; returns the write and the record it leaves.
pub(super) fn finish_write(record: &Record, now: &str) -> (Write, Record) {
    let done = Record {
        state: State::Done,
        version: record.version + 1,
        updated_at: Some(now.to_owned()),
        ..record.clone()
    };
    let mut write = Write {
        az_id: record.az_id.clone(),
        resource: record.resource.clone(),
        kind: WriteKind::Update(
            "SET #state = :done, #version = :next, updated_at = :now, actions = :actions, removed_subnets = :removed"
                .into(),
        ),
        ..Write::versioned(record.version).naming_state()
    }
    .stamping_format();
    write.values.extend([
        (":actions".to_owned(), list(&record.actions)),
        (":removed".to_owned(), list(&record.removed_subnets)),
        (":done".to_owned(), s(State::Done.as_str())),
        (":next".to_owned(), n(done.version)),
        (":now".to_owned(), s(now)),
    ]);
    (write, done)
}

/// Put back the record as it was before this run's write-ahead (`prior`), over the write-ahead at
/// `version`: the run changed nothing after all.
pub(super) fn restore_write(prior: &Record, version: u64) -> (Write, Record) {
    let restored = Record {
        version: version + 1,
        ..prior.clone()
    };
    let write = Write {
        az_id: prior.az_id.clone(),
        resource: prior.resource.clone(),
        kind: WriteKind::Put(to_item(&restored)),
        ..Write::versioned(version)
    };
    (write, restored)
}

/// Write a record back that a concurrent run deleted after this run had changed the resource.
pub(super) fn recreate_write(record: &Record) -> Write {
    Write {
        az_id: record.az_id.clone(),
        resource: record.resource.clone(),
        kind: WriteKind::Put(to_item(record)),
        condition: "attribute_not_exists(#sk)".into(),
        names: HashMap::from([("#sk".to_owned(), SK.to_owned())]),
        values: HashMap::new(),
    }
}

/// Delete a record, only if nobody has written it since it was read.
pub(super) fn remove_write(record: &Record) -> Write {
    Write {
        az_id: record.az_id.clone(),
        resource: record.resource.clone(),
        kind: WriteKind::Delete,
        ..Write::versioned(record.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Identity;

    fn record() -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: "arn:web".into(),
            resource_type: "asg".into(),
            removed_subnets: vec!["b".into()],
            state: State::Done,
            version: 3,
            resource_name: Some("web".into()),
            original_subnets: vec!["a".into(), "b".into()],
            actions: vec![],
            run_id: Some("run".into()),
            evacuated_by: Some("me".into()),
            reason: None,
            azevac_version: Some("0.1.0".into()),
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        }
    }

    /// DynamoDB refuses an expression that uses a name or value it was not given, or is given one it
    /// does not use: every write azevac builds must pass that check.
    fn assert_well_formed(write: &Write) {
        let mut text = write.condition.clone();
        if let WriteKind::Put(item) = &write.kind {
            assert!(item.contains_key(PK) && item.contains_key(SK), "a put carries its key");
        }
        if let WriteKind::Update(expression) = &write.kind {
            text.push(' ');
            text.push_str(expression);
        }
        let tokens = |sigil: char| -> std::collections::BTreeSet<String> {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == sigil))
                .filter(|t| t.starts_with(sigil) && t.len() > 1)
                .map(str::to_owned)
                .collect()
        };
        let names: std::collections::BTreeSet<String> = write.names.keys().cloned().collect();
        let values: std::collections::BTreeSet<String> = write.values.keys().cloned().collect();
        assert_eq!(tokens('#'), names, "names of {write:?}");
        assert_eq!(tokens(':'), values, "values of {write:?}");
    }

    #[test]
    fn every_write_names_exactly_what_its_expressions_use() {
        let audit = Audit {
            run_id: "run".into(),
            caller: "me".into(),
            reason: Some("INC-1".into()),
            account_id: None,
        };
        let resource = Resource {
            resource_type: "asg",
            id: "arn:web".into(),
            name: "web".into(),
            subnets: vec!["a".into(), "b".into()],
            ..Resource::default()
        };
        let existing = record();
        for existing in [None, Some(&existing)] {
            let entry = Begin {
                az_id: "use1-az2",
                resource: &resource,
                removed: &["b".to_string()],
                actions: &[],
                existing,
            };
            let (write, made) = begin_write(&entry, &audit, "now");
            assert_well_formed(&write);
            assert_eq!(made.state, State::Intent);
            assert_eq!(made.version, existing.map_or(1, |e| e.version + 1));
        }
        let without_reason = Audit { reason: None, ..audit };
        let entry = Begin {
            az_id: "use1-az2",
            resource: &resource,
            removed: &[],
            actions: &[],
            existing: Some(&existing),
        };
        let (write, made) = begin_write(&entry, &without_reason, "now");
        assert_well_formed(&write);
        assert_eq!(made.reason, existing.reason, "an earlier run's reason stays");
        assert_eq!(made.removed_subnets, existing.removed_subnets, "never shrinks");
        // A run through an account's role stamps the record with that account, new or merged.
        let across = Audit {
            account_id: Some("111111111111".into()),
            ..without_reason
        };
        for existing in [None, Some(&existing)] {
            let entry = Begin { existing, ..entry };
            let (write, made) = begin_write(&entry, &across, "now");
            assert_well_formed(&write);
            assert_eq!(made.account_id.as_deref(), Some("111111111111"));
        }
        // A record of a node replaced since: this run's intent takes its place, over its version.
        let node = |uid: &str| Identity {
            uid: uid.into(),
            instance_id: None,
            created: None,
        };
        let old_node = Record {
            identity: Some(node("old")),
            actions: vec!["cordon".into()],
            ..existing.clone()
        };
        let new_node = Resource {
            identity: Some(node("new")),
            ..resource.clone()
        };
        let entry = Begin {
            resource: &new_node,
            actions: &["taint".to_string()],
            existing: Some(&old_node),
            ..entry
        };
        let (write, made) = begin_write(&entry, &across, "now");
        assert_well_formed(&write);
        assert!(matches!(write.kind, WriteKind::Put(_)), "{write:?}");
        assert_eq!(write.values.get(":expected"), Some(&n(old_node.version)));
        assert_eq!(made.version, old_node.version + 1);
        assert_eq!(made.actions, ["taint"], "the old node's cordon is not this node's");
        assert_eq!(made.identity, Some(node("new")));
        // The same node again, or a record from before identities: merged as ever.
        for same in [Some(node("new")), None] {
            let existing = Record {
                identity: same,
                ..old_node.clone()
            };
            let (_, made) = begin_write(
                &Begin {
                    existing: Some(&existing),
                    ..entry
                },
                &across,
                "now",
            );
            assert_eq!(made.actions, ["cordon", "taint"]);
        }
        assert_well_formed(&finish_write(&existing, "now").0);
        assert_well_formed(&remove_write(&existing));
        assert_well_formed(&check_write(&existing));
        assert_well_formed(&restore_write(&existing, 4).0);
        assert_well_formed(&recreate_write(&existing));
        assert_well_formed(&widen_write(&existing, &["c".to_string()], &[]).0);
        let lock = super::super::record::sample_lock();
        assert_well_formed(&lock_write(&lock, 50, None));
        assert_well_formed(&lock_write(&lock, 50, Some("dead-run")));
        assert_well_formed(&renew_write("arn:web", "run", 200, 380));
        assert_well_formed(&unlock_write("arn:web", "run"));
        assert_well_formed(&drop_dead_lock_write(&lock));
    }
}
