//! The public API of each crate, read from its sources, against the checked-in snapshots
//! `tests/public-api.txt` (the root package) and `tests/api/<crate>.txt`: an item that becomes public (or stops being) fails this test until
//! the snapshot is updated with `UPDATE_API=1 cargo test --test cli public_api`, so the surface
//! cannot grow back unnoticed and every change to it shows in review.
//!
//! Listed: every unrestricted `pub` item of every module from `src/lib.rs` down (functions,
//! types, traits, constants, statics), with its module path — a module that is not `pub` is
//! marked `mod(restricted)`, since a `pub use` may still expose its items — the `pub` methods of
//! inherent `impl` blocks, the `pub` fields of structs, and every `pub use` as written.
//! `#[cfg(test)]` items are left out; items behind the default features (`cli`, `replay`,
//! `signing`) and `fuzzing` are in.

use std::path::{Path, PathBuf};

use syn::{Attribute, Item, UseTree, Visibility};

fn is_pub(v: &Visibility) -> bool {
    matches!(v, Visibility::Public(_))
}

/// Whether `#[cfg(test)]` or `#[cfg(all(test, …))]` gates the item.
fn test_only(attrs: &[Attribute]) -> bool {
    use syn::punctuated::Punctuated;
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .any(|a| match a.parse_args::<syn::Meta>() {
            Ok(syn::Meta::Path(p)) => p.is_ident("test"),
            Ok(syn::Meta::List(l)) if l.path.is_ident("all") => l
                .parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .is_ok_and(|items| items.iter().any(|m| m.path().is_ident("test"))),
            _ => false,
        })
}

