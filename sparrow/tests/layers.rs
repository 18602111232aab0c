//! The library's layering, read from its sources: every `crate::` and `super::` path in code
//! (comments and doc links left out) is an arrow from its file to the file of the module it
//! names. Arrows may only point down the layer list, and the arrows between files form no
//! circle. A `pub use` re-export is not an arrow of its own: a path through a re-export is
//! followed to the file that defines the item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules from the bottom up; a module may use its own layer and those below.
const LAYERS: &[&[&str]] = &[
    &["error", "scalar", "memory", "simd"],
    &["matrix"],
    &["kernels"],
    &["device"],
    &["ops"],
    &["solvers"],
    &["validate"],
];

struct Module {
    file: PathBuf,
    /// Code with comments removed.
    code: String,
}

fn strip_comments(src: &str) -> String {
    src.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string literal would cut the line short; the paths we look for
            // do not sit in strings beside comments, and a cut line only loses arrows.
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Module path (without `crate`) -> its file, for every `.rs` under `src`.
fn modules(src: &Path) -> BTreeMap<Vec<String>, Module> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap();
            let mut path: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_str().unwrap().to_string())
                .collect();
            if path.last().map(String::as_str) == Some("mod") || path == ["lib"] {
                path.pop();
            }
            let code = strip_comments(&std::fs::read_to_string(&p).unwrap());
            out.insert(path, Module { file: p, code });
        }
    }
    out
}

/// Items a module re-exports from its children: item name -> the child module's path.
fn reexports(mods: &BTreeMap<Vec<String>, Module>) -> BTreeMap<Vec<String>, Vec<String>> {
    let mut out = BTreeMap::new();
    for (path, m) in mods {
        for stmt in m.code.split(';') {
            let s = stmt.trim();
            let Some(rest) = s.strip_prefix("pub use ") else {
                continue;
            };
            let rest = rest
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .replace(":: {", "::{")
                .replace("{ ", "{")
                .replace(" }", "}");
            let (prefix, items) = match rest.find("::{") {
                Some(i) => (&rest[..i], rest[i + 3..].trim_end_matches('}').to_string()),
                None => match rest.rfind("::") {
                    Some(i) => (&rest[..i], rest[i + 2..].to_string()),
                    None => continue,
                },
            };
            let Some(target) = resolve_prefix(path, prefix, mods) else {
                continue;
            };
            for item in items.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let name = item.split(" as ").last().unwrap_or(item).trim().to_string();
                let mut key = path.clone();
                key.push(name);
                out.insert(key, target.clone());
            }
        }
    }
    out
}

/// The module a path prefix (`crate::a::b`, `super::c`, `self::d`, `child`) names from `from`.
fn resolve_prefix(
    from: &[String],
    prefix: &str,
    mods: &BTreeMap<Vec<String>, Module>,
) -> Option<Vec<String>> {
    let segs: Vec<&str> = prefix.split("::").collect();
    let mut base: Vec<String>;
    let mut i = 0;
    match segs.first()? {
        &"crate" => {
            base = vec![];
            i = 1;
        }
        &"super" | &"self" => {
            base = from.to_vec();
            while i < segs.len() && (segs[i] == "super" || segs[i] == "self") {
                if segs[i] == "super" {
                    base.pop()?;
                }
                i += 1;
            }
        }
        _ => base = from.to_vec(),
    }
    for s in &segs[i..] {
        base.push(s.to_string());
    }
    mods.contains_key(&base).then_some(base)
}

/// The file a full path (`crate::a::b::Item` or `super::x::y`) lands in: its longest module
/// prefix, followed through re-exports.
fn resolve(
    from: &[String],
    segs: &[&str],
    mods: &BTreeMap<Vec<String>, Module>,
    re: &BTreeMap<Vec<String>, Vec<String>>,
) -> Option<Vec<String>> {
    let mut base: Vec<String>;
    let mut i = 0;
    if segs[0] == "crate" {
        base = vec![];
        i = 1;
    } else {
        base = from.to_vec();
        while i < segs.len() && (segs[i] == "super" || segs[i] == "self") {
            if segs[i] == "super" {
                base.pop()?;
            }
            i += 1;
        }
    }
    while i < segs.len() {
        let mut next = base.clone();
        next.push(segs[i].to_string());
        if mods.contains_key(&next) {
            base = next;
            i += 1;
            continue;
        }
        // An item: follow a re-export to its defining child.
        match re.get(&next) {
            Some(target) if *target != base => {
                base = target.clone();
                i += 1;
                continue;
            }
            _ => break,
        }
    }
    Some(base)
}

