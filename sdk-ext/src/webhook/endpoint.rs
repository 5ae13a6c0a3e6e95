//! The check of a webhook endpoint before it is registered: a TLS handshake with it, its
//! certificate verified against the public roots (Mozilla's, as `webpki-root-certs` carries
//! them), as the platform's deliveries will. The reference requires "a TLS certificate signed
//! by a public certificate authority; self-signed certificates are refused" (6.1), and the
//! platform disables a webhook after 4 failed deliveries: an endpoint it cannot deliver to is
//! refused here, naming the reason ([`EndpointProblem`]), with nothing sent to the platform.
//!
//! Which registrations are checked: every `https://` endpoint
//! ([`Registration::new`](super::registration::Registration::new)), by
//! [`Webhooks::create`](crate::api::Webhooks::create), `update` and `renew_if_expiring`,
//! unless the registration says the caller knows better
//! ([`skip_endpoint_check`](super::registration::Registration::skip_endpoint_check): an
//! endpoint not deployed yet, a platform of your own that trusts another CA). A plain-`http`
//! loopback receiver ([`loopback_for_tests`](super::registration::Registration::loopback_for_tests),
//! what the sandbox delivers to) speaks no TLS and is not checked; plain `http` anywhere else
//! is refused before that, by the rules of the registration.
//!
//! The check is a handshake only (no HTTP request is made) and takes at most
//! [`CHECK_TIMEOUT`]. It is made from where the SDK runs, not from the platform: a firewall
//! that lets the platform in and not this machine (or the other way round) is not seen.

pub use crate::error::{EndpointProblem, EndpointRefused};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// How long the check may take: connecting and the handshake.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// How a registration's endpoint is checked before it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EndpointCheck {
    /// Against the public roots, as the platform will.
    PublicRoots,
    /// Not checked: a plain-http loopback receiver, or the caller said so.
    Skipped,
    /// Against these roots (PEM) instead, for tests of the check with a CA of their own.
    #[cfg(feature = "test-util")]
    Roots(String),
}

impl EndpointCheck {
    /// The roots the check trusts; `None` when it does not run.
    fn roots(&self) -> Option<Arc<RootCertStore>> {
        match self {
            EndpointCheck::PublicRoots => Some(public_roots()),
            EndpointCheck::Skipped => None,
            #[cfg(feature = "test-util")]
            EndpointCheck::Roots(pem) => Some(Arc::new(
                roots_of_pem(pem).unwrap_or_else(RootCertStore::empty),
            )),
        }
    }
}

/// The certificates of a PEM text, as roots: `None` when it holds none.
#[cfg(feature = "test-util")]
pub(crate) fn roots_of_pem(pem: &str) -> Option<RootCertStore> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let mut roots = RootCertStore::empty();
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .ok()?;
    let (added, _) = roots.add_parsable_certificates(certificates);
    (added > 0).then_some(roots)
}

/// The public roots, parsed once.
fn public_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(
                webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned(),
            );
            Arc::new(roots)
        })
        .clone()
}

/// Checks the TLS endpoint of `url` as `how` says (see the [module doc](self)).
pub(crate) async fn check(url: &str, how: &EndpointCheck) -> Result<(), EndpointRefused> {
    let Some(roots) = how.roots() else {
        return Ok(());
    };
    let Ok(url) = reqwest::Url::parse(url) else {
        // A registration's URL was parsed when it was made.
        return Ok(());
    };
    let host = url.host_str().unwrap_or_default();
    // An IPv6 literal comes in brackets.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let port = url.port_or_known_default().unwrap_or(443);
    let refused = |problem| EndpointRefused {
        endpoint: format!("{host}:{port}"),
        problem,
    };
    let server_name = ServerName::try_from(bare.to_owned()).map_err(|e| {
        refused(EndpointProblem::Unreachable {
            reason: format!("{host} is not a host name: {e}"),
        })
    })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = Arc::new(Noting::new(roots, &provider, bare).map_err(refused)?);
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| {
            refused(EndpointProblem::Handshake {
                reason: e.to_string(),
            })
        })?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let handshake = async {
        let tcp = tokio::net::TcpStream::connect((bare, port))
            .await
            .map_err(|e| EndpointProblem::Unreachable {
                reason: e.to_string(),
            })?;
        match connector.connect(server_name, tcp).await {
            Ok(mut tls) => {
                // Closed as a client that is done: a close_notify, then the socket.
                let _ = tokio::io::AsyncWriteExt::shutdown(&mut tls).await;
                Ok(())
            }
            Err(e) => Err(match verifier.problem.get() {
                Some(problem) => problem.clone(),
                None => EndpointProblem::Handshake {
                    reason: handshake_reason(&e),
                },
            }),
        }
    };
    match tokio::time::timeout(CHECK_TIMEOUT, handshake).await {
        Ok(result) => result.map_err(refused),
        Err(_) => Err(refused(EndpointProblem::Unreachable {
            reason: format!("no handshake within {}s", CHECK_TIMEOUT.as_secs()),
        })),
    }
}

/// The verifier of the roots, which notes why it refused a certificate: the end-entity
/// certificate is at hand here, and a self-signed one is told apart from one of a private CA
/// (the TLS library calls both an unknown issuer).
#[derive(Debug)]
struct Noting {
    inner: Arc<WebPkiServerVerifier>,
    host: String,
    problem: OnceLock<EndpointProblem>,
}

