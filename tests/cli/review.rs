//! `baseline review`: the pending baselines walked one at a time on a real terminal — a
//! pseudo-terminal the test holds, and a `tmux` session it types into and reads the screen of.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::*;

const BASIC: &str = "traces/agent.tool.basic/default.trace.ndjson.zst";
const TIMEOUT: &str = "traces/agent.tool.timeout/default.trace.ndjson.zst";
const APPROVED_BASIC: &str = "baselines/agent.tool.basic/default.baseline.json";
const APPROVED_TIMEOUT: &str = "baselines/agent.tool.timeout/default.baseline.json";

/// The demo with two pending files: a removal (`agent.tool.basic` lost its trace) first, then
/// a change (`agent.tool.timeout` calls the weather tool for another city).
fn two_pending() -> Env {
    let env = Env::new();
    copy_demo(&env, true);
    edit_trace(&env, TIMEOUT, "\"city\":\"Oslo\"", "\"city\":\"Bergen\"");
    std::fs::remove_file(env.path(BASIC)).unwrap();
    let out = env.run_with(&["check", "traces/"], &[("CI", "false")]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(env.path(&format!("{APPROVED_BASIC}.deleted")).is_file());
    assert!(env.path(&format!("{APPROVED_TIMEOUT}.new")).is_file());
    env
}

fn approved_city(env: &Env) -> &'static str {
    let text = String::from_utf8(env.read(APPROVED_TIMEOUT)).unwrap();
    if text.contains("Bergen") {
        "Bergen"
    } else {
        "Oslo"
    }
}

