//! Writing a generated snapshot as one `v1 List`, the way
//! `kubectl get nodes,namespaces,replicasets,pods -A -o json|yaml` prints it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use k8s_openapi::serde::ser::{SerializeMap, SerializeSeq};
use k8s_openapi::serde::{Serialize, Serializer};

use crate::generate::Object;

/// A `v1 List` of objects, serialized in kubectl's field order.
#[derive(Debug, Clone, Copy)]
pub struct ListDoc<'a>(pub &'a [Object]);

struct Items<'a>(&'a [Object]);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for o in self.0 {
            seq.serialize_element(o)?;
        }
        seq.end()
    }
}

struct ListMeta;

impl Serialize for ListMeta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("resourceVersion", "")?;
        map.end()
    }
}

impl Serialize for ListDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(4))?;
        map.serialize_entry("apiVersion", "v1")?;
        map.serialize_entry("items", &Items(self.0))?;
        map.serialize_entry("kind", "List")?;
        map.serialize_entry("metadata", &ListMeta)?;
        map.end()
    }
}

/// Writes `objects` as JSON: pretty-printed with kubectl's 4-space indent
/// when `pretty`, else without any whitespace. Returns the file size in bytes.
pub fn write_json(path: &Path, objects: &[Object], pretty: bool) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    if pretty {
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        ListDoc(objects)
            .serialize(&mut ser)
            .map_err(std::io::Error::other)?;
    } else {
        ListDoc(objects)
            .serialize(&mut serde_json::Serializer::new(&mut out))
            .map_err(std::io::Error::other)?;
    }
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// Writes `objects` as YAML (serde-saphyr's block style). Returns the file
/// size in bytes.
pub fn write_yaml(path: &Path, objects: &[Object]) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    serde_saphyr::to_io_writer(&mut out, &ListDoc(objects)).map_err(std::io::Error::other)?;
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}
