//! The DynamoDB journal: the operator's record of every subnet azevac took away, written *before*
//! the change (write-ahead) so that a crash at any point leaves enough to put it back.
//!
//! Schema (kept stable so other tools and older versions can read it): partition key `az_id` (S),
//! sort key `resource` (S, the ARN), `resource_type` (S), `removed_subnets` (L of S), GSI
//! `resource_type-index` (hash `resource_type`, range `az_id`). Every write is conditional on the
//! `version` attribute, so two operators racing never overwrite or delete each other's record.

use std::collections::HashMap;

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, Delete, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    Projection, ProjectionType, Put, ScalarAttributeType, TableStatus, TransactWriteItem, Update,
};
use serde::Serialize;

use crate::commands::describe;
use crate::error::BoxError;
use crate::plugins::Resource;
use crate::{Error, Result};
use aws_smithy_runtime_api::http::Response as HttpResponse;

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
/// How long `init` waits for a new table to become ACTIVE.
const CREATE_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Where a journalled change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Written before the change: the subnets may or may not have been removed yet.
    Intent,
    /// The change was made and acknowledged by the service.
    Done,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Intent => "intent",
            State::Done => "done",
        }
    }
}

/// One journal item: a resource that lost subnets in one AZ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// The evacuated AZ ID (partition key).
    pub az_id: String,
    /// The resource ARN (sort key).
    pub resource: String,
    /// The plugin's `--type` value.
    pub resource_type: String,
    /// Every subnet azevac took away from the resource in this AZ, across all runs.
    pub removed_subnets: Vec<String>,
    /// Whether the change is known to have been made.
    pub state: State,
    /// Bumped on every write; every write is conditional on the version it read.
    pub version: u64,
    /// The resource's short name, for people reading the table.
    pub resource_name: Option<String>,
    /// The resource's subnets before azevac first touched it.
    pub original_subnets: Vec<String>,
    /// What else azevac did to the resource (Kubernetes nodes: `taint:KEY=VALUE:EFFECT`, `cordon`).
    pub actions: Vec<String>,
    /// The azevac run that last wrote the record.
    pub run_id: Option<String>,
    /// The STS caller ARN that last wrote it.
    pub evacuated_by: Option<String>,
    /// The operator's `--reason`.
    pub reason: Option<String>,
    /// The azevac version that last wrote it.
    pub azevac_version: Option<String>,
    /// When it was first written (RFC 3339).
    pub created_at: Option<String>,
    /// When it was last written (RFC 3339).
    pub updated_at: Option<String>,
}

/// Who is writing, and why: stamped on every record a run writes.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    /// This run's ID.
    pub run_id: String,
    /// The STS caller ARN.
    pub caller: String,
    /// The operator's `--reason`, if given.
    pub reason: Option<String>,
}

/// A journal item as read: a usable record, or the reason it cannot be used.
pub type Entry = Result<Record, Error>;

/// The journal table.
#[derive(Debug, Clone)]
pub struct Journal {
    client: aws_sdk_dynamodb::Client,
    table: String,
    region: String,
}

