//! The emulator every test runs against is moto through scripts/moto_server.py, which replaces
//! moto's whole-table rollback backup of TransactWriteItems with a backup of the items the
//! transaction names. The journal's protocol rests on a cancelled transaction changing nothing, so
//! that is checked here on the journal's own table: a cancelled transaction that overwrote, updated,
//! deleted and created items leaves every item exactly as it was, and one that is not cancelled lands.
//! Its second fix answers items already in wire form as they are: every read answers what moto
//! unchanged answers. Its third parses each condition of a transaction once: conditional transactions
//! land or are cancelled, item by item, as on moto unchanged.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update};
use azevac::journal::Journal;

use crate::common::{self, attr_s, Moto, TABLE};

type Item = HashMap<String, AttributeValue>;

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_string())
}

fn key(az: &str, resource: &str) -> Item {
    HashMap::from([("az_id".to_string(), s(az)), ("resource".to_string(), s(resource))])
}

fn record(az: &str, resource: &str, subnets: &[&str]) -> Item {
    let mut item = key(az, resource);
    item.insert("resource_type".to_string(), s("asg"));
    item.insert(
        "removed_subnets".to_string(),
        AttributeValue::L(subnets.iter().map(|id| s(id)).collect()),
    );
    item
}

/// The journal's table on this server, holding `items`.
async fn table_holding(
    moto: &Moto,
    items: impl IntoIterator<Item = Item>,
) -> (aws_config::SdkConfig, aws_sdk_dynamodb::Client) {
    let sdk = common::sdk(moto).await;
    Journal::new(&sdk, TABLE).create().await.expect("the journal table");
    let db = aws_sdk_dynamodb::Client::new(&sdk);
    for item in items {
        db.put_item()
            .table_name(TABLE)
            .set_item(Some(item))
            .send()
            .await
            .expect("PutItem");
    }
    (sdk, db)
}

async fn sorted_items(sdk: &aws_config::SdkConfig) -> Vec<Item> {
    let mut items = common::table_items(sdk).await;
    items.sort_by_key(|item| (attr_s(item, "az_id"), attr_s(item, "resource")));
    items
}

#[tokio::test]
async fn a_cancelled_transaction_changes_nothing_and_a_landed_one_lands() {
    let moto = Moto::start();
    let groups = (0..40).map(|n| record("use1-az2", &format!("group-{n:02}"), &["subnet-a", "subnet-b"]));
    let (sdk, db) = table_holding(&moto, groups).await;
    let before = sorted_items(&sdk).await;

    let overwrite = (0..10).map(|n| {
        let put = Put::builder()
            .table_name(TABLE)
            .set_item(Some(record("use1-az2", &format!("group-{n:02}"), &["x"])));
        TransactWriteItem::builder().put(put.build().expect("put")).build()
    });
    let update = (10..20).map(|n| {
        let update = Update::builder()
            .table_name(TABLE)
            .set_key(Some(key("use1-az2", &format!("group-{n:02}"))))
            .update_expression("SET removed = :none, extra = :extra")
            .expression_attribute_values(":none", AttributeValue::L(Vec::new()))
            .expression_attribute_values(":extra", s("changed"));
        TransactWriteItem::builder()
            .update(update.build().expect("update"))
            .build()
    });
    let delete = (20..30).map(|n| {
        let delete = Delete::builder()
            .table_name(TABLE)
            .set_key(Some(key("use1-az2", &format!("group-{n:02}"))));
        TransactWriteItem::builder()
            .delete(delete.build().expect("delete"))
            .build()
    });
    let create = (0..10).map(|n| {
        let put = Put::builder()
            .table_name(TABLE)
            .set_item(Some(record("use1-az3", &format!("new-{n}"), &["y"])));
        TransactWriteItem::builder().put(put.build().expect("put")).build()
    });
    let fails = ConditionCheck::builder()
        .table_name(TABLE)
        .set_key(Some(key("use1-az2", "group-39")))
        .condition_expression("attribute_not_exists(az_id)")
        .build()
        .expect("condition check");
    let items: Vec<_> = overwrite
        .chain(update)
        .chain(delete)
        .chain(create)
        .chain([TransactWriteItem::builder().condition_check(fails).build()])
        .collect();
    let cancelled = db
        .transact_write_items()
        .set_transact_items(Some(items.clone()))
        .send()
        .await;
    let code = cancelled.expect_err("the condition fails").into_service_error();
    assert!(code.is_transaction_canceled_exception(), "{code:?}");
    assert_eq!(
        sorted_items(&sdk).await,
        before,
        "a cancelled transaction changed the table"
    );

    // The same writes without the failing check land, every one of them.
    let landed = items[..items.len() - 1].to_vec();
    db.transact_write_items()
        .set_transact_items(Some(landed))
        .send()
        .await
        .expect("TransactWriteItems");
    let after = sorted_items(&sdk).await;
    assert_eq!(after.len(), 40 - 10 + 10, "10 deleted, 10 created");
    let by_name: HashMap<String, &Item> = after.iter().map(|item| (attr_s(item, "resource"), item)).collect();
    assert_eq!(by_name["group-00"]["removed_subnets"], AttributeValue::L(vec![s("x")]));
    assert_eq!(attr_s(by_name["group-15"], "extra"), "changed");
    assert!(!by_name.contains_key("group-25"));
    assert_eq!(attr_s(by_name["new-3"], "az_id"), "use1-az3");
}

