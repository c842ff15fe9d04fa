//! Long text for a person on a terminal goes through a pager (`$PAGER`, else `less -FRX`: it
//! quits at once when the text fits the screen, keeps colours, and leaves the text on screen), as
//! `git` does; off a terminal, or when no pager starts, it is written as it is.

use std::io::{IsTerminal, Write};

/// Shows `text`: through the pager when standard output is a terminal, else to `out`.
pub(super) fn show(text: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
    page(text, "-FRX", out)
}

/// [`show`] for a screen the reader comes back from (`baseline review`'s details): the pager
/// stays until it is quit (`q`), even when the text fits.
pub(super) fn show_until_quit(text: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
    page(text, "-RX", out)
}

fn page(text: &[u8], less_flags: &str, out: &mut dyn Write) -> std::io::Result<()> {
    if !std::io::stdout().is_terminal() {
        return out.write_all(text);
    }
    out.flush()?;
    let pager = std::env::var("PAGER").ok().filter(|p| !p.trim().is_empty());
    let spawned = match &pager {
        Some(p) => std::process::Command::new("sh")
            .args(["-c", p])
            .stdin(std::process::Stdio::piped())
            .spawn(),
        None => std::process::Command::new("less")
            .arg(less_flags)
            .stdin(std::process::Stdio::piped())
            .spawn(),
    };
    let Ok(mut child) = spawned else {
        return out.write_all(text);
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A pager quit early (`q`) closes the pipe: that is the reader's choice, not an error.
        let _ = stdin.write_all(text);
    }
    let _ = child.wait();
    Ok(())
}
