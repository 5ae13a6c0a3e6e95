//! Webhook endpoints on loopback with certificates made by `openssl` (the command; `.ci/run`
//! installs it), for the tests of the endpoint check before a registration: a self-signed
//! certificate, one of a CA of the test's own (a private CA to the public roots), expired,
//! not yet valid, or for another name; and the CA itself, for a registration that trusts it
//! (`Registration::trusting_for_tests`). The files live in a temporary folder, removed with
//! the [`Certificates`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

/// The validity of a certificate the test CA signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// From a day ago for a year.
    Current,
    /// A month in 2020: expired.
    Expired,
    /// A month in 2099: not valid yet.
    NotYet,
}

/// A test CA and the certificates it signs, made by `openssl` in a temporary folder.
#[derive(Debug)]
pub struct Certificates {
    dir: tempfile::TempDir,
    made: usize,
}

/// A certificate and its key, as PEM files.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate (the end entity's alone; the CA is the test's root).
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

impl Certificates {
    /// A new CA ("pubapi test CA").
    pub fn new() -> Certificates {
        let dir = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(dir.path().join("index.txt"), "").expect("index.txt");
        std::fs::write(dir.path().join("serial"), "01\n").expect("serial");
        std::fs::write(dir.path().join("ca.cnf"), CA_CONFIG).expect("ca.cnf");
        let certificates = Certificates { dir, made: 0 };
        certificates.req_x509("/CN=pubapi test CA", &[], "ca");
        certificates
    }

    /// The CA's certificate, PEM.
    pub fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ca.pem")).expect("ca.pem")
    }

    /// A self-signed certificate for 127.0.0.1, as `openssl req -x509` makes one.
    pub fn self_signed(&mut self) -> Issued {
        let name = self.next_name();
        let issued = self.files(&name);
        let san = "subjectAltName=IP:127.0.0.1,DNS:localhost";
        self.req_x509("/CN=127.0.0.1", &["-addext", san], &name);
        issued
    }

    /// A certificate the CA signs for `names` (`IP:127.0.0.1`, `DNS:hooks.example.com`),
    /// valid as `validity` says.
    pub fn signed(&mut self, names: &str, validity: Validity) -> Issued {
        let name = self.next_name();
        let issued = self.files(&name);
        self.openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=pubapi test endpoint",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
        ]);
        let ext = format!("{name}.ext");
        std::fs::write(
            self.dir.path().join(&ext),
            format!(
                "subjectAltName={names}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            ),
        )
        .expect("the extensions");
        let (start, end) = match validity {
            Validity::Current => (None, None),
            Validity::Expired => (Some("20200101000000Z"), Some("20200201000000Z")),
            Validity::NotYet => (Some("20990101000000Z"), Some("20990201000000Z")),
        };
        let mut args = vec![
            "ca", "-batch", "-notext", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile",
            "ca.key", "-extfile", &ext,
        ];
        let (csr, pem) = (format!("{name}.csr"), format!("{name}.pem"));
        args.extend(["-in", &csr, "-out", &pem]);
        match (start, end) {
            (Some(start), Some(end)) => args.extend(["-startdate", start, "-enddate", end]),
            _ => args.extend(["-days", "30"]),
        }
        self.openssl(&args);
        issued
    }

    /// A new key and a certificate it signs itself (`openssl req -x509`, its defaults: a CA
    /// certificate), for `subject`, as `{name}.key` and `{name}.pem`.
    fn req_x509(&self, subject: &str, extra: &[&str], name: &str) {
        let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
        let mut args = vec![
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "30",
            "-subj",
            subject,
            "-keyout",
            &key,
            "-out",
            &pem,
        ];
        args.extend_from_slice(extra);
        self.openssl(&args);
    }

    fn next_name(&mut self) -> String {
        self.made += 1;
        format!("endpoint-{}", self.made)
    }

    fn files(&self, name: &str) -> Issued {
        Issued {
            cert: self.dir.path().join(format!("{name}.pem")),
            key: self.dir.path().join(format!("{name}.key")),
        }
    }

    fn openssl(&self, args: &[&str]) {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("openssl is installed");
        assert!(
            output.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Default for Certificates {
    fn default() -> Self {
        Certificates::new()
    }
}

/// What `openssl ca` needs: a database in the folder, any subject, the extensions of the
/// request's `-extfile` only.
const CA_CONFIG: &str = "\
[ ca ]
default_ca = test
[ test ]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
unique_subject = no
[ any ]
commonName = supplied
";

/// A server on a loopback port, as a webhook endpoint: TLS with a certificate it was given
/// (counting the handshakes that complete), or plain HTTP; it stops when dropped.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    handshakes: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Endpoint {
    /// Serves TLS with `issued` on 127.0.0.1 (any free port).
    pub async fn tls(issued: &Issued) -> Endpoint {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&issued.cert)
            .expect("the certificate")
            .collect::<Result<_, _>>()
            .expect("the certificate");
        let key = PrivateKeyDer::from_pem_file(&issued.key).expect("the key");
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("a certificate and its key");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Endpoint::serve(move |tcp, handshakes| {
            let acceptor = acceptor.clone();
            async move {
                if acceptor.accept(tcp).await.is_ok() {
                    handshakes.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
        .await
    }

    /// Serves plain HTTP, answering anything 400: an `https://` URL to it reaches no TLS.
    pub async fn plain_http() -> Endpoint {
        Endpoint::serve(|mut tcp, _| async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut hello = [0u8; 512];
            let _ = tcp.read(&mut hello).await;
            let _ = tcp
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
        })
        .await
    }

    /// Accepts connections on a new loopback port, each handled by `each` in a task of its
    /// own.
    async fn serve<F, Fut>(each: F) -> Endpoint
    where
        F: Fn(tokio::net::TcpStream, Arc<AtomicUsize>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let handshakes = Arc::new(AtomicUsize::new(0));
        let counted = handshakes.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(each(tcp, counted.clone()));
            }
        });
        Endpoint {
            addr,
            handshakes,
            task,
        }
    }

    /// The endpoint's URL, `https://127.0.0.1:PORT/hooks`.
    pub fn url(&self) -> String {
        self.url_as("127.0.0.1")
    }

    /// The same endpoint named `host` (`https://localhost:PORT/hooks`).
    pub fn url_as(&self, host: &str) -> String {
        format!("https://{host}:{}/hooks", self.addr.port())
    }

    /// The TLS handshakes that completed.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A loopback port nothing listens on (bound, then let go).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}
