use camino::Utf8Path;

use super::dsse;
use super::keys::{SigningKey, TrustedKeys, generate};
use super::{Claims, SignatureCheck, SignatureProblem};

fn pair() -> (SigningKey, TrustedKeys) {
    let new = generate().unwrap();
    let key = SigningKey::from_text(&new.secret, "test").unwrap();
    assert_eq!(key.key_id(), new.key_id);
    let mut trusted = TrustedKeys::default();
    trusted
        .add_text(&new.public, Utf8Path::new("test.pub"))
        .unwrap();
    (key, trusted)
}

#[test]
fn a_new_key_pair_is_in_minisign_formats_and_never_debug_prints_its_secret() {
    let new = generate().unwrap();
    assert!(
        new.secret.starts_with("untrusted comment: "),
        "{}",
        new.key_id
    );
    assert!(
        new.public
            .starts_with("untrusted comment: minisign public key: ")
    );
    assert!(new.public.contains(&new.key_id));
    assert_eq!(new.key_id.len(), 16);
    let key = SigningKey::from_text(&new.secret, "test").unwrap();
    let secret_line = new.secret.lines().nth(1).unwrap();
    assert!(!format!("{key:?}").contains(secret_line));
    assert!(!format!("{new:?}").contains(secret_line));
    assert_eq!(
        format!("{key:?}"),
        format!("SigningKey {{ key_id: {} }}", new.key_id)
    );
}

#[test]
fn signatures_verify_and_one_changed_byte_of_data_or_comment_fails() {
    let (key, trusted) = pair();
    let data = b"some trace bytes".to_vec();
    let sig = key.sign_minisig(&data, "a comment").unwrap();
    let ok = trusted.verify_minisig(&sig, &data).unwrap();
    assert_eq!(ok.key_id, key.key_id());
    assert_eq!(ok.comment, "a comment");
    let mut changed = data.clone();
    changed[0] ^= 1;
    assert!(trusted.verify_minisig(&sig, &changed).is_err());
    let tampered = sig.replace("trusted comment: a comment", "trusted comment: b comment");
    assert_ne!(tampered, sig);
    assert!(trusted.verify_minisig(&tampered, &data).is_err());
}

