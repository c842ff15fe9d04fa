//! A real S3 implementation on loopback for the object-storage tests: moto in server mode
//! (`server.py` here), started by each test with what it uploads. moto comes from
//! `scripts/install-test-deps` (into `target/test-venv`, or `TRACEREPLAY_PYTHON` names a Python
//! that has it); without it these tests fail and say how to install it.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::util::*;

pub(crate) fn python() -> PathBuf {
    test_python(
        "moto.server, boto3",
        "moto's S3 server (`moto[server]`) and boto3",
    )
}

/// A moto server on loopback, with what was uploaded to it; stopped when dropped.
pub(crate) struct S3 {
    child: Child,
    /// What the server says (one line per upload, after its first).
    said: std::io::BufReader<std::process::ChildStdout>,
    /// The variables that point a run at it with the reader's credentials.
    pub(crate) vars: Vec<(String, String)>,
    pub(crate) secret: String,
    pub(crate) log: PathBuf,
}

impl S3 {
    /// Starts the server with `args` (`BUCKET=DIR[:PREFIX]`, `--forbidden BUCKET`, `--open`);
    /// its request log goes to `log`.
    pub(crate) fn start(args: &[String], log: &Path) -> S3 {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cli/s3/server.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut said_lines = std::io::BufReader::new(child.stdout.take().unwrap());
        said_lines.read_line(&mut line).unwrap();
        let said: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the S3 server said {line:?} ({e}); its log: {log:?}"));
        let get = |k: &str| said[k].as_str().unwrap().to_owned();
        let vars = vec![
            ("AWS_ENDPOINT_URL".into(), get("endpoint")),
            ("AWS_ALLOW_HTTP".into(), "true".into()),
            ("AWS_ACCESS_KEY_ID".into(), get("access_key")),
            ("AWS_SECRET_ACCESS_KEY".into(), get("secret_key")),
            ("AWS_REGION".into(), "us-east-1".into()),
        ];
        S3 {
            child,
            said: said_lines,
            vars,
            secret: get("secret_key"),
            log: log.to_owned(),
        }
    }

    /// `tracereplay ARGS` in `env` under CI, pointed at this server.
    pub(crate) fn run(&self, env: &Env, args: &[&str]) -> Output {
        let mut vars: Vec<(&str, &str)> = vec![("CI", "true")];
        vars.extend(self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        env.run_with(args, &vars)
    }

    /// Uploads `file` to `bucket` under `key` (with the reader's credentials).
    pub(crate) fn put(&mut self, bucket: &str, key: &str, file: &Path) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "put {bucket} {key} {}", file.display()).unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.said.read_line(&mut line).unwrap();
        assert_eq!(
            line.trim(),
            "ok",
            "the upload failed; the server's log: {:?}",
            self.log
        );
    }

    /// The keys of `bucket` read (GET of a key) so far, in order, repeats kept.
    pub(crate) fn keys_read(&self, bucket: &str) -> Vec<String> {
        let log = std::fs::read_to_string(&self.log).unwrap();
        let get = format!("\"GET /{bucket}/");
        (log.lines())
            .filter_map(|l| l.split_once(&get))
            .filter_map(|(_, rest)| rest.split_once(' '))
            .map(|(key, _)| key.to_owned())
            .collect()
    }

    /// How many objects of `bucket` were read (GET of a key) so far.
    pub(crate) fn reads(&self, bucket: &str) -> usize {
        let log = std::fs::read_to_string(&self.log).unwrap();
        let get = format!("\"GET /{bucket}/");
        log.lines().filter(|l| l.contains(&get)).count()
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
