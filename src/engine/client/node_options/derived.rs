//! A connection derived from a Node client: the settings this package carries over.

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
    /// `maxIdleTimeMS` in milliseconds (the Node driver's 0, no limit, is `None`): users set
    /// it below a load balancer's idle timeout so that no pooled connection is reset.
    pub max_idle_ms: Option<u64>,
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
