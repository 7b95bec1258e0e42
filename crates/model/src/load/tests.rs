//! Unit tests of the loader's JSON scanner, heads and dispatch.

use super::*;

/// The scanner's head of a JSON object, when it gives one, is the one
/// serde decodes; when serde cannot decode the head, neither does the scanner.
#[test]
fn scanned_heads_agree_with_serde() {
    let cases = [
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"b"}}"#,
        r#"{"kind":"List","apiVersion":"v1","items":[{"a":1}, [2], "x", 3 , null,{"b":{"c":[]}}],"metadata":{}}"#,
        r#"{ "apiVersion" : null , "kind" : "" , "items" : null , "metadata" : null }"#,
        r#"{"items":[]}"#,
        r#"{"items":{}}"#,
        r#"{"items":"x"}"#,
        r#"{}"#,
        r#"{"kind":"Pod","kind":"Pod"}"#,
        r#"{"apiVersion":"v1","apiVersion":null}"#,
        r#"{"metadata":{},"metadata":{}}"#,
        r#"{"items":[],"items":[]}"#,
        r#"{"kind":5}"#,
        r#"{"kind":true}"#,
        r#"{"kind":"P\u006fd","api\u0056ersion":"v1"}"#,
        r#"{"kind":"\ud800"}"#,
        r#"{"kind":"a\"b\\"}"#,
        r#"{"metadata":{"name":"x","name":"y"}}"#,
        r#"{"metadata":{"name":1}}"#,
        r#"{"metadata":{"namespace":null,"labels":{"name":"z"},"name":"n"}}"#,
        r#"{"metadata":[]}"#,
        r#"{"metadata":"m"}"#,
        r#"{"other":{"kind":"Node"},"kind":"Pod","x":[1,{"y":"]}"}]}"#,
        r#"[1,2]"#,
        r#""str""#,
        r#"null"#,
    ];
    for text in cases {
        let serde = serde_json::from_str::<Head<'_>>(text)
            .ok()
            .map(|h| h.into_json_head(text));
        let scanned = json::head(text, 0).map(|(h, _)| h);
        if let Some(mut scanned) = scanned {
            assert!(scanned.skipped_valid(text), "{text}");
            scanned.skipped.clear();
            assert_eq!(Some(scanned), serde, "{text}");
        }
    }
    // The common shapes are read by the scanner.
    let list = r#"{"kind":"List","items":[{"a":1}],"metadata":{"resourceVersion":""}}"#;
    assert_eq!(json::head(list, 0).map(|(_, end)| end), Some(list.len()));
    for bad in [
        r#"{"kind":"List","x":[1,]}"#,
        r#"{"kind":"List","metadata":{"a":tru}}"#,
    ] {
        assert!(json::head(bad, 0).is_some_and(|(h, _)| !h.skipped_valid(bad)));
    }
    assert_eq!(
        json::quick_kind(r#"{"apiVersion": "apps/v1", "kind": "ReplicaSet", "kind": 1}"#),
        Some(("apps/v1", "ReplicaSet"))
    );
    assert_eq!(
        json::quick_kind(r#"{"metadata": {"kind": "x"}, "kind": "Pod", "apiVersion": "v1"}"#),
        Some(("v1", "Pod"))
    );
    assert_eq!(
        json::quick_kind(r#"{"kind": "Pod", "apiVersion": null}"#),
        None
    );
    assert_eq!(
        json::quick_kind(r#"{"kind": "Pod", "kind": "Pod", "apiVersion": "v1"}"#),
        None
    );
    assert_eq!(
        json::quick_kind(r#"{"kind": "P\u006fd", "apiVersion": "v1"}"#),
        None
    );
    assert_eq!(json::quick_kind(r#"{"kind": "Pod"}"#), None);
}

fn load_as(name: &str, text: &str) -> Result<String, LoadError> {
    load(&[Source::Bytes {
        name: name.to_string(),
        data: text.as_bytes().to_vec(),
    }])
    .map(|inv| format!("{inv:?}"))
}

/// A `.json` file whose objects are checked as they are decoded loads
/// (or fails) exactly as when the whole text is checked first: the
/// syntax error wins over any problem of an object before it.
#[test]
fn json_checked_while_decoding_fails_as_when_checked_first() {
    let base = r#"{"apiVersion": "v1", "items": [
  {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "x"},
   "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}}
 ], "kind": "List", "metadata": {"resourceVersion": ""}}
{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}"#;
    let mut variants = vec![base.to_string()];
    for (i, _) in base.char_indices() {
        for ins in [",", "]", "}", "\"", "x", "1", " {", "[]"] {
            let mut t = base.to_string();
            t.insert_str(i, ins);
            variants.push(t);
        }
        let mut t = base.to_string();
        t.remove(i);
        variants.push(t);
    }
    // Texts that do not start with an object are checked first either way.
    for text in variants.iter().filter(|t| t.trim_start().starts_with('{')) {
        let got = format!("{:?}", load_as("a.json", text));
        let want = match json::parse_stream("a.json", text) {
            Err(e) => format!("{:?}", Err::<String, _>(e)),
            // Valid JSON: the sniffing path checks it all first.
            Ok(_) => {
                format!("{:?}", load_as("a.json.sniffed", text)).replace("a.json.sniffed", "a.json")
            }
        };
        assert_eq!(got, want, "{text}");
    }
}
