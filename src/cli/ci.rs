//! CI detection: `--ci`, else `CI` set to anything but empty, `0`, `false` or `no`
//! (case-insensitive, trimmed), else `TF_BUILD` set; `--no-ci` overrides everything.

use std::ffi::OsString;

use super::args::CiArgs;

/// Whether this run is under CI (and so must write no baseline or pending file).
pub(super) fn is_ci(flags: &CiArgs) -> bool {
    if flags.no_ci {
        return false;
    }
    flags.ci || env_says_ci(std::env::var_os("CI"), std::env::var_os("TF_BUILD"))
}

/// Whether the environment says this is CI (`CI`, `TF_BUILD`), whatever the flags.
pub(super) fn env_ci() -> bool {
    env_says_ci(std::env::var_os("CI"), std::env::var_os("TF_BUILD"))
}

fn env_says_ci(ci: Option<OsString>, tf_build: Option<OsString>) -> bool {
    let ci = ci.is_some_and(|v| {
        let v = v.to_string_lossy().trim().to_ascii_lowercase();
        !matches!(v.as_str(), "" | "0" | "false" | "no")
    });
    ci || tf_build.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_values() {
        for (ci, tf, want) in [
            (Some("true"), None, true),
            (Some("1"), None, true),
            (Some(" yes "), None, true),
            (Some(""), None, false),
            (Some(" 0 "), None, false),
            (Some("FALSE"), None, false),
            (Some("No"), None, false),
            (None, None, false),
            (None, Some(""), true),
            (Some("false"), Some("True"), true),
        ] {
            assert_eq!(
                env_says_ci(ci.map(OsString::from), tf.map(OsString::from)),
                want,
                "CI={ci:?} TF_BUILD={tf:?}"
            );
        }
    }
}
