//! Record encoding: how a journal record and a resource's lock are stored as DynamoDB items, and
//! how an item is read back — refusing anything a person or another tool may have damaged.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Entry, Record, State, LOCK_PARTITION, PK, SK, TYPE_ATTR};
use crate::model::Identity;
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
    /// When no call the holder started under its lease can still be in flight: the lease's end plus
    /// the holder's longest call (`--operation-timeout`). An expired lock is taken over only after
    /// this, so that a slow change of a holder that could not renew never lands behind the new
    /// holder's read. 0: written by a version that did not say (its lease's end is used).
    pub quiet_at: u64,
    /// Where the holder runs: host name, boot ID and PID namespace (empty: unknown), so that two
    /// containers sharing a host name are never taken for one machine.
    pub host: String,
    /// The holder's process ID on that host.
    pub pid: u32,
    /// When that process started, in clock ticks after boot (`/proc/PID/stat` field 22), so that a
    /// later process given the same PID is not taken for the holder (`None`: unknown, or a lock
    /// written before azevac kept it).
    pub started: Option<u64>,
}

impl Lock {
    /// When another run may take the lock over (the lease's end, and the holder's calls' end once
    /// it has run out), as RFC 3339.
    pub fn until(&self) -> String {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(self.free_at());
        humantime::format_rfc3339_seconds(at).to_string()
    }

    /// Whether the lease is still running by this machine's clock.
    pub fn is_live(&self) -> bool {
        self.lease_expires_at >= epoch_seconds()
    }

    /// Whether the lock protects nothing any more by this machine's clock: its lease has run out and
    /// no call its holder started can still be in flight.
    pub fn is_free(&self) -> bool {
        self.free_at() < epoch_seconds()
    }

    /// The second after which the lock may be taken over.
    fn free_at(&self) -> u64 {
        self.quiet_at.max(self.lease_expires_at)
    }

    /// How long, from now, a call the holder sent before it died may still land, once its holder is
    /// proven gone: the holder's longest call (what its `quiet_at` adds to its lease), and never
    /// past the moment the lock would be free anyway. Its death came at the latest now, and so did
    /// its last call; AWS carries a call out whether or not its sender still listens. Zero for a
    /// lock written by a version that did not record its calls' bound.
    pub fn calls_may_land_for(&self) -> std::time::Duration {
        let longest_call = self.quiet_at.saturating_sub(self.lease_expires_at);
        let until_free = self.free_at().saturating_sub(epoch_seconds());
        std::time::Duration::from_secs(longest_call.min(until_free))
    }

    /// Whether the holder is a process of this machine (same host name, same boot, same PID
    /// namespace) that no longer runs: a run that crashed or was killed here, whose locks the
    /// operator's next run may take over at once instead of waiting out the lease. Only judged where
    /// all three are known, and only on proof (`kill(pid, 0)` and the holder's start time, judged
    /// by `holder_gone`): anything less waits for the lease.
    pub fn holder_is_gone(&self) -> bool {
        let here = host_name();
        !here.is_empty() && self.host == here && holder_gone(self.started, look_at(self.pid))
    }
}

/// What this host can see of a process, by its PID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// `kill(pid, 0)` says there is no such process (ESRCH).
    Gone,
    /// There is a process with that PID (`kill(pid, 0)` succeeded, or EPERM: another user's), and
    /// its start time if `/proc/PID/stat` could be read (`None`: `/proc` mounted `hidepid=2`...).
    Running {
        /// Its start time, in clock ticks after boot.
        started: Option<u64>,
    },
    /// Nothing could be learnt (not a valid PID, another error).
    Unknown,
}

/// Whether a lock's holder, whose process start time the lock records as `recorded`, is proven
/// gone by what was `seen` of its PID (pure). No such process: gone. A process whose start time
/// differs from the recorded one: another process was given the PID, the holder is gone. Anything
/// short of proof — a process that cannot be told apart (hidden `/proc`, a lock without a start
/// time), or nothing learnt — is a live holder: its lease is waited out.
fn holder_gone(recorded: Option<u64>, seen: Seen) -> bool {
    match seen {
        Seen::Gone => true,
        Seen::Running { started } => recorded.zip(started).is_some_and(|(then, now)| then != now),
        Seen::Unknown => false,
    }
}

