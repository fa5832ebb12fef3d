//! A connection derived from a Node driver `MongoClient`: its *effective* options
//! (`client.options`, where the driver already merged the connection string and the
//! options object) read through an allow-list. Every key is classified in [`OPTION_TABLE`]:
//! mapped to the same Rust driver setting, irrelevant to a counter call (the reason is
//! written next to it), or refused with `UNSUPPORTED_CLIENT` unless it has the driver's
//! default. A key the table does not know is not a setting when it holds what the same
//! driver gives a client made from a bare connection string (drivers add options with
//! defaults, and hooks such as `toJSON`, every few minors: a driver upgrade must not
//! break a working application); set to anything else it is refused, so a setting this
//! package cannot carry over never slips through. Nothing here reads a connection
//! string: hosts, credentials and settings come from the parsed options, and messages
//! only ever name options.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use mongodb::options::{
    Acknowledgment, AuthMechanism, ClientOptions, ConnectionString, Credential, HostInfo,
    ReadConcern, ReadPreference, ReadPreferenceOptions, SelectionCriteria, ServerAddress,
    ServerApi, ServerApiVersion, Tls, TlsOptions, WriteConcern,
};

use crate::engine::error::{ErrorCode, SeqError, SeqResult};

/// A JavaScript value as read from the Node client's options (napi-free).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NodeValue {
    /// `undefined` (or an absent property).
    Undefined,
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number, kept as its bits so that values can be hashed.
    Number(u64),
    /// A string.
    Text(String),
    /// A `Buffer` or typed array's bytes.
    Bytes(Vec<u8>),
    /// An array.
    List(Vec<NodeValue>),
    /// A plain object or class instance: its own enumerable properties.
    Map(BTreeMap<String, NodeValue>),
    /// A function.
    Function,
    /// Anything else (symbol, bigint, promise, an object nested too deep…).
    Other,
}

impl NodeValue {
    /// A number value.
    pub fn number(n: f64) -> NodeValue {
        NodeValue::Number(n.to_bits())
    }

