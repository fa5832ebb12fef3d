//! Reading a Node client's options into a [`DerivedConnection`], option by option.

use super::refusal::{bad, refused};
use super::tls::derive_tls;
use super::*;
use crate::engine::error::SeqResult;

/// The keys of `options` that the table does not know and that are set: the only ones
/// whose driver default is needed.
pub fn unknown_keys(options: &NodeOptions) -> impl Iterator<Item = &str> {
    options
        .iter()
        .filter(|(key, value)| rule(key).is_none() && !value.is_unset())
        .map(|(key, _)| key.as_str())
}

/// `options` without the keys the table does not know whose value is what the same driver
/// gives a client made from a bare connection string (`driver_defaults`; a function there
/// stands for the very function `options` holds; empty when no such client could be
/// made): those are the driver's, not the user's settings.
pub fn without_driver_defaults(
    mut options: NodeOptions,
    driver_defaults: &NodeOptions,
) -> NodeOptions {
    options.retain(|key, value| {
        rule(key).is_some()
            || value.is_unset()
            || driver_defaults.get(key) != Some(value)
            || !comparable(value)
    });
    options
}

/// Whether equal values mean the same setting: a function only at the top, where its
/// identity was compared; below it (and anything not read, `Other`) every function looks
/// alike, so such a value never counts as the default.
fn comparable(value: &NodeValue) -> bool {
    fn plain(value: &NodeValue) -> bool {
        match value {
            NodeValue::Function | NodeValue::Other => false,
            NodeValue::List(items) => items.iter().all(plain),
            NodeValue::Map(map) => map.values().all(plain),
            _ => true,
        }
    }
    matches!(value, NodeValue::Function) || plain(value)
}

/// The connection a Node driver client's effective options stand for, or
/// `UNSUPPORTED_CLIENT` naming the first option that cannot be carried over. `read_file`
/// reads TLS files (a parameter so that tests need no files).
pub fn derive(
    options: &NodeOptions,
    read_file: &dyn Fn(&str) -> std::io::Result<Vec<u8>>,
) -> SeqResult<DerivedConnection> {
    for (key, value) in options {
        match rule(key) {
            None if value.is_unset() => {}
            None => {
                return Err(refused(
                    key,
                    "this version of mongodb-sequence does not know this option of the Node driver",
                ))
            }
            Some(Rule::Refused(default, why)) if !default.holds(value) => {
                return Err(refused(key, why))
            }
            Some(Rule::FoldedInto(_)) if !value.is_unset() => {
                return Err(refused(
                    key,
                    "the Node driver was expected to fold it into another option",
                ))
            }
            _ => {}
        }
    }
    let get = |key: &str| options.get(key).unwrap_or(&NodeValue::Undefined);
    let flag = |key: &str| -> SeqResult<Option<bool>> {
        match get(key) {
            v if v.is_unset() => Ok(None),
            NodeValue::Bool(b) => Ok(Some(*b)),
            _ => Err(bad(key, "not a boolean")),
        }
    };
    let text = |key: &str| -> SeqResult<Option<String>> {
        match get(key) {
            v if v.is_unset() => Ok(None),
            NodeValue::Text(s) => Ok(Some(s.clone())),
            _ => Err(bad(key, "not a string")),
        }
    };
    let hosts = derive_hosts(get("hosts"), text("srvHost")?, get)?;
    let tls = if flag("tls")?.unwrap_or(false) {
        Some(derive_tls(get, read_file)?)
    } else {
        None
    };
    let srv = matches!(hosts, DerivedHosts::Srv { .. });
    let credential = derive_credential(
        get("credentials"),
        srv && flag("userSpecifiedAuthSource")? != Some(true),
    )?;
    Ok(DerivedConnection {
        hosts,
        credential,
        tls,
        replica_set: text("replicaSet")?,
        direct_connection: flag("directConnection")?,
        load_balanced: flag("loadBalanced")?,
        write_concern: derive_write_concern(get("writeConcern"))?,
        read_concern: derive_read_concern(get("readConcern"))?,
        read_preference: derive_read_preference(get("readPreference"))?,
        retry_writes: flag("retryWrites")?,
        retry_reads: flag("retryReads")?,
        server_api: derive_server_api(get("serverApi"))?,
        app_name: text("appName")?,
        pool: derive_pool(get)?,
    })
}

