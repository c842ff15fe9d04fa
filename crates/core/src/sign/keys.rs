//! Signing keys and trusted keys, in minisign's formats (through the `minisign` crate): a
//! `tracereplay.key` is an unencrypted minisign secret key, a `tracereplay.pub` a minisign
//! public key, and a `.minisig` a minisign signature, so `minisign -V` checks what tracereplay
//! signs and tracereplay checks what `minisign -S` signs.
//!
//! The same Ed25519 key pair signs DSSE envelopes (`super::dsse`) with `ed25519-dalek`.

use std::io::Cursor;

use camino::{Utf8Path, Utf8PathBuf};
use ct_codecs::Decoder;
use ed25519_dalek::Signer;
use minisign::{PublicKey, SecretKey, SignatureBox};

use super::{Claims, SignatureCheck, SignatureProblem, Signed, TraceSigner};

/// Why a key could not be made, read or used. Never holds key material.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(String);

impl KeyError {
    fn new(message: impl Into<String>) -> KeyError {
        KeyError(message.into())
    }
}

/// A key id as minisign shows it: the 8-byte key number, little-endian, in 16 hex digits.
pub fn key_id_of(keynum: &[u8]) -> String {
    let mut le = [0u8; 8];
    le.copy_from_slice(&keynum[..8.min(keynum.len())]);
    format!("{:016X}", u64::from_le_bytes(le))
}

/// A new key pair, as the files `key new --sign` writes.
pub struct NewKeyPair {
    /// The secret key file's text (an unencrypted minisign secret key).
    pub secret: String,
    /// The public key file's text.
    pub public: String,
    /// The key id.
    pub key_id: String,
}

impl std::fmt::Debug for NewKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NewKeyPair {{ key_id: {} }}", self.key_id)
    }
}

/// Makes a new Ed25519 key pair from the system's random source.
pub fn generate() -> Result<NewKeyPair, KeyError> {
    let pair = minisign::KeyPair::generate_unencrypted_keypair()
        .map_err(|e| KeyError::new(format!("cannot make a key pair: {e}")))?;
    let key_id = key_id_of(pair.pk.keynum());
    let secret = (pair.sk)
        .to_box(Some(&format!("tracereplay secret key {key_id}")))
        .map_err(|e| KeyError::new(format!("cannot encode the secret key: {e}")))?
        .into_string();
    let public = (pair.pk.to_box())
        .map_err(|e| KeyError::new(format!("cannot encode the public key: {e}")))?
        .into_string();
    Ok(NewKeyPair {
        secret,
        public,
        key_id,
    })
}

/// The offsets of the Ed25519 key pair (seed, then public key) in minisign's secret key bytes:
/// algorithm, KDF and checksum ids (2 bytes each), KDF salt (32), limits (8 + 8), key number (8).
const SK_KEYPAIR_AT: usize = 2 + 2 + 2 + 32 + 8 + 8 + 8;
/// The length of minisign's secret key bytes: the above, the key pair (64) and a checksum (32).
const SK_BYTES: usize = SK_KEYPAIR_AT + 64 + 32;

/// A secret key to sign with. Its `Debug` shows only the key id.
pub struct SigningKey {
    minisign: SecretKey,
    public: PublicKey,
    dalek: ed25519_dalek::SigningKey,
    key_id: String,
    /// The run the traces it signs belong to (`--run-id`).
    run: Option<String>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey {{ key_id: {} }}", self.key_id)
    }
}

impl SigningKey {
    /// Reads a secret key file's text (`tracereplay.key`, or one `minisign -G -W` wrote).
    /// `source` names where it came from in errors, which never show the key.
    pub fn from_text(text: &str, source: &str) -> Result<SigningKey, KeyError> {
        let not_a_key = |why: &str| {
            KeyError::new(format!(
                "{source} is not an unencrypted minisign secret key ({why}); make one with `tracereplay key new --sign -o DIR`"
            ))
        };
        if !text.trim_start().starts_with("untrusted comment:") {
            return Err(not_a_key("it does not start with `untrusted comment:`"));
        }
        // Decoded without the crate's checksum test: `minisign -G -W` (0.11) leaves the
        // checksum of an unencrypted key zero. The key is checked below instead: its public
        // half must be the one its secret half makes.
        let line = text.lines().nth(1).unwrap_or_default().trim();
        let raw = ct_codecs::Base64::decode_to_vec(line, None)
            .map_err(|_| not_a_key("its key line is not Base64"))?;
        if raw.get(2..4) != Some(&[0, 0][..]) {
            return Err(not_a_key(
                "it is encrypted with a password; a CI secret must be unencrypted (`minisign -G -W`)",
            ));
        }
        let minisign = SecretKey::from_bytes(&raw)
            .ok()
            .filter(|k| !k.is_encrypted() && raw.len() == SK_BYTES)
            .ok_or_else(|| not_a_key("its key line does not decode to a secret key"))?;
        let public = PublicKey::from_secret_key(&minisign)
            .map_err(|_| not_a_key("it holds no public key"))?;
        let bytes = minisign.to_bytes();
        let pair = bytes
            .get(SK_KEYPAIR_AT..SK_KEYPAIR_AT + 64)
            .ok_or_else(|| not_a_key("it is too short"))?;
        let seed: [u8; 32] = pair[..32].try_into().expect("32 bytes");
        let dalek = ed25519_dalek::SigningKey::from_bytes(&seed);
        if dalek.verifying_key().as_bytes()[..] != pair[32..] {
            return Err(not_a_key("its public half does not match its secret half"));
        }
        let key_id = key_id_of(minisign.keynum());
        Ok(SigningKey {
            minisign,
            public,
            dalek,
            key_id,
            run: None,
        })
    }

