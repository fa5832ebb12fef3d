//! Which server a call talks to: a connection string, plus the settings a Node driver
//! client carries, checked so that a derived connection is the same as the user's.

use crate::engine::panic_safety::lock;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use mongodb::options::{ConnectionString, HostInfo, Tls};

use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::redact::uri_secrets;

/// Everything needed to open a driver client; equal targets share one client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnectionTarget {
    /// The connection string.
    pub uri: String,
    /// Overrides the string's `serverSelectionTimeoutMS`.
    pub server_selection_timeout_ms: Option<u64>,
    /// Overrides the string's `connectTimeoutMS`.
    pub connect_timeout_ms: Option<u64>,
}

impl ConnectionTarget {
    /// A target for a connection string given by the user.
    pub fn from_uri(uri: &str) -> SeqResult<Self> {
        parse(uri)?;
        Ok(ConnectionTarget {
            uri: uri.to_string(),
            server_selection_timeout_ms: None,
            connect_timeout_ms: None,
        })
    }

    /// The strings to keep out of messages about this target.
    pub fn secrets(&self) -> Vec<String> {
        uri_secrets(&self.uri)
    }

    /// The server selection timeout, when overridden.
    pub fn server_selection_timeout(&self) -> Option<Duration> {
        self.server_selection_timeout_ms.map(Duration::from_millis)
    }

    /// The connect timeout, when overridden.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout_ms.map(Duration::from_millis)
    }
}

/// What a Node driver `MongoClient` tells about its connection: the string it was
/// created with (`client.s.url`) and the settings it resolved (`client.options`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeClientFacts {
    /// The connection string the client was created with.
    pub url: String,
    /// `options.credentials.username`.
    pub username: Option<String>,
    /// `options.credentials.password`.
    pub password: Option<String>,
    /// `options.credentials.source`.
    pub auth_source: Option<String>,
    /// `options.credentials.mechanism` (`DEFAULT` when unset).
    pub auth_mechanism: Option<String>,
    /// `options.tls`.
    pub tls: bool,
    /// `options.replicaSet`.
    pub replica_set: Option<String>,
    /// `options.directConnection`.
    pub direct_connection: bool,
    /// `options.loadBalanced`.
    pub load_balanced: bool,
    /// `options.serverSelectionTimeoutMS`.
    pub server_selection_timeout_ms: Option<u64>,
    /// `options.connectTimeoutMS`.
    pub connect_timeout_ms: Option<u64>,
    /// Names of options set that a connection string cannot carry (objects, buffers…).
    pub object_options: Vec<String>,
}

/// Longest connection string accepted, in bytes.
pub const MAX_URI_BYTES: usize = 64 * 1024;

