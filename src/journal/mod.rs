//! The DynamoDB journal: the operator's record of every change azevac made, written *before* the
//! change (write-ahead) so that a crash at any point leaves enough to put it back, and guarded by a
//! per-resource lock with a lease so that two operators never act on one resource at once.
//!
//! Schema (kept stable so other tools and older versions can read it): partition key `az_id` (S),
//! sort key `resource` (S, the ARN), `resource_type` (S), `removed_subnets` (L of S), GSI
//! `resource_type-index` (hash `resource_type`, range `az_id`, projecting ALL: recover and status
//! read whole records through it). Every record write is conditional
//! on the `version` attribute. Locks live in the partition `#lock` (sort key: the record's
//! `resource`), with no `resource_type`, so the index stays sparse and never lists them.
//!
//! The jobs are split by file: [`table`] (administration), [`record`] (encoding), [`writes`]
//! (write builders), [`commit`] (single calls and transactions), [`held`] (holds, the guard),
//! [`lease`] (leases, heartbeats), [`protocol`] (acquire, release, repair).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;

pub use crate::model::{Audit, Record, State};
use crate::{Error, Result};

mod commit;
mod held;
mod leadership;
mod lease;
pub mod protocol;
mod record;
mod table;
mod watcher;
mod writes;

pub use commit::batches;
pub use held::{Ahead, Declared, Evacuating, Guard, Held, Recovering, Release, Released};
pub use leadership::{Leadership, Pulse};
pub use lease::{Heartbeat, Lease, DEFAULT_LEASE};
pub use protocol::TAKEOVER_WAIT_ENV;
pub use record::Lock;
use record::{parse, parse_lock, s};
pub use table::Protection;
pub use watcher::{Claim, Watcher, WATCHER_PARTITION};

/// The table name used when `--table` is not given.
pub const DEFAULT_TABLE: &str = "azevac-journal";
/// The global secondary index that `recover` and `status` query per resource type.
pub const TYPE_INDEX: &str = "resource_type-index";

/// The partition key: the AZ ID.
pub const PK: &str = "az_id";
/// The sort key: the resource ARN (or `<cluster>/<node>`).
pub const SK: &str = "resource";
/// The resource type, hash key of [`TYPE_INDEX`].
pub const TYPE_ATTR: &str = "resource_type";
/// The partition that holds the per-resource locks (no AZ ID looks like it).
pub const LOCK_PARTITION: &str = "#lock";
/// Lines journalled per batch: a lock and a record each, within DynamoDB's 100 items a transaction.
pub const BATCH: usize = commit::TRANSACTION_ITEMS / 2;
/// For tests only: lines per batch when fewer than [`BATCH`] are wanted, so that a small estate has
/// several batches in flight (tests/it/protocol/conformance.rs kills runs at every call of a few resources
/// in batches of 3). Read once; clamped to 1..=[`BATCH`]; unset or unreadable: [`BATCH`].
pub const BATCH_ENV: &str = "AZEVAC_BATCH";

/// Lines journalled per batch in this process: [`BATCH`], or fewer where [`BATCH_ENV`] says so.
pub fn batch_size() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| batch_size_of(std::env::var(BATCH_ENV).ok().as_deref()))
}

/// The batch size [`BATCH_ENV`]'s value asks for.
fn batch_size_of(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(BATCH, |n| n.clamp(1, BATCH))
}

/// A journal item as read: a usable record, or the reason it cannot be used.
pub type Entry = Result<Record, Error>;

/// Records by type, and the items that could not be used (as problems).
type ByType = (BTreeMap<String, Vec<Record>>, Vec<String>);

/// What [`Journal::records_of_every_account`] read, by the types and AZ asked for.
/// One cell per question: the parts of a run that ask the same wait for the first one's read, and
/// different questions (this zone's records, the other types' zones) are read side by side.
type ReadOnce = Arc<std::sync::Mutex<HashMap<(Vec<String>, Option<String>), Arc<tokio::sync::OnceCell<ByType>>>>>;

