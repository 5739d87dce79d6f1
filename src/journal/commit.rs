//! Commit: send conditional writes to DynamoDB, one alone as a plain single-item call, more as
//! transactions. Writes come in groups — a resource's lock and its records — and a group succeeds
//! or fails whole: a record is never written without its lock, nor a lock taken without its record.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::TransactWriteItem;
use aws_smithy_runtime_api::http::Response as HttpResponse;

use super::record::s;
use super::writes::{Write, WriteKind};
use super::{Journal, PK, SK};
use crate::error::describe;
use crate::{Error, Result};

/// The call batched writes are made with.
const TRANSACT: &str = "dynamodb:TransactWriteItems";
/// Most items DynamoDB takes in one transaction.
pub const TRANSACTION_ITEMS: usize = 100;
/// Transactions sent again for their innocent groups after a cancellation.
const CANCELLED_TRIES: u32 = 5;

/// How long a transaction DynamoDB cancelled for throttling (`ThrottlingError`: a partition's
/// write rate exceeded, which the SDK does not retry) is sent again, backing off up to
/// [`THROTTLED_BACKOFF`] between tries. Every lock and every record of a zone share one partition
/// key each, so a large run across many accounts can meet it: a wait, not a failed line.
const THROTTLED_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// The longest wait between two tries of a throttled transaction.
const THROTTLED_BACKOFF: std::time::Duration = std::time::Duration::from_secs(4);

/// Why a transaction did not go through.
enum Refused {
    /// DynamoDB cancelled it: each write's reason (`None`: it was innocent), and the error's text.
    PerWrite(Vec<Option<String>>, String),
    /// It failed as a whole.
    Whole(String),
}

/// How a group failed: the first write of it whose condition did not hold (its index in the
/// group), or another error.
#[derive(Debug)]
pub(super) struct GroupError {
    /// The write whose condition failed, when that is why.
    pub(super) conditional: Option<usize>,
    /// What happened.
    pub(super) error: Error,
}

impl Journal {
    /// Commit groups of writes: each group all or nothing, groups independent of each other.
    /// Groups are packed into transactions of up to [`TRANSACTION_ITEMS`] writes; when DynamoDB
    /// cancels one, the groups whose condition failed get their error and the innocent ones are
    /// sent again.
    pub(super) async fn commit(&self, groups: Vec<Vec<Write>>) -> Vec<Result<(), GroupError>> {
        let mut results: Vec<Option<Result<(), GroupError>>> = groups.iter().map(|_| None).collect();
        if groups.len() == 1 && groups[0].len() == 1 {
            let outcome = self.commit_one(&groups[0][0]).await.map_err(|error| GroupError {
                conditional: error.is_conflict().then_some(0),
                error,
            });
            return vec![outcome];
        }
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        for chunk in batches(&sizes, TRANSACTION_ITEMS) {
            let mut pending = chunk;
            let started = std::time::Instant::now();
            let (mut attempt, mut throttled) = (0_u32, false);
            // A conflict is tried CANCELLED_TRIES times; throttling, for THROTTLED_FOR.
            while !pending.is_empty() && (attempt < CANCELLED_TRIES || (throttled && started.elapsed() < THROTTLED_FOR))
            {
                // Resent after a cancellation (a conflict elsewhere, or throttling): back off first.
                if attempt > 0 {
                    let backoff = std::time::Duration::from_millis(50 << attempt.min(10));
                    tokio::time::sleep(backoff.min(THROTTLED_BACKOFF)).await;
                }
                attempt += 1;
                pending = match self.transact(&groups, &pending).await {
                    Ok(()) => {
                        for &i in &pending {
                            results[i] = Some(Ok(()));
                        }
                        Vec::new()
                    }
                    Err(Refused::Whole(why)) => {
                        for &i in &pending {
                            results[i] = Some(Err(GroupError {
                                conditional: None,
                                error: other(TRANSACT, &why),
                            }));
                        }
                        Vec::new()
                    }
                    Err(Refused::PerWrite(reasons, why)) => {
                        throttled = reasons.iter().any(|r| r.as_deref() == Some(THROTTLING_ERROR));
                        let mut again = Vec::new();
                        let mut reasons = reasons.into_iter();
                        for &i in &pending {
                            let group_reasons: Vec<Option<String>> = reasons.by_ref().take(groups[i].len()).collect();
                            match judge(&groups[i], &group_reasons, &why) {
                                None => again.push(i),
                                Some(failure) => results[i] = Some(Err(failure)),
                            }
                        }
                        again
                    }
                };
            }
            for i in pending {
                let what = format!("{}: transaction kept being cancelled", describe_group(&groups[i]));
                results[i] = Some(Err(GroupError {
                    conditional: None,
                    error: other(TRANSACT, &what),
                }));
            }
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(GroupError {
                        conditional: None,
                        error: other(TRANSACT, "not sent"),
                    })
                })
            })
            .collect()
    }

    /// Send the `pending` groups as one transaction: done, or why DynamoDB refused it — for each
    /// write when it cancelled the transaction, or as a whole.
    async fn transact(&self, groups: &[Vec<Write>], pending: &[usize]) -> Result<(), Refused> {
        let items = pending
            .iter()
            .flat_map(|&i| groups[i].iter())
            .map(|w| w.transact(&self.table))
            .collect::<Result<Vec<TransactWriteItem>>>()
            .map_err(|e| Refused::Whole(describe(&e)))?;
        let count = items.len();
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
            Some(reasons) if reasons.len() == count => Err(Refused::PerWrite(reasons, describe(&err))),
            // Not a per-write cancellation (throttled past the SDK's retries, no table...).
            _ => Err(Refused::Whole(describe(&self.map_err(TRANSACT, err)))),
        }
    }

    /// One conditional write, as a plain single-item call.
    pub(super) async fn commit_one(&self, write: &Write) -> Result<()> {
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
            // A check alone is a read: nothing to send that a transaction would not.
            WriteKind::Check => Err(other(
                TRANSACT,
                "internal: a condition check is only sent in a transaction",
            )),
        }
    }

    /// An SDK error of a table call, with a missing table said as such.
    pub(super) fn map_err<E>(&self, operation: &'static str, err: SdkError<E, HttpResponse>) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        if err.code() == Some("ResourceNotFoundException") {
            return Error::TableMissing {
                table: self.table.clone(),
                region: self.region.clone(),
                source: Box::new(crate::error::SdkFailure::new(err)),
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
                source: Box::new(crate::error::SdkFailure::new(err)),
            };
        }
        self.map_err(operation, err)
    }
}