/// Look at the process `pid` of this host: `kill(pid, 0)` (which sees every process, whoever owns
/// it and however `/proc` is mounted), then its start time.
fn look_at(pid: u32) -> Seen {
    // Never 0 or a negative number: those name process groups, not a process.
    let Some(target) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return Seen::Unknown;
    };
    match rustix::process::test_kill_process(target) {
        Err(rustix::io::Errno::SRCH) => Seen::Gone,
        Ok(()) | Err(rustix::io::Errno::PERM) => Seen::Running {
            started: process_started(pid),
        },
        Err(_) => Seen::Unknown,
    }
}

/// When the process `pid` started, in clock ticks after boot: field 22 of `/proc/PID/stat`
/// (`None`: not readable).
pub(super) fn process_started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    start_of(&stat)
}

/// Field 22 of a `/proc/PID/stat` line. The command (field 2) is in parentheses and may hold
/// spaces and parentheses itself: the fields after it are counted from its last `)`.
fn start_of(stat: &str) -> Option<u64> {
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(22 - 3)?.parse().ok()
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
    let mut item = HashMap::from([
        (PK.to_owned(), s(LOCK_PARTITION)),
        (SK.to_owned(), s(&lock.resource)),
        ("run_id".to_owned(), s(&lock.run_id)),
        ("caller".to_owned(), s(&lock.caller)),
        ("lease_expires_at".to_owned(), n(lock.lease_expires_at)),
        ("quiet_at".to_owned(), n(lock.quiet_at)),
        ("host".to_owned(), s(&lock.host)),
        ("pid".to_owned(), n(u64::from(lock.pid))),
        ("updated_at".to_owned(), s(&now())),
    ]);
    if let Some(started) = lock.started {
        item.insert(PID_STARTED.to_owned(), n(started));
    }
    item
}

/// The lock attribute that holds its holder's process start time.
const PID_STARTED: &str = "pid_started";