/// Every kind of attribute value, nested too: the ones the launcher answers as they are and the
/// ones it leaves to moto's own serializer (binary values).
fn every_kind(n: usize) -> Item {
    let nested = AttributeValue::M(HashMap::from([
        (
            "list".to_string(),
            AttributeValue::L(vec![s("a"), AttributeValue::N("1.5".into())]),
        ),
        ("flag".to_string(), AttributeValue::Bool(false)),
        ("nothing".to_string(), AttributeValue::Null(true)),
        ("empty".to_string(), AttributeValue::M(HashMap::new())),
    ]));
    let mut item = key("use1-az2", &format!("item-{n:03}"));
    item.extend([
        ("resource_type".to_string(), s("asg")),
        ("text".to_string(), s("")),
        ("number".to_string(), AttributeValue::N(format!("-{n}.250"))),
        ("strings".to_string(), AttributeValue::Ss(vec!["x".into(), "y".into()])),
        ("numbers".to_string(), AttributeValue::Ns(vec!["1".into(), "20".into()])),
        (
            "list".to_string(),
            AttributeValue::L(vec![nested.clone(), AttributeValue::L(Vec::new())]),
        ),
        ("map".to_string(), nested),
        ("yes".to_string(), AttributeValue::Bool(true)),
    ]);
    if n.is_multiple_of(2) {
        let bytes = aws_sdk_dynamodb::primitives::Blob::new(vec![0, 159, n as u8]);
        item.insert("binary".to_string(), AttributeValue::B(bytes.clone()));
        item.insert(
            "binaries".to_string(),
            AttributeValue::Bs(vec![bytes, aws_sdk_dynamodb::primitives::Blob::new(b"ok".to_vec())]),
        );
        item.insert(
            "in_a_list".to_string(),
            AttributeValue::L(vec![AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(
                b"b".to_vec(),
            ))]),
        );
    }
    item
}