/// The pool sizes, as the Node driver applies them: `maxPoolSize` 0 is no limit,
/// `maxConnecting` must be at least 1, and the minimum must not exceed the maximum, 0
/// included (the Node driver compares them before reading 0 as no limit, and refuses to
/// connect with `maxPoolSize: 0, minPoolSize: 1`).
fn derive_pool<'a>(get: impl Fn(&str) -> &'a NodeValue) -> SeqResult<DerivedPool> {
    let size = |key: &str| -> SeqResult<Option<u32>> {
        match get(key) {
            v if v.is_unset() => Ok(None),
            v => v
                .as_f64()
                .filter(|n| n.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(n))
                .map(|n| Some(n as u32))
                .ok_or_else(|| bad(key, "not a whole number")),
        }
    };
    let max_size = size("maxPoolSize")?;
    let min_size = size("minPoolSize")?;
    let max_connecting = size("maxConnecting")?;
    if max_connecting == Some(0) {
        return Err(bad("maxConnecting", "0"));
    }
    if let (Some(min), Some(max)) = (min_size, max_size) {
        if min > max {
            return Err(bad("minPoolSize", "greater than maxPoolSize"));
        }
    }
    let max_size = max_size.map(|n| if n == 0 { u32::MAX } else { n });
    let max_idle_ms = match get("maxIdleTimeMS") {
        v if v.is_unset() => None,
        v => match v
            .as_f64()
            .filter(|n| n.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(n))
        {
            Some(0.0) => None,
            Some(n) => Some(n as u64),
            None => return Err(bad("maxIdleTimeMS", "not a whole number of milliseconds")),
        },
    };
    Ok(DerivedPool {
        max_size,
        min_size,
        max_connecting,
        max_idle_ms,
    })
}

fn derive_hosts<'a>(
    hosts: &NodeValue,
    srv_host: Option<String>,
    get: impl Fn(&str) -> &'a NodeValue,
) -> SeqResult<DerivedHosts> {
    if let Some(host) = srv_host {
        let service_name = match get("srvServiceName") {
            v if v.is_unset() => "mongodb".to_string(),
            NodeValue::Text(s) => s.clone(),
            _ => return Err(bad("srvServiceName", "not a string")),
        };
        let max_hosts = match get("srvMaxHosts") {
            v if v.is_unset() => 0,
            v => v
                .as_f64()
                .filter(|n| n.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(n))
                .ok_or_else(|| bad("srvMaxHosts", "not a whole number"))? as u32,
        };
        return Ok(DerivedHosts::Srv {
            host,
            service_name,
            max_hosts,
        });
    }
    let NodeValue::List(items) = hosts else {
        return Err(bad("hosts", "not a list of hosts"));
    };
    let mut list = Vec::new();
    let mut sockets = Vec::new();
    for item in items {
        if let Some(path) = item.get("socketPath").as_str() {
            sockets.push(path.to_string());
            continue;
        }
        let host = item
            .get("host")
            .as_str()
            .ok_or_else(|| bad("hosts", "a host without a name"))?;
        let port = match item.get("port") {
            v if v.is_unset() => None,
            v => Some(
                v.as_f64()
                    .filter(|n| n.fract() == 0.0 && (0.0..=65535.0).contains(n))
                    .ok_or_else(|| bad("hosts", "a host with an invalid port"))?
                    as u16,
            ),
        };
        list.push((host.to_string(), port));
    }
    match (list.is_empty(), sockets.is_empty()) {
        (false, true) => Ok(DerivedHosts::List(list)),
        (true, false) => Ok(DerivedHosts::Sockets(sockets)),
        (true, true) => Err(bad("hosts", "an empty list")),
        (false, false) => Err(bad("hosts", "a mix of sockets and hosts")),
    }
}