#[test]
fn review_refuses_off_a_terminal_and_under_ci() {
    let env = two_pending();
    let out = env.run_with(&["baseline", "review"], &[("CI", "false")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("needs a terminal"), "{}", out.stderr);
    assert!(out.stderr.contains("pending --diff"), "{}", out.stderr);
    let out = env.run(&["baseline", "review"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("refuses to run under CI"),
        "{}",
        out.stderr
    );
    // Nothing was touched.
    assert!(env.path(&format!("{APPROVED_TIMEOUT}.new")).is_file());
    assert_eq!(approved_city(&env), "Oslo");
}

/// A child process on a pseudo-terminal, and what it has written to it so far.
pub(crate) struct Pty {
    master: std::fs::File,
    screen: Arc<Mutex<Vec<u8>>>,
    child: std::process::Child,
}

impl Pty {
    pub(crate) fn spawn(env: &Env, args: &[&str]) -> Pty {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        let size = rustix::termios::Winsize {
            ws_row: 50,
            ws_col: 140,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&slave, size).unwrap();
        let child = env
            .command(args, &[("CI", "false"), ("PAGER", "cat")])
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave)
            .spawn()
            .unwrap();
        let master = std::fs::File::from(master);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), screen.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // The read fails (EIO) once the child and every handle on the terminal are gone.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Pty {
            master,
            screen,
            child,
        }
    }

    /// Waits until the output after byte `from` contains `want`; returns where that ends.
    pub(crate) fn wait_for(&self, from: usize, want: &str) -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let seen = self.screen.lock().unwrap().clone();
            let after = &seen[from.min(seen.len())..];
            if let Some(at) = (after.windows(want.len())).position(|w| w == want.as_bytes()) {
                return from + at + want.len();
            }
            let text = String::from_utf8_lossy(after);
            assert!(Instant::now() < deadline, "no {want:?} in {text:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the output after byte `from` contains one of `wants`; returns that output.
    pub(crate) fn wait_for_any(&self, from: usize, wants: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let seen = self.screen.lock().unwrap().clone();
            let text = String::from_utf8_lossy(&seen[from.min(seen.len())..]).into_owned();
            if wants.iter().any(|w| text.contains(w)) {
                return text;
            }
            assert!(Instant::now() < deadline, "none of {wants:?} in {text:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything written to the terminal so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    pub(crate) fn key(&mut self, k: &str) {
        self.master.write_all(k.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn review_on_a_pseudo_terminal_asks_twice_before_a_removal() {
    let env = two_pending();
    let mut pty = Pty::spawn(&env, &["baseline", "review"]);
    pty.wait_for(0, "pending removal 1 of 2");
    let at = pty.wait_for(0, "a accept · r reject · s skip · i details · q quit");
    let screen = String::from_utf8_lossy(&pty.screen.lock().unwrap()).into_owned();
    assert!(screen.contains("- call#1 web_search"), "{screen}");
    // `a` on a removal asks; any key but `y` keeps the approved baseline.
    pty.key("a");
    let at = pty.wait_for(at, "y removes it, any other key keeps it");
    pty.key("n");
    let at = pty.wait_for(at, "pending removal 1 of 2");
    assert!(env.path(APPROVED_BASIC).is_file());
    // `i` shows the details, `s` skips to the change, `a` accepts it.
    pty.key("i");
    let at = pty.wait_for(
        at,
        "pending file   baselines/agent.tool.basic/default.baseline.json.deleted",
    );
    pty.key("s");
    let at = pty.wait_for(at, "pending baseline 2 of 2");
    let at = pty.wait_for(at, "+call#1 weather {\"city\":\"Bergen\"}");
    pty.key("a");
    pty.wait_for(
        at,
        "review: 1 accepted, 0 rejected, 0 removed, 1 skipped; 1 still pending",
    );
    let status = pty.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(approved_city(&env), "Bergen");
    assert!(!env.path(&format!("{APPROVED_TIMEOUT}.new")).exists());
    assert!(env.path(APPROVED_BASIC).is_file());
    assert!(env.path(&format!("{APPROVED_BASIC}.deleted")).is_file());
}

/// The `tmux` the test drives: `TRACEREPLAY_TMUX`, else `tmux` on the PATH.
fn tmux() -> String {
    let bin = std::env::var("TRACEREPLAY_TMUX").unwrap_or_else(|_| "tmux".into());
    let found = std::process::Command::new(&bin).arg("-V").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "this test types into `baseline review` under tmux, and `{bin}` does not run: install it \
         with `scripts/install-test-deps` (Debian's `tmux`), or set TRACEREPLAY_TMUX"
    );
    bin
}

/// A detached tmux session on its own server socket, killed when dropped.
struct Tmux {
    bin: String,
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = std::process::Command::new(&self.bin)
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "review"])
    }

    fn wait_for(&self, want: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if screen.contains(want) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {want:?} on the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new(&self.bin)
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

#[test]
fn review_under_tmux_rejects_a_change_and_removes_on_y() {
    let env = two_pending();
    let tmux = Tmux {
        bin: tmux(),
        socket: format!("tracereplay-review-{}", std::process::id()),
    };
    let bin = env.binary();
    let command = format!(
        "cd {} && env -u CI NO_COLOR=1 XDG_CACHE_HOME={} {} baseline review; echo \"exit=$?\"; sleep 60",
        shell_quote(env.root()),
        shell_quote(&env.path(".user-cache")),
        shell_quote(bin)
    );
    let size = ["-x", "140", "-y", "50"];
    tmux.run(
        &[
            &["new-session", "-d", "-s", "review"][..],
            &size,
            &[&command],
        ]
        .concat(),
    );
    let screen = tmux.wait_for("a accept · r reject · s skip · i details · q quit");
    assert!(screen.contains("pending removal 1 of 2"), "{screen}");
    assert!(
        screen.contains("verdict: pass in the approved baseline"),
        "{screen}"
    );
    tmux.run(&["send-keys", "-t", "review", "a"]);
    tmux.wait_for("y removes it");
    tmux.run(&["send-keys", "-t", "review", "y"]);
    let screen = tmux.wait_for("pending baseline 2 of 2");
    assert!(
        screen.contains("removed  agent.tool.basic/default"),
        "{screen}"
    );
    assert!(screen.contains("drift arguments-changed"), "{screen}");
    assert!(
        screen.contains("verdict: fail in this run (2/3 oracles pass)"),
        "{screen}"
    );
    tmux.run(&["send-keys", "-t", "review", "r"]);
    let screen = tmux.wait_for("exit=0");
    assert!(
        screen.contains("review: 0 accepted, 1 rejected, 1 removed, 0 skipped; 0 still pending"),
        "{screen}"
    );
    assert!(!env.path(APPROVED_BASIC).exists());
    assert!(!env.path(&format!("{APPROVED_BASIC}.deleted")).exists());
    assert!(!env.path(&format!("{APPROVED_TIMEOUT}.new")).exists());
    assert_eq!(approved_city(&env), "Oslo");
}

#[test]
fn review_quits_on_q_and_leaves_the_rest_pending() {
    let env = two_pending();
    let mut pty = Pty::spawn(&env, &["baseline", "review", "agent.tool.timeout"]);
    let at = pty.wait_for(0, "pending baseline 1 of 1");
    pty.key("q");
    pty.wait_for(
        at,
        "review: 0 accepted, 0 rejected, 0 removed, 0 skipped; 1 still pending (quit)",
    );
    assert_eq!(pty.child.wait().unwrap().code(), Some(0));
    assert!(env.path(&format!("{APPROVED_TIMEOUT}.new")).is_file());
    assert!(env.path(&format!("{APPROVED_BASIC}.deleted")).is_file());
}