/// A lock read back (`None`: not a lock item).
pub(super) fn parse_lock(item: &HashMap<String, AttributeValue>) -> Option<Lock> {
    let key = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    let number = |name: &str| -> Option<u64> { item.get(name)?.as_n().ok()?.parse().ok() };
    Some(Lock {
        resource: key(SK)?,
        run_id: key("run_id").unwrap_or_else(|| "?".into()),
        caller: key("caller").unwrap_or_else(|| "?".into()),
        lease_expires_at: number("lease_expires_at").unwrap_or_default(),
        quiet_at: number("quiet_at").unwrap_or_default(),
        host: key("host").unwrap_or_default(),
        pid: number("pid")
            .and_then(|pid| u32::try_from(pid).ok())
            .unwrap_or_default(),
        started: number(PID_STARTED),
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
        (FORMAT_ATTR.to_owned(), n(crate::model::action::FORMAT)),
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
    if let Some(identity) = &record.identity {
        item.insert(IDENTITY.to_owned(), identity_value(identity));
    }
    item
}

/// Every attribute of a record besides the keys (the table's and the type index's): what
/// [`to_item`] writes and [`parse`] reads. The type index must project each of them, or a record
/// read through it (recover and status across zones) would be misread for want of them.
pub(super) const ATTRIBUTES: [&str; 15] = [
    "removed_subnets",
    "state",
    "version",
    "original_subnets",
    "actions",
    FORMAT_ATTR,
    "resource_name",
    "run_id",
    "evacuated_by",
    "reason",
    "azevac_version",
    "created_at",
    "updated_at",
    "account_id",
    IDENTITY,
];

/// The attribute that says which journal format wrote the record ([`crate::model::action::FORMAT`];
/// absent: format 1). A reader refuses a format newer than its own instead of misreading it.
pub(super) const FORMAT_ATTR: &str = "format";

/// The attribute that holds a record's [`Identity`]: a map of `uid` and, for a node, `instance_id`,
/// for an AWS resource, `created`.
const IDENTITY: &str = "identity";

fn identity_value(identity: &Identity) -> AttributeValue {
    let mut map = HashMap::from([("uid".to_owned(), s(&identity.uid))]);
    if let Some(instance) = &identity.instance_id {
        map.insert("instance_id".to_owned(), s(instance));
    }
    if let Some(created) = &identity.created {
        map.insert("created".to_owned(), s(created));
    }
    AttributeValue::M(map)
}

/// A record's identity as stored: absent (`Ok(None)`), or a map with a string `uid` (`Err`: damaged).
fn parse_identity(item: &HashMap<String, AttributeValue>) -> Result<Option<Identity>, String> {
    let Some(value) = item.get(IDENTITY) else {
        return Ok(None);
    };
    let map = value.as_m().map_err(|_| format!("{IDENTITY} is not a map"))?;
    let text = |name: &str| map.get(name).and_then(|v| v.as_s().ok()).cloned();
    let uid = text("uid")
        .filter(|u| !u.is_empty())
        .ok_or_else(|| format!("{IDENTITY}.uid is missing or not a string"))?;
    Ok(Some(Identity {
        uid,
        instance_id: text("instance_id"),
        created: text("created"),
    }))
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
    // Before anything else: a newer format may mean anything below differently.
    match item
        .get(FORMAT_ATTR)
        .map(|v| v.as_n().ok().and_then(|n| n.parse::<u64>().ok()))
    {
        None => {}
        Some(Some(format)) if format <= crate::model::action::FORMAT => {}
        Some(Some(format)) => {
            return Err(bad(format!(
                "written in journal format {format} by a newer azevac; this one reads format {} at most: \
                 upgrade azevac to recover it",
                crate::model::action::FORMAT
            )))
        }
        Some(None) => return Err(bad(format!("{FORMAT_ATTR} is not a whole number"))),
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
    let identity = parse_identity(item).map_err(bad)?;
    // It goes into a role ARN when recover reaches the record's account: never a malformed one.
    let account_id = key("account_id");
    if let Some(account) = account_id.as_deref().filter(|a| !crate::model::is_account_id(a)) {
        return Err(bad(format!(
            "account_id {:?} is not a twelve-digit AWS account ID",
            crate::model::text::clean(account)
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
        identity,
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

/// A lock for the tests of the journal's modules.
#[cfg(test)]
pub(super) fn sample_lock() -> Lock {
    Lock {
        resource: "arn:web".into(),
        run_id: "run".into(),
        caller: "me".into(),
        lease_expires_at: 100,
        quiet_at: 280,
        host: "here".into(),
        pid: 7,
        started: Some(12345),
    }
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
            identity: None,
        }
    }

    #[test]
    fn a_record_survives_the_round_trip() {
        assert_eq!(parse(&to_item(&record())).expect("valid record"), record());
        for instance_id in [None, Some("i-0abc".to_owned())] {
            let node = Record {
                identity: Some(Identity {
                    uid: "3f1e".into(),
                    instance_id: instance_id.clone(),
                    created: instance_id.is_none().then(|| "2026-01-02T03:04:05.678Z".to_owned()),
                }),
                ..record()
            };
            assert_eq!(parse(&to_item(&node)).expect("valid record"), node);
        }
    }

    /// Issue 36: [`ATTRIBUTES`] names every attribute a record is stored with, besides its keys,
    /// so that the type index's projection can be checked against it.
    #[test]
    fn issue_36_the_attribute_list_is_what_a_record_is_stored_with() {
        let full = Record {
            reason: Some("INC-36".into()),
            account_id: Some("111111111111".into()),
            actions: vec!["a".into()],
            identity: Some(Identity {
                uid: "3f1e".into(),
                instance_id: Some("i-0abc".into()),
                created: None,
            }),
            ..record()
        };
        let item = to_item(&full);
        let mut stored: Vec<&str> = item.keys().map(String::as_str).collect();
        stored.sort_unstable();
        let mut named: Vec<&str> = [PK, SK, TYPE_ATTR].into_iter().chain(ATTRIBUTES).collect();
        named.sort_unstable();
        assert_eq!(stored, named);
        assert_eq!(parse(&item).expect("valid record"), full);
    }

    /// Issue 32: a record of a newer journal format is refused, never misread; one without the
    /// attribute is format 1 and read as before.
    #[test]
    fn a_newer_format_is_refused_and_an_older_one_read() {
        let mut item = to_item(&record());
        assert_eq!(item.get(FORMAT_ATTR), Some(&n(crate::model::action::FORMAT)));
        item.remove(FORMAT_ATTR);
        assert_eq!(parse(&item).expect("format 1"), record());
        item.insert(FORMAT_ATTR.into(), n(crate::model::action::FORMAT + 1));
        let err = parse(&item).expect_err("newer").to_string();
        assert!(err.contains("newer azevac") && err.contains("upgrade"), "{err}");
        item.insert(FORMAT_ATTR.into(), s("2"));
        assert!(parse(&item).is_err(), "a damaged format");
    }

    #[test]
    fn a_damaged_identity_is_refused() {
        for damaged in [
            s("3f1e"),
            AttributeValue::M(HashMap::new()),
            AttributeValue::M(HashMap::from([("uid".to_owned(), n(1))])),
        ] {
            let mut item = to_item(&record());
            item.insert(IDENTITY.into(), damaged);
            let err = parse(&item).expect_err("damaged identity");
            assert!(err.to_string().contains("identity"), "{err}");
        }
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
    fn a_dead_holders_calls_are_waited_for_as_long_as_its_longest_call_never_past_its_lock() {
        let now = epoch_seconds();
        let lock = |lease_expires_at: u64, quiet_at: u64| Lock {
            lease_expires_at,
            quiet_at,
            ..sample_lock()
        };
        let secs = |l: Lock| l.calls_may_land_for().as_secs();
        // A lease renewed just now, with 3 minutes of calls: the whole 3 minutes.
        assert_eq!(secs(lock(now + 120, now + 300)), 180);
        // A lease run out long ago, 10 s before the lock frees itself: those 10 s at most.
        assert_eq!(secs(lock(now - 170, now + 10)), 10);
        // Free already, or written by a version that kept no bound: nothing to wait for.
        assert_eq!(secs(lock(now - 400, now - 220)), 0);
        assert_eq!(secs(lock(now + 120, 0)), 0);
    }

    #[test]
    fn a_holder_is_gone_only_on_proof() {
        // No such process (ESRCH).
        assert!(holder_gone(Some(100), Seen::Gone));
        assert!(holder_gone(None, Seen::Gone), "a lock from before start times");
        // Another user's live run behind `hidepid=2`: kill says EPERM, /proc shows nothing.
        assert!(!holder_gone(Some(100), Seen::Running { started: None }));
        // A live process given the holder's PID later: another start time.
        assert!(holder_gone(Some(100), Seen::Running { started: Some(250) }));
        // The holder itself.
        assert!(!holder_gone(Some(100), Seen::Running { started: Some(100) }));
        // A lock from before start times, naming a live process: it may be the holder.
        assert!(!holder_gone(None, Seen::Running { started: Some(100) }));
        // Nothing learnt.
        assert!(!holder_gone(Some(100), Seen::Unknown));
        assert!(!holder_gone(None, Seen::Unknown));
    }

    #[test]
    fn this_process_is_seen_running_with_its_start_time() {
        let me = std::process::id();
        let started = process_started(me);
        assert!(started.is_some(), "/proc/self/stat is readable here");
        assert_eq!(look_at(me), Seen::Running { started });
        assert_eq!(look_at(0), Seen::Unknown, "0 names a process group");
        assert_eq!(look_at(u32::MAX), Seen::Unknown);
        // A command with spaces and parentheses does not shift the fields.
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(start_of(stat), Some(98765));
        assert_eq!(start_of("42 (truncated"), None);
    }

    #[test]
    fn a_lock_keeps_its_holders_start_time() {
        let lock = sample_lock();
        assert_eq!(parse_lock(&lock_item(&lock)), Some(lock.clone()));
        let mut old = lock_item(&lock);
        old.remove(PID_STARTED);
        assert_eq!(parse_lock(&old).map(|l| l.started), Some(None), "a lock written before");
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