/// What the reads answer on one server, for the items `every_kind` wrote there.
async fn answers(moto: &Moto) -> Vec<Vec<Item>> {
    let (_, db) = table_holding(moto, (0..6).map(every_kind)).await;
    let query = db
        .query()
        .table_name(TABLE)
        .consistent_read(true)
        .key_condition_expression("az_id = :az")
        .expression_attribute_values(":az", s("use1-az2"))
        .send()
        .await
        .expect("Query");
    let on_the_index = || {
        db.query()
            .table_name(TABLE)
            .index_name(azevac::journal::TYPE_INDEX)
            .key_condition_expression("resource_type = :t")
            .expression_attribute_values(":t", s("asg"))
    };
    let by_type = on_the_index().send().await.expect("Query on the index");
    let got = db
        .get_item()
        .table_name(TABLE)
        .set_key(Some(key("use1-az2", "item-002")))
        .send()
        .await
        .expect("GetItem");
    let updated = db
        .update_item()
        .table_name(TABLE)
        .set_key(Some(key("use1-az2", "item-003")))
        .update_expression("SET #n = :n")
        .expression_attribute_names("#n", "number")
        .expression_attribute_values(":n", AttributeValue::N("7".into()))
        .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
        .send()
        .await
        .expect("UpdateItem");
    let deleted = db
        .delete_item()
        .table_name(TABLE)
        .set_key(Some(key("use1-az2", "item-004")))
        .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
        .send()
        .await
        .expect("DeleteItem");
    let mut scanned = db
        .scan()
        .table_name(TABLE)
        .send()
        .await
        .expect("Scan")
        .items
        .unwrap_or_default();
    scanned.sort_by_key(|item| attr_s(item, "resource"));
    // Page by page, two items a page: the items and each page's LastEvaluatedKey (itself an item's key
    // of attribute values, serialized the same way).
    let mut pages = Vec::new();
    let mut start = None;
    loop {
        let page = on_the_index()
            .limit(2)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("a page of Query");
        pages.extend(page.items.unwrap_or_default());
        start = page.last_evaluated_key;
        match &start {
            Some(last) => pages.push(last.clone()),
            None => break,
        }
    }
    let wanted = || {
        aws_sdk_dynamodb::types::KeysAndAttributes::builder()
            .keys(key("use1-az2", "item-001"))
            .keys(key("use1-az2", "item-002"))
            .consistent_read(true)
            .build()
            .expect("keys")
    };
    let mut batch = db
        .batch_get_item()
        .request_items(TABLE, wanted())
        .send()
        .await
        .expect("BatchGetItem")
        .responses
        .unwrap_or_default()
        .remove(TABLE)
        .unwrap_or_default();
    batch.sort_by_key(|item| attr_s(item, "resource"));
    let get = |resource: &str| {
        aws_sdk_dynamodb::types::TransactGetItem::builder()
            .get(
                aws_sdk_dynamodb::types::Get::builder()
                    .table_name(TABLE)
                    .set_key(Some(key("use1-az2", resource)))
                    .build()
                    .expect("Get"),
            )
            .build()
    };
    let transacted = db
        .transact_get_items()
        .transact_items(get("item-000"))
        .transact_items(get("item-001"))
        .send()
        .await
        .expect("TransactGetItems")
        .responses
        .unwrap_or_default()
        .into_iter()
        .filter_map(|answer| answer.item)
        .collect();
    vec![
        query.items.unwrap_or_default(),
        by_type.items.unwrap_or_default(),
        got.item.into_iter().collect(),
        updated.attributes.into_iter().collect(),
        deleted.attributes.into_iter().collect(),
        scanned,
        pages,
        batch,
        transacted,
    ]
}

/// The launcher's second fix answers an item already in DynamoDB's wire form as it is, instead of
/// walking it through moto's serializer: every read answers the same items, value for value, as
/// moto unchanged does, binary values (which still take moto's walk) included.
#[tokio::test]
async fn items_answered_as_they_are_read_the_same_as_moto_unchanged() {
    let (fixed, unfixed) = (Moto::start_through_launcher(), Moto::start_unfixed());
    let (through_launcher, unchanged) = (answers(&fixed).await, answers(&unfixed).await);
    assert_eq!(through_launcher[0].len(), 6, "{:?}", through_launcher[0]);
    assert_eq!(
        through_launcher[6].len(),
        5 + 2,
        "the five items left in pages of two, each full page with its LastEvaluatedKey: {:?}",
        through_launcher[6]
    );
    assert_eq!(through_launcher[7].len(), 2, "BatchGetItem: {:?}", through_launcher[7]);
    assert_eq!(
        through_launcher[8].len(),
        2,
        "TransactGetItems: {:?}",
        through_launcher[8]
    );
    assert_eq!(
        through_launcher[2],
        vec![every_kind(2)],
        "GetItem gives back what was put"
    );
    assert_eq!(through_launcher, unchanged);
}