    /// `undefined` or `null`.
    pub fn is_unset(&self) -> bool {
        matches!(self, NodeValue::Undefined | NodeValue::Null)
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            NodeValue::Number(bits) => Some(f64::from_bits(*bits)),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            NodeValue::Text(s) => Some(s),
            _ => None,
        }
    }

    fn as_bool(&self) -> Option<bool> {
        match self {
            NodeValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn get(&self, key: &str) -> &NodeValue {
        match self {
            NodeValue::Map(map) => map.get(key).unwrap_or(&NodeValue::Undefined),
            _ => &NodeValue::Undefined,
        }
    }
}

/// A Node client's effective options (`client.options`), key by key.
pub type NodeOptions = BTreeMap<String, NodeValue>;

/// What a key of a Node client's options means to a derived connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Read and carried to the same Rust driver setting.
    Mapped,
    /// A spelling in `MongoClientOptions` that the Node driver folds into the effective
    /// option named here (which is mapped or refused); never present in `client.options`
    /// itself, and refused if a driver ever leaves it there set.
    FoldedInto(&'static str),
    /// Cannot change which server, which identity, what is written or how durably: the
    /// reason says why.
    Irrelevant(&'static str),
    /// Not carried to the Rust driver: refused unless it has the driver's default.
    Refused(Unless, &'static str),
}

/// The driver default of a refused option (the only value accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unless {
    /// `undefined` or `null`.
    Unset,
    /// Unset or `false`.
    False,
}

impl Unless {
    fn holds(self, value: &NodeValue) -> bool {
        match self {
            Unless::Unset => value.is_unset(),
            Unless::False => value.is_unset() || *value == NodeValue::Bool(false),
        }
    }
}

const POOL: &str = "how long the Node client keeps idle connections; pooling changes no \
                    command or result (the pool sizes are mapped)";
const MONITORING: &str = "how often and how the topology is monitored; server selection still \
                          follows the mapped read preference and replica set";
const TIMING: &str = "a time limit on the Node client's own sockets or operations; it changes \
                      no server, identity or write (serverSelectionTimeoutMS and \
                      connectTimeoutMS are mapped)";
const BSON_JS: &str = "how the Node driver encodes and decodes documents in JavaScript; this \
                       package encodes its own commands and returns its own values";
const LOGGING: &str = "the Node client's own logging and command monitoring";
const METADATA: &str = "the Node driver's handshake metadata and internal state";
const COMPRESSION: &str = "compression of the bytes on the wire, negotiated with the server; \
                           commands and results are the same (this build sends uncompressed)";
const CREDENTIALS: &str = "credentials";
const SOCKET_PATH: &str = "the address the Node client reaches is its own choice of route; \
                           the derived client cannot follow it";
const TLS_NODE: &str = "a Node TLS setting the Rust driver has no equivalent for";

/// Every option key the Node driver's `MongoClientOptions` (driver 6 and 7) and its
/// effective `MongoOptions` can carry, with how a derived connection treats it.
pub const OPTION_TABLE: &[(&str, Rule)] = &[
    // Where: the servers and how they are found.
    ("hosts", Rule::Mapped),
    ("srvHost", Rule::Mapped),
    ("srvServiceName", Rule::Mapped),
    ("srvMaxHosts", Rule::Mapped),
    ("replicaSet", Rule::Mapped),
    ("directConnection", Rule::Mapped),
    ("loadBalanced", Rule::Mapped),
    ("srvAllowedHostsSuffix", Rule::Refused(Unless::Unset, "SRV results checked by a rule the Rust driver cannot apply")),
    ("srvHostValidator", Rule::Refused(Unless::Unset, "SRV results checked by a rule the Rust driver cannot apply")),
    ("proxyHost", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("proxyPort", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("proxyUsername", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("proxyPassword", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("lookup", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("family", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("hints", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("localAddress", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("localPort", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("runtimeAdapters", Rule::Refused(Unless::Unset, "replaces the Node driver's networking or DNS")),
    ("autoSelectFamily", Rule::Irrelevant("tries the same host's IPv4 and IPv6 addresses in parallel; same server")),
    ("autoSelectFamilyAttemptTimeout", Rule::Irrelevant("see autoSelectFamily")),
    // Who: credentials, read from the resolved `credentials`.
    ("credentials", Rule::Mapped),
    ("auth", Rule::FoldedInto(CREDENTIALS)),
    ("authMechanism", Rule::FoldedInto(CREDENTIALS)),
    ("authMechanismProperties", Rule::FoldedInto(CREDENTIALS)),
    ("authSource", Rule::FoldedInto(CREDENTIALS)),
    ("userSpecifiedAuthSource", Rule::Mapped),
    ("userSpecifiedReplicaSet", Rule::Irrelevant("bookkeeping of whether replicaSet came from the user (replicaSet itself is mapped)")),
    ("dbName", Rule::Irrelevant("each call names its database (the Db's); the default authentication database is already in credentials")),
    // TLS.
    ("tls", Rule::Mapped),
    ("ssl", Rule::FoldedInto("tls")),
    ("rejectUnauthorized", Rule::Mapped),
    ("tlsAllowInvalidCertificates", Rule::FoldedInto("rejectUnauthorized")),
    ("checkServerIdentity", Rule::Mapped),
    ("tlsAllowInvalidHostnames", Rule::FoldedInto("checkServerIdentity")),
    ("tlsInsecure", Rule::Mapped),
    ("tlsCAFile", Rule::Mapped),
    ("ca", Rule::Mapped),
    ("tlsCertificateKeyFile", Rule::Mapped),
    ("cert", Rule::Mapped),
    ("key", Rule::Mapped),
    ("tlsCertificateKeyFilePassword", Rule::FoldedInto("passphrase")),
    ("passphrase", Rule::Refused(Unless::Unset, "an encrypted client key (this build reads unencrypted keys only)")),
    ("tlsCRLFile", Rule::Refused(Unless::Unset, "certificate revocation lists (the Rust driver checks none)")),
    ("crl", Rule::Refused(Unless::Unset, "certificate revocation lists (the Rust driver checks none)")),
    ("pfx", Rule::Refused(Unless::Unset, "a PKCS#12 bundle in memory (use tlsCertificateKeyFile)")),
    ("secureContext", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("ALPNProtocols", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("allowPartialTrustChain", Rule::Refused(Unless::False, TLS_NODE)),
    ("ciphers", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("ecdhCurve", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("minDHSize", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("secureProtocol", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("servername", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("session", Rule::Refused(Unless::Unset, TLS_NODE)),
    // What is written and read, and how durably.
    ("writeConcern", Rule::Mapped),
    ("w", Rule::FoldedInto("writeConcern")),
    ("wtimeoutMS", Rule::FoldedInto("writeConcern")),
    ("journal", Rule::FoldedInto("writeConcern")),
    ("readConcern", Rule::Mapped),
    ("readConcernLevel", Rule::FoldedInto("readConcern")),
    ("readPreference", Rule::Mapped),
    ("readPreferenceTags", Rule::FoldedInto("readPreference")),
    ("maxStalenessSeconds", Rule::FoldedInto("readPreference")),
    ("retryWrites", Rule::Mapped),
    ("retryReads", Rule::Mapped),
    ("serverApi", Rule::Mapped),
    ("appName", Rule::Mapped),
    ("autoEncryption", Rule::Refused(Unless::Unset, "client-side field level encryption (the derived client would write unencrypted)")),
    ("autoEncrypter", Rule::Refused(Unless::Unset, "client-side field level encryption (the derived client would write unencrypted)")),
    ("encrypter", Rule::Refused(Unless::Unset, "client-side field level encryption (the derived client would write unencrypted)")),
    ("timeoutMS", Rule::Refused(Unless::Unset, "a client-wide operation time limit the derived client does not apply")),
    // Timing.
    ("serverSelectionTimeoutMS", Rule::Mapped),
    ("connectTimeoutMS", Rule::Mapped),
    ("socketTimeoutMS", Rule::Irrelevant(TIMING)),
    ("waitQueueTimeoutMS", Rule::Irrelevant(TIMING)),
    ("noDelay", Rule::Irrelevant("Nagle's algorithm on the Node client's sockets: latency only")),
    ("keepAlive", Rule::Irrelevant("TCP keep-alive of the Node client's sockets: liveness only")),
    ("keepAliveInitialDelay", Rule::Irrelevant("TCP keep-alive of the Node client's sockets: liveness only")),
    // Pool and monitoring.
    ("maxPoolSize", Rule::Mapped),
    ("minPoolSize", Rule::Mapped),
    ("maxConnecting", Rule::Mapped),
    ("maxIdleTimeMS", Rule::Irrelevant(POOL)),
    ("heartbeatFrequencyMS", Rule::Irrelevant(MONITORING)),
    ("minHeartbeatFrequencyMS", Rule::Irrelevant(MONITORING)),
    ("serverMonitoringMode", Rule::Irrelevant(MONITORING)),
    ("localThresholdMS", Rule::Irrelevant("the latency window among servers the read preference already allows")),
    ("maxAdaptiveRetries", Rule::Irrelevant("pacing of retries when the server reports overload; a retried command is the same command")),
    ("enableOverloadRetargeting", Rule::Irrelevant("pacing of retries when the server reports overload; a retried command is the same command")),
    // Compression.
    ("compressors", Rule::Irrelevant(COMPRESSION)),
    ("zlibCompressionLevel", Rule::Irrelevant(COMPRESSION)),
    // BSON in JavaScript.
    ("raw", Rule::Irrelevant(BSON_JS)),
    ("promoteLongs", Rule::Irrelevant(BSON_JS)),
    ("promoteValues", Rule::Irrelevant(BSON_JS)),
    ("promoteBuffers", Rule::Irrelevant(BSON_JS)),
    ("bsonRegExp", Rule::Irrelevant(BSON_JS)),
    ("useBigInt64", Rule::Irrelevant(BSON_JS)),
    ("fieldsAsRaw", Rule::Irrelevant(BSON_JS)),
    ("serializeFunctions", Rule::Irrelevant("how the Node driver writes functions; a gapless insert reads it from the `Db` itself and refuses a function it would store")),
    ("ignoreUndefined", Rule::Irrelevant("how the Node driver writes `undefined`; a gapless insert reads it from the `Db` itself, as the driver's insert does")),
    ("checkKeys", Rule::Irrelevant(BSON_JS)),
    ("enableUtf8Validation", Rule::Irrelevant(BSON_JS)),
    ("pkFactory", Rule::Irrelevant("ids of new documents, not the connection; a gapless insert asks the `Db` for them, as the driver's insert does")),
    ("forceServerObjectId", Rule::Irrelevant("ids of new documents, not the connection; a gapless insert asks the `Db` for them, as the driver's insert does")),
    // Logging and metadata.
    ("monitorCommands", Rule::Irrelevant(LOGGING)),
    ("mongodbLogPath", Rule::Irrelevant(LOGGING)),
    ("mongodbLogComponentSeverities", Rule::Irrelevant(LOGGING)),
    ("mongodbLogMaxDocumentLength", Rule::Irrelevant(LOGGING)),
    ("mongoLoggerOptions", Rule::Irrelevant(LOGGING)),
    ("driverInfo", Rule::Irrelevant(METADATA)),
    ("additionalDriverInfo", Rule::Irrelevant(METADATA)),
    ("metadata", Rule::Irrelevant(METADATA)),
    ("extendedMetadata", Rule::Irrelevant(METADATA)),
    ("runtime", Rule::Irrelevant(METADATA)),
    ("toJSON", Rule::Irrelevant("how JSON.stringify shows the options object (driver 7.9.1 on: credentials redacted)")),
];

/// How `key` is treated, or `None` for a key the table does not know.
pub fn rule(key: &str) -> Option<Rule> {
    static BY_KEY: std::sync::LazyLock<HashMap<&'static str, Rule>> =
        std::sync::LazyLock::new(|| OPTION_TABLE.iter().copied().collect());
    BY_KEY.get(key).copied()
}

/// A TLS file named by the Node client or a connection string, with its contents as read
/// (`None`: it could not be read, which the driver reports when a client opens). Files are
/// equal when their paths are: the contents are not part of a connection's identity, which
/// has one shared client at a time, replaced when a later reading of a file finds other
/// contents ([`TlsFile::supersedes`]: a certificate rotated in place). Its `Debug` shows
/// the path and size only: the contents may hold a private key.
#[derive(Clone)]
pub struct TlsFile {
    /// The path as the Node client (or the connection string) has it.
    pub path: String,
    /// The file's contents when it was read (shared: targets are cloned).
    pub contents: Option<std::sync::Arc<[u8]>>,
    /// A digest of `contents`, compared first: targets are compared on every call, and a
    /// CA bundle can be large.
    digest: u64,
    /// When the contents were read, in the order of every reading in this process.
    read: u64,
}

/// Readings of TLS files made in this process, in order ([`TlsFile::read`]).
static READINGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl TlsFile {
    /// A file and its contents as just read (`None`: unreadable).
    pub fn new(path: String, contents: Option<Vec<u8>>) -> TlsFile {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        contents.hash(&mut hasher);
        TlsFile {
            path,
            contents: contents.map(Into::into),
            digest: hasher.finish(),
            read: READINGS.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// Whether both readings found the same contents.
    pub fn same_contents(&self, other: &TlsFile) -> bool {
        match (&self.contents, &other.contents) {
            (Some(a), Some(b)) => {
                std::sync::Arc::ptr_eq(a, b) || (self.digest == other.digest && a[..] == b[..])
            }
            (None, None) => true,
            _ => false,
        }
    }

    /// Whether this reading replaces `earlier` (of the same path): it was made after it
    /// and found other contents. A file that could not be read replaces nothing (a
    /// rotation tool may remove a file before writing the new one).
    pub fn supersedes(&self, earlier: &TlsFile) -> bool {
        self.contents.is_some() && self.read > earlier.read && !self.same_contents(earlier)
    }
}

impl PartialEq for TlsFile {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for TlsFile {}

impl std::fmt::Debug for TlsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsFile")
            .field("path", &self.path)
            .field("bytes", &self.contents.as_ref().map(|c| c.len()))
            .finish()
    }
}

impl std::hash::Hash for TlsFile {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.path.hash(state);
    }
}

/// TLS settings of a derived connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DerivedTls {
    /// `tlsAllowInvalidCertificates` / `tlsInsecure` (no certificate or host name check).
    pub allow_invalid_certificates: bool,
    /// `tlsCAFile`: trusted instead of the built-in roots.
    pub ca_file: Option<TlsFile>,
    /// `tlsCertificateKeyFile`: the client's certificate and key.
    pub cert_key_file: Option<TlsFile>,
}

/// Credentials of a derived connection, as the Node client resolved them.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DerivedCredential {
    /// User name.
    pub username: Option<String>,
    /// Password.
    pub password: Option<String>,
    /// Authentication database; `None` lets an SRV record's TXT `authSource` apply.
    pub source: Option<String>,
    /// Default database for the source when `source` is `None`.
    pub source_default: Option<String>,
    /// Mechanism; `None` negotiates SCRAM as the Node driver's `DEFAULT` does.
    pub mechanism: Option<String>,
}

impl std::fmt::Debug for DerivedCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DerivedCredential")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "****"))
            .field("source", &self.source)
            .field("mechanism", &self.mechanism)
            .finish()
    }
}

/// Where the servers are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DerivedHosts {
    /// A seed list of `host`/`port` (a port of `None` is 27017).
    List(Vec<(String, Option<u16>)>),
    /// Unix domain socket paths.
    Sockets(Vec<String>),
    /// An SRV name, with the service name and host limit.
    Srv {
        /// The SRV host name.
        host: String,
        /// `srvServiceName`.
        service_name: String,
        /// `srvMaxHosts` (0: all).
        max_hosts: u32,
    },
}

/// `serverApi` of a derived connection: version, `strict`, `deprecationErrors`.
pub type DerivedServerApi = (String, Option<bool>, Option<bool>);

/// Read preference of a derived connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DerivedReadPreference {
    /// `primary`, `secondary`…
    pub mode: String,
    /// Tag sets, each as sorted pairs.
    pub tags: Vec<Vec<(String, String)>>,
    /// `maxStalenessSeconds`.
    pub max_staleness_seconds: Option<u64>,
}

/// Write concern of a derived connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DerivedWriteConcern {
    /// `w`.
    pub w: Option<crate::engine::client::write_concern::WriteAck>,
    /// `journal`.
    pub journal: Option<bool>,
    /// `wtimeoutMS`.
    pub wtimeout_ms: Option<u64>,
}

/// Connection pool sizes of a derived connection, per server as in both drivers: a
/// deployment that caps connections counts the derived client's too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DerivedPool {
    /// `maxPoolSize` (the Node driver's 0, no limit, is `u32::MAX`).
    pub max_size: Option<u32>,
    /// `minPoolSize`.
    pub min_size: Option<u32>,
    /// `maxConnecting`.
    pub max_connecting: Option<u32>,
}

/// The full effective configuration of a derived connection: equal values share one
/// client, different ones never do.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DerivedConnection {
    /// Servers.
    pub hosts: DerivedHosts,
    /// Credentials.
    pub credential: Option<DerivedCredential>,
    /// TLS, when on.
    pub tls: Option<DerivedTls>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `writeConcern`.
    pub write_concern: Option<DerivedWriteConcern>,
    /// `readConcern.level`.
    pub read_concern: Option<String>,
    /// `readPreference`.
    pub read_preference: Option<DerivedReadPreference>,
    /// `retryWrites`.
    pub retry_writes: Option<bool>,
    /// `retryReads`.
    pub retry_reads: Option<bool>,
    /// `serverApi`: version, strict, deprecationErrors.
    pub server_api: Option<DerivedServerApi>,
    /// `appName`.
    pub app_name: Option<String>,
    /// `maxPoolSize`, `minPoolSize`, `maxConnecting`.
    pub pool: DerivedPool,
}

fn refused(option: &str, why: &str) -> SeqError {
    SeqError::new(
        ErrorCode::UnsupportedClient,
        format!(
            "cannot derive a connection from this MongoClient: its option '{option}' is not \
             carried over ({why}). Pass the connection string yourself as {{ uri }} (for \
             example from process.env.MONGODB_URI) or use connect(uri)"
        ),
    )
}

fn bad(option: &str, what: &str) -> SeqError {
    refused(option, &format!("its value is {what}"))
}

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
        read_concern: match get("readConcern") {
            v if v.is_unset() => None,
            NodeValue::Map(_) => match get("readConcern").get("level") {
                v if v.is_unset() => None,
                NodeValue::Text(level) => Some(level.clone()),
                _ => return Err(bad("readConcern", "not a read concern")),
            },
            _ => return Err(bad("readConcern", "not a read concern")),
        },
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
    Ok(DerivedPool {
        max_size,
        min_size,
        max_connecting,
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

/// The options into which the Node driver reads a TLS file when it connects (`ca` from
/// `tlsCAFile`, `cert` and `key` from `tlsCertificateKeyFile`, each only when unset), with
/// the option naming that file.
pub const FILE_COPIES: [(&str, &str); 3] = [
    ("ca", "tlsCAFile"),
    ("cert", "tlsCertificateKeyFile"),
    ("key", "tlsCertificateKeyFile"),
];

/// The options of [`FILE_COPIES`] that may hold the Node driver's copy of their file: with
/// TLS on, bytes beside a named file (the driver reads files into a `Buffer`).
pub fn file_copy_candidates(options: &NodeOptions) -> Vec<&'static str> {
    if options.get("tls") != Some(&NodeValue::Bool(true)) {
        return Vec::new();
    }
    FILE_COPIES
        .iter()
        .filter(|(key, file_key)| {
            matches!(options.get(*key), Some(NodeValue::Bytes(_)))
                && matches!(options.get(*file_key), Some(NodeValue::Text(_)))
        })
        .map(|(key, _)| *key)
        .collect()
}

fn derive_tls<'a>(
    get: impl Fn(&str) -> &'a NodeValue,
    read_file: &dyn Fn(&str) -> std::io::Result<Vec<u8>>,
) -> SeqResult<DerivedTls> {
    let allow_invalid_certificates = match get("rejectUnauthorized") {
        v if v.is_unset() => false,
        NodeValue::Bool(reject) => !reject,
        _ => return Err(bad("rejectUnauthorized", "not a boolean")),
    };
    // The Node driver keeps tlsInsecure and applies it as rejectUnauthorized = false and
    // checkServerIdentity = no-op; anything else is ambiguous.
    match get("tlsInsecure") {
        NodeValue::Bool(true) if !allow_invalid_certificates => {
            return Err(refused(
                "tlsInsecure",
                "it disagrees with rejectUnauthorized",
            ))
        }
        NodeValue::Bool(_) => {}
        v if v.is_unset() => {}
        _ => return Err(bad("tlsInsecure", "not a boolean")),
    }
    // The Node driver turns tlsAllowInvalidHostnames into a checkServerIdentity that
    // accepts any name. Without certificate checks there is no name check either (in Node
    // and in the Rust driver); with them, the Rust driver cannot skip the name alone.
    if !get("checkServerIdentity").is_unset() && !allow_invalid_certificates {
        return Err(refused(
            "tlsAllowInvalidHostnames",
            "host names unchecked while certificates are checked, which the Rust driver cannot do",
        ));
    }
    let file = |key: &str| -> SeqResult<Option<TlsFile>> {
        match get(key) {
            v if v.is_unset() => Ok(None),
            NodeValue::Text(path) => {
                let contents = read_file(path)
                    .map_err(|e| refused(key, &format!("its file cannot be read: {}", e.kind())))?;
                Ok(Some(TlsFile::new(path.clone(), Some(contents))))
            }
            _ => Err(bad(key, "not a path")),
        }
    };
    let ca_file = file("tlsCAFile")?;
    let cert_key_file = file("tlsCertificateKeyFile")?;
    // The Node driver reads the files into `ca`, `cert` and `key` when it connects (only
    // where those are unset) and keeps that copy; anything else in them was given in
    // memory and cannot be carried to the Rust driver, which reads files. The reader
    // leaves out the driver's copies it recognises ([`FILE_COPIES`]), so that a connection
    // derived after a file was rotated in place follows the file; what is left must hold
    // what the file holds now.
    for (key, file_key) in FILE_COPIES {
        let value = get(key);
        if value.is_unset() {
            continue;
        }
        let from = if file_key == "tlsCAFile" {
            &ca_file
        } else {
            &cert_key_file
        };
        let now = from.as_ref().and_then(|f| f.contents.as_deref());
        let same = now.is_some_and(|now| match value {
            NodeValue::Bytes(b) => b[..] == now[..],
            NodeValue::Text(s) => s.as_bytes() == now,
            _ => false,
        });
        if same {
            continue;
        }
        let why = if from.is_some() {
            format!(
                "it holds other bytes than its file {file_key} and was never seen equal to \
                 it: a certificate or key given in memory, which only a file can replace, \
                 or the Node driver's copy of a file rewritten before this MongoClient's \
                 first counter call: make the MongoClient again"
            )
        } else {
            "certificates or keys given in memory; name their files with tlsCAFile or \
             tlsCertificateKeyFile"
                .to_string()
        };
        return Err(refused(key, &why));
    }
    Ok(DerivedTls {
        allow_invalid_certificates,
        ca_file,
        cert_key_file,
    })
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

fn derive_read_preference(value: &NodeValue) -> SeqResult<Option<DerivedReadPreference>> {
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

impl DerivedConnection {
    /// The password, to keep out of messages.
    pub fn secrets(&self) -> Vec<String> {
        self.credential
            .iter()
            .filter_map(|c| c.password.clone())
            .filter(|p| !p.is_empty())
            .collect()
    }

    /// The Rust driver's options for this connection (resolving an SRV name).
    pub async fn client_options(&self) -> mongodb::error::Result<ClientOptions> {
        let mut cs = ConnectionString::default();
        match &self.hosts {
            DerivedHosts::List(list) => {
                cs.host_info = HostInfo::HostIdentifiers(
                    list.iter()
                        .map(|(host, port)| ServerAddress::Tcp {
                            host: host.clone(),
                            port: *port,
                        })
                        .collect(),
                );
            }
            DerivedHosts::Sockets(paths) => {
                #[cfg(unix)]
                {
                    cs.host_info = HostInfo::HostIdentifiers(
                        paths
                            .iter()
                            .map(|p| ServerAddress::Unix {
                                path: PathBuf::from(p),
                            })
                            .collect(),
                    );
                }
                #[cfg(not(unix))]
                {
                    let _ = paths;
                    return Err(mongodb::error::Error::invalid_argument(
                        "unix domain sockets are not supported on this platform",
                    ));
                }
            }
            DerivedHosts::Srv {
                host,
                service_name,
                max_hosts,
            } => {
                cs.host_info = HostInfo::DnsRecord(host.clone());
                cs.srv_service_name = Some(service_name.clone());
                cs.srv_max_hosts = (*max_hosts > 0).then_some(*max_hosts);
            }
        }
        if let Some(c) = &self.credential {
            let mut credential = Credential::default();
            credential.username = c.username.clone();
            credential.password = c.password.clone();
            credential.source = c.source.clone();
            credential.mechanism = match c.mechanism.as_deref() {
                None => None,
                Some(m) => Some(m.parse::<AuthMechanism>()?),
            };
            cs.credential = Some(credential);
            cs.default_database = c.source_default.clone();
        }
        cs.tls = Some(match &self.tls {
            None => Tls::Disabled,
            Some(t) => {
                let mut options = TlsOptions::default();
                options.allow_invalid_certificates = Some(t.allow_invalid_certificates);
                options.ca_file_path = t.ca_file.as_ref().map(|f| PathBuf::from(&f.path));
                options.cert_key_file_path =
                    t.cert_key_file.as_ref().map(|f| PathBuf::from(&f.path));
                Tls::Enabled(options)
            }
        });
        cs.replica_set = self.replica_set.clone();
        cs.direct_connection = self.direct_connection;
        cs.load_balanced = match self.hosts {
            // An SRV name's TXT record may turn load balancing on, as it does for the Node
            // client when it connects; its default `false` must not override that.
            DerivedHosts::Srv { .. } => self.load_balanced.filter(|on| *on),
            _ => self.load_balanced,
        };
        cs.app_name = self.app_name.clone();
        cs.retry_writes = self.retry_writes;
        cs.retry_reads = self.retry_reads;
        cs.write_concern = self.write_concern.as_ref().map(|w| {
            let mut concern = WriteConcern::default();
            concern.w = w.w.as_ref().map(|w| match w {
                crate::engine::client::write_concern::WriteAck::Nodes(n) => {
                    Acknowledgment::Nodes(*n)
                }
                crate::engine::client::write_concern::WriteAck::Majority => {
                    Acknowledgment::Majority
                }
                crate::engine::client::write_concern::WriteAck::Tag(t) => {
                    Acknowledgment::Custom(t.clone())
                }
            });
            concern.journal = w.journal;
            concern.w_timeout = w.wtimeout_ms.map(Duration::from_millis);
            concern
        });
        cs.read_concern = self
            .read_concern
            .as_ref()
            .map(|level| ReadConcern::custom(level.clone()));
        cs.max_pool_size = self.pool.max_size;
        cs.min_pool_size = self.pool.min_size;
        cs.max_connecting = self.pool.max_connecting;
        let mut options = ClientOptions::parse(cs).await?;
        options.selection_criteria = self
            .read_preference
            .as_ref()
            .map(|p| SelectionCriteria::ReadPreference(p.to_driver()));
        options.server_api = self.server_api.as_ref().map(|(_, strict, errors)| {
            let mut api = ServerApi::builder().version(ServerApiVersion::V1).build();
            api.strict = *strict;
            api.deprecation_errors = *errors;
            api
        });
        Ok(options)
    }
}

impl DerivedReadPreference {
    fn to_driver(&self) -> ReadPreference {
        let options = (!self.tags.is_empty() || self.max_staleness_seconds.is_some()).then(|| {
            let mut o = ReadPreferenceOptions::default();
            if !self.tags.is_empty() {
                o.tag_sets = Some(
                    self.tags
                        .iter()
                        .map(|set| set.iter().cloned().collect::<HashMap<_, _>>())
                        .collect(),
                );
            }
            o.max_staleness = self.max_staleness_seconds.map(Duration::from_secs);
            o
        });
        match self.mode.as_str() {
            "primaryPreferred" => ReadPreference::PrimaryPreferred { options },
            "secondary" => ReadPreference::Secondary { options },
            "secondaryPreferred" => ReadPreference::SecondaryPreferred { options },
            "nearest" => ReadPreference::Nearest { options },
            _ => ReadPreference::Primary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, NodeValue)]) -> NodeValue {
        NodeValue::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn text(s: &str) -> NodeValue {
        NodeValue::Text(s.into())
    }

    /// A Node client's options as the driver resolves `mongodb://h:27017`.
    fn base() -> NodeOptions {
        let mut o = NodeOptions::new();
        o.insert(
            "hosts".into(),
            NodeValue::List(vec![map(&[
                ("host", text("h")),
                ("port", NodeValue::number(27017.0)),
            ])]),
        );
        o.insert("srvServiceName".into(), text("mongodb"));
        o.insert("srvMaxHosts".into(), NodeValue::number(0.0));
        o.insert("maxPoolSize".into(), NodeValue::number(100.0));
        o.insert("retryWrites".into(), NodeValue::Bool(true));
        o.insert("metadata".into(), NodeValue::Other);
        o
    }

    fn no_files(_: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::ErrorKind::NotFound.into())
    }

    fn refusal(o: &NodeOptions) -> String {
        let e = derive(o, &no_files).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedClient);
        e.message
    }

    #[test]
    fn every_key_is_classified_once() {
        let mut seen = std::collections::HashSet::new();
        for (key, _) in OPTION_TABLE {
            assert!(seen.insert(*key), "{key} twice");
        }
    }

    #[test]
    fn unknown_keys_holding_the_drivers_default_are_not_settings() {
        let mut defaults = NodeOptions::new();
        defaults.insert("futureHook".into(), NodeValue::Function);
        defaults.insert("futureFlag".into(), NodeValue::Bool(false));
        defaults.insert("futureLimit".into(), NodeValue::number(10.0));
        // Known keys never reach the comparison: their rules decide.
        defaults.insert("proxyHost".into(), text("proxy"));
        let mut o = base();
        o.insert("futureHook".into(), NodeValue::Function);
        o.insert("futureFlag".into(), NodeValue::Bool(false));
        o.insert("futureLimit".into(), NodeValue::number(10.0));
        o.insert("futureUnset".into(), NodeValue::Undefined);
        assert_eq!(
            unknown_keys(&o).collect::<Vec<_>>(),
            ["futureFlag", "futureHook", "futureLimit"]
        );
        let kept = without_driver_defaults(o.clone(), &defaults);
        let mut expected = o.clone();
        for key in ["futureHook", "futureFlag", "futureLimit"] {
            expected.remove(key);
        }
        assert_eq!(kept, expected);
        assert!(derive(&kept, &no_files).is_ok());
        // A value the user set differs from the default: still refused, named.
        for (key, set) in [
            ("futureFlag", NodeValue::Bool(true)),
            ("futureLimit", NodeValue::number(11.0)),
            ("futureHook", NodeValue::Other),
        ] {
            let mut changed = o.clone();
            changed.insert(key.into(), set);
            let kept = without_driver_defaults(changed, &defaults);
            assert!(refusal(&kept).contains(&format!("'{key}'")), "{key}");
        }
        // No client of the driver could be made: every set unknown key is refused.
        assert!(
            refusal(&without_driver_defaults(o.clone(), &NodeOptions::new()))
                .contains("'futureFlag'")
        );
        // Below the top, functions (and values not read) all look alike: never a default.
        let hooks = |f: NodeValue| NodeValue::Map([("onEvent".to_string(), f)].into());
        let mut nested = NodeOptions::new();
        nested.insert("futureHooks".into(), hooks(NodeValue::Function));
        nested.insert("futureBig".into(), NodeValue::Other);
        let mut o2 = base();
        o2.insert("futureHooks".into(), hooks(NodeValue::Function));
        o2.insert("futureBig".into(), NodeValue::Other);
        let kept = without_driver_defaults(o2, &nested);
        assert!(kept.contains_key("futureHooks") && kept.contains_key("futureBig"));
        // A known key equal to some "default" keeps its own rule.
        let mut proxied = base();
        proxied.insert("proxyHost".into(), text("proxy"));
        assert!(refusal(&without_driver_defaults(proxied, &defaults)).contains("'proxyHost'"));
    }

    #[test]
    fn unknown_and_refused_keys_are_named() {
        let mut o = base();
        o.insert("someFutureOption".into(), NodeValue::Bool(true));
        assert!(refusal(&o).contains("'someFutureOption'"));
        let mut o = base();
        o.insert("someFutureOption".into(), NodeValue::Undefined);
        assert!(derive(&o, &no_files).is_ok());
        for key in [
            "proxyHost",
            "lookup",
            "family",
            "localAddress",
            "servername",
            "autoEncryption",
            "crl",
            "passphrase",
        ] {
            let mut o = base();
            o.insert(key.into(), NodeValue::Function);
            assert!(refusal(&o).contains(&format!("'{key}'")), "{key}");
            o.insert(key.into(), NodeValue::Undefined);
            assert!(derive(&o, &no_files).is_ok(), "{key}");
        }
    }

    #[test]
    fn tls_checks_are_carried_or_refused() {
        let mut o = base();
        o.insert("tls".into(), NodeValue::Bool(true));
        let d = derive(&o, &no_files).unwrap();
        assert!(!d.tls.as_ref().unwrap().allow_invalid_certificates);
        o.insert("rejectUnauthorized".into(), NodeValue::Bool(false));
        assert!(
            derive(&o, &no_files)
                .unwrap()
                .tls
                .unwrap()
                .allow_invalid_certificates
        );
        // Host names unchecked while certificates are checked: refused.
        o.insert("rejectUnauthorized".into(), NodeValue::Undefined);
        o.insert("checkServerIdentity".into(), NodeValue::Function);
        assert!(refusal(&o).contains("tlsAllowInvalidHostnames"));
        // Files: their contents are carried beside the connection; in-memory
        // certificates refused.
        let mut o = base();
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert("tlsCAFile".into(), text("/ca.pem"));
        let read = |p: &str| Ok(p.as_bytes().to_vec());
        let d = derive(&o, &read).unwrap();
        let ca = |d: &DerivedConnection| d.tls.as_ref().unwrap().ca_file.clone().unwrap();
        assert_eq!(ca(&d).contents.as_deref(), Some(&b"/ca.pem"[..]));
        // The same path with other contents (the file rotated in place) is the same
        // connection, whose later reading replaces the earlier one; equal contents never do.
        let other = |_: &str| Ok(b"other".to_vec());
        let rotated = derive(&o, &other).unwrap();
        assert_eq!(d, rotated);
        assert!(ca(&rotated).supersedes(&ca(&d)) && !ca(&d).supersedes(&ca(&rotated)));
        let again = derive(&o, &read).unwrap();
        assert!(ca(&again).same_contents(&ca(&d)) && !ca(&again).supersedes(&ca(&d)));
        o.insert("ca".into(), NodeValue::Bytes(b"/ca.pem".to_vec()));
        assert!(derive(&o, &read).is_ok());
        o.insert("ca".into(), NodeValue::Bytes(b"other".to_vec()));
        let e = derive(&o, &read).unwrap_err().message;
        assert!(e.contains("'ca'") && e.contains("tlsCAFile"), "{e}");
        assert!(e.contains("make the MongoClient again"), "{e}");
        assert!(refusal(&o).contains("'tlsCAFile'"));
        o.remove("tlsCAFile");
        let e = refusal(&o);
        assert!(e.contains("'ca'") && e.contains("given in memory"), "{e}");
        // Key and certificate: compared with tlsCertificateKeyFile, `cert` first.
        let mut o = base();
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
        o.insert("key".into(), NodeValue::Bytes(b"/me.pem".to_vec()));
        o.insert("cert".into(), NodeValue::Bytes(b"/me.pem".to_vec()));
        assert!(derive(&o, &read).is_ok());
        o.insert("key".into(), NodeValue::Bytes(b"bob".to_vec()));
        assert!(derive(&o, &read).unwrap_err().message.contains("'key'"));
        o.insert("cert".into(), NodeValue::Bytes(b"bob".to_vec()));
        assert!(derive(&o, &read).unwrap_err().message.contains("'cert'"));
    }

    #[test]
    fn file_copy_candidates_are_bytes_beside_a_named_file_with_tls_on() {
        let mut o = base();
        o.insert("ca".into(), NodeValue::Bytes(b"x".to_vec()));
        o.insert("tlsCAFile".into(), text("/ca.pem"));
        o.insert("key".into(), NodeValue::Bytes(b"x".to_vec()));
        o.insert("cert".into(), text("x"));
        o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
        assert!(
            file_copy_candidates(&o).is_empty(),
            "TLS off: nothing is read"
        );
        o.insert("tls".into(), NodeValue::Bool(true));
        // A string is never the driver's copy (it reads files into Buffers).
        assert_eq!(file_copy_candidates(&o), vec!["ca", "key"]);
        o.remove("tlsCAFile");
        assert_eq!(file_copy_candidates(&o), vec!["key"]);
    }

    #[test]
    fn mechanisms_follow_the_node_client() {
        let cred = |m: &str| {
            let mut o = base();
            o.insert(
                "credentials".into(),
                map(&[
                    ("username", text("u")),
                    ("password", text("p")),
                    ("source", text("admin")),
                    ("mechanism", text(m)),
                    ("mechanismProperties", map(&[])),
                ]),
            );
            o
        };
        assert_eq!(
            derive(&cred("DEFAULT"), &no_files)
                .unwrap()
                .credential
                .unwrap()
                .mechanism,
            None
        );
        assert_eq!(
            derive(&cred("PLAIN"), &no_files)
                .unwrap()
                .credential
                .unwrap()
                .mechanism
                .as_deref(),
            Some("PLAIN")
        );
        assert!(refusal(&cred("MONGODB-AWS")).contains("authMechanism"));
        assert_ne!(
            derive(&cred("PLAIN"), &no_files).unwrap(),
            derive(&cred("DEFAULT"), &no_files).unwrap()
        );
    }

    #[test]
    fn write_concern_and_read_preference_are_mapped() {
        let mut o = base();
        o.insert(
            "writeConcern".into(),
            map(&[("w", text("majority")), ("journal", NodeValue::Bool(true))]),
        );
        o.insert(
            "readPreference".into(),
            map(&[("mode", text("secondaryPreferred"))]),
        );
        let d = derive(&o, &no_files).unwrap();
        let w = d.write_concern.unwrap();
        assert_eq!(
            w.w,
            Some(crate::engine::client::write_concern::WriteAck::Majority)
        );
        assert_eq!(w.journal, Some(true));
        assert_eq!(d.read_preference.unwrap().mode, "secondaryPreferred");
        o.insert("writeConcern".into(), map(&[("w", NodeValue::number(0.0))]));
        assert!(refusal(&o).contains("writeConcern"));
    }

    #[test]
    fn client_options_carry_every_mapped_setting() {
        let mut o = base();
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert("rejectUnauthorized".into(), NodeValue::Bool(false));
        o.insert("tlsCAFile".into(), text("/ca.pem"));
        o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
        o.insert(
            "credentials".into(),
            map(&[
                ("username", text("u")),
                ("password", text("p")),
                ("source", text("admin")),
                ("mechanism", text("SCRAM-SHA-256")),
            ]),
        );
        o.insert(
            "writeConcern".into(),
            map(&[
                ("w", NodeValue::number(2.0)),
                ("wtimeoutMS", NodeValue::number(50.0)),
            ]),
        );
        o.insert("readConcern".into(), map(&[("level", text("majority"))]));
        o.insert(
            "readPreference".into(),
            map(&[
                ("mode", text("nearest")),
                ("tags", NodeValue::List(vec![map(&[("dc", text("ny"))])])),
                ("maxStalenessSeconds", NodeValue::number(120.0)),
            ]),
        );
        o.insert("retryWrites".into(), NodeValue::Bool(false));
        o.insert("retryReads".into(), NodeValue::Bool(false));
        o.insert(
            "serverApi".into(),
            map(&[("version", text("1")), ("strict", NodeValue::Bool(true))]),
        );
        o.insert("appName".into(), text("shop"));
        o.insert("replicaSet".into(), text("rs0"));
        o.insert("maxPoolSize".into(), NodeValue::number(3.0));
        o.insert("minPoolSize".into(), NodeValue::number(2.0));
        o.insert("maxConnecting".into(), NodeValue::number(1.0));
        let read = |_: &str| Ok(b"pem".to_vec());
        let d = derive(&o, &read).unwrap();
        let options = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(d.client_options())
            .unwrap();
        assert_eq!(
            options.hosts,
            vec![ServerAddress::Tcp {
                host: "h".into(),
                port: Some(27017)
            }]
        );
        let Some(Tls::Enabled(tls)) = &options.tls else {
            panic!("tls off")
        };
        assert_eq!(tls.allow_invalid_certificates, Some(true));
        assert_eq!(tls.ca_file_path, Some(PathBuf::from("/ca.pem")));
        assert_eq!(tls.cert_key_file_path, Some(PathBuf::from("/me.pem")));
        let credential = options.credential.as_ref().unwrap();
        assert_eq!(credential.username.as_deref(), Some("u"));
        assert_eq!(credential.source.as_deref(), Some("admin"));
        assert_eq!(credential.mechanism, Some(AuthMechanism::ScramSha256));
        let wc = options.write_concern.as_ref().unwrap();
        assert_eq!(wc.w, Some(Acknowledgment::Nodes(2)));
        assert_eq!(wc.w_timeout, Some(Duration::from_millis(50)));
        assert_eq!(options.read_concern, Some(ReadConcern::majority()));
        let Some(SelectionCriteria::ReadPreference(ReadPreference::Nearest { options: Some(rp) })) =
            &options.selection_criteria
        else {
            panic!("{:?}", options.selection_criteria)
        };
        assert_eq!(rp.max_staleness, Some(Duration::from_secs(120)));
        assert_eq!(
            rp.tag_sets.as_ref().unwrap()[0]
                .get("dc")
                .map(String::as_str),
            Some("ny")
        );
        assert_eq!(options.retry_writes, Some(false));
        assert_eq!(options.retry_reads, Some(false));
        assert_eq!(options.server_api.as_ref().unwrap().strict, Some(true));
        assert_eq!(options.app_name.as_deref(), Some("shop"));
        assert_eq!(options.repl_set_name.as_deref(), Some("rs0"));
        assert_eq!(options.max_pool_size, Some(3));
        assert_eq!(options.min_pool_size, Some(2));
        assert_eq!(options.max_connecting, Some(1));
        // The Node driver's DEFAULT mechanism negotiates, as the Rust driver does without one.
        let mut o = base();
        o.insert(
            "credentials".into(),
            map(&[
                ("username", text("u")),
                ("password", text("p")),
                ("mechanism", text("DEFAULT")),
            ]),
        );
        let d = derive(&o, &no_files).unwrap();
        let options = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(d.client_options())
            .unwrap();
        assert_eq!(options.credential.unwrap().mechanism, None);
        assert_eq!(options.tls, Some(Tls::Disabled));
    }

    #[test]
    fn pool_sizes_are_carried_as_the_node_driver_applies_them() {
        let pool = |pairs: &[(&str, NodeValue)]| {
            let mut o = base();
            for (k, v) in pairs {
                o.insert(k.to_string(), v.clone());
            }
            derive(&o, &no_files).map(|d| d.pool)
        };
        let n = NodeValue::number;
        // The Node driver's defaults: 100, 0, 2 (carried as they are, not the Rust
        // driver's 10).
        assert_eq!(
            pool(&[("minPoolSize", n(0.0)), ("maxConnecting", n(2.0))]).unwrap(),
            DerivedPool {
                max_size: Some(100),
                min_size: Some(0),
                max_connecting: Some(2)
            }
        );
        assert_eq!(
            pool(&[("maxPoolSize", n(0.0))]).unwrap().max_size,
            Some(u32::MAX),
            "0 is no limit in the Node driver"
        );
        assert_ne!(
            derive(&base(), &no_files).unwrap(),
            derive(
                &{
                    let mut o = base();
                    o.insert("maxPoolSize".into(), n(1.0));
                    o
                },
                &no_files
            )
            .unwrap(),
            "another pool size is another client"
        );
        for (key, value) in [
            ("maxPoolSize", n(1.5)),
            ("minPoolSize", n(-1.0)),
            ("maxConnecting", n(0.0)),
            ("maxConnecting", text("2")),
        ] {
            let mut o = base();
            o.insert(key.into(), value);
            assert!(refusal(&o).contains(&format!("'{key}'")), "{key}");
        }
        for (max, min) in [(2.0, 3.0), (0.0, 1.0)] {
            let mut o = base();
            o.insert("maxPoolSize".into(), n(max));
            o.insert("minPoolSize".into(), n(min));
            assert!(refusal(&o).contains("'minPoolSize'"), "{max} {min}");
        }
        // Equal sizes, and no limit with no minimum, are the Node driver's too.
        for (max, min) in [(2.0, 2.0), (0.0, 0.0)] {
            let mut o = base();
            o.insert("maxPoolSize".into(), n(max));
            o.insert("minPoolSize".into(), n(min));
            assert!(derive(&o, &no_files).is_ok(), "{max} {min}");
        }
    }

    #[test]
    fn srv_names_carry_their_service_name_and_host_limit() {
        let srv = |service: &str, max: f64| {
            let mut o = base();
            o.insert("hosts".into(), NodeValue::List(vec![]));
            o.insert("srvHost".into(), text("cluster0.example.net"));
            o.insert("srvServiceName".into(), text(service));
            o.insert("srvMaxHosts".into(), NodeValue::number(max));
            derive(&o, &no_files).unwrap()
        };
        assert_eq!(
            srv("custom", 2.0).hosts,
            DerivedHosts::Srv {
                host: "cluster0.example.net".into(),
                service_name: "custom".into(),
                max_hosts: 2
            }
        );
        assert_ne!(srv("custom", 0.0), srv("mongodb", 0.0));
        assert_ne!(srv("mongodb", 1.0), srv("mongodb", 0.0));
    }

    #[test]
    fn srv_txt_auth_source_applies_to_the_same_mechanisms_as_in_node() {
        let srv = |mechanism: &str, source: &str, user_specified: bool| {
            let mut o = base();
            o.insert("hosts".into(), NodeValue::List(vec![]));
            o.insert("srvHost".into(), text("cluster0.example.net"));
            o.insert("tls".into(), NodeValue::Bool(true));
            o.insert(
                "userSpecifiedAuthSource".into(),
                NodeValue::Bool(user_specified),
            );
            o.insert(
                "credentials".into(),
                map(&[
                    ("username", text("u")),
                    ("password", text("p")),
                    ("source", text(source)),
                    ("mechanism", text(mechanism)),
                    ("mechanismProperties", map(&[])),
                ]),
            );
            let c = derive(&o, &no_files).unwrap().credential.unwrap();
            (c.source, c.source_default)
        };
        // The Node driver replaces the source with the TXT record's for SCRAM and PLAIN
        // (named or negotiated): the Rust driver must be left free to do the same.
        for mechanism in ["DEFAULT", "SCRAM-SHA-1", "SCRAM-SHA-256", "PLAIN"] {
            assert_eq!(
                srv(mechanism, "shop", false),
                (None, Some("shop".to_string())),
                "{mechanism}"
            );
            assert_eq!(
                srv(mechanism, "shop", true),
                (Some("shop".to_string()), None),
                "{mechanism}"
            );
        }
        // Not for X.509, whose source stays $external in the Node driver.
        assert_eq!(
            srv("MONGODB-X509", "$external", false),
            (Some("$external".to_string()), None)
        );
    }

    #[test]
    fn unreadable_concerns_are_refused_not_dropped() {
        for key in ["writeConcern", "readConcern"] {
            for value in [NodeValue::Other, NodeValue::Function, text("majority")] {
                let mut o = base();
                o.insert(key.into(), value.clone());
                assert!(refusal(&o).contains(&format!("'{key}'")), "{key} {value:?}");
            }
        }
    }

    #[test]
    fn secrets_never_reach_debug_output() {
        let mut o = base();
        o.insert(
            "credentials".into(),
            map(&[
                ("username", text("u")),
                ("password", text("hunter2")),
                ("mechanism", text("DEFAULT")),
            ]),
        );
        let d = derive(&o, &no_files).unwrap();
        assert!(!format!("{d:?}").contains("hunter2"));
        assert_eq!(d.secrets(), vec!["hunter2".to_string()]);
        // Nor the private key of a TLS file (its contents are in the key, not the output).
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
        let read = |_: &str| Ok(b"-----BEGIN PRIVATE KEY-----\nMIIsecret".to_vec());
        let d = derive(&o, &read).unwrap();
        let shown = format!("{d:?}");
        assert!(
            !shown.contains("MIIsecret") && !shown.contains("77, 73, 73"),
            "{shown}"
        );
        assert!(shown.contains("/me.pem"), "{shown}");
    }
}
