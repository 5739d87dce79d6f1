//! A fake ARC zonal shift API, answered by the test proxy for calls signed for `arc-zonal-shift`
//! (moto and LocalStack have none). It speaks ARC's REST/JSON wire format to the real SDK client,
//! pages its lists (two items a page, so paginators are exercised), and refuses what ARC refuses
//! for the calls azevac makes: an unknown resource (404), an AZ the resource is not in, an
//! `expiresIn` outside 1m–72h or a comment over 128 characters (400 ValidationException), a second
//! active shift on a resource (409 ZonalShiftAlreadyExists), and cancelling or updating a shift
//! that is not active (409 ZonalShiftStatusNotActive) or unknown (404). Shifts end as ARC's do:
//! `expiresIn` from the start or the latest update, then EXPIRED; a test moves a shift's end with
//! [`FakeArc::set_expiry`] (into the past: it has expired).

use serde_json::{json, Value};

/// Items per page of the list calls.
const PAGE: usize = 2;

/// A resource registered for zonal shift.
#[derive(Debug, Clone)]
pub struct Managed {
    /// Its ARN.
    pub arn: String,
    /// Its name.
    pub name: String,
    /// The AZ IDs it is deployed in.
    pub az_ids: Vec<String>,
    /// An autoshift in progress away from this AZ ID, if any.
    pub autoshift_away_from: Option<String>,
}

/// A zonal shift the fake knows.
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    /// Its ID.
    pub id: String,
    /// The resource ARN.
    pub resource: String,
    /// The AZ ID traffic moves away from.
    pub away_from: String,
    /// `expiresIn` as given.
    pub expires_in: String,
    /// The comment.
    pub comment: String,
    /// ACTIVE, CANCELED (or EXPIRED).
    pub status: String,
    /// ZONAL_SHIFT or PRACTICE_RUN.
    pub shift_type: String,
    /// When it ends, in seconds since the epoch.
    pub expires_at: i64,
}

/// Now, in seconds since the epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `expiresIn` in seconds (already validated).
fn seconds(expires_in: &str) -> i64 {
    let (number, unit) = expires_in.split_at(expires_in.len().saturating_sub(1));
    let n: i64 = number.parse().unwrap_or(0);
    if unit == "h" {
        n * 3600
    } else {
        n * 60
    }
}

/// The fake's state.
#[derive(Debug, Default)]
pub struct FakeArc {
    /// Registered resources.
    pub managed: Vec<Managed>,
    /// Every shift started, in order.
    pub shifts: Vec<Shift>,
    /// AWS's autoshifts, as `ListAutoshifts` reports them: (away from, start time, ACTIVE or COMPLETED).
    pub autoshifts: Vec<(String, i64, String)>,
    /// Whether the autoshift observer notification is on.
    pub observer: bool,
}

/// An answer: HTTP status, the error type (for `x-amzn-errortype`) and the JSON body.
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The error shape name, for errors.
    pub error: Option<&'static str>,
    /// The body.
    pub body: Value,
}

fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        error: None,
        body,
    }
}

fn error(status: u16, shape: &'static str, message: &str, extra: Value) -> Answer {
    let mut body = json!({ "message": message });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    Answer {
        status,
        error: Some(shape),
        body,
    }
}

/// The operation name of a REST call, for the proxy's call log.
pub fn operation(method: &str, path: &str) -> &'static str {
    match (method, path) {
        ("GET", "/managedresources") => "ListManagedResources",
        ("GET", p) if p.starts_with("/managedresources/") => "GetManagedResource",
        ("GET", "/zonalshifts") => "ListZonalShifts",
        ("POST", "/zonalshifts") => "StartZonalShift",
        ("DELETE", p) if p.starts_with("/zonalshifts/") => "CancelZonalShift",
        ("PATCH", p) if p.starts_with("/zonalshifts/") => "UpdateZonalShift",
        ("GET", "/autoshifts") => "ListAutoshifts",
        ("GET", "/autoshift-observer-notification") => "GetAutoshiftObserverNotificationStatus",
        ("PUT", "/autoshift-observer-notification") => "UpdateAutoshiftObserverNotificationStatus",
        _ => "Unknown",
    }
}

