//! DSSE envelopes (the Dead Simple Signing Envelope that in-toto attestations travel in):
//! an Ed25519 signature over the pre-authentication encoding of the payload and its type, by
//! a minisign key pair, its `keyid` the minisign key id.

use ct_codecs::{Base64, Decoder, Encoder};
use serde::{Deserialize, Serialize};

use super::keys::{SigningKey, TrustedKeys};

/// The payload type of an in-toto Statement.
pub(crate) const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// A DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Envelope {
    /// The payload, in standard Base64.
    pub payload: String,
    /// What the payload is.
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// The signatures over it.
    pub signatures: Vec<EnvelopeSignature>,
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnvelopeSignature {
    /// The key id of the key that made it.
    #[serde(default)]
    pub keyid: String,
    /// The Ed25519 signature, in standard Base64.
    pub sig: String,
}

/// DSSE's pre-authentication encoding: `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`.
pub(crate) fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Signs `payload` into an envelope.
pub(crate) fn sign(key: &SigningKey, payload_type: &str, payload: &[u8]) -> Envelope {
    let sig = key.sign_ed25519(&pae(payload_type, payload));
    Envelope {
        payload: Base64::encode_to_string(payload).expect("Base64 of any bytes"),
        payload_type: payload_type.to_owned(),
        signatures: vec![EnvelopeSignature {
            keyid: key.key_id().to_owned(),
            sig: Base64::encode_to_string(sig).expect("Base64 of any bytes"),
        }],
    }
}

/// An envelope that verified: its payload and the trusted key that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opened {
    /// The payload's bytes.
    pub payload: Vec<u8>,
    /// The trusted key that signed it.
    pub key_id: String,
}

/// Why an envelope does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DsseError {
    /// Not an envelope.
    #[error("is not a DSSE envelope: {0}")]
    Malformed(String),
    /// Of another payload type.
    #[error("holds a payload of type `{found}`, not `{expected}`")]
    PayloadType {
        /// The type wanted.
        expected: String,
        /// The type found.
        found: String,
    },
    /// No signature by a trusted key.
    #[error(
        "is signed only by {found}, not by a trusted key ({trusted}); add its public key to the trusted keys if it is one of yours"
    )]
    Untrusted {
        /// The key ids of its signatures.
        found: String,
        /// The trusted key ids.
        trusted: String,
    },
    /// A trusted key's signature that does not verify.
    #[error("has a bad signature by key {key_id}: the envelope changed since it was signed")]
    Bad {
        /// The key's id.
        key_id: String,
    },
}

/// Opens an envelope's text: its payload, when a trusted key's signature over it holds (and
/// none of the trusted keys' signatures fails).
pub(crate) fn open(
    text: &str,
    payload_type: &str,
    trusted: &TrustedKeys,
) -> Result<Opened, DsseError> {
    let envelope: Envelope =
        serde_json::from_str(text).map_err(|e| DsseError::Malformed(e.to_string()))?;
    if envelope.payload_type != payload_type {
        return Err(DsseError::PayloadType {
            expected: payload_type.to_owned(),
            found: envelope.payload_type,
        });
    }
    let payload = Base64::decode_to_vec(envelope.payload.as_bytes(), None)
        .map_err(|_| DsseError::Malformed("its payload is not Base64".to_owned()))?;
    let message = pae(&envelope.payload_type, &payload);
    let mut verified = None;
    for s in &envelope.signatures {
        let Some(key) = trusted.get(&s.keyid) else {
            continue;
        };
        let sig = Base64::decode_to_vec(s.sig.as_bytes(), None).unwrap_or_default();
        if !key.verifies_ed25519(&message, &sig) {
            return Err(DsseError::Bad {
                key_id: s.keyid.clone(),
            });
        }
        verified.get_or_insert_with(|| s.keyid.clone());
    }
    match verified {
        Some(key_id) => Ok(Opened { payload, key_id }),
        None => {
            let found: Vec<String> = (envelope.signatures.iter())
                .map(|s| format!("key {}", s.keyid))
                .collect();
            let found = if found.is_empty() {
                "no key (it has no signature)".to_owned()
            } else {
                found.join(", ")
            };
            Err(DsseError::Untrusted {
                found,
                trusted: trusted.ids(),
            })
        }
    }
}