impl Journal {
    /// A handle on the table `table` (nothing is called until a method is).
    pub fn new(config: &aws_config::SdkConfig, table: &str) -> Self {
        Journal {
            client: crate::client!(aws_sdk_dynamodb, config),
            table: table.to_owned(),
            region: crate::aws::region_of(config),
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Whether the table exists (and is usable).
    pub async fn exists(&self) -> Result<bool> {
        match self.client.describe_table().table_name(&self.table).send().await {
            Ok(_) => Ok(true),
            Err(e) if e.code() == Some("ResourceNotFoundException") => Ok(false),
            Err(e) => Err(Error::from_sdk("dynamodb:DescribeTable", e)),
        }
    }

    /// Fail with a message naming `azevac init` when the table does not exist.
    pub async fn require(&self) -> Result<()> {
        match self.client.describe_table().table_name(&self.table).send().await {
            Ok(_) => Ok(()),
            Err(e) => Err(self.map_err("dynamodb:DescribeTable", e)),
        }
    }

    /// Create the table and its index (on-demand billing) and wait until it is ACTIVE.
    /// Returns false, changing nothing, when a table with the same keys already exists.
    pub async fn create(&self) -> Result<bool> {
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(build_err)
        };
        let attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(build_err)
        };
        let index = GlobalSecondaryIndex::builder()
            .index_name(TYPE_INDEX)
            .key_schema(key(TYPE_ATTR, KeyType::Hash)?)
            .key_schema(key(PK, KeyType::Range)?)
            .projection(Projection::builder().projection_type(ProjectionType::All).build())
            .build()
            .map_err(build_err)?;
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attr(PK)?)
            .attribute_definitions(attr(SK)?)
            .attribute_definitions(attr(TYPE_ATTR)?)
            .key_schema(key(PK, KeyType::Hash)?)
            .key_schema(key(SK, KeyType::Range)?)
            .global_secondary_indexes(index)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(e) if e.code() == Some("ResourceInUseException") => {
                self.check_schema().await?;
                return Ok(false);
            }
            Err(e) => return Err(Error::from_sdk("dynamodb:CreateTable", e)),
        }
        self.client
            .wait_until_table_exists()
            .table_name(&self.table)
            .wait(CREATE_WAIT)
            .await
            .map_err(|e| Error::Aws {
                operation: "dynamodb:DescribeTable (waiting for ACTIVE)",
                source: Box::new(e),
            })?;
        Ok(true)
    }

    /// Refuse a pre-existing table whose keys are not the journal's (it is someone else's table).
    async fn check_schema(&self) -> Result<()> {
        let out = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
            .map_err(|e| self.map_err("dynamodb:DescribeTable", e))?;
        let table = out.table();
        let keys: Vec<(&str, &KeyType)> = table
            .map(|t| {
                t.key_schema()
                    .iter()
                    .map(|k| (k.attribute_name(), k.key_type()))
                    .collect()
            })
            .unwrap_or_default();
        let has_index = table
            .map(|t| {
                t.global_secondary_indexes()
                    .iter()
                    .any(|i| i.index_name() == Some(TYPE_INDEX))
            })
            .unwrap_or(false);
        let active = table.and_then(|t| t.table_status()) == Some(&TableStatus::Active);
        if keys != [(PK, &KeyType::Hash), (SK, &KeyType::Range)] || !has_index {
            return Err(Error::BadInput(format!(
                "table {:?} exists but is not an azevac journal (keys must be {PK}/{SK} with index {TYPE_INDEX}); \
                 pass --table with another name",
                self.table
            )));
        }
        if !active {
            tracing::warn!(table = %self.table, "journal table exists but is not ACTIVE yet");
        }
        Ok(())
    }

    /// Every record for one AZ (strongly consistent: planning decides on it).
    pub async fn in_zone(&self, az_id: &str) -> Result<Vec<Entry>> {
        let items: Vec<HashMap<String, AttributeValue>> = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("#pk = :az")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":az", s(az_id))
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| self.map_err("dynamodb:Query", e))?;
        Ok(items.iter().map(parse).collect())
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

    /// Write-ahead: record that `removed` are being taken from `resource` in `az_id`, before the
    /// change is made. With an existing record the removed subnets are merged into it (a re-run never
    /// shrinks what an earlier run took); without one the write only succeeds if none appeared since.
    pub async fn begin(
        &self,
        az_id: &str,
        resource: &Resource,
        removed: &[String],
        actions: &[String],
        existing: Option<&Record>,
        audit: &Audit,
    ) -> Result<Record> {
        let entry = Begin {
            az_id,
            resource,
            removed,
            actions,
            existing,
        };
        one(self.begin_many(&[entry], audit).await)
    }

    /// [`Journal::begin`] for many resources at once: one call per [`BATCH`] records. Each record
    /// succeeds or fails (a lost race) on its own.
    pub async fn begin_many(&self, entries: &[Begin<'_>], audit: &Audit) -> Vec<Result<Record>> {
        let now = now();
        let (writes, records): (Vec<Write>, Vec<Record>) = entries.iter().map(|e| begin_write(e, audit, &now)).unzip();
        self.commit(writes)
            .await
            .into_iter()
            .zip(records)
            .map(|(outcome, record)| outcome.map(|()| record))
            .collect()
    }

    /// Mark a record's change as made; `actions` replaces the recorded actions with what was actually
    /// done (a node someone else cordoned meanwhile is not ours to uncordon).
    pub async fn finish(&self, record: &Record, actions: Option<&[String]>) -> Result<Record> {
        let done = Record {
            actions: actions.map_or_else(|| record.actions.clone(), <[String]>::to_vec),
            ..record.clone()
        };
        one(self.finish_many(&[done]).await)
    }

    /// Mark many records' changes as made (their `actions` as given): one call per [`BATCH`].
    pub async fn finish_many(&self, records: &[Record]) -> Vec<Result<Record>> {
        let now = now();
        let writes = records.iter().map(|record| finish_write(record, &now)).collect();
        self.commit(writes)
            .await
            .into_iter()
            .zip(records)
            .map(|(outcome, record)| {
                outcome.map(|()| Record {
                    state: State::Done,
                    version: record.version + 1,
                    updated_at: Some(now.clone()),
                    ..record.clone()
                })
            })
            .collect()
    }

    /// Delete a record, only if nobody has written it since it was read.
    pub async fn remove(&self, record: &Record) -> Result<()> {
        one(self.remove_many(std::slice::from_ref(record)).await)
    }

    /// Delete many records, each only if nobody has written it since: one call per [`BATCH`].
    pub async fn remove_many(&self, records: &[Record]) -> Vec<Result<()>> {
        let writes = records.iter().map(remove_write).collect();
        self.commit(writes).await
    }

    /// Make conditional writes: one alone as a plain PutItem/UpdateItem/DeleteItem, more together as
    /// transactions of up to [`BATCH`]. A transaction is all or nothing, so when DynamoDB cancels
    /// one, the writes whose condition failed get their conflict and the innocent ones are sent again.
    async fn commit(&self, writes: Vec<Write>) -> Vec<Result<()>> {
        if writes.len() == 1 {
            return vec![self.commit_one(&writes[0]).await];
        }
        let mut results: Vec<Option<Result<()>>> = writes.iter().map(|_| None).collect();
        let indices: Vec<usize> = (0..writes.len()).collect();
        for chunk in indices.chunks(BATCH) {
            let mut pending = chunk.to_vec();
            for _ in 0..CANCELLED_TRIES {
                if pending.is_empty() {
                    break;
                }
                pending = match self.transact(&writes, &pending).await {
                    Ok(()) => {
                        for &i in &pending {
                            results[i] = Some(Ok(()));
                        }
                        Vec::new()
                    }
                    Err(Refused::Whole(why)) => {
                        for &i in &pending {
                            results[i] = Some(Err(other(TRANSACT, &why)));
                        }
                        Vec::new()
                    }
                    Err(Refused::PerWrite(reasons, why)) => {
                        let mut again = Vec::new();
                        for (&i, reason) in pending.iter().zip(reasons) {
                            let write = &writes[i];
                            match reason.as_deref() {
                                // Innocent, or caught up in another transaction on the item: send again.
                                None | Some("TransactionConflict") | Some("ThrottlingError") => again.push(i),
                                Some("ConditionalCheckFailed") => results[i] = Some(Err(write.conflict(&why))),
                                Some(code) => {
                                    let what = format!("{}/{}: {code}", write.az_id, write.resource);
                                    results[i] = Some(Err(other(TRANSACT, &what)));
                                }
                            }
                        }
                        again
                    }
                };
            }
            for i in pending {
                let what = format!(
                    "{}/{}: transaction kept being cancelled",
                    writes[i].az_id, writes[i].resource
                );
                results[i] = Some(Err(other(TRANSACT, &what)));
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(other(TRANSACT, "not sent"))))
            .collect()
    }

    /// Send the `pending` writes as one transaction: done, or why DynamoDB refused it — for each
    /// write when it cancelled the transaction, or as a whole.
    async fn transact(&self, writes: &[Write], pending: &[usize]) -> Result<(), Refused> {
        let items = pending
            .iter()
            .map(|&i| writes[i].transact(&self.table))
            .collect::<Result<Vec<TransactWriteItem>>>()
            .map_err(|e| Refused::Whole(describe(&e)))?;
        let err = match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => return Ok(()),
            Err(err) => err,
        };
        let reasons: Option<Vec<Option<String>>> = match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(c)) => Some(
                c.cancellation_reasons()
                    .iter()
                    .map(|r| r.code().filter(|c| *c != "None").map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        };
        match reasons {
            Some(reasons) if reasons.len() == pending.len() => Err(Refused::PerWrite(reasons, describe(&err))),
            // Not a per-write cancellation (throttled past the SDK's retries, no table...).
            _ => Err(Refused::Whole(describe(&self.map_err(TRANSACT, err)))),
        }
    }

    /// One conditional write, as a plain single-item call.
    async fn commit_one(&self, write: &Write) -> Result<()> {
        let names = Some(write.names.clone()).filter(|n| !n.is_empty());
        let values = Some(write.values.clone()).filter(|v| !v.is_empty());
        match &write.kind {
            WriteKind::Put(item) => self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item.clone()))
                .condition_expression(&write.condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.map_write_err("dynamodb:PutItem", &write.az_id, &write.resource, e)),
            WriteKind::Update(expression) => self
                .client
                .update_item()
                .table_name(&self.table)
                .key(PK, s(&write.az_id))
                .key(SK, s(&write.resource))
                .update_expression(expression)
                .condition_expression(&write.condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.map_write_err("dynamodb:UpdateItem", &write.az_id, &write.resource, e)),
            WriteKind::Delete => self
                .client
                .delete_item()
                .table_name(&self.table)
                .key(PK, s(&write.az_id))
                .key(SK, s(&write.resource))
                .condition_expression(&write.condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.map_write_err("dynamodb:DeleteItem", &write.az_id, &write.resource, e)),
        }
    }

    fn map_err<E>(&self, operation: &'static str, err: SdkError<E, HttpResponse>) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        if err.code() == Some("ResourceNotFoundException") {
            return Error::TableMissing {
                table: self.table.clone(),
                region: self.region.clone(),
                source: Box::new(err),
            };
        }
        Error::from_sdk(operation, err)
    }

    fn map_write_err<E>(
        &self,
        operation: &'static str,
        az_id: &str,
        resource: &str,
        err: SdkError<E, HttpResponse>,
    ) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        if err.code() == Some("ConditionalCheckFailedException") {
            return Error::JournalConflict {
                az_id: az_id.to_owned(),
                resource: resource.to_owned(),
                source: Box::new(err),
            };
        }
        self.map_err(operation, err)
    }
}

