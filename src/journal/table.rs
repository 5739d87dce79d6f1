//! Table administration: create the journal table and its index, check that an existing table is
//! one, and say clearly when it is missing.

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, TableStatus,
};

use super::{Journal, PK, SK, TYPE_ATTR, TYPE_INDEX};
use crate::error::BoxError;
use crate::{Error, Result};

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
}

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::Aws {
        operation: "dynamodb:CreateTable (building the request)",
        source: Box::new(e) as BoxError,
    }
}
