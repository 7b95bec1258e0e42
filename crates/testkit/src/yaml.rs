//! Objects written as YAML files, and JSON merge patches.

use serde::Serialize;
use serde_json::Value;

/// One YAML document, `---` first.
pub(crate) fn document(value: &Value) -> String {
    let text = serde_saphyr::to_string(value)
        .unwrap_or_else(|e| panic!("cannot write {value:#} as YAML: {e}"));
    format!("---\n{text}")
}

/// Objects (builders, k8s-openapi objects, JSON) as one multi-document YAML
/// file.
pub fn documents<T: Serialize>(objects: impl IntoIterator<Item = T>) -> String {
    objects
        .into_iter()
        .map(|o| {
            let value = serde_json::to_value(&o).unwrap_or_else(|e| panic!("not JSON: {e}"));
            document(&value)
        })
        .collect()
}

/// Applies `patch` to `target` as a JSON merge patch (RFC 7396).
pub fn merge_json(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            let Value::Object(map) = target else {
                unreachable!("made an object above")
            };
            for (key, value) in fields {
                if value.is_null() {
                    map.remove(&key);
                } else {
                    merge_json(map.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        other => *target = other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_merges_objects_replaces_the_rest_and_removes_nulls() {
        let cases = [
            (json!({"a": 1}), json!({"b": 2}), json!({"a": 1, "b": 2})),
            (
                json!({"a": {"x": 1}}),
                json!({"a": {"y": 2}}),
                json!({"a": {"x": 1, "y": 2}}),
            ),
            (json!({"a": [1, 2]}), json!({"a": [3]}), json!({"a": [3]})),
            (json!({"a": 1, "b": 2}), json!({"a": null}), json!({"b": 2})),
            (json!("s"), json!({"a": 1}), json!({"a": 1})),
        ];
        for (mut target, patch, want) in cases {
            merge_json(&mut target, patch.clone());
            assert_eq!(target, want, "{patch}");
        }
    }

    #[test]
    fn numbers_in_strings_stay_strings() {
        let text = documents([json!({"cpu": "4", "pods": "110", "n": 3, "on": "true"})]);
        let back: Value = serde_saphyr::from_str(text.trim_start_matches("---\n")).unwrap();
        assert_eq!(
            back,
            json!({"cpu": "4", "pods": "110", "n": 3, "on": "true"})
        );
    }
}