/// The call batched writes are made with.
const TRANSACT: &str = "dynamodb:TransactWriteItems";

/// Why a transaction did not go through.
enum Refused {
    /// DynamoDB cancelled it: each write's reason (`None`: it was innocent), and the error's text.
    PerWrite(Vec<Option<String>>, String),
    /// It failed as a whole.
    Whole(String),
}

/// Most writes DynamoDB takes in one transaction.
pub const BATCH: usize = 100;
/// Transactions sent again for their innocent writes after a cancellation.
const CANCELLED_TRIES: usize = 5;

/// One resource's write-ahead, for [`Journal::begin_many`].
#[derive(Debug, Clone, Copy)]
pub struct Begin<'a> {
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

/// A conditional write of one record, sendable alone or in a transaction.
#[derive(Debug, Clone)]
struct Write {
    az_id: String,
    resource: String,
    kind: WriteKind,
    condition: String,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

#[derive(Debug, Clone)]
enum WriteKind {
    Put(HashMap<String, AttributeValue>),
    Update(String),
    Delete,
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

    /// The same write as one item of a transaction.
    fn transact(&self, table: &str) -> Result<TransactWriteItem> {
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
        };
        Ok(item.build())
    }

    /// The lost race of this write, inside a cancelled transaction (`why`: the cancellation).
    fn conflict(&self, why: &str) -> Error {
        Error::JournalConflict {
            az_id: self.az_id.clone(),
            resource: self.resource.clone(),
            source: why.into(),
        }
    }
}

