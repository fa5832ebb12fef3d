//! The layers, checked from the source. In the binding, a file may use files of its own
//! layer or of a lower one, never of a higher one, and no files use each other in a
//! circle; the layers, lowest first: the root (the files at the top of `binding/`),
//! `read/`, `reserve/`, `exports/`. A use is a path `crate::binding::…` (also in `use`
//! groups and macros); `super::` is refused outside a test module's `use super::*;`, so
//! that every use is seen. The engine never names napi.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The binding's layers, lowest first (the root holds every file not in a folder).
const LAYERS: [&str; 4] = ["root", "read", "reserve", "exports"];

/// What a use of another module looks like.
const PREFIX: &str = concat!("crate", "::", "binding", "::");

/// This file, which names the prefix without using anything.
const THIS_FILE: &str = "src/binding/layer_tests.rs";

/// A source file: its path from the package root, its module path inside its layer
/// (`["read", "db"]` for `read/db.rs`, `[]` for `binding/mod.rs`) and its text.
struct Source {
    path: String,
    module: Vec<String>,
    text: String,
}

impl Source {
    /// The file's layer, as an index into [`LAYERS`].
    fn layer(&self) -> usize {
        (1..LAYERS.len())
            .find(|&i| {
                self.path
                    .starts_with(&format!("src/binding/{}/", LAYERS[i]))
            })
            .unwrap_or(0)
    }
}

/// Every `.rs` file under `src/<folder>`, sorted by path.
fn sources(folder: &str) -> Vec<Source> {
    fn walk(dir: &Path, module: &[String], out: &mut Vec<Source>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut inner = module.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut own = module.to_vec();
                if stem != "mod" {
                    own.push(stem.to_string());
                }
                let root = Path::new(env!("CARGO_MANIFEST_DIR"));
                out.push(Source {
                    path: path
                        .strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                    module: own,
                    text: std::fs::read_to_string(&path).unwrap(),
                });
            }
        }
    }
    let mut out = Vec::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    walk(&dir, &[], &mut out);
    out
}

/// The code of `text`: every line that is not a comment, with trailing comments cut.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.split(" //").next().unwrap_or(l)))
}

/// The module paths a use tree names, read from the start of `rest` (what follows the
/// prefix): `a::b`, `a::{b, c::d}`, `a::{self, b}`, `a::b as c`, `a::*`.
fn use_tree(rest: &str) -> Vec<Vec<String>> {
    fn tree(s: &mut std::iter::Peekable<std::str::Chars>, base: &[String]) -> Vec<Vec<String>> {
        let mut path = base.to_vec();
        loop {
            while s.peek().is_some_and(|c| c.is_whitespace()) {
                s.next();
            }
            if s.peek() == Some(&'{') {
                s.next();
                let mut all = Vec::new();
                loop {
                    all.extend(tree(s, &path));
                    while s.peek().is_some_and(|c| c.is_whitespace()) {
                        s.next();
                    }
                    match s.next() {
                        Some(',') => {
                            while s.peek().is_some_and(|c| c.is_whitespace()) {
                                s.next();
                            }
                            if s.peek() == Some(&'}') {
                                s.next();
                                return all;
                            }
                        }
                        _ => return all,
                    }
                }
            }
            let mut ident = String::new();
            while let Some(c) = s
                .peek()
                .copied()
                .filter(|c| c.is_alphanumeric() || *c == '_')
            {
                ident.push(c);
                s.next();
            }
            if !ident.is_empty() && ident != "self" {
                path.push(ident);
            }
            let mut ahead = s.clone();
            if ahead.next() == Some(':') && ahead.next() == Some(':') {
                s.next();
                s.next();
                continue;
            }
            // `as name`, `*` or the end: the path is complete.
            let mut tail = s.clone();
            while tail.peek().is_some_and(|c| c.is_whitespace()) {
                tail.next();
            }
            if tail.clone().take(3).collect::<String>() == "as " {
                tail.nth(2);
                while tail.peek().is_some_and(|c| c.is_whitespace()) {
                    tail.next();
                }
                while tail
                    .peek()
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_')
                {
                    tail.next();
                }
                *s = tail;
            } else if tail.peek() == Some(&'*') {
                tail.next();
                *s = tail;
            }
            return vec![path];
        }
    }
    tree(&mut rest.chars().peekable(), &[])
}