/// The journal table.
#[derive(Debug, Clone)]
pub struct Journal {
    client: aws_sdk_dynamodb::Client,
    table: String,
    region: String,
    /// Whose records a recover plans from (`None`: every record); one table serves every account,
    /// as the ARNs in its keys name theirs.
    owner: Option<Owner>,
    /// The records this handle (and every [`Journal::for_owner`] of it) has read for planning: one
    /// table serves every account, so a recover across N accounts reads it once and gives each
    /// account's part its own records, instead of N reads of every record. Planning is the only
    /// reader; the changes themselves read each record again under its lock.
    read: ReadOnce,
    /// Set once [`Journal::check_schema`] has found the table to be a journal: a table is never
    /// deleted under a run (deletion protection), so a run that planned against it does not ask
    /// to create it again. The operator's policy does not grant `dynamodb:CreateTable` (that is
    /// `init`'s, fixtures/iam-admin-policy.json), and a call it denies would be a failed evacuation
    /// and an access-denied event in CloudTrail on every run.
    checked: Arc<std::sync::atomic::AtomicBool>,
}

/// The account a run's part acts in, for the journal: its records are those stamped with it, and,
/// for the caller's own account, also those written with the caller's own credentials (no stamp).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The twelve-digit account ID.
    pub account: String,
    /// Whether it is the caller's own account.
    pub own: bool,
}

impl Owner {
    /// Whether `record` belongs to this account.
    pub fn owns(&self, record: &Record) -> bool {
        match &record.account_id {
            Some(account) => *account == self.account,
            None => self.own,
        }
    }
}

impl Journal {
    /// A handle on the table `table` (nothing is called until a method is).
    pub fn new(config: &aws_config::SdkConfig, table: &str) -> Self {
        Journal {
            client: crate::client!(aws_sdk_dynamodb, config),
            table: table.to_owned(),
            region: crate::aws::region_of(config),
            owner: None,
            read: ReadOnce::default(),
            checked: Arc::default(),
        }
    }

    /// The same table, planning recovery from `owner`'s records only.
    pub fn for_owner(&self, owner: Owner) -> Journal {
        Journal {
            owner: Some(owner),
            ..self.clone()
        }
    }

    /// The same table for another run: nothing this handle's run has read is reused (a
    /// long-running watcher's runs must each plan from the journal as it is then).
    pub fn fresh(&self) -> Journal {
        Journal {
            read: ReadOnce::default(),
            ..self.clone()
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Every record for one AZ (strongly consistent: planning decides on it).
    pub async fn in_zone(&self, az_id: &str) -> Result<Vec<Entry>> {
        Ok(self.partition(az_id).await?.iter().map(parse).collect())
    }

    /// Every item of one partition, read strongly consistently.
    async fn partition(&self, key: &str) -> Result<Vec<HashMap<String, AttributeValue>>> {
        self.client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":pk", s(key))
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| self.map_err("dynamodb:Query", e))
    }