/// Every path in `code` that starts with `crate::` or `super::`, as segments; use trees
/// (`a::{b, c::d}`) are expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(off) = code[from..].find(start) {
            let at = from + off;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            if start == "super::" && at >= 7 && &code[at - 7..at] == "super::" {
                continue;
            }
            // Read the path, with one level of braces.
            let rest = &code[at..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let head = rest[..end].trim_end_matches(':');
            if rest[end..].starts_with('{') && rest[..end].ends_with("::") {
                let close = rest[end..].find('}').map(|c| end + c).unwrap_or(rest.len());
                for item in rest[end + 1..close].split(',') {
                    let item: String = item.split_whitespace().collect::<Vec<_>>().join(" ");
                    let item = item.split(" as ").next().unwrap_or("").trim();
                    let item = item.trim_start_matches('{');
                    if item.is_empty() || item == "self" {
                        out.push(head.split("::").map(String::from).collect());
                        continue;
                    }
                    out.push(
                        format!("{head}::{item}")
                            .split("::")
                            .map(String::from)
                            .collect(),
                    );
                }
            } else {
                out.push(head.split("::").map(String::from).collect());
            }
        }
    }
    out
}

fn layer_of(path: &[String]) -> usize {
    let top = path.first().map(String::as_str).unwrap_or("");
    LAYERS
        .iter()
        .position(|l| l.contains(&top))
        .unwrap_or_else(|| panic!("module `{top}` is in no layer of tests/layers.rs"))
}

/// A module's path from the crate root, one segment per name.
type ModPath = Vec<String>;
/// Each module's arrows: the modules it names.
type Edges = BTreeMap<ModPath, BTreeSet<ModPath>>;

fn arrows() -> (BTreeMap<ModPath, Module>, Edges) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    let re = reexports(&mods);
    let mut edges: Edges = BTreeMap::new();
    for (path, m) in &mods {
        // Re-exports are not arrows: drop `pub use` statements before reading paths.
        let code: String = m
            .code
            .split_inclusive(';')
            .filter(|s| !s.trim_start().starts_with("pub use "))
            .collect();
        // Test modules may reach anywhere in the crate.
        let code = match code.find("#[cfg(test)]") {
            Some(i) => &code[..i],
            None => &code[..],
        };
        for p in paths(code) {
            let segs: Vec<&str> = p.iter().map(String::as_str).collect();
            if let Some(to) = resolve(path, &segs, &mods, &re) {
                if to != *path && !to.is_empty() {
                    edges.entry(path.clone()).or_default().insert(to);
                }
            }
        }
    }
    (mods, edges)
}

fn name(p: &[String]) -> String {
    if p.is_empty() {
        "crate".into()
    } else {
        p.join("::")
    }
}

#[test]
fn arrows_point_down_the_layers() {
    let (mods, edges) = arrows();
    let mut bad = Vec::new();
    for (from, tos) in &edges {
        if from.is_empty() {
            continue;
        }
        for to in tos {
            if layer_of(to) > layer_of(from) {
                bad.push(format!(
                    "{} -> {} ({})",
                    name(from),
                    name(to),
                    mods[from].file.display()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "arrows up the layers:\n{}", bad.join("\n"));
}

#[test]
fn no_import_circles() {
    let (_, edges) = arrows();
    // Tarjan's strongly connected components.
    struct S<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut S<'a>, v: &'a Vec<String>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        if let Some(ws) = s.edges.get(v) {
            for w in ws {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let l = s.low[w].min(s.low[v]);
                    s.low.insert(v, l);
                } else if s.on.contains(w) {
                    let l = s.index[w].min(s.low[v]);
                    s.low.insert(v, l);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(name(w));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = S {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    let circles: Vec<String> = s.out.iter().map(|c| c.join(" <-> ")).collect();
    assert!(
        circles.is_empty(),
        "modules that import one another:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_reader_sees_arrows() {
    // The reader must find real arrows, or the two tests above pass on nothing.
    let (_, edges) = arrows();
    let has = |from: &str, to: &str| {
        edges
            .iter()
            .any(|(f, ts)| name(f) == from && ts.iter().any(|t| name(t) == to))
    };
    assert!(has("ops::products::spmm", "matrix::csr"), "{edges:?}");
    assert!(has("ops::products::cuda", "ops::products::path"));
    assert!(has("ops::products::plan", "ops::products::path"));
    assert!(has("device::gpu", "kernels"));
    assert!(edges.len() > 50, "only {} files with arrows", edges.len());
}