/// The write-ahead of one resource, and the record it leaves (computed here: a transaction returns
/// no attributes, and the write's condition guarantees the record it builds on is the stored one).
fn begin_write(entry: &Begin<'_>, audit: &Audit, now: &str) -> (Write, Record) {
    let Begin {
        az_id,
        resource,
        removed,
        actions,
        existing,
    } = *entry;
    let Some(existing) = existing else {
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
        };
        let write = Write {
            az_id: az_id.to_owned(),
            resource: resource.id.clone(),
            kind: WriteKind::Put(to_item(&record)),
            condition: "attribute_not_exists(#sk)".into(),
            names: HashMap::from([("#sk".to_owned(), SK.to_owned())]),
            values: HashMap::new(),
        };
        return (write, record);
    };
    let union = |old: &[String], new: &[String]| {
        let mut all = old.to_vec();
        all.extend(new.iter().filter(|s| !old.contains(s)).cloned());
        all
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
        ..existing.clone()
    };
    let set_reason = if audit.reason.is_some() { ", reason = :why" } else { "" };
    let mut write = Write {
        az_id: az_id.to_owned(),
        resource: resource.id.clone(),
        kind: WriteKind::Update(format!(
            "SET removed_subnets = :removed, actions = :actions, #state = :state, #version = :next, \
             updated_at = :now, run_id = :run, evacuated_by = :who, azevac_version = :ver{set_reason}"
        )),
        ..Write::versioned(existing.version).naming_state()
    };
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
    (write, record)
}