fn derive_credential(
    value: &NodeValue,
    source_from_srv: bool,
) -> SeqResult<Option<DerivedCredential>> {
    if value.is_unset() {
        return Ok(None);
    }
    let NodeValue::Map(_) = value else {
        return Err(bad("credentials", "not credentials"));
    };
    let text = |key: &str| match value.get(key) {
        NodeValue::Text(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    let mechanism = match text("mechanism").as_deref() {
        None | Some("DEFAULT") => None,
        Some(m @ ("SCRAM-SHA-1" | "SCRAM-SHA-256" | "PLAIN" | "MONGODB-X509")) => {
            Some(m.to_string())
        }
        Some(_) => {
            return Err(refused(
                "authMechanism",
                "an authentication mechanism this build of the Rust driver does not have",
            ))
        }
    };
    match value.get("mechanismProperties") {
        NodeValue::Map(m) if m.values().all(NodeValue::is_unset) => {}
        v if v.is_unset() => {}
        _ => {
            return Err(refused(
                "authMechanismProperties",
                "mechanism properties are not carried over",
            ))
        }
    }
    let source = text("source");
    // The Node driver lets an SRV name's TXT `authSource` replace the resolved source for
    // every mechanism but the `$external` ones (of those, this build has X.509 only); the
    // Rust driver applies it when no source is set, so the source is left unset for the
    // same mechanisms (their default database stays the Node client's source).
    let txt_may_apply = mechanism.as_deref() != Some("MONGODB-X509");
    let (source, source_default) = if source_from_srv && txt_may_apply {
        (None, source)
    } else {
        (source, None)
    };
    Ok(Some(DerivedCredential {
        username: text("username"),
        password: text("password"),
        source,
        source_default,
        mechanism,
    }))
}

fn derive_write_concern(value: &NodeValue) -> SeqResult<Option<DerivedWriteConcern>> {
    use crate::engine::client::write_concern::WriteAck;
    if value.is_unset() {
        return Ok(None);
    }
    if !matches!(value, NodeValue::Map(_)) {
        // Unreadable (a getter that throws, nested too deep): never read as "no concern".
        return Err(bad("writeConcern", "not a write concern"));
    }
    let w = match value.get("w") {
        v if v.is_unset() => None,
        NodeValue::Text(t) => {
            Some(WriteAck::from_text(t).map_err(|_| bad("writeConcern", "an empty w"))?)
        }
        v => Some(
            v.as_f64()
                .and_then(|n| WriteAck::from_number(n).ok())
                .ok_or_else(|| {
                    refused(
                        "writeConcern",
                        "w must be at least 1: a counter needs the server's acknowledgement",
                    )
                })?,
        ),
    };
    let journal = match (value.get("journal"), value.get("j")) {
        (NodeValue::Bool(b), _) | (_, NodeValue::Bool(b)) => Some(*b),
        _ => None,
    };
    let wtimeout_ms = match (value.get("wtimeoutMS"), value.get("wtimeout")) {
        (v, _) | (_, v) if v.as_f64().is_some() => {
            let n = v.as_f64().unwrap_or(0.0);
            (n.is_finite() && n >= 0.0).then_some(n as u64)
        }
        _ => None,
    };
    if w.is_none() && journal.is_none() && wtimeout_ms.is_none() {
        return Ok(None);
    }
    Ok(Some(DerivedWriteConcern {
        w,
        journal,
        wtimeout_ms,
    }))
}

/// `readConcern` (a client's or a `Db`'s): its level.
pub(crate) fn derive_read_concern(value: &NodeValue) -> SeqResult<Option<String>> {
    match value {
        v if v.is_unset() => Ok(None),
        NodeValue::Map(_) => match value.get("level") {
            v if v.is_unset() => Ok(None),
            NodeValue::Text(level) => Ok(Some(level.clone())),
            _ => Err(bad("readConcern", "not a read concern")),
        },
        _ => Err(bad("readConcern", "not a read concern")),
    }
}

/// `readPreference` (a client's or a `Db`'s).
pub(crate) fn derive_read_preference(
    value: &NodeValue,
) -> SeqResult<Option<DerivedReadPreference>> {
    if value.is_unset() {
        return Ok(None);
    }
    let mode = match value.get("mode").as_str() {
        Some(
            m @ ("primary" | "primaryPreferred" | "secondary" | "secondaryPreferred" | "nearest"),
        ) => m.to_string(),
        _ => return Err(bad("readPreference", "not a read preference")),
    };
    let mut tags = Vec::new();
    match value.get("tags") {
        NodeValue::List(sets) => {
            for set in sets {
                let NodeValue::Map(pairs) = set else {
                    return Err(bad("readPreference", "tags that are not tag sets"));
                };
                let mut out = Vec::new();
                for (k, v) in pairs {
                    let v = v
                        .as_str()
                        .ok_or_else(|| bad("readPreference", "a tag that is not a string"))?;
                    out.push((k.clone(), v.to_string()));
                }
                tags.push(out);
            }
        }
        v if v.is_unset() => {}
        _ => return Err(bad("readPreference", "tags that are not a list")),
    }
    let max_staleness_seconds = match value.get("maxStalenessSeconds") {
        v if v.is_unset() => None,
        v => match v.as_f64() {
            Some(n) if n < 0.0 => None, // -1: no maximum
            Some(n) if n.fract() == 0.0 => Some(n as u64),
            _ => {
                return Err(bad(
                    "readPreference",
                    "a maxStalenessSeconds that is not whole",
                ))
            }
        },
    };
    match value.get("hedge") {
        NodeValue::Map(m) if m.is_empty() => {}
        v if v.is_unset() => {}
        _ => {
            return Err(refused(
                "readPreference",
                "hedged reads are not carried over",
            ))
        }
    }
    if mode == "primary" && tags.iter().all(|t| t.is_empty()) && max_staleness_seconds.is_none() {
        return Ok(Some(DerivedReadPreference {
            mode,
            tags: Vec::new(),
            max_staleness_seconds: None,
        }));
    }
    Ok(Some(DerivedReadPreference {
        mode,
        tags,
        max_staleness_seconds,
    }))
}

fn derive_server_api(value: &NodeValue) -> SeqResult<Option<DerivedServerApi>> {
    if value.is_unset() {
        return Ok(None);
    }
    let version = match value {
        NodeValue::Text(v) => v.clone(),
        NodeValue::Map(_) => value
            .get("version")
            .as_str()
            .ok_or_else(|| bad("serverApi", "without a version"))?
            .to_string(),
        _ => return Err(bad("serverApi", "not a server API")),
    };
    if version != "1" {
        return Err(refused("serverApi", "a server API version other than '1'"));
    }
    Ok(Some((
        version,
        value.get("strict").as_bool(),
        value.get("deprecationErrors").as_bool(),
    )))
}
