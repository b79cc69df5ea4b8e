//! Every section citation in the workspace resolves to a heading of `docs/SEMANTICS.md`.
//!
//! The scan reads every `.rs` and `.md` file under the workspace root (skipping `.git` and every
//! directory whose name starts with `target`) and takes each section sign (U+00A7) followed by a
//! number as a citation of `docs/SEMANTICS.md`: a section (`n`), a subsection (`n.m`) or a range
//! (`a–b`, `a–` followed by another section sign and `b`, or `a-b`; every section of the range is
//! checked). Every such citation in this repository refers to SEMANTICS, whether it is written
//! `SEMANTICS`, `SEMANTICS.md` or bare inside a doc comment of a pass. A citation is valid when
//! the document has a heading `n. Title` (or `n.m Title` for a subsection).
//!
//! The document also keeps the section numbers and titles of the upstream contract it restates
//! (`../shared/SEMANTICS.md`), so citations written against either read the same.
#![allow(missing_docs)]

use std::fs;
use std::path::{Path, PathBuf};

const SECTION_SIGN: char = '\u{a7}';

/// The sections of the upstream contract, numbered as there: `docs/SEMANTICS.md` must keep them.
const UPSTREAM_SECTIONS: [(u32, &str); 9] = [
    (0, "Conventions"),
    (1, "Scalars and storage equality"),
    (2, "Graph and nodes"),
    (3, "Dense reference passes"),
    (4, "Compact contributions"),
    (5, "Deferred uniform updates"),
    (6, "GradientContext and the indexed passes"),
    (7, "Single-output pass"),
    (8, "Floating-point rules the kernels must keep"),
];

/// A section (`sub == None`) or a subsection of the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Section {
    major: u32,
    sub: Option<u32>,
}

impl core::fmt::Display for Section {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.sub {
            Some(m) => write!(f, "{SECTION_SIGN}{}.{m}", self.major),
            None => write!(f, "{SECTION_SIGN}{}", self.major),
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The leading digits of `s` as a number, and what follows them.
fn number(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = s[..end].parse().ok()?;
    Some((n, &s[end..]))
}

/// The sections one line cites, ranges expanded.
fn citations(line: &str) -> Vec<Section> {
    let mut out = Vec::new();
    for (i, _) in line.match_indices(SECTION_SIGN) {
        let Some((major, mut rest)) = number(&line[i + SECTION_SIGN.len_utf8()..]) else { continue };
        let mut sub = None;
        if let Some(after_dot) = rest.strip_prefix('.') {
            if let Some((m, r)) = number(after_dot) {
                sub = Some(m);
                rest = r;
            }
        }
        out.push(Section { major, sub });
        // A range `a–b` (en dash or hyphen, the second section sign optional) cites every section
        // between; the explicit end is cited again by its own sign when it has one (harmless).
        if sub.is_none() {
            let after_dash = rest.strip_prefix('\u{2013}').or_else(|| rest.strip_prefix('-'));
            if let Some(after_dash) = after_dash {
                let after_dash = after_dash.strip_prefix(SECTION_SIGN).unwrap_or(after_dash);
                if let Some((end, _)) = number(after_dash) {
                    out.extend((major + 1..=end).map(|major| Section { major, sub: None }));
                }
            }
        }
    }
    out
}

/// The headings of `docs/SEMANTICS.md` that carry a number: `(section, title)`.
fn headings(text: &str) -> Vec<(Section, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(heading) = line.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#').trim();
        let Some((major, rest)) = number(heading) else { continue };
        let (sub, title) = match rest.strip_prefix('.') {
            Some(after_dot) => match number(after_dot) {
                Some((m, title)) => (Some(m), title),
                None => (None, after_dot),
            },
            None => (None, rest),
        };
        out.push((Section { major, sub }, title.trim().to_owned()));
    }
    out
}

fn semantics() -> String {
    let path = root().join("docs").join("SEMANTICS.md");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every `.rs` and `.md` file of the workspace, `.git` and `target*` directories skipped.
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![root()];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != ".git" && !name.starts_with("target") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs" || e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

#[test]
fn every_citation_names_a_section_of_the_document() {
    let known: Vec<Section> = headings(&semantics()).into_iter().map(|(s, _)| s).collect();
    let mut cited = 0;
    let mut missing = Vec::new();
    for file in sources() {
        // Non-UTF-8 files (none today) cannot hold a citation this scan could read.
        let Ok(text) = fs::read_to_string(&file) else { continue };
        for (n, line) in text.lines().enumerate() {
            for section in citations(line) {
                cited += 1;
                if !known.contains(&section) {
                    missing.push(format!(
                        "{}:{}: {section} is not a section of docs/SEMANTICS.md",
                        relative(&file),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(missing.is_empty(), "citations of missing sections:\n{}", missing.join("\n"));
    // The scan sees the citations the code is known to hold (dozens of them).
    assert!(cited >= 40, "only {cited} citations found: is the scan reading the workspace?");
}

#[test]
fn the_document_keeps_the_upstream_section_numbers_and_titles() {
    let headings = headings(&semantics());
    let sections: Vec<&(Section, String)> = headings.iter().filter(|(s, _)| s.sub.is_none()).collect();
    for (major, title) in UPSTREAM_SECTIONS {
        let found: Vec<&&(Section, String)> = sections.iter().filter(|(s, _)| s.major == major).collect();
        assert_eq!(found.len(), 1, "docs/SEMANTICS.md needs exactly one heading {major}. {title}");
        assert!(found[0].1.starts_with(title), "heading {major} is {:?}, not {title:?}", found[0].1);
    }
    let order: Vec<u32> = sections.iter().map(|(s, _)| s.major).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "numbered sections out of order: {order:?}");
}

#[test]
fn the_scan_reads_sections_subsections_and_ranges() {
    let s = |major, sub| Section { major, sub };
    let line = "SEMANTICS \u{a7}3\u{2013}\u{a7}5, \u{a7}4-6 and \u{a7}6.2; see \u{a7}8. Not \u{a7}x";
    assert_eq!(
        citations(line),
        [s(3, None), s(4, None), s(5, None), s(5, None), s(4, None), s(5, None), s(6, None), s(6, Some(2)), s(8, None)]
    );
    let doc = "# Title\n## 0. Conventions\n### 6.2 Sub\n## Glossary\n## 12. Late\n";
    let found: Vec<Section> = headings(doc).into_iter().map(|(s, _)| s).collect();
    assert_eq!(found, [s(0, None), s(6, Some(2)), s(12, None)]);
}