/// Pack groups of these sizes, in order, into batches of at most `limit` (a group larger than the
/// limit gets a batch of its own); returns the groups' indices per batch. Groups never split, so a
/// resource's writes (or lines) always travel together.
pub fn batches(sizes: &[usize], limit: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut size = 0;
    for (i, &n) in sizes.iter().enumerate() {
        if out.is_empty() || (size + n > limit && size > 0) {
            out.push(Vec::new());
            size = 0;
        }
        size += n;
        if let Some(batch) = out.last_mut() {
            batch.push(i);
        }
    }
    out
}

/// The cancellation reason of a write DynamoDB throttled.
const THROTTLING_ERROR: &str = "ThrottlingError";

/// A cancelled group's fate from its writes' reasons: `None` when every write was innocent (or
/// caught up in another transaction on the item, or throttled), so it may be sent again.
fn judge(group: &[Write], reasons: &[Option<String>], why: &str) -> Option<GroupError> {
    for (n, (write, reason)) in group.iter().zip(reasons).enumerate() {
        match reason.as_deref() {
            None | Some("TransactionConflict") | Some(THROTTLING_ERROR) => {}
            Some("ConditionalCheckFailed") => {
                return Some(GroupError {
                    conditional: Some(n),
                    error: write.conflict(why),
                })
            }
            Some(code) => {
                let what = format!("{}/{}: {code}", write.az_id, write.resource);
                return Some(GroupError {
                    conditional: None,
                    error: other(TRANSACT, &what),
                });
            }
        }
    }
    None
}

fn describe_group(group: &[Write]) -> String {
    group
        .iter()
        .map(|w| format!("{}/{}", w.az_id, w.resource))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An error about a batched write, built from another error's text (errors are not cloneable).
pub(super) fn other(operation: &'static str, text: &str) -> Error {
    Error::Aws {
        operation,
        source: text.to_owned().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::batches;

    #[test]
    fn groups_are_packed_in_order_and_never_split() {
        assert_eq!(batches(&[2, 2, 2], 4), vec![vec![0, 1], vec![2]]);
        assert_eq!(
            batches(&[5, 1], 4),
            vec![vec![0], vec![1]],
            "an oversized group travels alone"
        );
        assert_eq!(batches(&[1, 3, 1], 4), vec![vec![0, 1], vec![2]]);
        assert!(batches(&[], 4).is_empty());
    }
}
