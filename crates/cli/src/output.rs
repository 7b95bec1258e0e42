//! Machine-readable output as a contract: every command's `-o json` and
//! `-o yaml` go through [`write`], which prints the same document in either
//! syntax and puts the command's [`Schema`] version first, so a script can
//! check what shape it reads (docs/json-schema.md lists each command's).
//!
//! The version is `MAJOR.MINOR`: a field renamed, removed, retyped or given
//! another default bumps MAJOR; a field added bumps MINOR. Every bump is
//! noted in CHANGELOG.md.

use std::io::Write;

use serde::Serialize;

/// Which command's document this is, and so which schema version it
/// carries. One place for all of them, so a bump is one line here plus the
/// changelog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// `podplace place`: docs/json-schema.md#place.
    Place,
    /// `podplace why POD`: docs/why-json.md.
    Why,
    /// `podplace why` without a pod: the Pending summary,
    /// docs/json-schema.md#why-pending.
    WhyPending,
    /// `podplace why -l SELECTOR` and `why TYPE/NAME`: the selected pods,
    /// docs/json-schema.md#why-selection.
    WhySelection,
    /// `podplace simulate`: docs/json-schema.md#simulate.
    Simulate,
    /// `podplace lint -o json`: docs/json-schema.md#lint.
    Lint,
    /// `podplace rebalance`: docs/json-schema.md#rebalance.
    Rebalance,
    /// One line per run of `podplace rebalance --interval -o json`.
    RebalanceRun,
}

impl Schema {
    /// The version this build writes. Bump it (and note it in
    /// CHANGELOG.md) whenever the command's document changes shape.
    pub fn version(self) -> &'static str {
        match self {
            // 1.1: waitingSince added (PodScheduled's lastTransitionTime).
            Schema::WhyPending => "1.1",
            // 1.1: the optional `sampling` object (node sampling's certainty).
            Schema::Simulate => "1.1",
            // 1.1: the optional `sampling` object, as simulate's.
            Schema::Lint => "1.1",
            // 1.1: sampled.feasible counts the feasible nodes the sampling
            // search found (it stops early, as kube-scheduler's does).
            Schema::Place => "1.1",
            // 1.1: a reason's `detail.kind` may be `enforced_node_affinity`
            // (a node the serving profile's addedAffinity excludes).
            Schema::Why | Schema::WhySelection => "1.1",
            Schema::Rebalance | Schema::RebalanceRun => "1.0",
        }
    }
}

/// The two syntaxes of a machine-readable document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Pretty-printed JSON, one document, newline-terminated.
    Json,
    /// One YAML document (the same tree as the JSON).
    Yaml,
}

impl Syntax {
    /// The syntax `-o` asked for: YAML for `yaml`, JSON otherwise (called
    /// only in the arms of the machine-readable formats).
    pub fn of(format: crate::html::ReportFormat) -> Syntax {
        match format {
            crate::html::ReportFormat::Yaml => Syntax::Yaml,
            _ => Syntax::Json,
        }
    }
}

/// A document with its schema version as its first field.
#[derive(Serialize)]
struct Versioned<'a, T: Serialize> {
    #[serde(rename = "schemaVersion")]
    schema_version: &'static str,
    #[serde(flatten)]
    document: &'a T,
}

/// Writes `document` (a struct or map) as `syntax`, with `schema`'s
/// version as the `schemaVersion` field.
pub fn write<T: Serialize>(
    out: &mut impl Write,
    syntax: Syntax,
    schema: Schema,
    document: &T,
) -> anyhow::Result<()> {
    let versioned = Versioned {
        schema_version: schema.version(),
        document,
    };
    match syntax {
        Syntax::Json => {
            serde_json::to_writer_pretty(&mut *out, &versioned)?;
            writeln!(out)?;
        }
        Syntax::Yaml => {
            // Straight from the same Serialize impl as the JSON, so fields
            // keep their order; the tests check both parse to one tree.
            let text = serde_saphyr::to_string(&versioned)?;
            out.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

/// Writes `document` as one JSON line (for streams: one document per
/// event), or as one YAML document opened by `---`.
pub fn write_line<T: Serialize>(
    out: &mut impl Write,
    syntax: Syntax,
    schema: Schema,
    document: &T,
) -> anyhow::Result<()> {
    let versioned = Versioned {
        schema_version: schema.version(),
        document,
    };
    match syntax {
        Syntax::Json => {
            serde_json::to_writer(&mut *out, &versioned)?;
            writeln!(out)?;
        }
        Syntax::Yaml => {
            writeln!(out, "---")?;
            write(out, Syntax::Yaml, schema, document)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// `-o name`: one `kind/name` line per object, as kubectl prints them
/// (without the namespace, as `kubectl get -A -o name` does).
pub fn write_names<'a>(
    out: &mut impl Write,
    kind: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> std::io::Result<()> {
    for name in names {
        // Pods are carried as namespace/name; kubectl's -o name omits it.
        let short = name.rsplit_once('/').map_or(name, |(_, n)| n);
        writeln!(out, "{kind}/{short}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Doc {
        pod: &'static str,
        node: Option<&'static str>,
        count: u64,
        list: Vec<&'static str>,
    }

    fn render(syntax: Syntax) -> String {
        let mut out = Vec::new();
        let doc = Doc {
            pod: "ns/a",
            node: None,
            count: 3,
            list: vec!["x", "y"],
        };
        write(&mut out, syntax, Schema::Place, &doc).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// YAML and JSON are one document: parsing either gives the same tree,
    /// with schemaVersion first.
    #[test]
    fn yaml_and_json_are_the_same_document() {
        let json = render(Syntax::Json);
        let yaml = render(Syntax::Yaml);
        assert!(
            json.starts_with("{\n  \"schemaVersion\": \"1.1\","),
            "{json}"
        );
        assert!(yaml.starts_with("schemaVersion:"), "{yaml}");
        let from_json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let from_yaml: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(from_json, from_yaml);
    }

    #[test]
    fn names_are_kind_slash_name() {
        let mut out = Vec::new();
        write_names(&mut out, "pod", ["ns/a", "b"]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "pod/a\npod/b\n");
    }

    #[test]
    fn json_lines_are_one_line_each() {
        let mut out = Vec::new();
        write_line(
            &mut out,
            Syntax::Json,
            Schema::RebalanceRun,
            &[("a", 1)]
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "{\"schemaVersion\":\"1.0\",\"a\":1}\n");
    }
}