    /// Reads the secret key file at `path` (a regular file of at most 64 KiB: a FIFO or a
    /// device is refused before anything is read).
    pub fn from_file(path: &Utf8Path) -> Result<SigningKey, KeyError> {
        let text = read_small(path, "signing key")?;
        SigningKey::from_text(&text, &format!("`{path}`"))
    }

    /// The same key, binding what it signs to the run `run` (its trusted comments name it).
    pub fn for_run(mut self, run: Option<String>) -> SigningKey {
        self.run = run;
        self
    }

    /// The key id.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The public key, as a trusted key.
    pub fn trusted(&self) -> TrustedKey {
        TrustedKey {
            key_id: self.key_id.clone(),
            dalek: self.dalek.verifying_key(),
        }
    }

    /// A minisign signature (prehashed, with a trusted comment) of `data`.
    pub fn sign_minisig(&self, data: &[u8], trusted_comment: &str) -> Result<String, KeyError> {
        let untrusted = format!("signature from tracereplay secret key {}", self.key_id);
        minisign::sign(
            Some(&self.public),
            &self.minisign,
            Cursor::new(data),
            Some(trusted_comment),
            Some(&untrusted),
        )
        .map(SignatureBox::into_string)
        .map_err(|e| KeyError::new(format!("cannot sign: {e}")))
    }

    /// A plain Ed25519 signature of `message` (for DSSE).
    pub fn sign_ed25519(&self, message: &[u8]) -> [u8; 64] {
        self.dalek.sign(message).to_bytes()
    }
}

impl TraceSigner for SigningKey {
    fn sign(&self, stored: &[u8], claims: &Claims) -> Result<String, String> {
        let mut claims = claims.clone();
        if self.run.is_some() {
            claims.run = self.run.clone();
        }
        self.sign_minisig(stored, &claims.comment())
            .map_err(|e| e.to_string())
    }

    fn key_id(&self) -> String {
        self.key_id.clone()
    }
}

/// One trusted public key.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// Its key id.
    pub key_id: String,
    dalek: ed25519_dalek::VerifyingKey,
}

impl TrustedKey {
    /// Reads a public key's Base64 line (the second line of a `.pub` file).
    pub fn from_base64(line: &str) -> Result<TrustedKey, String> {
        let minisign = PublicKey::from_base64(line.trim())
            .map_err(|_| "not a minisign public key (a line of 56 Base64 characters)".to_owned())?;
        let raw: [u8; 32] = minisign.to_bytes()[10..42]
            .try_into()
            .map_err(|_| "a public key of the wrong length".to_owned())?;
        let dalek = ed25519_dalek::VerifyingKey::from_bytes(&raw)
            .map_err(|_| "not a valid Ed25519 public key".to_owned())?;
        Ok(TrustedKey {
            key_id: key_id_of(minisign.keynum()),
            dalek,
        })
    }

    /// Whether `sig` is this key's Ed25519 signature of `message` (checked strictly: no
    /// weak keys, no malleable signatures, as libsodium, which minisign uses, checks them).
    pub fn verifies_ed25519(&self, message: &[u8], sig: &[u8]) -> bool {
        let Ok(sig) = ed25519_dalek::Signature::from_slice(sig) else {
            return false;
        };
        self.dalek.verify_strict(message, &sig).is_ok()
    }
}

/// The public keys signatures are checked against (`--trusted-keys`): several at once, so a
/// key can be rotated without a day on which either signature fails.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys {
    keys: Vec<TrustedKey>,
    /// The run every signature must name (`check --require-signed --run-id`).
    run: Option<String>,
}