/// The files `source` uses (by index into `all`), with a problem for each `super::` that
/// hides a use.
fn uses_of(source: &Source, all: &[Source]) -> (BTreeSet<usize>, Vec<String>) {
    let modules: BTreeMap<&[String], usize> = all
        .iter()
        .enumerate()
        .map(|(i, s)| (s.module.as_slice(), i))
        .collect();
    let (mut used, mut problems) = (BTreeSet::new(), Vec::new());
    // Whole statements, so that a use group spread over lines reads as one.
    let code: String = code_lines(&source.text)
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join("\n");
    for (at, _) in code.match_indices(PREFIX) {
        for path in use_tree(&code[at + PREFIX.len()..]) {
            let file = (0..=path.len())
                .rev()
                .find_map(|n| modules.get(&path[..n]).copied());
            used.extend(file);
        }
    }
    for (n, line) in code_lines(&source.text) {
        let in_test_module = line.starts_with(char::is_whitespace);
        if line.contains("super::") && !(in_test_module && line.trim() == "use super::*;") {
            problems.push(format!(
                "{}:{n}: `super::` hides a use; write the path from `crate::binding::`",
                source.path
            ));
        }
    }
    used.remove(&all.iter().position(|s| s.path == source.path).unwrap());
    (used, problems)
}

/// The groups of files that use each other in a circle.
fn circles(edges: &[BTreeSet<usize>]) -> Vec<BTreeSet<usize>> {
    let reach: Vec<BTreeSet<usize>> = (0..edges.len())
        .map(|start| {
            let (mut seen, mut todo) = (BTreeSet::new(), vec![start]);
            while let Some(at) = todo.pop() {
                for &next in &edges[at] {
                    if seen.insert(next) {
                        todo.push(next);
                    }
                }
            }
            seen
        })
        .collect();
    let mut groups: Vec<BTreeSet<usize>> = Vec::new();
    for a in 0..edges.len() {
        if !reach[a].contains(&a) || groups.iter().any(|g| g.contains(&a)) {
            continue;
        }
        let group = (0..edges.len())
            .filter(|&b| reach[a].contains(&b) && reach[b].contains(&a))
            .collect();
        groups.push(group);
    }
    groups
}

#[test]
fn the_binding_uses_only_its_own_layer_and_lower_ones_without_circles() {
    let all: Vec<Source> = sources("binding")
        .into_iter()
        .filter(|s| s.path != THIS_FILE)
        .collect();
    let mut problems = Vec::new();
    let mut edges = Vec::new();
    for source in &all {
        let (used, found) = uses_of(source, &all);
        problems.extend(found);
        for &to in &used {
            let target = &all[to];
            if target.layer() > source.layer() {
                problems.push(format!(
                    "{} ({}) uses {} ({}), a higher layer",
                    source.path,
                    LAYERS[source.layer()],
                    target.path,
                    LAYERS[target.layer()]
                ));
            }
        }
        edges.push(used);
    }
    for group in circles(&edges) {
        let files: Vec<&str> = group.iter().map(|&i| all[i].path.as_str()).collect();
        problems.push(format!(
            "files that use each other in a circle: {}",
            files.join(", ")
        ));
    }
    // The reading works: a use known to be there is found.
    let index = |path: &str| all.iter().position(|s| s.path == path).unwrap();
    assert!(
        edges[index("src/binding/spawn.rs")].contains(&index("src/binding/error.rs")),
        "spawn.rs's use of error.rs not found: the use reader is broken"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_engine_never_names_napi() {
    let mut problems = Vec::new();
    for source in sources("engine") {
        for (n, line) in code_lines(&source.text) {
            let named = line.match_indices("napi").any(|(at, _)| {
                let before = line[..at].chars().next_back();
                let after = line[at + 4..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            });
            if named {
                problems.push(format!("{}:{n}: {}", source.path, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "napi in the engine:\n{}",
        problems.join("\n")
    );
}

#[test]
fn use_trees_are_read_whole() {
    let paths = |s: &str| -> Vec<String> { use_tree(s).iter().map(|p| p.join("::")).collect() };
    assert_eq!(
        paths("read::db::{read_db, DbTarget};"),
        ["read::db::read_db", "read::db::DbTarget"]
    );
    assert_eq!(
        paths("read::{\n    db::read_db,\n    js::{self, object},\n};"),
        ["read::db::read_db", "read::js", "read::js::object"]
    );
    assert_eq!(
        paths("boundary::take_exception(env);"),
        ["boundary::take_exception"]
    );
    assert_eq!(paths("read::kinds::Kind::$kind"), ["read::kinds::Kind"]);
    assert_eq!(paths("exports::client as c;"), ["exports::client"]);
    assert_eq!(paths("read::options::*;"), ["read::options"]);
}