    /// Every record of one resource type, in one AZ or in all, through the type index.
    pub async fn of_type(&self, resource_type: &str, az_id: Option<&str>) -> Result<Vec<Entry>> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(TYPE_INDEX)
            .expression_attribute_names("#t", TYPE_ATTR)
            .expression_attribute_values(":t", s(resource_type));
        query = match az_id {
            Some(az) => query
                .key_condition_expression("#t = :t AND #pk = :az")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_values(":az", s(az)),
            None => query.key_condition_expression("#t = :t"),
        };
        let items: Vec<HashMap<String, AttributeValue>> = query
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| self.map_err("dynamodb:Query", e))?;
        Ok(items.iter().map(parse).collect())
    }

    /// The records a command starts from, by type: for one AZ from the base table with a strongly
    /// consistent query (a record written a moment ago must be seen), for every AZ through the type
    /// index (eventually consistent: recovering every zone is not a race-time operation). Items that
    /// cannot be used are returned as problems.
    pub async fn records(
        &self,
        types: &[&str],
        az_id: Option<&str>,
    ) -> Result<(BTreeMap<String, Vec<Record>>, Vec<String>)> {
        let (mut by_type, problems) = self.records_of_every_account(types, az_id).await?;
        // Another account's record is acted on only with that account's credentials: read here
        // with the wrong ones, its resource would look deleted.
        for records in by_type.values_mut() {
            records.retain(|r| self.owner.as_ref().is_none_or(|o| o.owns(r)));
        }
        by_type.retain(|_, records| !records.is_empty());
        Ok((by_type, problems))
    }

    /// [`Journal::records`] of every account: which accounts hold records, and which zones are
    /// still evacuated (an AZ ID is one physical zone in every account).
    pub async fn records_of_every_account(&self, types: &[&str], az_id: Option<&str>) -> Result<ByType> {
        let key = (types.iter().map(|t| t.to_string()).collect(), az_id.map(str::to_owned));
        let cell = match self.read.lock() {
            Ok(mut cells) => Arc::clone(cells.entry(key).or_default()),
            // Poisoned (a panic elsewhere): read without the cache.
            Err(_) => Arc::default(),
        };
        // A failed read is not kept: the next ask reads again.
        cell.get_or_try_init(|| self.read_records(types, az_id)).await.cloned()
    }

    /// Read the records of `types` (in one AZ, or every AZ) from the table.
    async fn read_records(&self, types: &[&str], az_id: Option<&str>) -> Result<ByType> {
        let mut entries = Vec::new();
        match az_id {
            Some(az) => entries.extend(self.in_zone(az).await?),
            // One query per type through the index, side by side.
            None => {
                let reads = types.iter().map(|resource_type| self.of_type(resource_type, None));
                // join_all, not try_join_all: the first type's error, not whichever came first.
                let read: Result<Vec<_>> = futures::future::join_all(reads).await.into_iter().collect();
                entries.extend(read?.into_iter().flatten());
            }
        }
        let mut by_type: BTreeMap<String, Vec<Record>> = BTreeMap::new();
        let mut problems = Vec::new();
        for entry in entries {
            match entry {
                Ok(record) if types.contains(&record.resource_type.as_str()) => {
                    by_type.entry(record.resource_type.clone()).or_default().push(record)
                }
                Ok(_) => {}
                Err(e) => problems.push(e.to_string()),
            }
        }
        Ok((by_type, problems))
    }

    /// One record, read strongly consistently (`None`: there is none).
    pub async fn record_of(&self, az_id: &str, resource: &str) -> Result<Option<Entry>> {
        Ok(self.record_of_raw(az_id, resource).await?.as_ref().map(parse))
    }

    /// The lock of one resource, if any (strongly consistent).
    pub async fn lock_of(&self, resource: &str) -> Result<Option<Lock>> {
        Ok(self
            .record_of_raw(LOCK_PARTITION, resource)
            .await?
            .as_ref()
            .and_then(parse_lock))
    }

    async fn record_of_raw(&self, az_id: &str, resource: &str) -> Result<Option<HashMap<String, AttributeValue>>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .consistent_read(true)
            .key(PK, s(az_id))
            .key(SK, s(resource))
            .send()
            .await
            .map_err(|e| self.map_err("dynamodb:GetItem", e))?;
        Ok(out.item().cloned())
    }

    /// Every lock in the table (live or expired), for `status`.
    pub async fn locks(&self) -> Result<Vec<Lock>> {
        Ok(self
            .partition(LOCK_PARTITION)
            .await?
            .iter()
            .filter_map(parse_lock)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_31_the_test_batch_size_is_clamped_to_the_real_one() {
        assert_eq!(batch_size_of(None), BATCH);
        assert_eq!(batch_size_of(Some("3")), 3);
        assert_eq!(batch_size_of(Some(" 2 ")), 2);
        assert_eq!(batch_size_of(Some("0")), 1);
        assert_eq!(batch_size_of(Some("500")), BATCH);
        assert_eq!(batch_size_of(Some("many")), BATCH);
    }
}
