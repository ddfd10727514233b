//! TLS to the server, as a URL's `sslmode` and `sslrootcert` ask, with libpq's meanings:
//!
//! | `sslmode` | encrypted | the server's certificate |
//! |---|---|---|
//! | `disable` | no | — |
//! | `prefer` | when the server offers TLS | not checked |
//! | `require` | yes, or no connection | not checked (checked as `verify-ca` when `sslrootcert` is given) |
//! | `verify-ca` | yes | signed by a trusted root |
//! | `verify-full` | yes | signed by a trusted root, and names the host connected to |
//!
//! The trusted roots are the PEM certificates in the file `sslrootcert` names, or the system's
//! (also `sslrootcert=system`). Without `sslmode`, libpq's default `prefer` applies, except when
//! every host is this machine (a loopback address, `localhost` or a Unix socket): there is no
//! network there for TLS to protect, and it would cost every message some CPU.
//!
//! rustls does the work (on *ring*, so that nothing has to be installed on the host); the
//! handshake's signatures are always checked, whatever the mode.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, Result};

/// What the URL asked for, read from its query before the driver sees the rest.
#[derive(Debug, Default)]
pub(super) struct TlsParams {
    /// `sslmode`, when given.
    mode: Option<String>,
    /// `sslrootcert`, when given.
    root_cert: Option<String>,
}

impl TlsParams {
    /// The URL parameters [`TlsParams::take`] reads.
    pub(super) const KEYS: [&str; 5] =
        ["sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword"];

