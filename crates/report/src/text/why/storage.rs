//! The text of `why`'s volume and claim reasons: the claim, its volume and
//! what the node misses, for every node of a group (their values may differ).

use std::io::{Result, Write};

use podplace_explain::{group::volume_name, Detail, LabelMiss, NodeVerdict, Reason};

use super::reason::node_values;
use crate::text::few;

/// The nodes of the group whose detail yields each value, in first-seen
/// order: `[(value, nodes)]`.
fn by_value<'a, T: PartialEq>(
    across: &[(&'a NodeVerdict, &'a Reason)],
    mut pick: impl FnMut(&'a Detail) -> Vec<T>,
) -> Vec<(T, Vec<String>)> {
    let mut out: Vec<(T, Vec<String>)> = Vec::new();
    for (v, r) in across {
        for value in pick(&r.detail) {
            match out.iter_mut().find(|(x, _)| *x == value) {
                Some((_, nodes)) => nodes.push(v.node.clone()),
                None => out.push((value, vec![v.node.clone()])),
            }
        }
    }
    out
}

/// ` (on n1, n2)` when only some nodes of the group share a line.
fn on(nodes: &[String], group: usize) -> String {
    if nodes.len() == group {
        String::new()
    } else {
        format!(" (on {})", few(nodes))
    }
}

/// Per failing term: which requirements, and the nodes' own values.
fn render_terms<'a>(
    out: &mut impl Write,
    across: &[(&'a NodeVerdict, &'a Reason)],
    terms: &[(usize, Vec<LabelMiss>)],
    pick: impl Fn(&'a Detail) -> Option<&'a [(usize, Vec<LabelMiss>)]> + Copy,
) -> Result<()> {
    for (ti, (index, misses)) in terms.iter().enumerate() {
        for (mi, m) in misses.iter().enumerate() {
            let values = node_values(across, |d| pick(d)?.get(ti)?.1.get(mi));
            if terms.len() > 1 {
                writeln!(
                    out,
                    "        term {}: {}: {values}",
                    index + 1,
                    m.requirement
                )?;
            } else {
                writeln!(out, "        {}: {values}", m.requirement)?;
            }
        }
    }
    Ok(())
}

/// The lines of one storage reason, for every node of the group.
pub(super) fn render(
    out: &mut impl Write,
    across: &[(&NodeVerdict, &Reason)],
    detail: &Detail,
) -> Result<()> {
    let group = across.len();
    match detail {
        Detail::VolumeNodeAffinity { volumes } => {
            for (vi, v) in volumes.iter().enumerate() {
                if v.volume.is_empty() {
                    writeln!(
                        out,
                        "      claim {}'s volume was provisioned where the claim first landed, and reaches only nodes where:",
                        v.claim
                    )?;
                } else {
                    writeln!(
                        out,
                        "      claim {} is bound to PersistentVolume {}, whose node affinity requires:",
                        v.claim,
                        volume_name(&v.volume)
                    )?;
                }
                render_terms(out, across, &v.terms, |d| match d {
                    Detail::VolumeNodeAffinity { volumes } => {
                        volumes.get(vi).map(|v| v.terms.as_slice())
                    }
                    _ => None,
                })?;
            }
        }
        Detail::VolumeUnbound { claims } | Detail::VolumeCapacity { claims } => {
            for (ci, c) in claims.iter().enumerate() {
                let request = c
                    .request
                    .map(|r| format!(", requests {}", podplace_explain::storage_bytes(r)))
                    .unwrap_or_default();
                let class = if c.class.is_empty() {
                    "no class".to_string()
                } else {
                    format!("class {}", c.class)
                };
                writeln!(
                    out,
                    "      claim {} ({class}{request}) waits for its first consumer, and here:",
                    c.claim
                )?;
                let causes = by_value(across, |d| match d {
                    Detail::VolumeUnbound { claims } | Detail::VolumeCapacity { claims } => {
                        claims.get(ci).map(|c| c.causes.clone()).unwrap_or_default()
                    }
                    _ => Vec::new(),
                });
                for (cause, nodes) in causes {
                    writeln!(out, "        - {cause}{}", on(&nodes, group))?;
                }
            }
        }
        Detail::VolumeMissing { claims } => {
            for (c, v) in claims {
                writeln!(
                    out,
                    "      claim {c} is bound to PersistentVolume {v}, which does not exist"
                )?;
            }
        }
        Detail::VolumeZone { volumes } => {
            for (vi, v) in volumes.iter().enumerate() {
                for (li, (key, value, _)) in v.labels.iter().enumerate() {
                    let here = by_value(across, |d| match d {
                        Detail::VolumeZone { volumes } => volumes
                            .get(vi)
                            .and_then(|v| v.labels.get(li))
                            .map(|(_, _, n)| n.clone())
                            .into_iter()
                            .collect(),
                        _ => Vec::new(),
                    });
                    let nodes: Vec<String> = here
                        .iter()
                        .map(|(n, nodes)| {
                            let what = match n {
                                Some(n) => format!("{key}={n}"),
                                None => format!("no {key} label"),
                            };
                            if nodes.len() == 1 {
                                format!("{} has {what}", nodes[0])
                            } else {
                                format!("{what} on {} nodes", nodes.len())
                            }
                        })
                        .collect();
                    writeln!(
                        out,
                        "      claim {} is bound to PersistentVolume {}, labelled {key}={value}: {}",
                        v.claim,
                        v.volume,
                        nodes.join(", ")
                    )?;
                }
            }
        }
        Detail::ReadWriteOncePod { holders } => {
            for (claim, pod, node) in holders {
                writeln!(
                    out,
                    "      claim {claim} is ReadWriteOncePod and pod {pod} on {node} already uses it (it fails on every node until that pod is gone)"
                )?;
            }
        }
        Detail::DiskConflict { .. } => {
            let pods = by_value(across, |d| match d {
                Detail::DiskConflict { pods } => pods.clone(),
                _ => Vec::new(),
            });
            for (pod, nodes) in pods {
                writeln!(
                    out,
                    "      an in-tree disk the pod mounts is already mounted by {pod}{}",
                    on(&nodes, group)
                )?;
            }
        }
        Detail::VolumeLimit { .. } => {
            let limits = by_value(across, |d| match d {
                Detail::VolumeLimit { drivers } => drivers.clone(),
                _ => Vec::new(),
            });
            for (d, nodes) in limits {
                writeln!(
                    out,
                    "      driver {}: the node attaches at most {} volume(s) (CSINode allocatable.count), its pods use {}, the pod adds {}{}",
                    d.driver,
                    d.limit,
                    d.attached,
                    d.adding,
                    on(&nodes, group)
                )?;
            }
        }
        Detail::ResourceClaimNodes { claims } => {
            for (ci, c) in claims.iter().enumerate() {
                writeln!(
                    out,
                    "      ResourceClaim {} is allocated on nodes where:",
                    c.claim
                )?;
                render_terms(out, across, &c.terms, |d| match d {
                    Detail::ResourceClaimNodes { claims } => {
                        claims.get(ci).map(|c| c.terms.as_slice())
                    }
                    _ => None,
                })?;
            }
        }
        _ => {}
    }
    Ok(())
}