/// Conditional transactions as the journal writes them (a version check on an update, `attribute_not_exists`
/// on a put, a version check on a delete, a condition check), some of which pass and some of which fail: the
/// launcher (which parses each condition once a transaction) and moto unchanged must answer each one the
/// same — landed, or cancelled with the same reason for every item — and leave the same items.
#[tokio::test]
async fn conditional_transactions_answer_the_same_as_moto_unchanged() {
    let (fixed, unfixed) = (Moto::start_through_launcher(), Moto::start_unfixed());
    let (through_launcher, unchanged) = (conditional_outcomes(&fixed).await, conditional_outcomes(&unfixed).await);
    let landed = through_launcher.iter().filter(|o| o.starts_with("landed")).count();
    assert!(
        landed >= 2 && landed < through_launcher.len() - 1,
        "some land, some are cancelled: {through_launcher:#?}"
    );
    assert_eq!(through_launcher, unchanged);
}

/// Each transaction's outcome ("landed", or the cancellation reason of every item), then the items left.
async fn conditional_outcomes(moto: &Moto) -> Vec<String> {
    let groups = (0..4).map(|n| {
        let mut item = record("use1-az2", &format!("group-{n}"), &["subnet-a"]);
        item.insert("version".to_string(), AttributeValue::N("1".into()));
        item
    });
    let (sdk, db) = table_holding(moto, groups).await;
    let versioned_update = |resource: &str, version: &str| {
        let update = Update::builder()
            .table_name(TABLE)
            .set_key(Some(key("use1-az2", resource)))
            .update_expression("SET #version = :next, removed_subnets = :removed")
            .condition_expression("attribute_exists(#sk) AND #version = :v")
            .expression_attribute_names("#version", "version")
            .expression_attribute_names("#sk", "resource")
            .expression_attribute_values(":v", AttributeValue::N(version.into()))
            .expression_attribute_values(":next", AttributeValue::N("2".into()))
            .expression_attribute_values(":removed", AttributeValue::L(vec![s("subnet-b")]));
        TransactWriteItem::builder()
            .update(update.build().expect("update"))
            .build()
    };
    let new_record = |resource: &str| {
        let put = Put::builder()
            .table_name(TABLE)
            .set_item(Some(record("use1-az2", resource, &["subnet-c"])))
            .condition_expression("attribute_not_exists(#sk)")
            .expression_attribute_names("#sk", "resource");
        TransactWriteItem::builder().put(put.build().expect("put")).build()
    };
    let versioned_delete = |resource: &str, version: &str| {
        let delete = Delete::builder()
            .table_name(TABLE)
            .set_key(Some(key("use1-az2", resource)))
            .condition_expression("#version = :v")
            .expression_attribute_names("#version", "version")
            .expression_attribute_values(":v", AttributeValue::N(version.into()));
        TransactWriteItem::builder()
            .delete(delete.build().expect("delete"))
            .build()
    };
    let check = |resource: &str, expression: &str| {
        let check = ConditionCheck::builder()
            .table_name(TABLE)
            .set_key(Some(key("use1-az2", resource)))
            .condition_expression(expression)
            .build()
            .expect("condition check");
        TransactWriteItem::builder().condition_check(check).build()
    };
    let transactions = vec![
        vec![versioned_update("group-0", "1"), new_record("new-0")],
        // The same again: group-0 is at version 2 now and new-0 exists, so both fail.
        vec![versioned_update("group-0", "1"), new_record("new-0")],
        vec![versioned_delete("group-1", "1"), versioned_update("group-2", "1")],
        vec![versioned_delete("group-3", "7"), new_record("new-1")],
        vec![check("group-3", "attribute_exists(az_id)"), new_record("new-2")],
        vec![
            check("group-9", "attribute_exists(az_id)"),
            versioned_update("group-3", "1"),
        ],
    ];
    let mut outcomes = Vec::new();
    for items in transactions {
        let answer = db.transact_write_items().set_transact_items(Some(items)).send().await;
        outcomes.push(match answer {
            Ok(_) => "landed".to_string(),
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(
                    cancelled,
                ) => {
                    let reasons: Vec<String> = cancelled
                        .cancellation_reasons()
                        .iter()
                        .map(|r| r.code().unwrap_or("-").to_string())
                        .collect();
                    format!("cancelled: {}", reasons.join(", "))
                }
                other => format!("error: {other:?}"),
            },
        });
    }
    for item in sorted_items(&sdk).await {
        let mut fields: Vec<String> = item.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        fields.sort();
        outcomes.push(fields.join(" "));
    }
    outcomes
}

