//! Building a [`kube::Client`] the way kubectl does: `--kubeconfig`, then
//! `KUBECONFIG`, then `~/.kube/config`, then the in-cluster service account.

use std::path::PathBuf;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::error::{error_chain, Error};

/// Where to find the cluster, as kubectl's global flags say it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectOptions {
    /// `--kubeconfig`: this file only. When unset, `KUBECONFIG` (a list of
    /// files, merged) or `~/.kube/config`, and in a pod the in-cluster
    /// service account.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`: a context of the kubeconfig other than its current one.
    pub context: Option<String>,
}

/// Connects to the cluster the options name (exec plugins, tokens and
/// client certificates are all kube-rs's own handling).
///
/// No request is sent yet: an unreachable server shows up on the first call.
/// kube-rs' automatic retry of 429/503/504 is switched off, because a 429
/// on an eviction is an answer the caller must see at once.
pub async fn connect(opts: &ConnectOptions) -> Result<Client, Error> {
    let config = config(opts).await?;
    Client::try_from(config).map_err(|e| Error::from_kube("create the API client", e))
}

/// The client configuration the options resolve to.
async fn config(opts: &ConnectOptions) -> Result<Config, Error> {
    let kopts = KubeConfigOptions {
        context: opts.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut config = if let Some(path) = &opts.kubeconfig {
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig {
            path: Some(path.clone()),
            message: error_chain(&e),
        })?;
        Config::from_custom_kubeconfig(kubeconfig, &kopts)
            .await
            .map_err(|e| Error::Kubeconfig {
                path: Some(path.clone()),
                message: error_chain(&e),
            })?
    } else {
        match Config::from_kubeconfig(&kopts).await {
            Ok(c) => c,
            // A context or KUBECONFIG was asked for: its problem is the answer.
            Err(e) if opts.context.is_some() || std::env::var_os("KUBECONFIG").is_some() => {
                return Err(Error::Kubeconfig {
                    path: None,
                    message: error_chain(&e),
                })
            }
            Err(e) => match Config::incluster() {
                Ok(c) => c,
                Err(ie) => {
                    return Err(Error::NoConfig {
                        kubeconfig: error_chain(&e),
                        in_cluster: error_chain(&ie),
                    })
                }
            },
        }
    };
    config.default_retry = false;
    Ok(config)
}