/// Shapes the driver's parser does not survive or that are never valid, refused first:
/// an overlong string, and a `%` not followed by two hexadecimal digits (the driver's
/// own check slices the user information by bytes and panics inside a multi-byte
/// character after such a `%`).
fn check_uri_shape(uri: &str) -> SeqResult<()> {
    if uri.len() > MAX_URI_BYTES {
        return Err(SeqError::invalid_argument(format!(
            "connection string is {} bytes long; at most {MAX_URI_BYTES} are accepted",
            uri.len()
        )));
    }
    let bytes = uri.as_bytes();
    let bad_escape = bytes.iter().enumerate().any(|(at, b)| {
        *b == b'%'
            && !(bytes.get(at + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if bad_escape {
        return Err(SeqError::invalid_argument(
            "invalid MongoDB connection string: a '%' must start an escape of two \
             hexadecimal digits (percent-encode a literal '%' in a user name or password)",
        ));
    }
    Ok(())
}

/// Parses a connection string after [`check_uri_shape`]; errors never hold the password.
pub fn parse(uri: &str) -> SeqResult<ConnectionString> {
    check_uri_shape(uri)?;
    ConnectionString::parse(uri).map_err(|e| {
        let message = match &*e.kind {
            mongodb::error::ErrorKind::InvalidArgument { message, .. } => message.clone(),
            _ => e.to_string(),
        };
        SeqError::invalid_argument(format!("invalid MongoDB connection string: {message}"))
            .redacted(&uri_secrets(uri))
    })
}

fn unsupported(what: &str) -> SeqError {
    SeqError::new(
        ErrorCode::UnsupportedClient,
        format!(
            "cannot reuse this MongoClient's connection: {what}, which its connection string \
             does not say. Pass the full connection string instead: \
             {{ uri: 'mongodb://user:password@host/?options' }} as the options argument, \
             or use connect(uri)"
        ),
    )
}

/// Derivations already made: a process sees few distinct clients, and parsing the
/// connection string on every call would cost more than the rest of a cached call.
static DERIVED: LazyLock<Mutex<HashMap<NodeClientFacts, SeqResult<ConnectionTarget>>>> =
    LazyLock::new(Default::default);
/// Distinct clients remembered at most (a bound against unbounded growth).
const MAX_DERIVED: usize = 256;

/// [`derive_from_node_client`], remembered per distinct set of facts.
pub fn derive_from_node_client_cached(facts: &NodeClientFacts) -> SeqResult<ConnectionTarget> {
    let mut derived = lock(&DERIVED);
    if let Some(known) = derived.get(facts) {
        return known.clone();
    }
    let result = derive_from_node_client(facts);
    if derived.len() >= MAX_DERIVED {
        derived.clear();
    }
    derived.insert(facts.clone(), result.clone());
    result
}

/// The connection a Node driver client stands for, or `UNSUPPORTED_CLIENT` when its
/// options object changed something its connection string does not carry.
pub fn derive_from_node_client(facts: &NodeClientFacts) -> SeqResult<ConnectionTarget> {
    let secrets = uri_secrets(&facts.url);
    check_node_client(facts).map_err(|e| e.redacted(&secrets))?;
    Ok(ConnectionTarget {
        uri: facts.url.clone(),
        server_selection_timeout_ms: facts.server_selection_timeout_ms,
        connect_timeout_ms: facts.connect_timeout_ms,
    })
}

fn check_node_client(facts: &NodeClientFacts) -> SeqResult<()> {
    if !facts.object_options.is_empty() {
        return Err(unsupported(&format!(
            "it was created with options {} in the options object",
            facts.object_options.join(", ")
        )));
    }
    let cs = parse(&facts.url)?;
    check_credentials(facts, &cs)?;
    let srv = matches!(cs.host_info, HostInfo::DnsRecord(_));
    let url_tls = match &cs.tls {
        Some(Tls::Enabled(_)) => true,
        Some(Tls::Disabled) => false,
        None => srv,
    };
    if url_tls != facts.tls {
        return Err(unsupported(&format!("it has tls={}", facts.tls)));
    }
    if cs.replica_set != facts.replica_set {
        return Err(unsupported("it names a different replica set"));
    }
    if cs.direct_connection.unwrap_or(false) != facts.direct_connection {
        return Err(unsupported(&format!(
            "it has directConnection={}",
            facts.direct_connection
        )));
    }
    if cs.load_balanced.unwrap_or(false) != facts.load_balanced {
        return Err(unsupported(&format!(
            "it has loadBalanced={}",
            facts.load_balanced
        )));
    }
    Ok(())
}

fn check_credentials(facts: &NodeClientFacts, cs: &ConnectionString) -> SeqResult<()> {
    let url_user = cs.credential.as_ref().and_then(|c| c.username.clone());
    let url_password = cs.credential.as_ref().and_then(|c| c.password.clone());
    if facts.username != url_user || facts.password != url_password {
        return Err(unsupported(
            "it has credentials given in the options object",
        ));
    }
    let mechanism = facts.auth_mechanism.as_deref().unwrap_or("DEFAULT");
    let url_mechanism = cs
        .credential
        .as_ref()
        .and_then(|c| c.mechanism.as_ref())
        .map(|m| m.as_str().to_string());
    if mechanism != "DEFAULT" && url_mechanism.as_deref() != Some(mechanism) {
        return Err(unsupported(&format!("it has authMechanism={mechanism}")));
    }
    let password_based = matches!(mechanism, "DEFAULT" | "SCRAM-SHA-1" | "SCRAM-SHA-256");
    if facts.username.is_some() && password_based {
        let url_source = cs
            .credential
            .as_ref()
            .and_then(|c| c.source.clone())
            .or_else(|| cs.default_database.clone())
            .unwrap_or_else(|| "admin".to_string());
        if let Some(source) = &facts.auth_source {
            if *source != url_source {
                return Err(unsupported(&format!("it has authSource={source}")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(url: &str) -> NodeClientFacts {
        NodeClientFacts {
            url: url.into(),
            ..Default::default()
        }
    }

    #[test]
    fn plain_url_is_reused_with_timeouts() {
        let mut f = facts("mongodb://127.0.0.1:27018/app");
        f.server_selection_timeout_ms = Some(1500);
        let t = derive_from_node_client(&f).unwrap();
        assert_eq!(t.uri, "mongodb://127.0.0.1:27018/app");
        assert_eq!(t.server_selection_timeout_ms, Some(1500));
    }

    #[test]
    fn credentials_in_url_match() {
        let mut f = facts("mongodb://app:pw@h:1/?authSource=admin");
        f.username = Some("app".into());
        f.password = Some("pw".into());
        f.auth_source = Some("admin".into());
        assert!(derive_from_node_client(&f).is_ok());
    }

    #[test]
    fn credentials_only_in_options_are_refused_without_leaking() {
        let mut f = facts("mongodb://h:1/");
        f.username = Some("app".into());
        f.password = Some("hunter2".into());
        let e = derive_from_node_client(&f).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedClient);
        assert!(e.message.contains("uri"), "{}", e.message);
        assert!(!e.message.contains("hunter2"));
    }

    #[test]
    fn settings_that_differ_are_refused() {
        let mut f = facts("mongodb://h:1/");
        f.tls = true;
        assert!(derive_from_node_client(&f).is_err());
        let mut f = facts("mongodb://h:1/");
        f.replica_set = Some("rs0".into());
        assert!(derive_from_node_client(&f).is_err());
        let mut f = facts("mongodb://h:1/?replicaSet=rs0");
        f.replica_set = Some("rs0".into());
        assert!(derive_from_node_client(&f).is_ok());
        let mut f = facts("mongodb://h:1/");
        f.object_options = vec!["autoEncryption".into()];
        let e = derive_from_node_client(&f).unwrap_err();
        assert!(e.message.contains("autoEncryption"));
        let mut f = facts("mongodb://h:1/?directConnection=true");
        f.direct_connection = true;
        assert!(derive_from_node_client(&f).is_ok());
    }

    #[test]
    fn remembered_derivations_match_fresh_ones() {
        let ok = facts("mongodb://h:1/");
        assert_eq!(
            derive_from_node_client_cached(&ok),
            derive_from_node_client(&ok)
        );
        assert_eq!(
            derive_from_node_client_cached(&ok),
            derive_from_node_client(&ok)
        );
        let mut bad = facts("mongodb://h:1/");
        bad.tls = true;
        assert!(derive_from_node_client_cached(&bad).is_err());
        assert!(derive_from_node_client_cached(&bad).is_err());
    }

    #[test]
    fn bad_uri_is_invalid_argument_without_password() {
        let e = ConnectionTarget::from_uri("mongodb://u:topsecret@").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(!e.message.contains("topsecret"), "{}", e.message);
        assert!(ConnectionTarget::from_uri("http://x").is_err());
    }

    #[test]
    fn bad_escapes_are_refused_before_the_driver_sees_them() {
        for uri in [
            "mongodb://u:%a\u{e9}@h/",
            "mongodb://u%\u{e9}:p@h/",
            "mongodb://u:p%@h/",
            "mongodb://u:p%4@h/",
            "mongodb://h/?appName=%zz",
        ] {
            let e = ConnectionTarget::from_uri(uri).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{uri}");
            assert!(!e.message.contains('\u{e9}'), "{}", e.message);
        }
        assert!(ConnectionTarget::from_uri("mongodb://u:p%25%C3%A9@h/").is_ok());
        let long = format!("mongodb://h/?appName={}", "a".repeat(MAX_URI_BYTES));
        assert!(ConnectionTarget::from_uri(&long).is_err());
    }
}