/// Mark a record done, with the actions it carries.
fn finish_write(record: &Record, now: &str) -> Write {
    let mut write = Write {
        az_id: record.az_id.clone(),
        resource: record.resource.clone(),
        kind: WriteKind::Update("SET #state = :done, #version = :next, updated_at = :now, actions = :actions".into()),
        ..Write::versioned(record.version).naming_state()
    };
    write.values.extend([
        (":actions".to_owned(), list(&record.actions)),
        (":done".to_owned(), s(State::Done.as_str())),
        (":next".to_owned(), n(record.version + 1)),
        (":now".to_owned(), s(now)),
    ]);
    write
}

/// Delete a record.
fn remove_write(record: &Record) -> Write {
    Write {
        az_id: record.az_id.clone(),
        resource: record.resource.clone(),
        kind: WriteKind::Delete,
        ..Write::versioned(record.version)
    }
}

/// The only outcome of a batch of one.
fn one<T>(mut outcomes: Vec<Result<T>>) -> Result<T> {
    outcomes
        .pop()
        .unwrap_or_else(|| Err(other("dynamodb", "no outcome for the write")))
}

/// An error about a batched write, built from another error's text (errors are not cloneable).
fn other(operation: &'static str, text: &str) -> Error {
    Error::Aws {
        operation,
        source: text.to_owned().into(),
    }
}

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::Aws {
        operation: "dynamodb:CreateTable (building the request)",
        source: Box::new(e) as BoxError,
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn list(values: &[String]) -> AttributeValue {
    AttributeValue::L(values.iter().map(|v| s(v)).collect())
}

/// The item DynamoDB stores for a record.
fn to_item(record: &Record) -> HashMap<String, AttributeValue> {
    let mut item = HashMap::from([
        (PK.to_owned(), s(&record.az_id)),
        (SK.to_owned(), s(&record.resource)),
        (TYPE_ATTR.to_owned(), s(&record.resource_type)),
        ("removed_subnets".to_owned(), list(&record.removed_subnets)),
        ("state".to_owned(), s(record.state.as_str())),
        ("version".to_owned(), n(record.version)),
        ("original_subnets".to_owned(), list(&record.original_subnets)),
        ("actions".to_owned(), list(&record.actions)),
    ]);
    let optional = [
        ("resource_name", &record.resource_name),
        ("run_id", &record.run_id),
        ("evacuated_by", &record.evacuated_by),
        ("reason", &record.reason),
        ("azevac_version", &record.azevac_version),
        ("created_at", &record.created_at),
        ("updated_at", &record.updated_at),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            item.insert(name.to_owned(), s(value));
        }
    }
    item
}

