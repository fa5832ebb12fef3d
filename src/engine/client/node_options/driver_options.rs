//! A [`DerivedConnection`] as the Rust driver's `ClientOptions`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use mongodb::options::{
    Acknowledgment, AuthMechanism, ClientOptions, ConnectionString, Credential, HostInfo,
    ReadConcern, ReadPreference, ReadPreferenceOptions, SelectionCriteria, ServerAddress,
    ServerApi, ServerApiVersion, Tls, TlsOptions, WriteConcern,
};

use super::*;

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
        cs.max_idle_time = self.pool.max_idle_ms.map(Duration::from_millis);
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
    /// The driver's read preference.
    pub(crate) fn to_driver(&self) -> ReadPreference {
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