impl Noting {
    fn new(
        roots: Arc<RootCertStore>,
        provider: &Arc<CryptoProvider>,
        host: &str,
    ) -> Result<Noting, EndpointProblem> {
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| EndpointProblem::Certificate {
                reason: e.to_string(),
            })?;
        Ok(Noting {
            inner,
            host: host.to_owned(),
            problem: OnceLock::new(),
        })
    }

    /// The problem of `end_entity`, refused with `error`.
    fn problem_of(
        &self,
        end_entity: &CertificateDer<'_>,
        error: &rustls::Error,
    ) -> EndpointProblem {
        if is_self_issued(end_entity) {
            return EndpointProblem::SelfSigned;
        }
        let rustls::Error::InvalidCertificate(error) = error else {
            return EndpointProblem::Certificate {
                reason: "it does not verify".to_owned(),
            };
        };
        match error {
            CertificateError::UnknownIssuer => EndpointProblem::UnknownIssuer,
            CertificateError::Expired => EndpointProblem::Expired { not_after: None },
            CertificateError::ExpiredContext { not_after, .. } => EndpointProblem::Expired {
                not_after: timestamp(*not_after),
            },
            CertificateError::NotValidYet => EndpointProblem::NotYetValid { not_before: None },
            CertificateError::NotValidYetContext { not_before, .. } => {
                EndpointProblem::NotYetValid {
                    not_before: timestamp(*not_before),
                }
            }
            CertificateError::NotValidForName => EndpointProblem::WrongName {
                host: self.host.clone(),
                names: Vec::new(),
            },
            CertificateError::NotValidForNameContext { presented, .. } => {
                EndpointProblem::WrongName {
                    host: self.host.clone(),
                    names: presented.iter().filter_map(|name| name_of(name)).collect(),
                }
            }
            other => EndpointProblem::Certificate {
                reason: certificate_reason(other).to_owned(),
            },
        }
    }
}

/// Why a handshake failed before the certificate was checked, in words (the TLS library's
/// own are its `Debug` names).
fn handshake_reason(error: &std::io::Error) -> String {
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidMessage(_)) => {
            "the endpoint does not answer in TLS (plain http on that port?)".to_owned()
        }
        Some(rustls::Error::AlertReceived(alert)) => {
            format!("the endpoint ended it with TLS alert {}", u8::from(*alert))
        }
        Some(rustls::Error::PeerIncompatible(_)) => {
            "the endpoint offers no TLS version or cipher suite the check takes".to_owned()
        }
        _ if error.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the endpoint closed the connection during the handshake".to_owned()
        }
        _ => error.to_string(),
    }
}

/// What is wrong with a certificate, in words (the TLS library's `Display` of most of these is
/// its `Debug`).
fn certificate_reason(error: &CertificateError) -> &'static str {
    match error {
        CertificateError::BadEncoding => "it does not read as a certificate",
        CertificateError::Revoked => "it is revoked",
        CertificateError::BadSignature => "its signature does not verify",
        CertificateError::UnsupportedSignatureAlgorithmContext { .. }
        | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            "it is signed with an algorithm the check does not take"
        }
        CertificateError::UnhandledCriticalExtension => {
            "it has a critical extension the check does not know"
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "it is not for a TLS server (its extended key usage)"
        }
        CertificateError::Other(other) => match other.0.downcast_ref::<webpki::Error>() {
            Some(webpki::Error::CaUsedAsEndEntity) => {
                "it is a CA's certificate, serving as the endpoint's own"
            }
            Some(webpki::Error::EndEntityUsedAsCa) => "a certificate of its chain is not a CA's",
            Some(webpki::Error::CertDistrusted) => "its authority is distrusted",
            Some(webpki::Error::RequiredEkuNotFoundContext(_)) => {
                "it is not for a TLS server (its extended key usage)"
            }
            _ => "it does not verify",
        },
        _ => "it does not verify",
    }
}

impl ServerCertVerifier for Noting {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        if let Err(error) = &verified {
            let _ = self.problem.set(self.problem_of(end_entity, error));
        }
        verified
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Whether a certificate names itself as its issuer (a certificate that does not parse is
/// not).
fn is_self_issued(certificate: &CertificateDer<'_>) -> bool {
    webpki::EndEntityCert::try_from(certificate).is_ok_and(|cert| cert.issuer() == cert.subject())
}

/// A name a certificate is for, as a person writes it: the TLS library gives them in its
/// `Debug` form (`DnsName("hooks.example.com")`, `IpAddress(127.0.0.1)`); a kind of name an
/// endpoint is not reached by (a directory name) is left out.
fn name_of(presented: &str) -> Option<String> {
    let (kind, rest) = presented.split_once('(')?;
    let inner = rest.strip_suffix(')')?;
    let inner = inner
        .strip_prefix('"')
        .and_then(|quoted| quoted.strip_suffix('"'))
        .unwrap_or(inner);
    matches!(kind, "DnsName" | "IpAddress").then(|| inner.to_owned())
}

/// A certificate's time as an instant.
fn timestamp(time: UnixTime) -> Option<jiff::Timestamp> {
    i64::try_from(time.as_secs())
        .ok()
        .and_then(|seconds| jiff::Timestamp::from_second(seconds).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_a_certificate_is_for_read_as_a_person_writes_them() {
        let cases = [
            ("DnsName(\"hooks.example.com\")", Some("hooks.example.com")),
            ("DnsName(\"*.example.com\")", Some("*.example.com")),
            ("IpAddress(127.0.0.1)", Some("127.0.0.1")),
            ("IpAddress(::1)", Some("::1")),
            ("DirectoryName", None),
            ("UniformResourceIdentifier(\"spiffe://x\")", None),
            ("Unsupported(0x80)", None),
            ("", None),
        ];
        for (presented, name) in cases {
            assert_eq!(name_of(presented).as_deref(), name, "{presented}");
        }
    }
}
