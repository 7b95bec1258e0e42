//! A real Kubernetes v1.36 control plane for podplace's live tests, the way
//! controller-runtime's envtest uses its assets: etcd, kube-apiserver,
//! kube-controller-manager and kube-scheduler from `PODPLACE_E2E_ASSETS`,
//! started on free 127.0.0.1 ports with their own PKI, plus a node simulator
//! (the part of a kubelet that scheduling sees, as KWOK does it), waits
//! with deadlines, a timeline, and finders for kubectl and helm.
//!
//! Every process is stopped by its PID when its owner is dropped, so one
//! control plane can be shared by a whole test binary and still go away
//! when a test panics.

pub mod assets;
pub mod cases;
mod error;
pub mod pki;
pub mod plane;
pub mod process;
pub mod sim;
pub mod tools;
pub mod wait;

pub use assets::{assets_dir, Binaries, ASSETS_ENV};
pub use error::{Context, Error, Result};
pub use pki::{CertPair, Pki};
pub use plane::{
    config_from, write_kubeconfig, write_token_kubeconfig, Component, ControlPlane, Options,
};
pub use process::stop_all_on_signal;
pub use sim::{node, node_ready, nodes_from_world, NodeSimulator, SimConfig};
pub use tools::{descheduler, helm, kubectl};
pub use wait::{wait_default_service_account, wait_until, Timeline};
