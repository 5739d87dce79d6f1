//! Table administration: create the journal table and its index, check that an existing table is
//! one, and say clearly when it is missing.

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    PointInTimeRecoverySpecification, PointInTimeRecoveryStatus, Projection, ProjectionType, ScalarAttributeType,
    TableStatus,
};

use super::{Journal, PK, SK, TYPE_ATTR, TYPE_INDEX};
use crate::error::BoxError;
use crate::{Error, Result};

/// How long point-in-time recovery may stay unavailable on a new table before azevac gives up.
const BACKUPS_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// How long `init` waits for a new table to become ACTIVE.
const CREATE_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

impl Journal {
    /// Whether the table exists (and is usable).
    pub async fn exists(&self) -> Result<bool> {
        match self.client.describe_table().table_name(&self.table).send().await {
            Ok(_) => Ok(true),
            Err(e) if e.code() == Some("ResourceNotFoundException") => Ok(false),
            Err(e) => Err(Error::from_sdk("dynamodb:DescribeTable", e)),
        }
    }

    /// Fail with a message naming `azevac init` when the table does not exist, and refuse (exit 2,
    /// saying what differs) a table that is not a journal; otherwise say how it is protected. One
    /// DescribeTable answers both, and the backups are read alongside it: one round trip before a
    /// recover can plan, where three one after another were.
    pub async fn require(&self) -> Result<Protection> {
        let (table, backups) = tokio::join!(self.describe(), self.backups());
        let table = table?;
        self.schema_of(table.table())?;
        Ok(Protection::of(table.table(), backups))
    }

    /// Whether the table is protected against deletion and can be restored to a point in time.
    /// A check that is itself denied reads as unknown, not as unprotected.
    pub async fn protection(&self) -> Result<Protection> {
        let (table, backups) = tokio::join!(self.describe(), self.backups());
        Ok(Protection::of(table?.table(), backups))
    }

    async fn describe(&self) -> Result<aws_sdk_dynamodb::operation::describe_table::DescribeTableOutput> {
        self.client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
            .map_err(|e| self.map_err("dynamodb:DescribeTable", e))
    }