/// The text of a small file (a key or a signature): a regular file of at most 64 KiB.
fn read_small(path: &Utf8Path, what: &str) -> Result<String, KeyError> {
    let bytes = crate::fsutil::read_regular(path, super::MAX_SIGNATURE_BYTES, what)
        .map_err(|e| KeyError::new(format!("cannot read the {what} `{path}`: {e}")))?;
    String::from_utf8(bytes).map_err(|_| KeyError::new(format!("the {what} `{path}` is not UTF-8")))
}

impl TrustedKeys {
    /// Reads trusted keys from a file (one public key per line; `untrusted comment:` lines, `#`
    /// comments and blank lines are skipped, so a `.pub` file is one) or a directory (its
    /// `*.pub` files). Errors name the file and line.
    pub fn load(path: &Utf8Path) -> Result<TrustedKeys, KeyError> {
        let mut files: Vec<Utf8PathBuf> = Vec::new();
        if path.is_dir() {
            let entries = path.read_dir_utf8().map_err(|e| {
                KeyError::new(format!("cannot list the trusted keys in `{path}`: {e}"))
            })?;
            for entry in entries {
                let entry = entry.map_err(|e| {
                    KeyError::new(format!("cannot list the trusted keys in `{path}`: {e}"))
                })?;
                if entry.file_name().ends_with(".pub") {
                    files.push(entry.into_path());
                }
            }
            files.sort();
            if files.is_empty() {
                return Err(KeyError::new(format!(
                    "`{path}` holds no `*.pub` file, so no key is trusted"
                )));
            }
        } else {
            files.push(path.to_owned());
        }
        let mut keys = TrustedKeys::default();
        for file in &files {
            let text = read_small(file, "trusted keys file")?;
            keys.add_text(&text, file)?;
        }
        if keys.keys.is_empty() {
            return Err(KeyError::new(format!(
                "`{path}` holds no public key, so no key is trusted"
            )));
        }
        Ok(keys)
    }

    /// Adds the keys of a trusted-keys file's text.
    pub fn add_text(&mut self, text: &str, file: &Utf8Path) -> Result<(), KeyError> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with("untrusted comment:") {
                continue;
            }
            let key = TrustedKey::from_base64(line)
                .map_err(|e| KeyError::new(format!("`{file}`, line {}: {e}", i + 1)))?;
            if !self.keys.iter().any(|k| k.key_id == key.key_id) {
                self.keys.push(key);
            }
        }
        Ok(())
    }

    /// Requires every signature to bind its trace to the run `run` (its trusted comment's
    /// `run`); `None` requires nothing of the run.
    pub fn for_run(mut self, run: Option<String>) -> TrustedKeys {
        self.run = run;
        self
    }

    /// Trusts one more key.
    pub fn push(&mut self, key: TrustedKey) {
        self.keys.push(key);
    }

    /// The trusted key with this id.
    pub fn get(&self, key_id: &str) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| k.key_id == key_id)
    }

    /// The trusted keys' ids, comma-separated.
    pub fn ids(&self) -> String {
        self.id_list().join(", ")
    }

    /// The trusted keys' ids, in the order they were read.
    pub fn id_list(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.key_id.clone()).collect()
    }

    /// Checks a minisign signature's text against `data`.
    pub fn verify_minisig(&self, sig_text: &str, data: &[u8]) -> Result<Signed, MinisigError> {
        let sig = SignatureBox::from_string(sig_text)
            .map_err(|e| MinisigError::Malformed(e.to_string()))?;
        let key_id = key_id_of(sig.keynum());
        let Some(key) = self.get(&key_id) else {
            return Err(MinisigError::UntrustedKey { key_id });
        };
        let bad = |detail: &str| MinisigError::Bad {
            key_id: key_id.clone(),
            detail: detail.to_owned(),
        };
        if !sig.is_prehashed() {
            return Err(bad(
                "a legacy (not prehashed) signature, which is not accepted; sign again with a current minisign or `tracereplay sign`",
            ));
        }
        // The crate read the format; the two Ed25519 signatures it holds are checked with
        // ed25519-dalek, as minisign checks them: the first over the BLAKE2b-512 of the data,
        // the second over the first and the trusted comment.
        let (signature, global) = raw_signatures(sig_text)
            .ok_or_else(|| MinisigError::Malformed("its signature lines do not decode".into()))?;
        let prehash = <blake2::Blake2b512 as blake2::Digest>::digest(data);
        if !key.verifies_ed25519(&prehash, &signature) {
            return Err(bad("the signature does not match the file"));
        }
        let comment = sig
            .trusted_comment()
            .map_err(|_| bad("its trusted comment is not UTF-8"))?;
        let mut commented = signature.to_vec();
        commented.extend_from_slice(comment.as_bytes());
        if !key.verifies_ed25519(&commented, &global) {
            return Err(bad("the trusted comment's signature does not match it"));
        }
        Ok(Signed { key_id, comment })
    }
}

