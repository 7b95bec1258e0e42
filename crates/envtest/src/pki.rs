//! The control plane's certificates: a CA, the serving certificate every
//! component presents (127.0.0.1 and localhost), client certificates (the
//! admin's and any other user's a test asks for) and the service-account
//! signing key pair. ECDSA P-256 keys made with `rcgen`, written as PEM files.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::error::{Context, Result};

/// A certificate and its private key, in memory and as files.
#[derive(Clone, Debug)]
pub struct CertPair {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PEM (PKCS#8).
    pub key_pem: String,
    /// Where the certificate is written.
    pub cert: PathBuf,
    /// Where the private key is written.
    pub key: PathBuf,
}

/// The PKI of one control plane, in its own directory.
pub struct Pki {
    dir: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate and key (`ca.crt`, `ca.key`): sign more
    /// certificates with them, e.g. with openssl for X.509 v1 ones.
    pub ca: CertPair,
    /// The serving certificate of kube-apiserver, kube-controller-manager
    /// and kube-scheduler (SANs IP:127.0.0.1, DNS:localhost).
    pub serving: CertPair,
    /// The admin client certificate: CN=admin, O=system:masters, X.509 v3
    /// with the clientAuth extended key usage.
    pub admin: CertPair,
    /// The service-account token signing key (private, PKCS#8 PEM).
    pub sa_key: PathBuf,
    /// The service-account token verification key (public, PEM).
    pub sa_pub: PathBuf,
    next: AtomicUsize,
}

impl Pki {
    /// Makes a fresh CA and the control plane's certificates in `dir`.
    pub fn create(dir: &Path) -> Result<Pki> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let ca_key = KeyPair::generate().context("generating the CA key")?;
        let mut params = CertificateParams::new(Vec::<String>::new()).context("CA params")?;
        params
            .distinguished_name
            .push(DnType::CommonName, "podplace-envtest-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = params.self_signed(&ca_key).context("self-signing the CA")?;
        let ca = write_pair(dir, "ca", ca_cert.pem(), ca_key.serialize_pem())?;
        let issuer = Issuer::new(params, ca_key);

        let serving = {
            let key = KeyPair::generate().context("generating the serving key")?;
            let mut p =
                CertificateParams::new(vec!["localhost".to_string()]).context("serving params")?;
            p.subject_alt_names
                .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
            p.distinguished_name
                .push(DnType::CommonName, "podplace-envtest-serving");
            p.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ];
            p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            let cert = p
                .signed_by(&key, &issuer)
                .context("signing the serving certificate")?;
            write_pair(dir, "serving", cert.pem(), key.serialize_pem())?
        };

        let sa = KeyPair::generate().context("generating the service-account key")?;
        let sa_key = dir.join("sa.key");
        let sa_pub = dir.join("sa.pub");
        write(&sa_key, &sa.serialize_pem())?;
        write(&sa_pub, &sa.public_key_pem())?;

        let mut pki = Pki {
            dir: dir.to_path_buf(),
            issuer,
            admin: ca.clone(),
            ca,
            serving,
            sa_key,
            sa_pub,
            next: AtomicUsize::new(0),
        };
        pki.admin = pki.client_cert("admin", &["system:masters"])?;
        Ok(pki)
    }

    /// The directory holding every file of this PKI.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Signs a new X.509 v3 client certificate (clientAuth) for user `user`
    /// in `groups` (the API server reads CN as the user, O as groups), with
    /// a fresh key, written to files in [`Pki::dir`].
    pub fn client_cert(&self, user: &str, groups: &[&str]) -> Result<CertPair> {
        let key = KeyPair::generate().context("generating a client key")?;
        let mut p = CertificateParams::new(Vec::<String>::new()).context("client params")?;
        p.distinguished_name.push(DnType::CommonName, user);
        for g in groups {
            p.distinguished_name.push(DnType::OrganizationName, *g);
        }
        p.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = p
            .signed_by(&key, &self.issuer)
            .with_context(|| format!("signing the client certificate of {user}"))?;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let stem: String = user
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        write_pair(
            &self.dir,
            &format!("client-{n}-{stem}"),
            cert.pem(),
            key.serialize_pem(),
        )
    }
}

fn write_pair(dir: &Path, stem: &str, cert_pem: String, key_pem: String) -> Result<CertPair> {
    let cert = dir.join(format!("{stem}.crt"));
    let key = dir.join(format!("{stem}.key"));
    write(&cert, &cert_pem)?;
    write(&key, &key_pem)?;
    Ok(CertPair {
        cert_pem,
        key_pem,
        cert,
        key,
    })
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