#[test]
fn a_signature_by_another_key_names_that_key() {
    let (key, _) = pair();
    let (_, others) = pair();
    let sig = key.sign_minisig(b"x", "c").unwrap();
    match others.verify_minisig(&sig, b"x") {
        Err(super::keys::MinisigError::UntrustedKey { key_id }) => {
            assert_eq!(key_id, key.key_id())
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn several_trusted_keys_verify_each_of_theirs() {
    let (a, mut trusted) = pair();
    let (b, b_trusted) = pair();
    trusted.push(b.trusted());
    assert!(trusted.ids().contains(a.key_id()) && trusted.ids().contains(b.key_id()));
    for key in [&a, &b] {
        let sig = key.sign_minisig(b"x", "c").unwrap();
        assert_eq!(
            trusted.verify_minisig(&sig, b"x").unwrap().key_id,
            key.key_id()
        );
    }
    assert!(b_trusted.get(a.key_id()).is_none());
}

#[test]
fn trusted_keys_name_the_file_and_line_of_a_bad_key() {
    let mut trusted = TrustedKeys::default();
    let err = trusted
        .add_text("# ours\n\nnot-a-key\n", Utf8Path::new("keys.pub"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`keys.pub`, line 3: not a minisign public key (a line of 56 Base64 characters)"
    );
}

#[test]
fn a_secret_key_that_is_not_one_is_refused_without_showing_it() {
    let err = SigningKey::from_text("hunter2-secret", "`TRACEREPLAY_SIGNING_KEY`").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("`TRACEREPLAY_SIGNING_KEY` is not an unencrypted")
    );
    assert!(!err.to_string().contains("hunter2"));
    let err = SigningKey::from_text("untrusted comment: x\nhunter2AAAA\n", "k").unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[test]
fn claims_round_trip_and_say_where_they_differ() {
    let claims = Claims::new("b3:aa", "s.one", "c\nx", Some("3"), "3.trace.ndjson.zst");
    let comment = claims.comment();
    assert!(!comment.contains('\n'));
    let back = Claims::of_comment(&comment).unwrap();
    assert_eq!(back, claims);
    assert_eq!(back.mismatch("b3:aa", "s.one", "c\nx", Some("3")), None);
    assert_eq!(
        back.mismatch("b3:bb", "s.one", "c\nx", None).unwrap(),
        "its trusted comment names seal `b3:aa` (the trace has `b3:bb`), trial `3` (the trace has none)"
    );
    assert_eq!(Claims::of_comment("timestamp:1\tfile:x\thashed"), None);
}

#[test]
fn trusted_keys_check_a_trace_files_detached_signature() {
    let (key, trusted) = pair();
    let dir = tempfile::tempdir().unwrap();
    let path = camino::Utf8PathBuf::from_path_buf(dir.path().join("a.trace.ndjson.zst")).unwrap();
    std::fs::write(&path, b"bytes").unwrap();
    assert!(matches!(
        trusted.check(&path, b"bytes"),
        Err(SignatureProblem::Unsigned { .. })
    ));
    std::fs::write(super::signature_path(&path), "junk").unwrap();
    assert!(matches!(
        trusted.check(&path, b"bytes"),
        Err(SignatureProblem::Malformed { .. })
    ));
    let sig = key.sign_minisig(b"bytes", "c").unwrap();
    std::fs::write(super::signature_path(&path), &sig).unwrap();
    assert_eq!(trusted.check(&path, b"bytes").unwrap().key_id, key.key_id());
    match trusted.check(&path, b"bytez") {
        Err(SignatureProblem::Bad { key_id, .. }) => assert_eq!(key_id, key.key_id()),
        other => panic!("{other:?}"),
    }
    // A valid signature reached through a symlink (it could lead out of the checked paths) is
    // not read.
    #[cfg(unix)]
    {
        let elsewhere = dir.path().join("elsewhere.minisig");
        std::fs::rename(super::signature_path(&path), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, super::signature_path(&path)).unwrap();
        match trusted.check(&path, b"bytes") {
            Err(SignatureProblem::Malformed { detail, .. }) => {
                assert!(detail.contains("symlink"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn pae_is_dsse_v1s_encoding() {
    // The example of the DSSE protocol document.
    assert_eq!(
        dsse::pae("http://example.com/HelloWorld", b"hello world"),
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    );
}

#[test]
fn envelopes_open_with_a_trusted_key_and_fail_when_changed() {
    let (key, trusted) = pair();
    let envelope = dsse::sign(&key, "application/x-test", b"{\"a\":1}");
    let text = serde_json::to_string(&envelope).unwrap();
    let opened = dsse::open(&text, "application/x-test", &trusted).unwrap();
    assert_eq!(opened.payload, b"{\"a\":1}");
    assert_eq!(opened.key_id, key.key_id());
    // Another payload under the same signature.
    let mut changed = envelope.clone();
    changed.payload = "eyJhIjoyfQ==".to_owned();
    let text = serde_json::to_string(&changed).unwrap();
    assert!(matches!(
        dsse::open(&text, "application/x-test", &trusted),
        Err(dsse::DsseError::Bad { .. })
    ));
    // Another payload type.
    let text = serde_json::to_string(&envelope).unwrap();
    assert!(matches!(
        dsse::open(&text, "application/other", &trusted),
        Err(dsse::DsseError::PayloadType { .. })
    ));
    let (_, others) = pair();
    let err = dsse::open(&text, "application/x-test", &others).unwrap_err();
    assert!(err.to_string().contains(key.key_id()), "{err}");
}
