//! The HTML report's keyboard, typed for real: headless Chromium driven through the DevTools
//! protocol (a websocket on loopback, to the browser this test starts), its keys sent as input
//! events, the page's state read back by evaluating script in it.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use crate::html::{chromium, html_report};
use crate::util::*;

/// A page of a headless Chromium, driven through the DevTools protocol.
struct Browser {
    child: Child,
    page: WebSocket<TcpStream>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends DevTools command `id` on `ws` and returns its result (events in between are skipped).
fn command(ws: &mut WebSocket<TcpStream>, id: u64, method: &str, params: Value) -> Value {
    let msg = json!({"id": id, "method": method, "params": params}).to_string();
    ws.send(Message::text(msg)).unwrap();
    loop {
        let Message::Text(text) = ws.read().unwrap() else {
            continue;
        };
        let v: Value = serde_json::from_str(text.as_str()).unwrap();
        if v["id"] == id {
            assert!(v.get("error").is_none(), "{method}: {v}");
            return v["result"].clone();
        }
    }
}

impl Browser {
    fn start() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium runs");
        // Chromium says where its DevTools endpoint listens on stderr: the browser's own
        // websocket (`ws://127.0.0.1:PORT/devtools/browser/ID`); nothing else is dialled.
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let mut browser_url = None;
        for line in stderr.lines() {
            let line = line.unwrap();
            if let Some(url) = line.split("DevTools listening on ").nth(1) {
                browser_url = Some(url.trim().to_owned());
                break;
            }
        }
        let browser_url = browser_url.expect("chromium printed its DevTools address");
        let (base, _) =
            (browser_url.split_once("/devtools/")).expect("a DevTools websocket address");
        let addr = base.rsplit('/').next().unwrap().to_owned();
        let socket = |url: &str| {
            let stream = TcpStream::connect(&addr).unwrap();
            (stream.set_read_timeout(Some(Duration::from_secs(20)))).unwrap();
            tungstenite::client(url, stream).unwrap().0
        };
        // The page Chromium opened, found through the browser endpoint.
        let mut browser = socket(&browser_url);
        let targets = command(&mut browser, 1, "Target.getTargets", json!({}));
        let page_id = (targets["targetInfos"].as_array().unwrap().iter())
            .find(|t| t["type"] == "page")
            .and_then(|t| t["targetId"].as_str())
            .expect("a page target")
            .to_owned();
        let page = socket(&format!("{base}/devtools/page/{page_id}"));
        Browser {
            child,
            page,
            next_id: 0,
            _profile: profile,
        }
    }

    /// Sends a DevTools command to the page and returns its result.
    fn send(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        command(&mut self.page, self.next_id, method, params)
    }

    /// The value of a script expression in the page.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }

    fn open(&mut self, url: &str) {
        self.send("Page.navigate", json!({"url": url}));
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.eval("document.body && document.body.getAttribute('data-ready')") != "1" {
            assert!(Instant::now() < deadline, "the page did not draw");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            self.eval("document.body.getAttribute('data-errors')"),
            Value::Null
        );
    }

    /// Presses and releases a key, as a keyboard does.
    fn key(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "ArrowDown" => ("ArrowDown", 40, ""),
            "ArrowUp" => ("ArrowUp", 38, ""),
            "Enter" => ("Enter", 13, "\r"),
            "Escape" => ("Escape", 27, ""),
            "j" => ("KeyJ", 74, "j"),
            "k" => ("KeyK", 75, "k"),
            other => panic!("no key {other}"),
        };
        let mut down =
            json!({"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk});
        if !text.is_empty() {
            down["text"] = json!(text);
        }
        self.send("Input.dispatchKeyEvent", down);
        self.send(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}),
        );
    }

    /// The link of the table row whose button has the focus.
    fn focused_row(&mut self) -> Value {
        self.eval("document.activeElement && document.activeElement.getAttribute('data-link')")
    }
}

#[test]
fn arrow_keys_move_between_rows_enter_opens_and_escape_closes() {
    let env = Env::new();
    copy_demo(&env, true);
    let file = html_report(&env);
    let mut b = Browser::start();
    b.open(&format!("file://{}", file.display()));
    let links: Vec<String> = serde_json::from_value(b.eval(
        "Array.prototype.map.call(document.querySelectorAll('#table button.open'), function (x) { return x.getAttribute('data-link'); })",
    ))
    .unwrap();
    assert!(links.len() >= 3, "{links:?}");
    // Nothing focused: down goes to the first row, then on; up comes back; j and k alike.
    b.key("ArrowDown");
    assert_eq!(b.focused_row(), links[0].as_str());
    b.key("ArrowDown");
    b.key("ArrowDown");
    assert_eq!(b.focused_row(), links[2].as_str());
    b.key("ArrowUp");
    assert_eq!(b.focused_row(), links[1].as_str());
    b.key("k");
    b.key("k");
    assert_eq!(
        b.focused_row(),
        links[0].as_str(),
        "up stops at the first row"
    );
    b.key("j");
    assert_eq!(b.focused_row(), links[1].as_str());
    // Enter opens the focused row's trace, linked by what it is.
    b.key("Enter");
    assert_eq!(b.eval("!!document.getElementById('trace')"), true);
    assert_eq!(b.eval("location.hash"), format!("#{}", links[1]));
    // Arrow keys do not move rows under an open trace; Escape closes it, and the focus is back
    // on the row it came from.
    b.key("ArrowDown");
    assert_eq!(b.eval("!!document.getElementById('trace')"), true);
    b.key("Escape");
    assert_eq!(b.eval("!!document.getElementById('trace')"), false);
    assert_eq!(b.eval("location.hash"), "");
    assert_eq!(b.focused_row(), links[1].as_str());
    b.key("ArrowDown");
    assert_eq!(b.focused_row(), links[2].as_str());
}
