//! Record encoding: how a journal record and a resource's lock are stored as DynamoDB items, and
//! how an item is read back — refusing anything a person or another tool may have damaged.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Entry, Record, State, LOCK_PARTITION, PK, SK, TYPE_ATTR};
use crate::Error;

/// A resource's lock, as stored: who holds it and until when (the lease).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// The locked journal key (the record's sort key: ARN, `<cluster>/<node>`, `zonal-shift/<arn>`).
    pub resource: String,
    /// The run that holds it.
    pub run_id: String,
    /// The STS caller ARN of that run.
    pub caller: String,
    /// The lease's end, in seconds since the Unix epoch (wall clock of the holder).
    pub lease_expires_at: u64,
    /// Where the holder runs: host name, boot ID and PID namespace (empty: unknown), so that two
    /// containers sharing a host name are never taken for one machine.
    pub host: String,
    /// The holder's process ID on that host.
    pub pid: u32,
}

impl Lock {
    /// The lease's end, as RFC 3339.
    pub fn until(&self) -> String {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(self.lease_expires_at);
        humantime::format_rfc3339_seconds(at).to_string()
    }

    /// Whether the lease is still running by this machine's clock.
    pub fn is_live(&self) -> bool {
        self.lease_expires_at >= epoch_seconds()
    }

    /// Whether the holder is a process of this machine (same host name, same boot, same PID
    /// namespace) that no longer runs: a run that crashed or was killed here, whose locks the
    /// operator's next run may take over at once instead of waiting out the lease. Only judged where
    /// all three are known and processes can be seen (`/proc`); a reused PID looks alive (waits).
    pub fn holder_is_gone(&self) -> bool {
        let here = host_name();
        let proc = std::path::Path::new("/proc");
        !here.is_empty()
            && self.host == here
            && self.pid != std::process::id()
            && proc.join("self").exists()
            && !proc.join(self.pid.to_string()).exists()
    }
}

/// Where this process runs: `HOSTNAME/BOOT_ID/PID_NAMESPACE` (empty when any part cannot be read,
/// and then no lock is ever taken over as a dead local holder's).
pub fn host_name() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|t| t.trim().to_owned())
            .unwrap_or_default()
    };
    let host = read("/proc/sys/kernel/hostname");
    let boot = read("/proc/sys/kernel/random/boot_id");
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if host.is_empty() || boot.is_empty() || namespace.is_empty() {
        return String::new();
    }
    format!("{host}/{boot}/{namespace}")
}

/// Seconds since the Unix epoch, now.
pub(super) fn epoch_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The item a lock is stored as: in its own partition, with no `resource_type`, so that the type
/// index stays sparse and the records' schema does not change.
pub(super) fn lock_item(lock: &Lock) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (PK.to_owned(), s(LOCK_PARTITION)),
        (SK.to_owned(), s(&lock.resource)),
        ("run_id".to_owned(), s(&lock.run_id)),
        ("caller".to_owned(), s(&lock.caller)),
        ("lease_expires_at".to_owned(), n(lock.lease_expires_at)),
        ("host".to_owned(), s(&lock.host)),
        ("pid".to_owned(), n(u64::from(lock.pid))),
        ("updated_at".to_owned(), s(&now())),
    ])
}

/// A lock read back (`None`: not a lock item).
pub(super) fn parse_lock(item: &HashMap<String, AttributeValue>) -> Option<Lock> {
    let key = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    Some(Lock {
        resource: key(SK)?,
        run_id: key("run_id").unwrap_or_else(|| "?".into()),
        caller: key("caller").unwrap_or_else(|| "?".into()),
        lease_expires_at: item
            .get("lease_expires_at")
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
        host: key("host").unwrap_or_default(),
        pid: item
            .get("pid")
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
    })
}

pub(super) fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

pub(super) fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

pub(super) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(super) fn list(values: &[String]) -> AttributeValue {
    AttributeValue::L(values.iter().map(|v| s(v)).collect())
}

/// The item DynamoDB stores for a record.
pub(super) fn to_item(record: &Record) -> HashMap<String, AttributeValue> {
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
        ("account_id", &record.account_id),
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
pub(super) fn parse(item: &HashMap<String, AttributeValue>) -> Entry {
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
    // It goes into a role ARN when recover reaches the record's account: never a malformed one.
    let account_id = key("account_id");
    if let Some(account) = account_id.as_deref().filter(|a| !crate::model::is_account_id(a)) {
        return Err(bad(format!(
            "account_id {:?} is not a twelve-digit AWS account ID",
            crate::text::clean(account)
        )));
    }
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
        account_id,
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
            account_id: None,
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

    /// Issue 31: an account ID goes into a role ARN; one that is not twelve digits is refused.
    #[test]
    fn a_malformed_account_id_is_refused() {
        let mut item = to_item(&Record {
            account_id: Some("111111111111".into()),
            ..record()
        });
        assert!(parse(&item).is_ok());
        for bad in ["12345678901x", "1234567890123", "", " 123456789012"] {
            item.insert("account_id".into(), s(bad));
            let err = parse(&item).expect_err(bad).to_string();
            assert!(err.contains("account_id") && err.contains("twelve-digit"), "{err}");
        }
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
}