/// Read an item back into a record, refusing anything a person or another tool may have damaged:
/// missing keys, wrong types, an empty subnet list, an unknown state.
fn parse(item: &HashMap<String, AttributeValue>) -> Entry {
    let key = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    let az_id = key(PK).unwrap_or_else(|| "?".into());
    let resource = key(SK).unwrap_or_else(|| "?".into());
    let bad = |why: String| Error::BadRecord {
        az_id: az_id.clone(),
        resource: resource.clone(),
        why,
    };
    if az_id == "?" || resource == "?" {
        return Err(bad(format!("{PK} and {SK} must both be strings")));
    }
    let resource_type = key(TYPE_ATTR).ok_or_else(|| bad(format!("{TYPE_ATTR} is missing or not a string")))?;
    let removed_subnets = string_list(item, "removed_subnets")
        .ok_or_else(|| bad("removed_subnets is missing or not a list of strings".into()))?;
    let actions = string_list(item, "actions").unwrap_or_default();
    if removed_subnets.is_empty() && actions.is_empty() {
        return Err(bad("removed_subnets is empty and no actions are recorded".into()));
    }
    let state = match key("state").as_deref() {
        Some("intent") => State::Intent,
        Some("done") => State::Done,
        other => return Err(bad(format!("state is {other:?}, expected \"intent\" or \"done\""))),
    };
    let version = item
        .get("version")
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| bad("version is missing or not a whole number".into()))?;
    Ok(Record {
        resource_type,
        removed_subnets,
        state,
        version,
        resource_name: key("resource_name"),
        original_subnets: string_list(item, "original_subnets").unwrap_or_default(),
        actions,
        run_id: key("run_id"),
        evacuated_by: key("evacuated_by"),
        reason: key("reason"),
        azevac_version: key("azevac_version"),
        created_at: key("created_at"),
        updated_at: key("updated_at"),
        az_id,
        resource,
    })
}

fn string_list(item: &HashMap<String, AttributeValue>, name: &str) -> Option<Vec<String>> {
    item.get(name)?
        .as_l()
        .ok()?
        .iter()
        .map(|v| v.as_s().ok().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: "arn:aws:autoscaling:::autoScalingGroupName/web".into(),
            resource_type: "asg".into(),
            removed_subnets: vec!["subnet-1".into(), "subnet-2".into()],
            state: State::Done,
            version: 3,
            resource_name: Some("web".into()),
            original_subnets: vec!["subnet-0".into(), "subnet-1".into(), "subnet-2".into()],
            actions: vec![],
            run_id: Some("run".into()),
            evacuated_by: Some("arn:aws:iam::123456789012:user/op".into()),
            reason: None,
            azevac_version: Some("0.1.0".into()),
            created_at: Some("2026-12-01T00:00:00Z".into()),
            updated_at: Some("2026-12-01T00:00:01Z".into()),
        }
    }

    #[test]
    fn a_record_survives_the_round_trip() {
        assert_eq!(parse(&to_item(&record())).expect("valid record"), record());
    }

    #[test]
    fn an_empty_subnet_list_is_refused() {
        let mut item = to_item(&record());
        item.insert("removed_subnets".into(), AttributeValue::L(vec![]));
        let err = parse(&item).expect_err("empty list");
        assert!(
            err.to_string()
                .contains("use1-az2/arn:aws:autoscaling:::autoScalingGroupName/web"),
            "{err}"
        );
        assert!(
            err.to_string().contains("removed_subnets is empty and no actions"),
            "{err}"
        );
    }

    #[test]
    fn a_wrongly_typed_subnet_list_is_refused() {
        let mut item = to_item(&record());
        item.insert("removed_subnets".into(), s("subnet-1,subnet-2"));
        assert!(parse(&item).is_err());
        item.insert("removed_subnets".into(), AttributeValue::L(vec![n(1)]));
        assert!(parse(&item).is_err());
    }

    #[test]
    fn missing_keys_and_versions_are_refused() {
        let mut item = to_item(&record());
        item.remove("version");
        assert!(parse(&item).expect_err("no version").to_string().contains("version"));
        let mut item = to_item(&record());
        item.remove(SK);
        assert!(parse(&item)
            .expect_err("no sort key")
            .to_string()
            .contains("use1-az2/?"));
    }

    /// DynamoDB refuses an expression that uses a name or value it was not given, or is given one it
    /// does not use: every write azevac builds must pass that check.
    fn assert_well_formed(write: &Write) {
        let mut text = write.condition.clone();
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
        assert_well_formed(&finish_write(&existing, "now"));
        assert_well_formed(&remove_write(&existing));
    }
}