/// The Ed25519 signature of the data and the global signature (over it and the trusted
/// comment) of a minisign signature's text, whose format the crate has checked: the second line
/// is the algorithm (2 bytes), key number (8) and signature (64); the fourth the global
/// signature (64).
fn raw_signatures(text: &str) -> Option<([u8; 64], [u8; 64])> {
    let mut lines = text.lines();
    let decode = |line: Option<&str>| ct_codecs::Base64::decode_to_vec(line?.trim(), None).ok();
    let first = decode(lines.nth(1))?;
    let global = decode(lines.nth(1))?;
    Some((first.get(10..74)?.try_into().ok()?, global.try_into().ok()?))
}

/// Why a minisign signature does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MinisigError {
    /// Not a minisign signature.
    Malformed(String),
    /// Made by a key not trusted.
    UntrustedKey {
        /// Its id.
        key_id: String,
    },
    /// Does not verify.
    Bad {
        /// The key's id.
        key_id: String,
        /// What failed.
        detail: String,
    },
}

impl SignatureCheck for TrustedKeys {
    fn check(&self, path: &Utf8Path, stored: &[u8]) -> Result<Signed, SignatureProblem> {
        let sig = super::signature_path(path);
        match sig.symlink_metadata() {
            Err(_) => return Err(SignatureProblem::Unsigned { sig }),
            // A symlink could lead anywhere (out of the checked paths): a signature is read only
            // as the regular file beside its trace.
            Ok(m) if m.file_type().is_symlink() => {
                let detail =
                    "it is a symlink, not a regular file: a signature is read only as the file beside its trace"
                        .to_owned();
                return Err(SignatureProblem::Malformed { sig, detail });
            }
            Ok(_) => {}
        }
        let read = crate::fsutil::read_regular(&sig, super::MAX_SIGNATURE_BYTES, "signature");
        let text = match read.map(String::from_utf8) {
            Ok(Ok(t)) => t,
            Ok(Err(_)) => {
                let detail = "it is not UTF-8".to_owned();
                return Err(SignatureProblem::Malformed { sig, detail });
            }
            Err(e) => {
                let detail = e.to_string();
                return Err(SignatureProblem::Malformed { sig, detail });
            }
        };
        let signed = self.verify_minisig(&text, stored).map_err(|e| match e {
            MinisigError::Malformed(detail) => SignatureProblem::Malformed { sig, detail },
            MinisigError::UntrustedKey { key_id } => SignatureProblem::UntrustedKey {
                key_id,
                trusted: self.ids(),
            },
            MinisigError::Bad { key_id, detail } => SignatureProblem::Bad { key_id, detail },
        })?;
        let claims = Claims::of_comment(&signed.comment);
        if let Some(c) = claims.as_ref().filter(|c| !c.placed_at(path)) {
            return Err(SignatureProblem::OtherPlace {
                key_id: signed.key_id,
                claimed: c.file.clone(),
            });
        }
        if let Some(required) = &self.run {
            let claimed = claims.as_ref().and_then(|c| c.run.as_deref());
            if claimed != Some(required.as_str()) {
                return Err(SignatureProblem::OtherRun {
                    key_id: signed.key_id,
                    claimed: claimed.map_or_else(|| "no run".to_owned(), |r| format!("run `{r}`")),
                    required: required.clone(),
                });
            }
        }
        Ok(signed)
    }
}

/// The signing key from `TRACEREPLAY_SIGNING_KEY` (the key file's content), else from `file`;
/// `None` when neither is set.
pub fn signing_key_from_env_or(file: Option<&Utf8Path>) -> Result<Option<SigningKey>, KeyError> {
    if let Some(path) = file {
        return SigningKey::from_file(path).map(Some);
    }
    let Some(value) = std::env::var_os(super::SIGNING_KEY_ENV).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let env = super::SIGNING_KEY_ENV;
    let text = value
        .into_string()
        .map_err(|_| KeyError::new(format!("`{env}` is not UTF-8, so it holds no key")))?;
    if !text.contains('\n') && Utf8Path::new(text.trim()).is_file() {
        return Err(KeyError::new(format!(
            "`{env}` names a file; it holds the key file's content (in CI, the secret), or give the file with `--signing-key FILE`"
        )));
    }
    SigningKey::from_text(&text, &format!("`{env}`")).map(Some)
}