fn query_param(query: &str, key: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// One page of `items` from `nextToken` (an index).
fn page(items: Vec<Value>, query: &str) -> Value {
    let start: usize = query_param(query, "nextToken")
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let end = (start + PAGE).min(items.len());
    let mut body = json!({ "items": items[start.min(end)..end].to_vec() });
    if end < items.len() {
        body["nextToken"] = json!(end.to_string());
    }
    body
}

fn valid_expiry(text: &str) -> bool {
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let max = match unit {
        "m" => 4320,
        "h" => 72,
        _ => return false,
    };
    !number.starts_with('0') && number.parse::<u32>().is_ok_and(|n| (1..=max).contains(&n))
}

impl FakeArc {
    /// Register a resource.
    pub fn manage(&mut self, arn: &str, name: &str, az_ids: &[&str]) {
        self.managed.push(Managed {
            arn: arn.into(),
            name: name.into(),
            az_ids: az_ids.iter().map(|z| z.to_string()).collect(),
            autoshift_away_from: None,
        });
    }

    /// Start a shift as someone else would (the console, another tool).
    pub fn start_by_hand(&mut self, resource: &str, away_from: &str, shift_type: &str) -> String {
        let id = format!("shift-{}", self.shifts.len() + 1);
        self.shifts.push(Shift {
            id: id.clone(),
            resource: resource.into(),
            away_from: away_from.into(),
            expires_in: "1h".into(),
            comment: "started by hand".into(),
            status: "ACTIVE".into(),
            shift_type: shift_type.into(),
            expires_at: now() + 3600,
        });
        id
    }

    /// AWS starts an autoshift away from `az_id` (now).
    pub fn autoshift(&mut self, az_id: &str) {
        self.autoshifts.push((az_id.into(), now(), "ACTIVE".into()));
    }

    /// AWS ends its autoshifts away from `az_id`.
    pub fn end_autoshift(&mut self, az_id: &str) {
        for shift in self.autoshifts.iter_mut().filter(|a| a.0 == az_id) {
            shift.2 = "COMPLETED".into();
        }
    }

    /// Move shift `id`'s end to `seconds_from_now` (negative: it has expired).
    pub fn set_expiry(&mut self, id: &str, seconds_from_now: i64) {
        let at = now() + seconds_from_now;
        for shift in self.shifts.iter_mut().filter(|s| s.id == id) {
            shift.expires_at = at;
        }
        self.expire();
    }

    /// Shifts past their end are EXPIRED, as ARC marks them.
    fn expire(&mut self) {
        let now = now();
        for shift in self
            .shifts
            .iter_mut()
            .filter(|s| s.status == "ACTIVE" && s.expires_at <= now)
        {
            shift.status = "EXPIRED".into();
        }
    }

    /// The active shifts.
    pub fn active(&self) -> Vec<Shift> {
        let now = now();
        self.shifts
            .iter()
            .filter(|s| s.status == "ACTIVE" && s.expires_at > now)
            .cloned()
            .collect()
    }

    fn shift_json(shift: &Shift) -> Value {
        json!({
            "zonalShiftId": shift.id, "resourceIdentifier": shift.resource, "awayFrom": shift.away_from,
            "expiryTime": shift.expires_at, "startTime": 1_900_000_000, "status": shift.status,
            "comment": shift.comment, "shiftType": shift.shift_type,
        })
    }

    /// Answer one call.
    pub fn answer(&mut self, method: &str, path: &str, query: &str, body: &str) -> Answer {
        self.expire();
        match operation(method, path) {
            "ListManagedResources" => {
                let items = self
                    .managed
                    .iter()
                    .map(|m| {
                        let shifts: Vec<Value> = self
                            .active()
                            .iter()
                            .filter(|s| s.resource == m.arn)
                            .map(|s| {
                                let mut v = Self::shift_json(s);
                                v["appliedStatus"] = json!("APPLIED");
                                v.as_object_mut().map(|o| o.remove("status"));
                                v
                            })
                            .collect();
                        let autoshifts: Vec<Value> = m
                            .autoshift_away_from
                            .iter()
                            .map(|z| json!({ "appliedStatus": "APPLIED", "awayFrom": z, "startTime": 1_900_000_000 }))
                            .collect();
                        json!({
                            "arn": m.arn, "name": m.name, "availabilityZones": m.az_ids,
                            "zonalShifts": shifts, "autoshifts": autoshifts,
                            "zonalAutoshiftStatus": "DISABLED", "practiceRunStatus": "DISABLED",
                        })
                    })
                    .collect();
                ok(page(items, query))
            }
            "ListZonalShifts" => {
                let status = query_param(query, "status");
                let resource = query_param(query, "resourceIdentifier");
                let items = self
                    .shifts
                    .iter()
                    .filter(|s| status.as_ref().is_none_or(|w| &s.status == w))
                    .filter(|s| resource.as_ref().is_none_or(|r| &s.resource == r))
                    .map(Self::shift_json)
                    .collect();
                ok(page(items, query))
            }
            "ListAutoshifts" => {
                let status = query_param(query, "status");
                let items = self
                    .autoshifts
                    .iter()
                    .filter(|a| status.as_ref().is_none_or(|w| &a.2 == w))
                    .map(|(away, start, status)| json!({ "awayFrom": away, "startTime": start, "status": status }))
                    .collect();
                ok(page(items, query))
            }
            "GetAutoshiftObserverNotificationStatus" => {
                ok(json!({ "status": if self.observer { "ENABLED" } else { "DISABLED" } }))
            }
            "UpdateAutoshiftObserverNotificationStatus" => {
                let asked: Value = serde_json::from_str(body).unwrap_or_default();
                match asked["status"].as_str() {
                    Some(status @ ("ENABLED" | "DISABLED")) => {
                        self.observer = status == "ENABLED";
                        ok(json!({ "status": status }))
                    }
                    _ => error(
                        400,
                        "ValidationException",
                        "status must be ENABLED or DISABLED",
                        json!({}),
                    ),
                }
            }
            "StartZonalShift" => self.start(body),
            "UpdateZonalShift" => self.update(path.trim_start_matches("/zonalshifts/"), body),
            "CancelZonalShift" => {
                let id = path.trim_start_matches("/zonalshifts/");
                match self.shifts.iter_mut().find(|s| s.id == id) {
                    None => error(404, "ResourceNotFoundException", "zonal shift not found", json!({})),
                    Some(s) if s.status != "ACTIVE" => error(
                        409,
                        "ConflictException",
                        "the zonal shift is not active",
                        json!({ "reason": "ZonalShiftStatusNotActive", "zonalShiftId": id }),
                    ),
                    Some(s) => {
                        s.status = "CANCELED".into();
                        let out = Self::shift_json(s);
                        ok(out)
                    }
                }
            }
            _ => error(404, "UnknownOperationException", "not served by the fake", json!({})),
        }
    }

    fn start(&mut self, body: &str) -> Answer {
        let request: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let text = |k: &str| request[k].as_str().map(str::to_owned);
        let (Some(resource), Some(away_from), Some(expires_in), Some(comment)) = (
            text("resourceIdentifier"),
            text("awayFrom"),
            text("expiresIn"),
            text("comment"),
        ) else {
            return error(
                400,
                "ValidationException",
                "missing a required field",
                json!({ "reason": "MissingValue" }),
            );
        };
        let Some(managed) = self.managed.iter().find(|m| m.arn == resource) else {
            return error(404, "ResourceNotFoundException", "resource not found", json!({}));
        };
        if !managed.az_ids.contains(&away_from) {
            return error(
                400,
                "ValidationException",
                "the resource is not in that AZ",
                json!({ "reason": "InvalidAz" }),
            );
        }
        if !valid_expiry(&expires_in) {
            return error(
                400,
                "ValidationException",
                "invalid expiresIn",
                json!({ "reason": "InvalidExpiresIn" }),
            );
        }
        if comment.chars().count() > 128 {
            return error(
                400,
                "ValidationException",
                "comment too long",
                json!({ "reason": "MissingValue" }),
            );
        }
        if self.active().iter().any(|s| s.resource == resource) {
            return error(
                409,
                "ConflictException",
                "a zonal shift already exists for the resource",
                json!({ "reason": "ZonalShiftAlreadyExists" }),
            );
        }
        let expires_at = now() + seconds(&expires_in);
        let shift = Shift {
            id: format!("shift-{}", self.shifts.len() + 1),
            resource,
            away_from,
            expires_in,
            comment,
            status: "ACTIVE".into(),
            shift_type: "ZONAL_SHIFT".into(),
            expires_at,
        };
        let out = Self::shift_json(&shift);
        self.shifts.push(shift);
        ok(out)
    }

    /// UpdateZonalShift: a new end `expiresIn` from now and/or a new comment, for an active shift
    /// only; at least one of them, each validated as on start.
    fn update(&mut self, id: &str, body: &str) -> Answer {
        let request: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let expires_in = request["expiresIn"].as_str().map(str::to_owned);
        let comment = request["comment"].as_str().map(str::to_owned);
        if expires_in.is_none() && comment.is_none() {
            return error(
                400,
                "ValidationException",
                "nothing to update",
                json!({ "reason": "MissingValue" }),
            );
        }
        if expires_in.as_deref().is_some_and(|e| !valid_expiry(e)) {
            return error(
                400,
                "ValidationException",
                "invalid expiresIn",
                json!({ "reason": "InvalidExpiresIn" }),
            );
        }
        if comment.as_ref().is_some_and(|c| c.chars().count() > 128) {
            return error(
                400,
                "ValidationException",
                "comment too long",
                json!({ "reason": "MissingValue" }),
            );
        }
        let Some(shift) = self.shifts.iter_mut().find(|s| s.id == id) else {
            return error(404, "ResourceNotFoundException", "zonal shift not found", json!({}));
        };
        if shift.status != "ACTIVE" {
            return error(
                409,
                "ConflictException",
                "the zonal shift is not active",
                json!({ "reason": "ZonalShiftStatusNotActive", "zonalShiftId": id }),
            );
        }
        if let Some(expires_in) = expires_in {
            shift.expires_at = now() + seconds(&expires_in);
            shift.expires_in = expires_in;
        }
        if let Some(comment) = comment {
            shift.comment = comment;
        }
        ok(Self::shift_json(shift))
    }
}