/// scripts/test has every test's server forked from one warmed process (scripts/moto_pool.py). Each
/// must be what a server started from nothing is: empty (the warm-up's table is gone), apart from the
/// others, drawing identifiers of its own (a fork copies the pool's random state); and it must stop
/// once its handle is let go, and when the pool stops.
#[tokio::test]
async fn pooled_servers_start_empty_apart_and_stop_when_let_go() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let socket = dir.path().join("pool.sock");
    let mut pool = common::moto::start_pool(&socket);
    let (a, b) = (Moto::start_in_pool(&socket), Moto::start_in_pool(&socket));
    let (sdk_a, sdk_b) = (common::sdk(&a).await, common::sdk(&b).await);
    let (ec2_a, ec2_b) = (aws_sdk_ec2::Client::new(&sdk_a), aws_sdk_ec2::Client::new(&sdk_b));
    let vpc = |ec2: aws_sdk_ec2::Client| async move {
        let created = ec2
            .create_vpc()
            .cidr_block("10.77.0.0/16")
            .send()
            .await
            .expect("CreateVpc");
        created.vpc.and_then(|v| v.vpc_id).expect("a VPC ID")
    };
    let (vpc_a, vpc_b) = (vpc(ec2_a.clone()).await, vpc(ec2_b).await);
    assert_ne!(vpc_a, vpc_b, "two forked servers drew the same identifier");
    let seen_by_a: Vec<String> = ec2_a
        .describe_vpcs()
        .send()
        .await
        .expect("DescribeVpcs")
        .vpcs()
        .iter()
        .filter_map(|v| v.vpc_id.clone())
        .collect();
    assert!(
        seen_by_a.contains(&vpc_a) && !seen_by_a.contains(&vpc_b),
        "{seen_by_a:?}"
    );

    Journal::new(&sdk_a, TABLE).create().await.expect("the journal table");
    let tables_b = aws_sdk_dynamodb::Client::new(&sdk_b)
        .list_tables()
        .send()
        .await
        .expect("ListTables");
    assert!(
        tables_b.table_names().is_empty(),
        "b sees a table of a or of the warm-up: {tables_b:?}"
    );
    assert!(common::table_items(&sdk_a).await.is_empty());

    let port_b = b.port();
    drop(b);
    let stops = |port: u16| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while common::moto::answers(port) {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        true
    };
    assert!(stops(port_b), "a let-go server still answers");
    assert!(common::moto::answers(a.port()), "letting one go stopped the other");
    // Servers die with the pool: scripts/test stopping it leaves nothing behind.
    pool.kill();
    assert!(stops(a.port()), "a server outlived its pool");
}
