//! The crate's modules import each other one way: the graph of `crate::` paths between
//! its top-level modules has no circle. A submodule counts as its parent (the engine's
//! `impl Sim` files under `engine/` are the engine), so only imports between top-level
//! modules are edges; read from the sources, as a reader would follow them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Top-level module → the top-level modules its files name through `crate::`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("src readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("a path");
        let module = Path::new(first.as_os_str())
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if module == "lib" {
            continue; // the root declares the modules and re-exports; it is no module's peer
        }
        let text = fs::read_to_string(&path).expect("source readable");
        let deps = g.entry(module.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            // `crate::` as a path's start, not the tail of another word.
            if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &text[i + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let target = &rest[..end];
            if !target.is_empty() && target != module {
                deps.insert(target.to_string());
            }
        }
    }
    g
}

/// A circle of `g`, if it has one (depth-first search, nodes on the stack are grey).
fn circle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit<'a>(
        g: &'a BTreeMap<String, BTreeSet<String>>,
        node: &'a str,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|&n| n == node) {
            let mut c: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
            c.push(node.to_string());
            return Some(c);
        }
        if !done.insert(node) {
            return None;
        }
        stack.push(node);
        for next in g.get(node).into_iter().flatten() {
            if let Some(c) = visit(g, next, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_import_each_other_one_way() {
    let g = graph();
    // The reading itself works: the engine's imports are seen, its submodules' included.
    let engine = &g["engine"];
    for m in ["state", "observer", "cluster", "session", "events"] {
        assert!(engine.contains(m), "engine imports {m}: {engine:?}");
    }
    assert!(
        !g.values().any(|deps| deps.contains("engine")),
        "nothing imports the engine: {g:?}"
    );
    assert_eq!(circle(&g), None, "a circle of imports in {g:?}");
}

#[test]
fn a_circle_is_found() {
    let edge = |a: &str, b: &str| (a.to_string(), BTreeSet::from([b.to_string()]));
    let g = BTreeMap::from([edge("a", "b"), edge("b", "c"), edge("c", "a")]);
    assert_eq!(
        circle(&g).expect("a circle"),
        ["a", "b", "c", "a"].map(String::from)
    );
    let g = BTreeMap::from([edge("a", "b"), edge("b", "c")]);
    assert_eq!(circle(&g), None);
}
