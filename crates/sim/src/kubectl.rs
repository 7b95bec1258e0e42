//! What kubectl's workload commands change in a pod template, so that a
//! scenario's `rollout` step does what the user would have typed:
//! `kubectl set image` (a container named, or `*` for all of them, init
//! containers included) and `kubectl rollout restart` (the
//! `kubectl.kubernetes.io/restartedAt` annotation).

use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};

use crate::scenario::SetSpec;

/// The template annotation `kubectl rollout restart` sets.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// Why `set: {image: ...}` cannot be applied, worded as kubectl words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetImageError {
    /// A name matches no container or init container.
    #[error("unable to find container named {name:?} (containers: {containers})")]
    NoSuchContainer {
        /// The name asked for.
        name: String,
        /// The template's containers and init containers.
        containers: String,
    },
    /// `image:` without a container name on a template with several
    /// containers: kubectl set image always names one (`NAME=IMAGE`) or `*`.
    #[error("set: {{image: {image}}} names no container, but the pod has {count} containers ({containers}): name one (images: {{{first}: {image}}}) or all with \"*\" (images: {{\"*\": {image}}}), as kubectl set image takes CONTAINER=IMAGE")]
    Ambiguous {
        /// The image.
        image: String,
        /// How many containers.
        count: usize,
        /// Their names.
        containers: String,
        /// The first container's name.
        first: String,
    },
}

fn names(containers: &[Container], init: &[Container]) -> String {
    let mut out: Vec<String> = containers.iter().map(|c| c.name.clone()).collect();
    out.extend(init.iter().map(|c| format!("{} (init)", c.name)));
    out.join(", ")
}

/// Sets images in `template` as `kubectl set image` does; returns whether
/// any image changed. `set.image` without a name needs a pod with a single
/// container; `set.images` maps container names (or `*`: every container
/// and init container) to images.
pub fn set_image(template: &mut PodTemplateSpec, set: &SetSpec) -> Result<bool, SetImageError> {
    let spec = template.spec.get_or_insert_with(Default::default);
    let init = spec.init_containers.get_or_insert_with(Vec::new);
    let mut changed = false;
    if let Some(image) = &set.image {
        match spec.containers.len() {
            1 => {
                let c = &mut spec.containers[0];
                changed |= c.image.as_deref() != Some(image.as_str());
                c.image = Some(image.clone());
            }
            count => {
                return Err(SetImageError::Ambiguous {
                    image: image.clone(),
                    count,
                    containers: names(&spec.containers, init),
                    first: spec
                        .containers
                        .first()
                        .map(|c| c.name.clone())
                        .unwrap_or_default(),
                })
            }
        }
    }
    for (name, image) in &set.images {
        let mut found = false;
        for c in spec.containers.iter_mut().chain(init.iter_mut()) {
            if name == "*" || c.name == *name {
                found = true;
                changed |= c.image.as_deref() != Some(image.as_str());
                c.image = Some(image.clone());
            }
        }
        if !found {
            return Err(SetImageError::NoSuchContainer {
                name: name.clone(),
                containers: names(&spec.containers, init),
            });
        }
    }
    if spec.init_containers.as_ref().is_some_and(|i| i.is_empty()) {
        spec.init_containers = None;
    }
    Ok(changed)
}

/// Sets the restart annotation as `kubectl rollout restart` does, with
/// `when` as its value.
pub fn restart(template: &mut PodTemplateSpec, when: String) {
    template
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default)
        .insert(RESTARTED_AT.to_string(), when);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn template(containers: &[(&str, &str)], init: &[(&str, &str)]) -> PodTemplateSpec {
        let c = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(n, i)| Container {
                    name: n.to_string(),
                    image: Some(i.to_string()),
                    ..Default::default()
                })
                .collect::<Vec<_>>()
        };
        PodTemplateSpec {
            metadata: None,
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                containers: c(containers),
                init_containers: if init.is_empty() { None } else { Some(c(init)) },
                ..Default::default()
            }),
        }
    }

    fn images(t: &PodTemplateSpec) -> Vec<String> {
        let s = t.spec.as_ref().unwrap();
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .map(|c| format!("{}={}", c.name, c.image.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn set_image_as_kubectl() {
        let set = |image: Option<&str>, pairs: &[(&str, &str)]| SetSpec {
            image: image.map(str::to_string),
            images: pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<BTreeMap<_, _>>(),
        };
        type Row = (
            &'static str,
            PodTemplateSpec,
            SetSpec,
            Result<(bool, Vec<&'static str>), &'static str>,
        );
        let two = template(&[("app", "a:1"), ("side", "s:1")], &[("init", "i:1")]);
        let table: Vec<Row> = vec![
            (
                "one container: image alone",
                template(&[("app", "a:1")], &[]),
                set(Some("a:2"), &[]),
                Ok((true, vec!["app=a:2"])),
            ),
            (
                "two containers: image alone is refused",
                two.clone(),
                set(Some("a:2"), &[]),
                Err("names no container, but the pod has 2 containers (app, side, init (init))"),
            ),
            (
                "named",
                two.clone(),
                set(None, &[("side", "s:2")]),
                Ok((true, vec!["app=a:1", "side=s:2", "init=i:1"])),
            ),
            (
                "init container named",
                two.clone(),
                set(None, &[("init", "i:2")]),
                Ok((true, vec!["app=a:1", "side=s:1", "init=i:2"])),
            ),
            (
                "star: every container and init container",
                two.clone(),
                set(None, &[("*", "x:9")]),
                Ok((true, vec!["app=x:9", "side=x:9", "init=x:9"])),
            ),
            (
                "unknown container",
                two.clone(),
                set(None, &[("nope", "x:9")]),
                Err("unable to find container named \"nope\""),
            ),
            (
                "same image: nothing changes",
                two.clone(),
                set(None, &[("app", "a:1")]),
                Ok((false, vec!["app=a:1", "side=s:1", "init=i:1"])),
            ),
        ];
        for (name, mut t, s, want) in table {
            match (set_image(&mut t, &s), want) {
                (Ok(changed), Ok((c, imgs))) => {
                    assert_eq!(changed, c, "{name}");
                    assert_eq!(images(&t), imgs, "{name}");
                }
                (Err(e), Err(m)) => assert!(e.to_string().contains(m), "{name}: {e}"),
                (got, _) => panic!("{name}: {got:?}"),
            }
        }
    }

    #[test]
    fn restart_sets_the_annotation() {
        let mut t = template(&[("app", "a:1")], &[]);
        restart(&mut t, "t=5s".to_string());
        let a = t.metadata.unwrap().annotations.unwrap();
        assert_eq!(a.get(RESTARTED_AT).map(String::as_str), Some("t=5s"));
    }
}