    /// Takes `key=value`, one of [`TlsParams::KEYS`] (its value decoded).
    pub(super) fn take(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            "sslmode" => self.mode = Some(value.to_owned()),
            "sslrootcert" => self.root_cert = Some(value.to_owned()),
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(Error::invalid(
                    format!("url.{key}"),
                    "client certificates are not supported: authenticate with a password",
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Sets the driver's mode on `config` and makes the connector, `None` when no connection
    /// is to be encrypted.
    pub(super) fn apply(
        self,
        config: &mut tokio_postgres::Config,
    ) -> Result<Option<MakeRustlsConnect>> {
        let mode = match self.mode.as_deref() {
            None if all_local(config.get_hosts()) => Mode::Disable,
            None => Mode::Prefer,
            Some(text) => Mode::parse(text)?,
        };
        let roots = match (mode, self.root_cert.as_deref()) {
            (Mode::Disable, _) => {
                config.ssl_mode(SslMode::Disable);
                return Ok(None);
            }
            (Mode::Prefer, _) | (Mode::Require, None) => None,
            (_, root_cert) => Some(Arc::new(roots(root_cert)?)),
        };
        config.ssl_mode(match mode {
            Mode::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        });
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let check = ServerCheck {
            roots,
            check_name: mode == Mode::VerifyFull,
            algorithms: provider.signature_verification_algorithms,
        };
        let tls = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::storage(format!("PostgreSQL: cannot set up TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(check))
            .with_no_client_auth();
        Ok(Some(MakeRustlsConnect::new(tls)))
    }
}

/// Whether connecting failed in the TLS handshake itself: the server's TLS and ours have
/// nothing in common, or what answered was not TLS. Under `prefer`, libpq then connects again
/// without TLS.
pub(super) fn handshake_failed(e: &tokio_postgres::Error) -> bool {
    let mut cause = std::error::Error::source(e);
    while let Some(inner) = cause {
        // The TLS stream reports rustls' refusal inside an I/O error, whose `source` skips it.
        let refused = inner.is::<rustls::Error>()
            || inner
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .is_some_and(|io| io.is::<rustls::Error>());
        if refused {
            return true;
        }
        cause = inner.source();
    }
    false
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(text: &str) -> Result<Mode> {
        Ok(match text {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            _ => {
                return Err(Error::invalid(
                    "url.sslmode",
                    "must be one of disable, prefer, require, verify-ca, verify-full",
                ));
            }
        })
    }
}

/// Whether every host is this machine, where TLS protects nothing.
fn all_local(hosts: &[Host]) -> bool {
    hosts.iter().all(|host| match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name.eq_ignore_ascii_case("localhost")
                || name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    })
}

/// The roots a certificate must chain to: the file's, or the system's.
fn roots(root_cert: Option<&str>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match root_cert {
        None | Some("system") => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(Error::storage(
                    "PostgreSQL: this machine has no trusted root certificates to check the \
                     server's against: name a PEM file with sslrootcert=<path>",
                ));
            }
        }
        Some(path) => {
            let unreadable = |e: &dyn std::fmt::Display| {
                Error::invalid("url.sslrootcert", format!("cannot read {path}: {e}"))
            };
            for cert in
                CertificateDer::pem_file_iter(Path::new(path)).map_err(|e| unreadable(&e))?
            {
                let cert = cert.map_err(|e| unreadable(&e))?;
                store.add(cert).map_err(|e| unreadable(&e))?;
            }
            if store.is_empty() {
                return Err(Error::invalid(
                    "url.sslrootcert",
                    format!("{path} holds no PEM certificate"),
                ));
            }
        }
    }
    Ok(store)
}

/// Checks the server's certificate as the mode asks (not at all without `roots`), and the
/// handshake's signatures always.
#[derive(Debug)]
struct ServerCheck {
    roots: Option<Arc<RootCertStore>>,
    check_name: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ServerCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
            if self.check_name {
                verify_server_name(&cert, server_name)?;
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::net::ToSocketAddrs;

    use tokio_postgres::config::SslMode;

    use super::super::conformance::Schema;
    use super::super::parse_url;
    use crate::{NewHandoff, Store};

    fn field(url: &str) -> String {
        match parse_url(url) {
            Ok(_) => panic!("{url} was accepted"),
            Err(e) => e.problems()[0].field.clone(),
        }
    }

    #[test]
    fn tls_parameters_name_the_part_that_is_wrong() {
        assert_eq!(
            field("postgres://u@db.internal/d?sslmode=verify"),
            "url.sslmode"
        );
        assert_eq!(
            field("postgres://u@db.internal/d?sslcert=client.pem"),
            "url.sslcert"
        );
        assert_eq!(
            field("postgres://u@db.internal/d?sslkey=client.key"),
            "url.sslkey"
        );
        assert_eq!(
            field("postgres://u@db.internal/d?sslmode=verify-ca&sslrootcert=/no/such/root.pem"),
            "url.sslrootcert"
        );
        assert_eq!(
            field("postgres://u@db.internal/d?sslmode=verify-ca&sslrootcert=%ZZ"),
            "url.sslrootcert"
        );
        // A file that is not PEM holds no certificate.
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let url = format!(
            "postgres://u@db.internal/d?sslmode=require&sslrootcert={}",
            junk.display()
        );
        assert_eq!(field(&url), "url.sslrootcert");
    }

    #[test]
    fn without_sslmode_only_a_remote_server_is_offered_tls() {
        for local in [
            "postgres://u@localhost/d",
            "postgres://u@127.0.0.1:5432/d",
            "postgres://u@[::1]/d",
            "postgres://u@%2Fvar%2Frun%2Fpostgresql/d",
        ] {
            let target = parse_url(local).unwrap();
            assert!(target.tls.is_none(), "{local}");
            assert_eq!(target.config.get_ssl_mode(), SslMode::Disable, "{local}");
        }
        let remote = parse_url("postgres://u@db.internal/d").unwrap();
        assert!(remote.tls.is_some());
        assert_eq!(remote.config.get_ssl_mode(), SslMode::Prefer);
        let asked = parse_url("postgres://u@localhost/d?sslmode=require").unwrap();
        assert!(asked.tls.is_some());
        assert_eq!(asked.config.get_ssl_mode(), SslMode::Require);
        let off = parse_url("postgres://u@db.internal/d?sslmode=disable").unwrap();
        assert!(off.tls.is_none());
    }

    /// The test server's URL, and a plain connection to it.
    fn server() -> Option<(String, postgres::Client)> {
        let Ok(url) = std::env::var("HANDOFF_TEST_POSTGRES") else {
            eprintln!("HANDOFF_TEST_POSTGRES is not set: skipping a PostgreSQL case");
            return None;
        };
        let client = postgres::Client::connect(&url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("HANDOFF_TEST_POSTGRES={url} is unreachable: {e}"));
        Some((url, client))
    }

    /// Whether the sessions named `application` are encrypted (all of them; there must be one).
    fn encrypted(client: &mut postgres::Client, application: &str) -> bool {
        let row = client
            .query_one(
                "SELECT count(*), bool_and(s.ssl) FROM pg_stat_ssl AS s \
                 JOIN pg_stat_activity AS a USING (pid) WHERE a.application_name = $1",
                &[&application],
            )
            .unwrap();
        assert!(row.get::<_, i64>(0) > 0, "no session of {application}");
        row.get(1)
    }

    fn application() -> String {
        format!("hc_tls_{:08x}", fastrand::u32(..))
    }

    /// `sslmode=require` encrypts, the default to a server on this machine does not, and a
    /// server without TLS refuses `require` with a storage error.
    #[test]
    fn require_encrypts_and_the_local_default_does_not() {
        let Some((url, mut client)) = server() else {
            return;
        };
        let tls_on = client
            .query_one("SHOW ssl", &[])
            .unwrap()
            .get::<_, String>(0)
            == "on";
        let schema = Schema::fresh(&url);

        let plain = application();
        let store =
            Store::connect(&schema.url_on(&url, &format!("&application_name={plain}"))).unwrap();
        store.create(NewHandoff::new("t", "plain")).unwrap();
        assert!(!encrypted(&mut client, &plain));

        let secure = application();
        let asked = schema.url_on(&url, &format!("&sslmode=require&application_name={secure}"));
        if !tls_on {
            let err = Store::connect(&asked).unwrap_err();
            assert!(matches!(err, crate::Error::Storage { .. }), "{err}");
            return;
        }
        let store = Store::connect(&asked).unwrap();
        let h = store.create(NewHandoff::new("t", "over TLS")).unwrap();
        assert!(encrypted(&mut client, &secure));
        let claim = store
            .claim_next("b", None, std::time::Duration::from_secs(60))
            .unwrap();
        assert!(claim.is_some());
        assert_eq!(store.get(&h.id).unwrap().id, h.id);
    }

    /// The server's certificate is checked against the roots `sslrootcert` names: it passes
    /// `verify-ca` against itself, fails it against roots that did not sign it, and fails
    /// `verify-full` when it does not name the host the store connected to.
    #[test]
    fn verify_modes_check_the_servers_certificate() {
        let Some((url, mut client)) = server() else {
            return;
        };
        if client
            .query_one("SHOW ssl", &[])
            .unwrap()
            .get::<_, String>(0)
            != "on"
        {
            eprintln!("the test server does not offer TLS: skipping the certificate checks");
            return;
        }
        let cert_file: String = client.query_one("SHOW ssl_cert_file", &[]).unwrap().get(0);
        let schema = Schema::fresh(&url);

        let checked = application();
        let store = Store::connect(&schema.url_on(
            &url,
            &format!("&sslmode=verify-ca&sslrootcert={cert_file}&application_name={checked}"),
        ))
        .unwrap();
        store.create(NewHandoff::new("t", "checked")).unwrap();
        assert!(encrypted(&mut client, &checked));

        // A public root (Let's Encrypt's ISRG Root X2), which never signs a test server's.
        let unrelated = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/unrelated-root.pem"
        );
        let untrusted = Store::connect(
            &schema.url_on(&url, &format!("&sslmode=verify-ca&sslrootcert={unrelated}")),
        );
        let err = untrusted.unwrap_err();
        assert!(
            matches!(err, crate::Error::Storage { .. }) && err.to_string().contains("certificate"),
            "{err}"
        );

        // The same server under a name its certificate cannot hold.
        let config: tokio_postgres::Config = url.parse().unwrap();
        let tokio_postgres::config::Host::Tcp(host) = &config.get_hosts()[0] else {
            panic!("HANDOFF_TEST_POSTGRES must name a TCP host");
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let address = (host.as_str(), port)
            .to_socket_addrs()
            .unwrap()
            .next()
            .unwrap();
        let user = config.get_user().unwrap_or("postgres");
        let db = config.get_dbname().unwrap_or("postgres");
        let renamed = format!(
            "postgres://{user}@not-the-server.invalid:{port}/{db}?hostaddr={}",
            address.ip()
        );
        let err = Store::connect(&schema.url_on(
            &renamed,
            &format!("&sslmode=verify-full&sslrootcert={cert_file}"),
        ))
        .unwrap_err();
        assert!(
            matches!(err, crate::Error::Storage { .. }) && err.to_string().contains("certificate"),
            "{err}"
        );
    }
}