    /// Whether point-in-time recovery is on (`None`: it could not be read).
    async fn backups(&self) -> Option<bool> {
        match self
            .client
            .describe_continuous_backups()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(out) => Some(
                out.continuous_backups_description()
                    .and_then(|c| c.point_in_time_recovery_description())
                    .and_then(|p| p.point_in_time_recovery_status())
                    == Some(&PointInTimeRecoveryStatus::Enabled),
            ),
            Err(e) => {
                tracing::debug!(
                    operation = "dynamodb:DescribeContinuousBackups",
                    error = %crate::error::sdk::detail(&e),
                    "cannot read the journal's backups"
                );
                None
            }
        }
    }

    /// Turn on deletion protection and point-in-time recovery where they are off; returns what
    /// was turned on (nothing when both already were).
    pub async fn protect(&self) -> Result<Vec<&'static str>> {
        let now = self.protection().await?;
        let mut turned_on = Vec::new();
        if !now.deletion_protection {
            self.client
                .update_table()
                .table_name(&self.table)
                .deletion_protection_enabled(true)
                .send()
                .await
                .map_err(|e| self.map_err("dynamodb:UpdateTable", e))?;
            turned_on.push(DELETION_PROTECTION);
        }
        if now.point_in_time_recovery != Some(true) {
            let pitr = PointInTimeRecoverySpecification::builder()
                .point_in_time_recovery_enabled(true)
                .build()
                .map_err(|e| build_err("dynamodb:UpdateContinuousBackups", e))?;
            // DynamoDB refuses this for a while after a table is created ("Backups are being
            // enabled"): wait for it, within bounds, rather than fail the first evacuation.
            let mut delay = std::time::Duration::from_secs(1);
            let started = std::time::Instant::now();
            loop {
                let sent = self
                    .client
                    .update_continuous_backups()
                    .table_name(&self.table)
                    .point_in_time_recovery_specification(pitr.clone())
                    .send()
                    .await;
                match sent {
                    Ok(_) => break,
                    Err(e)
                        if e.code() == Some("ContinuousBackupsUnavailableException")
                            && started.elapsed() < BACKUPS_WAIT =>
                    {
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(std::time::Duration::from_secs(10));
                    }
                    Err(e) => return Err(self.map_err("dynamodb:UpdateContinuousBackups", e)),
                }
            }
            turned_on.push(POINT_IN_TIME_RECOVERY);
        }
        Ok(turned_on)
    }

    /// Create the table and its index (on-demand billing, deletion protection on) and wait until it
    /// is ACTIVE; the caller then turns on point-in-time recovery with [`Journal::protect`] (the
    /// journal is the only record of what was taken). Returns false, changing nothing, when a table
    /// with the same keys already exists, without a call when this handle has already checked it.
    pub async fn create(&self) -> Result<bool> {
        if self.checked.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(false);
        }
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(|e| build_err("dynamodb:CreateTable", e))
        };
        let attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| build_err("dynamodb:CreateTable", e))
        };
        let index = GlobalSecondaryIndex::builder()
            .index_name(TYPE_INDEX)
            .key_schema(key(TYPE_ATTR, KeyType::Hash)?)
            .key_schema(key(PK, KeyType::Range)?)
            .projection(Projection::builder().projection_type(ProjectionType::All).build())
            .build()
            .map_err(|e| build_err("dynamodb:CreateTable", e))?;
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
            .deletion_protection_enabled(true)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(e) if e.code() == Some("ResourceInUseException") => {
                self.check_schema().await?;
                return Ok(false);
            }
            Err(e) => {
                let error = Error::from_sdk("dynamodb:CreateTable", e);
                // A caller that may not create tables (the operator policy) whose plan found none:
                // if one was created since (by `init`, another run), it is the journal to use.
                if matches!(error, Error::AccessDenied { .. }) && self.check_schema().await.is_ok() {
                    return Ok(false);
                }
                return Err(error);
            }
        }
        self.client
            .wait_until_table_exists()
            .table_name(&self.table)
            .wait(CREATE_WAIT)
            .await
            .map_err(|e| Error::Aws {
                operation: "dynamodb:DescribeTable (waiting for ACTIVE)",
                source: Box::new(crate::error::SdkFailure::waiting(e)),
            })?;
        Ok(true)
    }

    /// Refuse a pre-existing table whose keys are not the journal's (it is someone else's table),
    /// or whose type index does not carry every attribute of a record (records read through it would
    /// be misread): exit 2 with what differs, before anything is written to it.
    pub async fn check_schema(&self) -> Result<()> {
        self.schema_of(self.describe().await?.table())
    }

    fn schema_of(&self, table: Option<&aws_sdk_dynamodb::types::TableDescription>) -> Result<()> {
        let keys: Vec<(String, String)> = table
            .map(|t| {
                t.key_schema()
                    .iter()
                    .map(|k| (k.attribute_name().to_owned(), k.key_type().as_str().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let type_index = table.and_then(|t| {
            t.global_secondary_indexes()
                .iter()
                .find(|i| i.index_name() == Some(TYPE_INDEX))
        });
        let index: Option<Vec<(String, String)>> = type_index.map(|i| {
            i.key_schema()
                .iter()
                .map(|k| (k.attribute_name().to_owned(), k.key_type().as_str().to_owned()))
                .collect()
        });
        let projection = type_index.and_then(|i| i.projection());
        if let Some(what) = schema_difference(&keys, index.as_deref(), projection) {
            return Err(Error::BadInput(format!(
                "table {:?} exists but is not an azevac journal: {what}; nothing was written to it: \
                 pass --table with another name",
                self.table
            )));
        }
        self.checked.store(true, std::sync::atomic::Ordering::Relaxed);
        let active = table.and_then(|t| t.table_status()) == Some(&TableStatus::Active);
        if !active {
            tracing::warn!(table = %self.table, "journal table exists but is not ACTIVE yet");
        }
        Ok(())
    }
}

/// The journal's protection, as `describe_table` and `describe_continuous_backups` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protection {
    /// DeletionProtectionEnabled.
    pub deletion_protection: bool,
    /// Point-in-time recovery enabled; `None` when it could not be read (permission denied).
    pub point_in_time_recovery: Option<bool>,
}

const DELETION_PROTECTION: &str = "deletion protection";
const POINT_IN_TIME_RECOVERY: &str = "point-in-time recovery";

impl Protection {
    fn of(table: Option<&aws_sdk_dynamodb::types::TableDescription>, point_in_time_recovery: Option<bool>) -> Self {
        Protection {
            deletion_protection: table.and_then(|t| t.deletion_protection_enabled()) == Some(true),
            point_in_time_recovery,
        }
    }

    /// One warning line when either protection is off, naming the command that turns it on.
    pub fn warning(&self, table: &str) -> Option<String> {
        let mut missing = Vec::new();
        if !self.deletion_protection {
            missing.push(DELETION_PROTECTION);
        }
        if self.point_in_time_recovery == Some(false) {
            missing.push(POINT_IN_TIME_RECOVERY);
        }
        (!missing.is_empty()).then(|| {
            format!(
                "journal table {table} has no {}: a deleted or damaged table would lose every record; \
                 run `azevac init --table {table}` (under the admin policy) to turn it on",
                missing.join(" and no ")
            )
        })
    }
}

/// What makes this table not a journal, in words; `None` when it is one: its keys, its type
/// index's keys, and what that index projects (`projection` as DescribeTable reports it). Recover
/// and status read records through the index, so it must carry every attribute of a record: ALL,
/// or INCLUDE naming each of them. With less (KEYS_ONLY), the records read through it would lack
/// their subnets and state, and be misread.
fn schema_difference(
    keys: &[(String, String)],
    index: Option<&[(String, String)]>,
    projection: Option<&Projection>,
) -> Option<String> {
    let pair = |name: &str, kind: &str| (name.to_owned(), kind.to_owned());
    let show = |keys: &[(String, String)]| {
        keys.iter()
            .map(|(name, kind)| format!("{name} ({kind})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let table_keys = [pair(PK, "HASH"), pair(SK, "RANGE")];
    let index_keys = [pair(TYPE_ATTR, "HASH"), pair(PK, "RANGE")];
    if keys != table_keys {
        return Some(format!(
            "its keys are {}, a journal's are {}",
            show(keys),
            show(&table_keys)
        ));
    }
    match index {
        None => return Some(format!("it has no index {TYPE_INDEX}")),
        Some(index) if index != index_keys => {
            return Some(format!(
                "its index {TYPE_INDEX} has keys {}, a journal's has {}",
                show(index),
                show(&index_keys)
            ))
        }
        Some(_) => {}
    }
    let journal_projects = "a journal's projects ALL, as `azevac init` makes it";
    match projection.and_then(|p| p.projection_type()) {
        Some(ProjectionType::All) => None,
        Some(ProjectionType::Include) => {
            let included = projection.map(|p| p.non_key_attributes()).unwrap_or_default();
            let missing: Vec<&str> = super::record::ATTRIBUTES
                .into_iter()
                .filter(|a| !included.iter().any(|i| i == a))
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "its index {TYPE_INDEX} projects INCLUDE without {} (records read through it would be \
                     misread); {journal_projects}",
                    missing.join(", ")
                )
            })
        }
        other => Some(format!(
            "its index {TYPE_INDEX} projects {} (records read through it would lack their subnets and \
             state); {journal_projects}",
            other.map_or("nothing it reports", |p| p.as_str())
        )),
    }
}

fn build_err(operation: &'static str, e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::Aws {
        operation,
        source: Box::new(e) as BoxError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    fn projection(kind: ProjectionType, attributes: &[&str]) -> Projection {
        let mut projection = Projection::builder().projection_type(kind);
        for attribute in attributes {
            projection = projection.non_key_attributes(*attribute);
        }
        projection.build()
    }

    #[test]
    fn says_what_differs_from_a_journal() {
        let good = keys(&[(PK, "HASH"), (SK, "RANGE")]);
        let index = keys(&[(TYPE_ATTR, "HASH"), (PK, "RANGE")]);
        let all = projection(ProjectionType::All, &[]);
        assert_eq!(schema_difference(&good, Some(&index), Some(&all)), None);
        let other = schema_difference(&keys(&[("id", "HASH")]), Some(&index), Some(&all)).expect("differs");
        assert!(other.contains("its keys are id (HASH)"), "{other}");
        let no_index = schema_difference(&good, None, None).expect("differs");
        assert!(no_index.contains("no index"), "{no_index}");
        let wrong = schema_difference(&good, Some(&keys(&[(TYPE_ATTR, "HASH")])), Some(&all)).expect("differs");
        assert!(wrong.contains("its index"), "{wrong}");
    }

    /// Issue 36: an index that projects less than a record is refused like a foreign table; ALL, or
    /// INCLUDE of every attribute of a record, is a journal's.
    #[test]
    fn issue_36_a_type_index_must_project_every_attribute_of_a_record() {
        let good = keys(&[(PK, "HASH"), (SK, "RANGE")]);
        let index = keys(&[(TYPE_ATTR, "HASH"), (PK, "RANGE")]);
        let differs = |projection: Option<&Projection>| schema_difference(&good, Some(&index), projection);

        let keys_only = differs(Some(&projection(ProjectionType::KeysOnly, &[]))).expect("KEYS_ONLY differs");
        assert!(
            keys_only.contains("its index resource_type-index projects KEYS_ONLY")
                && keys_only.contains("a journal's projects ALL"),
            "{keys_only}"
        );
        let short = differs(Some(&projection(
            ProjectionType::Include,
            &["removed_subnets", "state"],
        )))
        .expect("a short INCLUDE differs");
        assert!(
            short.contains("projects INCLUDE without version, original_subnets"),
            "{short}"
        );
        assert!(
            !short.contains("without removed_subnets") && !short.contains(" state,"),
            "{short}"
        );
        let mut every: Vec<&str> = crate::journal::record::ATTRIBUTES.to_vec();
        every.push("someone_elses");
        assert_eq!(differs(Some(&projection(ProjectionType::Include, &every))), None);
        every.retain(|a| *a != "identity");
        let one_short = differs(Some(&projection(ProjectionType::Include, &every))).expect("differs");
        assert!(one_short.contains("without identity (records"), "{one_short}");
        assert!(differs(None)
            .expect("no projection")
            .contains("projects nothing it reports"));
        assert!(!keys_only.contains('\n') && !short.contains('\n'), "one line");
    }

    #[test]
    fn warns_only_about_what_is_off() {
        let on = Protection {
            deletion_protection: true,
            point_in_time_recovery: Some(true),
        };
        assert_eq!(on.warning("t"), None);
        let unknown = Protection {
            point_in_time_recovery: None,
            ..on
        };
        assert_eq!(
            unknown.warning("t"),
            None,
            "a check that could not be made is no finding"
        );
        let off = Protection {
            deletion_protection: false,
            point_in_time_recovery: Some(false),
        };
        let line = off.warning("t").expect("warning");
        assert!(
            line.contains("no deletion protection and no point-in-time recovery"),
            "{line}"
        );
    }
}