/// A `#[path = "…"]` attribute's value.
fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn use_tree(t: &UseTree) -> String {
    match t {
        UseTree::Path(p) => format!("{}::{}", p.ident, use_tree(&p.tree)),
        UseTree::Name(n) => n.ident.to_string(),
        UseTree::Rename(r) => format!("{} as {}", r.ident, r.rename),
        UseTree::Glob(_) => "*".to_owned(),
        UseTree::Group(g) => {
            let mut items: Vec<String> = g.items.iter().map(use_tree).collect();
            items.sort();
            format!("{{{}}}", items.join(", "))
        }
    }
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

struct Lister {
    lines: Vec<String>,
}

impl Lister {
    fn items(&mut self, items: &[Item], path: &str, dir: &Path, file_is_mod_rs: bool) {
        for item in items {
            self.item(item, path, dir, file_is_mod_rs);
        }
    }

    fn push(&mut self, kind: &str, path: &str, name: impl std::fmt::Display) {
        self.lines.push(format!("{kind} {path}::{name}"));
    }

    fn fields(&mut self, path: &str, name: &syn::Ident, fields: &syn::Fields) {
        for (i, f) in fields.iter().enumerate() {
            if is_pub(&f.vis) {
                let field = f.ident.as_ref().map_or(i.to_string(), |i| i.to_string());
                self.lines.push(format!("field {path}::{name}.{field}"));
            }
        }
    }

    fn item(&mut self, item: &Item, path: &str, dir: &Path, file_is_mod_rs: bool) {
        match item {
            Item::Mod(m) if !test_only(&m.attrs) => {
                let sub = format!("{path}::{}", m.ident);
                // A restricted module's `pub` items are listed too: a `pub use` can make them
                // public, and each is an unrestricted `pub` a maintainer must keep.
                let kind = if is_pub(&m.vis) {
                    "mod"
                } else {
                    "mod(restricted)"
                };
                self.push(kind, path, &m.ident);
                // Where the module's files are: beside a `mod.rs`/`lib.rs`, else in a directory
                // named after the file.
                let here = if file_is_mod_rs {
                    dir.to_owned()
                } else {
                    dir.join(path.rsplit("::").next().unwrap())
                };
                match &m.content {
                    Some((_, items)) => {
                        self.items(items, &sub, &here.join(m.ident.to_string()), true)
                    }
                    None => {
                        // A `#[path]` is relative to the directory of the file that holds
                        // it, and the file it names finds its own modules beside it.
                        let (file, is_mod_rs) = match path_attr(&m.attrs) {
                            Some(p) => (dir.join(p), true),
                            None if here.join(format!("{}.rs", m.ident)).exists() => {
                                (here.join(format!("{}.rs", m.ident)), false)
                            }
                            None => (here.join(m.ident.to_string()).join("mod.rs"), true),
                        };
                        let text = std::fs::read_to_string(&file)
                            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                        let parsed = syn::parse_file(&text)
                            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                        let next_dir = if is_mod_rs {
                            file.parent().unwrap().to_owned()
                        } else {
                            here.clone()
                        };
                        self.items(&parsed.items, &sub, &next_dir, is_mod_rs);
                    }
                }
            }
            Item::Fn(f) if is_pub(&f.vis) && !test_only(&f.attrs) => {
                self.push("fn", path, &f.sig.ident)
            }
            Item::Struct(s) if is_pub(&s.vis) && !test_only(&s.attrs) => {
                self.push("struct", path, &s.ident);
                self.fields(path, &s.ident, &s.fields);
            }
            Item::Enum(e) if is_pub(&e.vis) && !test_only(&e.attrs) => {
                self.push("enum", path, &e.ident)
            }
            Item::Trait(t) if is_pub(&t.vis) => self.push("trait", path, &t.ident),
            Item::Const(c) if is_pub(&c.vis) => self.push("const", path, &c.ident),
            Item::Static(s) if is_pub(&s.vis) => self.push("static", path, &s.ident),
            Item::Type(t) if is_pub(&t.vis) => self.push("type", path, &t.ident),
            Item::Union(u) if is_pub(&u.vis) => self.push("union", path, &u.ident),
            Item::Use(u) if is_pub(&u.vis) && !test_only(&u.attrs) => {
                self.lines
                    .push(format!("use {path}: {}", use_tree(&u.tree)));
            }
            Item::Impl(i) if i.trait_.is_none() && !test_only(&i.attrs) => {
                let Some(ty) = type_name(&i.self_ty) else {
                    return;
                };
                for member in &i.items {
                    if let syn::ImplItem::Fn(f) = member
                        && is_pub(&f.vis)
                    {
                        self.lines.push(format!("fn {path}::{ty}::{}", f.sig.ident));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every listed line of the crate whose sources are under `src` (from the repository's root),
/// named `name`, sorted.
fn listed_in(src: &str, name: &str) -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(src);
    let text = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let file = syn::parse_file(&text).expect("lib.rs parses");
    let mut lister = Lister { lines: Vec::new() };
    lister.items(&file.items, name, &root, true);
    lister.lines.sort();
    lister.lines.dedup();
    lister.lines
}

/// Every listed line of the root package (the crate users install), sorted.
fn listed() -> Vec<String> {
    listed_in("src", "tracereplay")
}

/// Each crate of the workspace under `crates/`: where its sources are, and its name.
const CRATES: &[(&str, &str)] = &[
    ("crates/trace/src", "tracereplay_trace"),
    ("crates/core/src", "tracereplay_core"),
    ("crates/net/src", "tracereplay_net"),
];

/// Each crate's public API is its own snapshot, `tests/api/<crate>.txt`.
#[test]
fn each_crates_api_is_its_snapshot() {
    for (src, name) in CRATES {
        let lines = listed_in(src, name);
        same_as_snapshot(&format!("tests/api/{name}.txt"), &(lines.join("\n") + "\n"));
    }
}

/// The library's API, as the root package exports it.
fn public_api() -> String {
    listed().join("\n") + "\n"
}

#[test]
fn the_public_api_is_the_snapshot() {
    same_as_snapshot("tests/public-api.txt", &public_api());
}

/// The root package is the crates' API, re-exported by name: `report`, `trace` and the items a
/// library user names — no module of its own, no hidden layers.
#[test]
fn the_root_re_exports_the_api_by_name_and_has_no_module_of_its_own() {
    let text =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
            .unwrap();
    let file = syn::parse_file(&text).unwrap();
    let modules: Vec<String> = (file.items.iter())
        .filter_map(|i| match i {
            Item::Mod(m) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect();
    assert!(modules.is_empty(), "the root's modules: {modules:?}");
    let api = public_api();
    for needed in [
        "tracereplay_trace as trace",
        "tracereplay_core::report",
        "tracereplay_trace::{ParsedTrace, SealedTrace, TraceFile, TraceWriter, parse_trace}",
    ] {
        assert!(
            api.contains(&format!("use tracereplay: {needed}")),
            "the root does not re-export `{needed}`:\n{api}"
        );
    }
    for item in [
        "Suite",
        "CheckOptions",
        "Report",
        "ORACLE_TYPES",
        "load_scenarios",
    ] {
        assert!(
            api.lines()
                .any(|l| l.starts_with("use tracereplay: tracereplay_core::{")
                    && l.contains(&format!(" {item},"))),
            "the root does not re-export `{item}`:\n{api}"
        );
    }
}

fn same_as_snapshot(rel: &str, current: &str) {
    let snapshot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    if std::env::var_os("UPDATE_API").is_some() {
        std::fs::write(&snapshot, current).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(&snapshot).unwrap_or_default();
    if recorded != current {
        let (old, new): (Vec<&str>, Vec<&str>) =
            (recorded.lines().collect(), current.lines().collect());
        let added: Vec<&&str> = new.iter().filter(|l| !old.contains(l)).collect();
        let removed: Vec<&&str> = old.iter().filter(|l| !new.contains(l)).collect();
        panic!(
            "`{rel}` changed: {} added, {} removed; review, then run `UPDATE_API=1 cargo test --test cli public_api`\nadded:\n{}\nremoved:\n{}",
            added.len(),
            removed.len(),
            added
                .iter()
                .map(|l| format!("  + {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
            removed
                .iter()
                .map(|l| format!("  - {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}

#[test]
fn the_lister_sees_what_is_public_and_nothing_test_only() {
    let api = listed_in("crates/core/src", "tracereplay_core").join("\n");
    for expected in [
        "struct tracereplay_core::report::model::ResultRow",
        "mod tracereplay_core::eval",
        "field tracereplay_core::report::model::ResultRow.verdict",
        "fn tracereplay_core::eval::pipeline::judge_file",
        "fn tracereplay_core::report::model::ResultRow::set_error",
        "use tracereplay_core: suite::{CacheRead, Error, Suite, in_pool}",
        "use tracereplay_core: tracereplay_trace as trace",
        "mod(restricted) tracereplay_core::baseline::set",
    ] {
        assert!(api.lines().any(|l| l == expected), "`{expected}` missing");
    }
    // `pub(crate)` items and test modules are not listed.
    assert!(
        !api.contains("fn tracereplay_core::eval::row::row_of_opened"),
        "a pub(crate) fn is listed"
    );
    assert!(!api.contains("_tests"), "a test module is listed");
}

#[test]
fn no_glob_re_exports() {
    // Every re-export names what it exports, so the surface is what the snapshot lists and an
    // item added to a module does not become public by the way.
    let mut api = listed().join("\n");
    for (src, name) in CRATES {
        api.push('\n');
        api.push_str(&listed_in(src, name).join("\n"));
    }
    let globs: Vec<&str> = (api.lines())
        .filter(|l| l.starts_with("use ") && l.contains('*'))
        .collect();
    assert!(globs.is_empty(), "glob re-exports: {globs:#?}");
}
