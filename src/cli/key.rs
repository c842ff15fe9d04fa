//! `tracereplay key new|id`: make a prompt-hashing key (or, with `--sign`, a signing key pair);
//! show the id of the prompt-hashing key in use.

use std::io::Write;

use tracereplay::trace::{KEY_ENV, key_id};

use super::args::KeyCommand;
use super::exit;

/// Runs a `key` subcommand; `Err` means exit 2.
pub(super) fn run(cmd: &KeyCommand, out: &mut dyn Write) -> anyhow::Result<i32> {
    match cmd {
        KeyCommand::New {
            sign: true,
            out: Some(dir),
        } => super::sign::new_key_pair(dir, out),
        KeyCommand::New { .. } => {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| anyhow::anyhow!("cannot read the system's random source: {e}"))?;
            let key: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(out, "{key}")?;
            diag!(
                "store this as the `{KEY_ENV}` secret of your CI and recorders; its key id is {}",
                key_id(key.as_bytes())
            );
            Ok(exit::OK)
        }
        KeyCommand::Id => match std::env::var_os(KEY_ENV).filter(|v| !v.is_empty()) {
            Some(material) => {
                writeln!(out, "{}", key_id(material.as_encoded_bytes()))?;
                Ok(exit::OK)
            }
            None => {
                diag!("error: `{KEY_ENV}` is not set; make a key with `tracereplay key new`");
                Ok(exit::ERROR)
            }
        },
    }
}
